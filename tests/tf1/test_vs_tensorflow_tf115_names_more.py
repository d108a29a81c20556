"""TF 1.15 names of collflow/compat/tf115_more_names.py and friends against TensorFlow's
tensorflow.compat.v1 (graph mode): compute_average_loss / scale_regularization_loss,
ctc_loss_v2 (values and gradients, dense and sparse labels, blank indices) and
ctc_beam_search_decoder_v2, tf.strings.bytes_split, LinearOperatorHouseholder /
Circulant2D / Circulant3D (every method, gradients), the session handles (handle strings,
values, error types), tf.sysconfig / library loaders (error types), the v2-TensorShape switch
and tf.train.SaverDef's constants.  Skipped cleanly without TensorFlow."""
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
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _both(build, feeds=None):
    """build(tf) -> fetches, run in TensorFlow and in collflow; (tf values, collflow values)."""
    out = []
    for tf in (tft, cft):
        with tf.Graph().as_default():
            fetches, feed = build(tf)
            with tf.Session() as s:
                out.append(s.run(fetches, feed_dict=feed))
    return out


def _close(a, b, rtol=1e-5, atol=1e-6):
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=rtol, atol=atol)


def test_compute_average_loss_and_regularization():
    rng = np.random.RandomState(0)
    loss = rng.rand(5, 3).astype(np.float32)
    w = rng.rand(5, 1).astype(np.float32)

    def build(tf):
        p = tf.placeholder(tf.float32, [None, 3])
        return [tf.nn.compute_average_loss(p), tf.nn.compute_average_loss(p, sample_weight=w),
                tf.nn.compute_average_loss(p, sample_weight=0.5, global_batch_size=16),
                tf.nn.scale_regularization_loss([tf.reduce_sum(p), tf.constant(1.0)]),
                tf.gradients(tf.nn.compute_average_loss(p, sample_weight=w), p)[0]], {p: loss}
    _close(*_both(build))


def _ctc_inputs(seed):
    rng = np.random.RandomState(seed)
    logits = rng.randn(8, 3, 6).astype(np.float32)
    labels = np.array([[1, 2, 2, 5], [3, 1, 0, 0], [4, 4, 1, 3]], np.int32)
    return logits, labels, np.array([3, 2, 4], np.int32), np.array([8, 6, 7], np.int32)


@pytest.mark.parametrize("blank", [None, 0, 2, -1, -3])
def test_ctc_loss_v2_dense_values_and_gradients(blank):
    logits, labels, ll, tl = _ctc_inputs(1)
    n = logits.shape[2]
    b = 0 if blank is None else blank % n
    labels = np.where(labels == b, (b + 1) % n, labels).astype(np.int32)  # no label is the blank

    def build(tf):
        x = tf.constant(logits)
        kw = {} if blank is None else {"blank_index": blank}
        loss = tf.nn.ctc_loss_v2(labels, x, ll, tl, **kw)
        lbm = tf.nn.ctc_loss_v2(labels, tf.transpose(x, [1, 0, 2]), ll, tl, logits_time_major=False, **kw)
        return [loss, lbm, tf.gradients(tf.reduce_sum(loss * [1., 2., 3.]), x)[0]], None
    _close(*_both(build), rtol=1e-4, atol=1e-5)


def test_ctc_loss_v2_sparse_labels():
    logits, labels, ll, tl = _ctc_inputs(2)
    idx = np.array([[b, i] for b in range(3) for i in range(ll[b])], np.int64)
    vals = np.array([labels[b, i] for b, i in idx], np.int32)
    vals = np.where(vals == 2, 0, vals).astype(np.int32)  # blank 2 below

    def build(tf):
        x = tf.constant(logits)
        loss = tf.nn.ctc_loss_v2(tf.SparseTensor(idx, vals, [3, 4]), x, None, tl, blank_index=2)
        return [loss, tf.gradients(tf.reduce_sum(loss), x)[0]], None
    _close(*_both(build), rtol=1e-4, atol=1e-5)
    for tf in (tft, cft):
        with tf.Graph().as_default(), pytest.raises(ValueError, match="blank_index"):
            tf.nn.ctc_loss_v2(tf.SparseTensor(idx, vals, [3, 4]), tf.constant(logits), None, tl)


def test_ctc_beam_search_decoder_v2():
    rng = np.random.RandomState(3)
    logits = (rng.randn(6, 2, 4) * 2).astype(np.float32)
    logits[2, :, 1] = logits[1, :, 1] = 9.0  # a repeated label the v2 decoder must not merge twice

    def build(tf):
        decoded, lp = tf.nn.ctc_beam_search_decoder_v2(tf.constant(logits), [6, 5], beam_width=8, top_paths=3)
        return [(d.indices, d.values, d.dense_shape) for d in decoded] + [lp], None
    t, c = _both(build)
    for x, y in zip(t[:-1], c[:-1]):
        for a, b in zip(x, y):
            np.testing.assert_array_equal(b, a)
    np.testing.assert_allclose(c[-1], t[-1], rtol=1e-5)


def _strs(values):
    return [v if isinstance(v, bytes) else v.encode("utf-8", "surrogateescape") for v in values]


def test_bytes_split():
    def build(tf):
        return [tf.strings.bytes_split([b"hello", b"", b"a\xffb\xc3\xa9"]),
                tf.strings.bytes_split([["ab", "c"], ["", "de"]]),
                tf.strings.bytes_split(tf.ragged.constant([["xy"], ["z", "uv"]]))], None
    t, c = _both(build)
    for a, b in zip(t, c):
        assert _strs(b.flat_values) == _strs(a.flat_values)
        for sa, sb in zip(a.nested_row_splits, b.nested_row_splits):
            np.testing.assert_array_equal(sb, sa)

    def build_scalar(tf):
        return tf.strings.bytes_split("abc"), None
    t, c = _both(build_scalar)
    assert _strs(c) == _strs(t)


def _operator_methods(op, x):
    return [op.to_dense(), op.matmul(x), op.matmul(x, adjoint=True), op.solve(x), op.determinant(),
            op.log_abs_determinant(), op.trace(), op.diag_part(), op.shape_tensor()]


def test_householder():
    rng = np.random.RandomState(4)
    v = rng.randn(2, 3, 4)
    x = rng.randn(2, 3, 4, 2)
    vc = (rng.randn(4) + 1j * rng.randn(4)).astype(np.complex64)
    xc = (rng.randn(4, 3) + 1j * rng.randn(4, 3)).astype(np.complex64)

    def build(tf):
        vt = tf.constant(v)
        op = tf.linalg.LinearOperatorHouseholder(vt)
        opc = tf.linalg.LinearOperatorHouseholder(vc)
        y = op.matmul(x)
        return _operator_methods(op, x) + [op.eigvals(), op.matvec(x[..., 0]), op.solvevec(x[..., 1]),
                                           tf.gradients(tf.reduce_sum(y * y[..., ::-1]), vt)[0]] + \
            _operator_methods(opc, xc)[:8], None
    t, c = _both(build)
    _close(t, c, rtol=1e-5, atol=1e-5)
    for tf in (tft, cft):
        op = tf.linalg.LinearOperatorHouseholder([1., 2.])
        assert (op.is_self_adjoint, op.is_positive_definite, op.is_square) == (True, False, True)
        assert op.shape.as_list() == [2, 2]
        with pytest.raises(ValueError, match="always self adjoint"):
            tf.linalg.LinearOperatorHouseholder([1., 2.], is_self_adjoint=False)
        with pytest.raises(ValueError, match="non-positive definite"):
            tf.linalg.LinearOperatorHouseholder([1., 2.], is_positive_definite=True)


@pytest.mark.parametrize("cls,shape", [("LinearOperatorCirculant2D", (2, 2, 3)),
                                       ("LinearOperatorCirculant3D", (2, 2, 3))])
def test_circulant_nd(cls, shape):
    rng = np.random.RandomState(5)
    spec = (rng.randn(*shape) + 1j * rng.randn(*shape) + 2).astype(np.complex128)
    n = int(np.prod(shape[-3:] if cls.endswith("3D") else shape[-2:]))
    x = (rng.randn(*(shape[:-3] if cls.endswith("3D") else shape[:-2]), n, 2)
         + 1j * rng.randn(*(shape[:-3] if cls.endswith("3D") else shape[:-2]), n, 2))
    real_spec = rng.rand(*shape) + 0.5
    xr = rng.randn(n, 3)

    def build(tf):
        op = getattr(tf.linalg, cls)(spec, input_output_dtype=tf.complex128)
        st = tf.constant(real_spec)
        opr = getattr(tf.linalg, cls)(st, input_output_dtype=tf.float64)
        yr = opr.matmul(xr)
        return _operator_methods(op, x) + [op.convolution_kernel(), op.block_shape_tensor(), yr, opr.to_dense(),
                                           tf.gradients(tf.reduce_sum(yr * yr), st)[0]], None
    t, c = _both(build)
    _close(t, c, rtol=1e-8, atol=1e-9)
    for tf in (tft, cft):
        op = getattr(tf.linalg, cls)(spec)
        assert op.shape.as_list()[-2:] == [n, n] and op.block_depth == (3 if cls.endswith("3D") else 2)
        assert op.dtype == tf.complex64 and op.is_square


def test_session_handles():
    def run(tf):
        out = []
        with tf.Graph().as_default():
            a = tf.constant([1., 2., 3.])
            h = tf.get_session_handle(a * 2)
            with tf.Session() as s:
                hv = s.run(h)
                out.append((type(hv).__name__, hv.handle, str(hv)))
                p, x = tf.get_session_tensor(hv.handle, tf.float32)
                out.append(s.run(x * 10, {p: hv.handle}))
                out.append(hv.eval())
                out.append(s.run(a + 1, {a: hv}))  # a handle fed to an ordinary tensor
                h2 = s.run([h, h])[0]
                out.append(h2.handle)
                dp, dop = tf.delete_session_tensor(hv.handle)
                out.append(s.run(dop, {dp: hv.handle}))
                for feed, fetch in (({p: hv.handle}, x), ({dp: hv.handle}, dop)):
                    try:
                        s.run(fetch, feed)
                    except tf.errors.OpError as e:
                        out.append(type(e).__name__)
                p2, x2 = tf.get_session_tensor(h2.handle, tf.int32)
                try:
                    s.run(x2, {p2: h2.handle})
                except tf.errors.OpError as e:
                    out.append(type(e).__name__)
                h2.delete()
                try:
                    h2.eval()
                except TypeError as e:
                    out.append(str(e))
            try:
                tf.get_session_handle(1.0)
            except TypeError as e:
                out.append(str(e))
        return out
    t, c = run(tft), run(cft)
    assert c[0] == t[0]
    for a, b in zip(t[1:4], c[1:4]):
        np.testing.assert_allclose(b, a)
    assert c[4:] == t[4:]


def test_sysconfig_loaders_and_switches(tmp_path):
    assert sorted(n for n in dir(cft.sysconfig) if n.startswith("get_") and n != "get_build_info") == \
        sorted(n for n in dir(tft.sysconfig) if n.startswith("get_") and n != "get_build_info")
    missing = str(tmp_path / "missing.so")
    for name in ("load_op_library", "load_file_system_library", "load_library"):
        errs = []
        for tf in (tft, cft):
            with pytest.raises(Exception) as ei:
                getattr(tf, name)(missing)
            errs.append((type(ei.value).__name__, "missing.so" in str(ei.value)))
        assert errs[1] == errs[0]
    saver_def = [(tf.train.SaverDef.LEGACY, tf.train.SaverDef.V1, tf.train.SaverDef.V2,
                  tf.train.SaverDef.CheckpointFormatVersion.Name(1), tf.train.SaverDef().max_to_keep,
                  tf.train.SaverDef(sharded=True).sharded) for tf in (tft, cft)]
    assert saver_def[1] == saver_def[0]
    shapes = []
    for tf in (tft, cft):
        tf.enable_v2_tensorshape()
        try:
            s = tf.TensorShape([3, None])
            shapes.append((s[0], s[1], type(s[0]).__name__))
        finally:
            tf.disable_v2_tensorshape()
        s = tf.TensorShape([3, None])
        shapes.append((repr(s[0]), repr(s[1]), s[0].value, s[1].value))
    assert shapes[2:] == shapes[:2]
    for tf in (tft, cft):
        tf.disable_tensor_equality()
        with tf.Graph().as_default():
            a = tf.constant(1.0)
            assert (a == a) is True and (a == tf.constant(1.0)) is False
