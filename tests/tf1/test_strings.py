"""The string ops of text pipelines (graph/ops/text_ops.py): TF1's byte semantics stated
against Python, and every op against TensorFlow where it is installed (TF gives bytes,
collflow str: compared after decoding)."""
import numpy as np
import pytest

import collflow.compat.v1 as tf

TEXT = ["hello world", "  a  b ", "", "one,two;;three", "Ünïcode Straße"]


def _run(fetches):
    with tf.Session() as s:
        return s.run(fetches)


def test_byte_semantics_and_tokens():
    with tf.Graph().as_default():
        x = tf.constant(TEXT)
        r = _run(dict(n=tf.strings.length(x), chars=tf.strings.length(x, unit="UTF8_CHAR"),
                      sub=tf.substr(x[4:], 0, 2), subc=tf.substr(x[4:], 0, 2, unit="UTF8_CHAR"),
                      low=tf.strings.lower(tf.constant(["HeLLo ÜX"])), up=tf.strings.upper(x[4:], encoding="utf-8"),
                      strip=tf.string_strip(x[1:2]), join=tf.string_join([x[:2], "!"], separator="-"),
                      rj=tf.reduce_join(tf.constant([["a", "b"], ["c", "d"]]), 1, separator=","),
                      rep=tf.regex_replace(x[:1], "(l+)", r"<\1>", replace_global=False),
                      whole=tf.regex_replace(x[:1], "o", r"[\0]"), full=tf.strings.regex_full_match(x, "[a-z ]+"),
                      tok=tf.string_split(x), toks=tf.strings.split(x[:2], sep=" ", maxsplit=1)))
    assert r["n"].tolist() == [11, 7, 0, 14, 17] and r["chars"].tolist() == [11, 7, 0, 14, 14]  # UTF-8 bytes
    assert r["sub"][0] == "Ü".encode() and r["subc"][0] == "Ün".encode()
    # ASCII only without an encoding
    assert r["low"][0] == "hello Üx".encode() and r["up"][0] == "ÜNÏCODE STRASSE".encode()
    assert r["strip"][0] == b"a  b" and r["join"].tolist() == [b"hello world-!", b"  a  b -!"]
    assert r["rj"].tolist() == [b"a,b", b"c,d"]
    assert r["rep"][0] == b"he<ll>o world" and r["whole"][0] == b"hell[o] w[o]rld"
    assert r["full"].tolist() == [True, True, False, False, False]
    tok = r["tok"]
    assert isinstance(tok, tf.SparseTensorValue) and tok.dense_shape.tolist() == [5, 2]
    assert tok.values.tolist() == [b"hello", b"world", b"a", b"b", b"one,two;;three", "Ünïcode".encode(),
                                   "Straße".encode()]
    assert r["toks"].values.tolist() == [b"hello", b"world", b"", b" a  b "]
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="pos 1 out of range"):
            _run(tf.substr(tf.constant(["", "x"]), 1, 1))
        with pytest.raises(tf.errors.InvalidArgumentError, match="1-D"):
            tf.string_split(tf.constant([["a"]]))


def _program(T):
    x = T.constant(TEXT)
    m = T.constant([["a", "b", "c"], ["d", "e", "f"]])
    return [T.string_join([x, "!"], separator="-"), T.reduce_join(m, 0), T.reduce_join(m, 1, keep_dims=True,
                                                                                      separator=","),
            T.substr(x[:2], 1, 3), T.substr(x[4:], 0, 2), T.substr(x[4:], 0, 2, unit="UTF8_CHAR"), T.substr(x[:2], -3, 2),
            T.regex_replace(x, "[aeiou]", "_"), T.regex_replace(x, "(l+)", r"<\1>", replace_global=False),
            T.regex_replace(x, "o", r"[\0]"), T.strings.regex_full_match(x, "[a-z ]+"), T.string_strip(x),
            T.strings.length(x), T.strings.length(x, unit="UTF8_CHAR"), T.strings.lower(T.constant(["HeLLo ÜX"])),
            T.strings.upper(x), T.strings.upper(x, encoding="utf-8"),
            T.string_split(x), T.string_split(x, delimiter=",;"), T.string_split(x, delimiter=",;", skip_empty=False),
            T.string_split(x[:2], delimiter=""), T.strings.split(x), T.strings.split(x, sep=","),
            T.strings.split(x, sep=" ", maxsplit=1), T.string_split(x, sep=";"), T.strings.to_number(["1.5", "-2"])]


def _text(a):
    a = np.asarray(a)
    if a.dtype == object or a.dtype.kind in "SU":
        return np.vectorize(lambda v: v.decode("utf-8") if isinstance(v, bytes) else str(v), otypes=[object])(a) \
            if a.size else a.astype(object)
    return a


def test_against_tensorflow():
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    out = []
    for T in (tf, tft):
        with T.Graph().as_default():
            fetch = _program(T)
            with T.Session() as s:
                out.append(s.run(fetch))
    for k, (a, b) in enumerate(zip(*out)):
        if hasattr(b, "_fields"):  # a SparseTensorValue
            for x, y in zip(a, b):
                np.testing.assert_array_equal(_text(x), _text(y), err_msg=str(k))
        else:
            np.testing.assert_array_equal(_text(a), _text(b), err_msg=str(k))
            if np.asarray(b).dtype.kind not in "OSU":
                assert np.asarray(a).dtype == np.asarray(b).dtype, k


def _formatting(T):
    f = T.constant([3.14159265, -2.5e-7, 1234567.0, float("nan"), float("inf")])
    i = T.constant([7, -42, 123456], T.int64)
    return [T.as_string(f), T.as_string(f, precision=2), T.as_string(f, scientific=True),
            T.as_string(f, shortest=True), T.as_string(f, width=12, fill="0", precision=3), T.as_string(i),
            T.as_string(i, width=6), T.as_string(i, width=6, fill="0"), T.as_string(i, fill=" "),
            T.as_string(i, fill="-", width=5), T.as_string(i, fill="+"), T.as_string(f, fill="+", width=11),
            T.as_string(T.constant([True, False])), T.as_string(T.constant([1.5], T.float64), precision=10),
            T.as_string(T.constant([3], T.int8)), T.as_string(T.constant([2.5], T.float16)),
            T.io.encode_base64(T.constant(["hello world?", "", "ab", "héllo"])),
            T.io.encode_base64(T.constant(["hello world?", "ab"]), pad=True),
            T.io.decode_base64(T.constant(["aGVsbG8gd29ybGQ_", "YWI", "YWI=", ""])),
            T.strings.to_hash_bucket_strong(T.constant(["a", "hello", "", "héllo"]), 1000, [1, 2]),
            T.string_to_hash_bucket_strong(T.constant([["a", "hello world, this is longer than 16 bytes"],
                                                       ["12345678", "1234567"]]), 2 ** 31,
                                           [0x0706050403020100, 0x0F0E0D0C0B0A0908])]


def test_as_string_base64_and_strong_hash_values():
    """printf's formatting (nan and inf padded with spaces even with fill "0"), web-safe
    base64, and SipHash-2-4: the SipHash paper's key 00..0f gives its reference value for
    the empty message (0x726fdb47dd0e0e31), so the buckets below are that hash mod n."""
    from collflow.kernels.string_more_kernels import siphash24
    assert siphash24(0x0706050403020100, 0x0F0E0D0C0B0A0908, b"") == 0x726FDB47DD0E0E31
    assert siphash24(0x0706050403020100, 0x0F0E0D0C0B0A0908, bytes(range(15))) == 0xA129CA6149BE45E5
    with tf.Graph().as_default():
        r = _run(_formatting(tf))
    assert r[0].tolist() == [b"3.141593", b"-0.000000", b"1234567.000000", b"nan", b"inf"]
    assert r[4].tolist()[3:] == [b"         nan", b"         inf"] and r[4][0] == b"00000003.142"
    assert r[7].tolist() == [b"000007", b"-00042", b"123456"] and r[9].tolist() == [b"7    ", b"-42  ", b"123456"]
    assert r[12].tolist() == [b"true", b"false"]
    assert r[16].tolist() == [b"aGVsbG8gd29ybGQ_", b"", b"YWI", b"aMOpbGxv"] and r[17].tolist()[1] == b"YWI="
    assert r[18].tolist() == [b"hello world?", b"ab", b"ab", b""]
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="both scientific and shortest"):
            tf.as_string(tf.constant([1.0]), scientific=True, shortest=True)
        with pytest.raises(tf.errors.InvalidArgumentError, match="floating-point inputs only"):
            tf.as_string(tf.constant([1]), precision=2)
        with pytest.raises(tf.errors.InvalidArgumentError, match="fill must be one of"):
            tf.as_string(tf.constant([1]), fill="*")
        bad = tf.io.decode_base64(tf.constant(["a$b"]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="invalid character"):
            _run(bad)


def test_formatting_matches_tensorflow():
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    with tf.Graph().as_default():
        ours = _run(_formatting(tf))
    with tft.Graph().as_default(), tft.Session() as s:
        theirs = s.run(_formatting(tft))
    for k, (a, b) in enumerate(zip(ours, theirs)):  # strings: bytes in both
        assert a.shape == b.shape and (a == b).all(), (k, a, b)
