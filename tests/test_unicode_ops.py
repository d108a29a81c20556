"""tf.strings.unicode_* and strings.split(result_type="RaggedTensor") by hand (no TensorFlow):
code points and byte offsets worked out from the encodings' definitions."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import InvalidArgumentError


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default():
        yield


def run(x):
    with tf.Session() as s:
        return s.run(x)


def _b(v):
    return v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v


def test_decode_utf8_with_offsets():
    cps, offs = tf.strings.unicode_decode_with_offsets(["aé€𝄞", ""], "UTF-8")
    assert isinstance(cps, tf.RaggedTensor) and cps.dtype == tf.int32
    assert run(cps).to_list() == [[0x61, 0xE9, 0x20AC, 0x1D11E], []]
    assert run(offs).to_list() == [[0, 1, 3, 6], []]
    assert run(tf.strings.unicode_decode("hi", "UTF-8")).tolist() == [104, 105]   # a scalar: a dense vector
    nested = run(tf.strings.unicode_decode([["ab", "c"], ["", "d"]], "UTF-8"))
    assert nested.to_list() == [[[97, 98], [99]], [[], [100]]]


def test_decode_errors_modes():
    bad = [b"a\x80b", b"\xe0\x80z", b"\xf0\x9f\x98", b"x\x01y"]
    assert run(tf.strings.unicode_decode(bad, "UTF-8")).to_list() == [
        [97, 0xFFFD, 98], [0xFFFD, 0xFFFD, 122], [0xFFFD], [120, 1, 121]]
    assert run(tf.strings.unicode_decode(bad, "UTF-8", errors="ignore")).to_list() == [
        [97, 98], [122], [], [120, 1, 121]]
    assert run(tf.strings.unicode_decode(bad, "UTF-8", replacement_char=63,
                                         replace_control_characters=True)).to_list() == [
        [97, 63, 98], [63, 63, 122], [63], [120, 63, 121]]
    _, offs = tf.strings.unicode_decode_with_offsets(bad, "UTF-8", errors="ignore")
    assert run(offs).to_list() == [[0, 2], [2], [], [0, 1, 2]]
    with pytest.raises(InvalidArgumentError):
        run(tf.strings.unicode_decode(bad, "UTF-8", errors="strict"))
    with pytest.raises(InvalidArgumentError):
        tf.strings.unicode_decode(bad, "UTF-7")
    with pytest.raises(ValueError):
        tf.strings.unicode_decode(bad, "UTF-8", errors="skip")


def test_decode_utf16_utf32():
    u16 = ["a€𝄞".encode("utf-16-be"), b"\x00A\xd8\x00", b"\x00A\x00"]
    cps, offs = tf.strings.unicode_decode_with_offsets(u16, "UTF-16-BE")
    assert run(cps).to_list() == [[97, 0x20AC, 0x1D11E], [65, 0xFFFD], [65, 0xFFFD]]
    assert run(offs).to_list() == [[0, 2, 4], [0, 2], [0, 2]]
    u32 = [b"\x00\x00\x00A\x00\x11\x00\x00\x00\x01\xd1\x1e"]
    assert run(tf.strings.unicode_decode(u32, "UTF-32-BE")).to_list() == [[65, 0xFFFD, 0x1D11E]]


def test_split_encode_transcode():
    chars = run(tf.strings.unicode_split(["aé", b"\xffz"], "UTF-8")).to_list()
    assert [[_b(c) for c in row] for row in chars] == [[b"a", "é".encode()], ["\ufffd".encode(), b"z"]]
    chars, offs = tf.strings.unicode_split_with_offsets(["h€"], "UTF-8")
    assert run(offs).to_list() == [[0, 1]]
    enc = run(tf.strings.unicode_encode(tf.ragged.constant([[104, 233], [], [-1, 0x110000, 0xD800, 65]]), "UTF-8"))
    assert [_b(s) for s in enc] == [b"h\xc3\xa9", b"", "\ufffd\ufffd\ufffdA".encode()]
    ign = run(tf.strings.unicode_encode(tf.ragged.constant([[-1, 65]]), "UTF-8", errors="ignore"))
    assert [_b(s) for s in ign] == [b"A"]
    with pytest.raises(InvalidArgumentError):
        run(tf.strings.unicode_encode(tf.ragged.constant([[-1, 65]]), "UTF-8", errors="strict"))
    assert _b(run(tf.strings.unicode_encode([104, 105], "UTF-16-BE"))) == b"\x00h\x00i"
    dense = run(tf.strings.unicode_encode([[104, 105], [0x1F600, 33]], "UTF-32-BE"))
    assert [_b(s) for s in dense] == [b"\x00\x00\x00h\x00\x00\x00i", b"\x00\x01\xf6\x00\x00\x00\x00!"]
    tr = run(tf.strings.unicode_transcode(["é", b"\xff"], "UTF-8", "UTF-16-BE"))
    assert [_b(s) for s in tr] == [b"\x00\xe9", b"\xff\xfd"]
    assert [_b(s) for s in run(tf.strings.unicode_transcode([b"a\x01b"], "UTF-8", "UTF-8", errors="ignore",
                                                            replace_control_characters=True))] == [b"ab"]


def test_unicode_script():
    got = run(tf.strings.unicode_script([0x41, 0x3B1, 0x416, 0x5D0, 0x627, 0x4E00, 0x3042, 0x30A2, 0xAC00,
                                         0x20, 0x300, 0x1F600, 0xE000, -1, 0x110000]))
    # Latin, Greek, Cyrillic, Hebrew, Arabic, Han, Hiragana, Katakana, Hangul, Common,
    # Inherited, Common (emoji), Unknown (private use), invalid, invalid
    assert got.tolist() == [25, 14, 8, 19, 2, 17, 20, 22, 18, 0, 1, 0, 103, -1, -1]


def test_strings_split_result_types():
    st = tf.strings.split(["a b", "c"])
    assert isinstance(st, tf.SparseTensor)       # TF 1.15's default
    rt = tf.strings.split(["a b", "", "c d e"], result_type="RaggedTensor")
    assert isinstance(rt, tf.RaggedTensor)
    assert run(rt).to_list() == [[b"a", b"b"], [], [b"c", b"d", b"e"]]
    assert run(tf.strings.split(["a,,b"], sep=",", result_type="RaggedTensor")).to_list() == [[b"a", b"", b"b"]]
    assert run(tf.string_split(["a b", "c"], result_type="RaggedTensor")).to_list() == [[b"a", b"b"], [b"c"]]
    with pytest.raises(ValueError):
        tf.strings.split(["a"], result_type="Dense")


def test_lengths_and_substr_in_chars():
    assert run(tf.strings.length(["aé€"], unit="UTF8_CHAR")).tolist() == [3]
    assert run(tf.strings.length(["aé€"])).tolist() == [6]
    assert run(tf.strings.substr(["aé€x"], 1, 2, unit="UTF8_CHAR")).tolist() == ["é€".encode()]


def test_decode_ragged_input_keeps_rows():
    rt = tf.ragged.constant([["ab"], [], ["c", "de"]])
    out = run(tf.strings.unicode_decode(rt, "UTF-8"))
    assert out.to_list() == [[[97, 98]], [], [[99], [100, 101]]]
    assert np.asarray(run(tf.strings.unicode_encode(tf.strings.unicode_decode(rt, "UTF-8"), "UTF-8")
                          .flat_values)).tolist() == [b"ab", b"c", b"de"]


def test_ngrams():
    d = tf.ragged.constant([["a", "b", "c"], [], ["d"]])
    assert run(tf.strings.ngrams(d, 2)).to_list() == [[b"a b", b"b c"], [], []]
    assert run(tf.strings.ngrams(d, 2, pad_values=("<", ">"), padding_width=1)).to_list() == [
        [b"< a", b"a b", b"b c", b"c >"], [b"< >"], [b"< d", b"d >"]]   # an empty row has its pads
    assert run(tf.strings.ngrams(d, 3, preserve_short_sequences=True)).to_list() == [[b"a b c"], [], [b"d"]]
    assert run(tf.strings.ngrams(tf.constant(["x", "y", "z"]), [2, 3], separator="-")).tolist() == \
        [b"x-y", b"y-z", b"x-y-z"]
    with pytest.raises(ValueError):
        tf.strings.ngrams(d, 0)
