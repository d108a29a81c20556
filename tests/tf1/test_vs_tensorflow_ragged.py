"""Differential tests against TensorFlow (graph mode) for tf.RaggedTensor, tf.ragged and the
unicode string ops: the same program built in `tensorflow.compat.v1` and `collflow.compat.v1`,
the fetched values compared (RaggedTensorValue.to_list(), strings as bytes), and gradients
through ragged math compared.  Skipped cleanly without TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()


def _norm(v):
    """A fetched value as plain Python: lists, floats, bytes for strings."""
    if hasattr(v, "to_list"):
        return _norm(v.to_list())
    if hasattr(v, "indices") and hasattr(v, "dense_shape"):
        return ("sparse", _norm(v.indices), _norm(v.values), _norm(v.dense_shape))
    if isinstance(v, np.ndarray):
        return _norm(v.tolist())
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")
    if isinstance(v, (np.generic,)):
        return v.item()
    return v


def _close(a, b, path="out"):
    if isinstance(a, list) or isinstance(b, list):
        assert isinstance(a, list) and isinstance(b, list) and len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, tuple):
        _close(list(a), list(b), path)
    elif isinstance(a, float) or isinstance(b, float):
        assert (np.isnan(a) and np.isnan(b)) or np.isclose(a, b, rtol=1e-5, atol=1e-6), (path, a, b)
    else:
        assert a == b, (path, a, b)


def _run(tf, fn, feeds=None):
    g = tf.Graph()
    with g.as_default():
        out = fn(tf)
        outs = out if isinstance(out, list) else [out]
        with tf.Session(graph=g) as s:
            return [_norm(v) for v in s.run(outs)]


def _check(fn):
    _close(_run(cft, fn), _run(tft, fn))


RT = [[1.5, 2.0, -3.0], [], [4.0, -5.5], [0.25]]
NESTED = [[[1, 2], [3]], [], [[4, 5, 6], [], [7]]]

FACTORIES = {
    "row_splits": lambda tf: tf.RaggedTensor.from_row_splits([1, 2, 3, 4, 5], [0, 2, 2, 5]),
    "row_lengths": lambda tf: tf.RaggedTensor.from_row_lengths([1, 2, 3, 4, 5], [1, 0, 4]),
    "value_rowids": lambda tf: tf.RaggedTensor.from_value_rowids([1, 2, 3, 4], [0, 0, 2, 3], nrows=5),
    "value_rowids_no_nrows": lambda tf: tf.RaggedTensor.from_value_rowids([1, 2, 3], [1, 1, 3]),
    "row_starts": lambda tf: tf.RaggedTensor.from_row_starts([1, 2, 3, 4, 5], [0, 1, 1, 3]),
    "row_limits": lambda tf: tf.RaggedTensor.from_row_limits([1, 2, 3, 4, 5], [2, 2, 5]),
    "nested_splits": lambda tf: tf.RaggedTensor.from_nested_row_splits([1, 2, 3, 4, 5, 6],
                                                                       [[0, 2, 3], [0, 1, 3, 6]]),
    "nested_lengths": lambda tf: tf.RaggedTensor.from_nested_row_lengths([1, 2, 3, 4, 5, 6], [[2, 0, 1], [1, 2, 3]]),
    "from_tensor": lambda tf: tf.RaggedTensor.from_tensor([[1, 2, 3], [4, 5, 6]]),
    "from_tensor_lengths": lambda tf: tf.RaggedTensor.from_tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]],
                                                                  lengths=[2, 0, 3]),
    "from_tensor_padding": lambda tf: tf.RaggedTensor.from_tensor([[1, 0, 3, 0], [0, 0, 0, 0], [5, 6, 7, 8]],
                                                                  padding=0),
    "from_tensor_padding_3d": lambda tf: tf.RaggedTensor.from_tensor(
        [[[1, 1], [0, 0]], [[0, 0], [0, 0]], [[2, 0], [0, 3]]], padding=[0, 0]),
    "from_tensor_rr2": lambda tf: tf.RaggedTensor.from_tensor(np.arange(12).reshape(2, 3, 2), ragged_rank=2),
    "from_sparse": lambda tf: tf.RaggedTensor.from_sparse(
        tf.SparseTensor([[0, 0], [0, 1], [2, 0]], [1.0, 2.0, 3.0], [4, 5])),
    "constant": lambda tf: tf.ragged.constant(NESTED),
    "constant_inner": lambda tf: tf.ragged.constant([[[1, 2], [3, 4]], [], [[5, 6]]], ragged_rank=1),
    "constant_str": lambda tf: tf.ragged.constant([["a", "bc"], [], ["d"]]),
    "range": lambda tf: tf.ragged.range([3, 0, 5], [6, 0, 1], [1, 1, -2]),
    "range_scalar": lambda tf: tf.ragged.range([1, 4]),
    "range_float": lambda tf: tf.ragged.range([0.0, 1.0], 2.0, 0.5),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factories(name):
    _check(FACTORIES[name])


def _queries(tf):
    rt = tf.ragged.constant(RT)
    n = tf.ragged.constant(NESTED)
    return [rt, rt.values, rt.row_splits, rt.row_lengths(), rt.row_starts(), rt.row_limits(), rt.value_rowids(),
            rt.nrows(), rt.to_tensor(), rt.to_tensor(default_value=9.0), rt.to_sparse(), n.flat_values,
            n.to_tensor(), n.to_tensor(-1), n.to_sparse(), n.values.row_lengths(), n.row_lengths(axis=2),
            tf.ragged.row_splits_to_segment_ids([0, 2, 2, 5]), tf.ragged.segment_ids_to_row_splits([0, 0, 2]),
            tf.ragged.segment_ids_to_row_splits([0, 1], num_segments=4),
            tf.ragged.constant([["a", "bc"], [], ["d"]]).to_tensor(),
            n.with_flat_values(tf.constant([10, 20, 30, 40, 50, 60, 70])),
            rt.with_values(rt.values * 2.0)] + list(n.nested_row_splits)


def test_queries():
    _check(_queries)


def test_static_shapes_and_ranks():
    for tf in (cft, tft):
        g = tf.Graph()
        with g.as_default():
            rt = tf.ragged.constant(RT)
            n = tf.ragged.constant([[[1, 2], [3, 4]], [], [[5, 6]]], ragged_rank=1)
            assert rt.shape.as_list() == [4, None] and rt.ragged_rank == 1
            assert n.shape.as_list() == [3, None, 2] and n.ragged_rank == 1
            assert tf.ragged.constant(NESTED).shape.as_list() == [3, None, None]
            assert rt.dtype == tf.float32 and rt.row_splits.dtype == tf.int64


def _math(tf):
    a = tf.ragged.constant(RT)
    b = tf.ragged.constant([[1.0, 2.0, 3.0], [], [2.0, 4.0], [8.0]])
    return [a + b, a * b, a - 1.0, 2.0 * a, a / b, -a, abs(a), a ** 2, a > 0.0, a <= b,
            tf.ragged.map_flat_values(tf.square, a), tf.ragged.map_flat_values(tf.add, a, b),
            tf.ragged.map_flat_values(tf.cast, a, tf.int32), a + tf.constant(3.0)]


def test_math():
    _check(_math)


def _reductions(tf):
    rt = tf.ragged.constant(RT)
    n = tf.ragged.constant(NESTED)
    inner = tf.ragged.constant([[[1.0, 2.0], [3.0, 4.0]], [], [[5.0, 6.0]]], ragged_rank=1)
    out = []
    for red in (tf.reduce_sum, tf.reduce_max, tf.reduce_min, tf.reduce_mean):
        out += [red(rt, axis=1), red(rt, axis=0), red(rt), red(rt, axis=-1), red(inner, axis=1),
                red(inner, axis=2)]
    out += [tf.reduce_sum(n, axis=2), tf.reduce_max(n, axis=2), tf.reduce_prod(rt, axis=1), tf.reduce_prod(n, axis=2)]
    return out


def test_reductions():
    _check(_reductions)


def _indexing(tf):
    rt = tf.ragged.constant(RT)
    n = tf.ragged.constant(NESTED)
    return [tf.gather(rt, [3, 0, 0]), tf.gather(n, [2, 1]), rt[0], rt[-1], rt[1:], rt[:2], n[2], n[1:],
            tf.ragged.boolean_mask([[1, 2, 3], [4, 5, 6]], [[True, False, True], [False, False, False]])]


def test_indexing():
    _check(_indexing)


def _feed(tf):
    ph = tf.ragged.placeholder(tf.float32, ragged_rank=1)
    val = tf.ragged.RaggedTensorValue(np.array([1.0, 2.0, 3.0], np.float32), np.array([0, 2, 2, 3], np.int64))
    with tf.Session() as s:
        return _norm(s.run([tf.ragged.map_flat_values(tf.multiply, ph, 2.0), ph.row_lengths(), ph], {ph: val}))


def test_placeholder_feed():
    res = []
    for tf in (cft, tft):
        with tf.Graph().as_default():
            res.append(_feed(tf))
    _close(res[0], res[1])


def _grad_program(tf, values):
    x = tf.placeholder(tf.float32, [7])
    d = tf.placeholder(tf.float32, [3, 4])
    rt = tf.RaggedTensor.from_row_splits(x, [0, 3, 3, 7])
    fd = tf.RaggedTensor.from_tensor(d, lengths=[2, 4, 1])
    sq = rt * rt + 2.0 * rt
    terms = [tf.reduce_sum(tf.reduce_sum(sq, axis=1) * tf.constant([1.0, 2.0, 3.0])),
             tf.reduce_sum(tf.reduce_max(rt, axis=1) * tf.constant([0.5, 0.0, 1.5])),
             tf.reduce_sum(tf.reduce_mean(fd, axis=1) * tf.constant([1.0, -1.0, 2.0])),
             tf.reduce_sum(rt.to_tensor(1.0) * tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))),
             tf.reduce_sum(tf.ragged.map_flat_values(tf.sin, tf.gather(rt, [2, 0])).flat_values),
             tf.reduce_sum(fd.to_tensor() * 3.0), tf.reduce_sum(tf.reduce_prod(rt, axis=1)),
             tf.reduce_sum(tf.reduce_sum(rt, axis=0) * tf.constant([1., 2, 3, 4]))]
    loss = tf.add_n(terms)
    gx, gd = tf.gradients(loss, [x, d])
    with tf.Session() as s:
        return _norm(s.run([loss, gx, gd], {x: values[0], d: values[1]}))


def test_gradients_through_ragged_math():
    r = np.random.RandomState(0)
    vals = [r.uniform(-2, 2, [7]).astype(np.float32), r.uniform(-2, 2, [3, 4]).astype(np.float32)]
    res = []
    for tf in (cft, tft):
        with tf.Graph().as_default():
            res.append(_grad_program(tf, vals))
    _close(res[0], res[1])


# -- strings -----------------------------------------------------------------------------------

TEXT = [b"hello world", b"  a  b ", b"", "héllo €uro 𝄞".encode("utf-8")]
BAD = [b"a\x01\x7f\x80b", b"\xe0\x80z", b"\xed\xa0\x80q", b"\xf0\x9f\x98", b"\xc3\xa9\xff", b"ok"]


def _split(tf):
    return [tf.strings.split(TEXT), tf.strings.split(TEXT, result_type="RaggedTensor"),
            tf.strings.split(TEXT, sep=" ", result_type="RaggedTensor"),
            tf.strings.split(TEXT, sep="l", maxsplit=1, result_type="RaggedTensor"),
            tf.string_split(TEXT, result_type="RaggedTensor"),
            tf.string_split(TEXT, delimiter="lo", skip_empty=False, result_type="RaggedTensor")]


def test_strings_split():
    _check(_split)


def _unicode(tf):
    u16 = [s.decode("utf-8").encode("utf-16-be") for s in TEXT] + [b"\x00A\xd8\x00", b"\x00A\x00"]
    u32 = [s.decode("utf-8").encode("utf-32-be") for s in TEXT] + [b"\x00\x11\x00\x00\x00\x00\xd8\x00\x00\x00\x00B"]
    out = []
    for errors in ("replace", "ignore"):
        out += [tf.strings.unicode_decode(BAD, "UTF-8", errors=errors),
                tf.strings.unicode_decode_with_offsets(BAD, "UTF-8", errors=errors, replacement_char=63),
                tf.strings.unicode_decode(BAD, "UTF-8", errors=errors, replace_control_characters=True),
                tf.strings.unicode_split(BAD, "UTF-8", errors=errors),
                tf.strings.unicode_split_with_offsets(TEXT, "UTF-8", errors=errors),
                tf.strings.unicode_decode_with_offsets(u16, "UTF-16-BE", errors=errors),
                tf.strings.unicode_decode_with_offsets(u32, "UTF-32-BE", errors=errors),
                tf.strings.unicode_split(u16, "UTF-16-BE", errors=errors),
                tf.strings.unicode_transcode(BAD, "UTF-8", "UTF-16-BE", errors=errors),
                tf.strings.unicode_transcode(u16, "UTF-16-BE", "UTF-8", errors=errors),
                tf.strings.unicode_encode(tf.ragged.constant([[65, -5, 0xD800, 0x110000, 66], [], [0x1D11E, 233]]),
                                          "UTF-8", errors=errors)]
    out += [tf.strings.unicode_decode(TEXT[0], "UTF-8"), tf.strings.unicode_decode([TEXT[:2], TEXT[2:]], "UTF-8"),
            tf.strings.unicode_decode(tf.ragged.constant([[TEXT[0]], [], TEXT[1:]]), "UTF-8"),
            tf.strings.unicode_encode([[104, 105], [233, 0x20AC]], "UTF-16-BE"),
            tf.strings.unicode_encode([104, 0x1F600], "UTF-32-BE"),
            tf.strings.unicode_encode(tf.strings.unicode_decode(TEXT, "UTF-8"), "UTF-8"),
            tf.strings.unicode_encode(tf.ragged.constant(NESTED), "UTF-8"),
            tf.strings.unicode_transcode(TEXT, "UTF-8", "UTF-32-BE"),
            tf.strings.unicode_transcode([b"a\x01b"], "UTF-8", "UTF-8", replace_control_characters=True),
            tf.strings.unicode_transcode(TEXT, "ISO-8859-1", "UTF-8"),
            tf.strings.unicode_decode(np.array([[TEXT[:2]], [TEXT[2:]]]), "UTF-8"),
            tf.strings.unicode_transcode(tf.ragged.constant([[TEXT[0]], [], TEXT[1:]]), "UTF-8", "UTF-16-BE"),
            tf.strings.unicode_script(tf.strings.unicode_decode(TEXT, "UTF-8")),
            tf.strings.length(TEXT, unit="UTF8_CHAR"), tf.strings.substr(TEXT[:2] + TEXT[3:], 1, 3, unit="UTF8_CHAR")]
    return out


def test_unicode_ops():
    _check(_unicode)


# the scripts the table covers: a few characters of each, and Common/Inherited ones
SCRIPT_CPS = [0x41, 0x7A, 0xE9, 0x1E9E, 0xFF21, 0x3B1, 0x1F00, 0x416, 0x4E5, 0x531, 0x5D0, 0xFB2A, 0x627, 0x6F0,
              0x710, 0x780, 0x915, 0x995, 0xA15, 0xA95, 0xB15, 0xB95, 0xC15, 0xC95, 0xD15, 0xD85, 0xE01, 0xE81,
              0xF40, 0x1000, 0x10D0, 0x1100, 0xAC00, 0x1200, 0x13A0, 0x1401, 0x1681, 0x16A0, 0x1780, 0x1820,
              0x3042, 0x30A2, 0xFF76, 0x3105, 0x4E00, 0x20000, 0xA000, 0x2800, 0x2C80, 0x0, 0x20, 0x30, 0x3000,
              0x1F600, 0x300, 0x64B, 0x200D, 0x3099, 0x2160, 0x212A, 0x2126, 0xE000, 0x378, -1, 0x110000, 0x10FFFF]


def test_unicode_script():
    _check(lambda tf: [tf.strings.unicode_script(SCRIPT_CPS),
                       tf.strings.unicode_script(tf.constant([[0x41, 0x3B1], [0x4E00, 0x20]]))])


def test_unicode_script_table_agrees_on_covered_code_points():
    """Planes 0-3: wherever TF names one of the scripts the table covers (or Common/Inherited)
    collflow names the same; wherever collflow names a script TF agrees, but for characters
    newer than TF's ICU, which TF calls Unknown."""
    from collflow.kernels.unicode_scripts import _CODES, scripts_of
    cps = np.arange(0, 0x40000, dtype=np.int32)
    with tft.Graph().as_default(), tft.Session() as s:
        want = s.run(tft.strings.unicode_script(cps))
    got = scripts_of(cps)
    mine = np.isin(want, list(_CODES.values()) + [0, 1])
    assert (got[mine] == want[mine]).all(), [hex(c) for c in np.nonzero(mine & (got != want))[0][:10]]
    bad = np.nonzero((got != 103) & (got != want))[0]
    assert (want[bad] == 103).all() and len(bad) < 200, len(bad)


def _ngrams(tf):
    d = tf.ragged.constant([["a", "b", "c", "d"], [], ["e"], ["f", "g"]])
    out = [tf.strings.ngrams(d, 2), tf.strings.ngrams(d, [1, 3]), tf.strings.ngrams(d, 2, separator="|"),
           tf.strings.ngrams(d, 3, pad_values=("L", "R")), tf.strings.ngrams(d, 3, pad_values="P", padding_width=1),
           tf.strings.ngrams(d, 3, preserve_short_sequences=True),
           tf.strings.ngrams(d, [1, 3], preserve_short_sequences=True),
           tf.strings.ngrams(d, [3, 4], pad_values="P", padding_width=1, preserve_short_sequences=True),
           tf.strings.ngrams(tf.ragged.constant([[["a", "b"], ["c"]], [], [["d", "e", "f"]]]), 2),
           tf.strings.ngrams(tf.constant(["a", "b", "c"]), 2),
           tf.strings.ngrams(tf.constant([["a", "b", "c"], ["d", "e", "f"]]), 2)]
    return out


def test_ngrams():
    _check(_ngrams)


def _stack(tf):
    a = tf.ragged.constant([[1, 2], [], [3]])
    b = tf.ragged.constant([[4], [5, 6], []])
    n = tf.ragged.constant(NESTED)
    return [tf.ragged.stack([a, b]), tf.ragged.stack([a, b], axis=1), tf.ragged.stack([a, [[7, 8], [9, 9], [0, 0]]]),
            tf.ragged.stack([n, n]), tf.ragged.stack([n, n], axis=1), a.bounding_shape(), n.bounding_shape(),
            tf.ragged.constant([[[1, 2]], []], ragged_rank=1).bounding_shape()]


def test_stack_and_bounding_shape():
    _check(_stack)
