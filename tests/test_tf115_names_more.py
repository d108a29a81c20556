"""TF 1.15 names added by collflow/compat/tf115_more_names.py and friends, checked without
TensorFlow: tf.nn.compute_average_loss / scale_regularization_loss (closed form),
ctc_loss_v2 (a NumPy forward recursion; finite-difference gradients), ctc_beam_search_decoder_v2
(brute-force labelling probabilities), tf.strings.bytes_split, LinearOperatorHouseholder and
LinearOperatorCirculant2D/3D (dense NumPy matrices), the session handles, tf.sysconfig, the
library loaders, the equality / TensorShape switches and tf.train.SaverDef."""
import gc
import itertools
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gradcheck import Case, check_case  # noqa: E402

import collflow.compat.v1 as tf  # noqa: E402
from collflow import errors  # noqa: E402


def _run(fetches, feed_dict=None):
    with tf.Session() as s:
        return s.run(fetches, feed_dict=feed_dict)


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default() as g:
        yield g


# --- compute_average_loss / scale_regularization_loss --------------------------------------------
def test_compute_average_loss_values():
    loss = np.array([[1., 2.], [3., 4.], [5., 6.]], np.float32)
    w = np.array([[1.], [0.], [2.]], np.float32)
    out = _run([tf.nn.compute_average_loss(loss), tf.nn.compute_average_loss(loss, sample_weight=w),
                tf.nn.compute_average_loss(loss, global_batch_size=12),
                tf.nn.compute_average_loss(loss, sample_weight=2.0, global_batch_size=tf.constant(7))])
    np.testing.assert_allclose(out, [loss.sum() / 3, (loss * w).sum() / 3, loss.sum() / 12, 2 * loss.sum() / 7],
                               rtol=1e-6)
    assert tf.nn.compute_average_loss(loss).dtype == tf.float32


def test_compute_average_loss_dynamic_batch_and_errors():
    p = tf.placeholder(tf.float64, [None])
    avg = tf.nn.compute_average_loss(p)
    assert _run(avg, {p: [1., 2., 6.]}) == pytest.approx(3.0)
    assert np.isnan(_run(avg, {p: np.zeros([0])}))  # TF 1.15 divides by the zero batch
    with pytest.raises(ValueError, match="at least rank 1"):
        tf.nn.compute_average_loss(tf.constant(1.0))


def test_scale_regularization_loss_and_strategy_context():
    r = tf.nn.scale_regularization_loss([tf.constant(1.5), tf.constant(2.0)])
    assert _run(r) == pytest.approx(3.5)
    with tf.distribute.MirroredStrategy().scope():  # the cross-replica context: TF's RuntimeError
        with pytest.raises(RuntimeError, match="cross replica context"):
            tf.nn.compute_average_loss(tf.constant([1.0]))
        with pytest.raises(RuntimeError, match="cross replica context"):
            tf.nn.scale_regularization_loss(tf.constant(1.0))


# --- CTC ------------------------------------------------------------------------------------------
def _np_ctc(logits, labels, blank):
    """-log p(labels | logits [T, C]) by the forward recursion over the blank-extended labels."""
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    ext = [blank]
    for c in labels:
        ext += [c, blank]
    s_len, t_len = len(ext), len(logits)
    alpha = np.full(s_len, -np.inf)
    alpha[0] = lp[0, blank]
    if s_len > 1:
        alpha[1] = lp[0, ext[1]]
    for t in range(1, t_len):
        new = np.full(s_len, -np.inf)
        for s in range(s_len):
            terms = [alpha[s]] + ([alpha[s - 1]] if s > 0 else [])
            if s > 1 and ext[s] != blank and ext[s] != ext[s - 2]:
                terms.append(alpha[s - 2])
            new[s] = np.logaddexp.reduce(terms) + lp[t, ext[s]]
        alpha = new
    return -np.logaddexp(alpha[-1], alpha[-2] if s_len > 1 else -np.inf)


def _ctc_data(seed=0, t=7, b=3, c=5):
    rng = np.random.RandomState(seed)
    logits = rng.randn(t, b, c)
    labels = np.array([[1, 2, 2, 0], [3, 1, 0, 0], [4, 4, 1, 3]], np.int32)
    label_length = np.array([3, 2, 4], np.int32)
    logit_length = np.array([7, 5, 7], np.int32)
    return logits, labels, label_length, logit_length


def test_ctc_loss_v2_dense_blank_first_and_negative():
    logits, labels, ll, tl = _ctc_data()
    l0 = tf.nn.ctc_loss_v2(labels, tf.constant(logits), ll, tl)
    lab_last = np.where(labels == 4, 0, labels)  # no class 4 among them: blank -1 is class 4
    l4 = tf.nn.ctc_loss_v2(lab_last, tf.constant(logits), ll, tl, blank_index=-1)
    lbm = tf.nn.ctc_loss_v2(labels, tf.constant(logits.transpose(1, 0, 2)), ll, tl, logits_time_major=False)
    got0, got4, gotbm = _run([l0, l4, lbm])
    for b in range(3):
        x = logits[:tl[b], b]
        assert got0[b] == pytest.approx(_np_ctc(x, labels[b, :ll[b]], 0), rel=1e-6)
        assert got4[b] == pytest.approx(_np_ctc(x, lab_last[b, :ll[b]], 4), rel=1e-6)
    np.testing.assert_allclose(gotbm, got0, rtol=1e-10)


def test_ctc_loss_v2_sparse_labels():
    logits, labels, ll, tl = _ctc_data(1)
    idx = np.array([[b, i] for b in range(3) for i in range(ll[b])], np.int64)
    vals = np.array([labels[b, i] for b, i in idx], np.int32)
    sp = tf.SparseTensor(idx, vals, [3, 4])
    loss = tf.nn.ctc_loss_v2(sp, tf.constant(logits), None, tl, blank_index=0)
    got = _run(loss)
    for b in range(3):
        assert got[b] == pytest.approx(_np_ctc(logits[:tl[b], b], labels[b, :ll[b]], 0), rel=1e-6)
    with pytest.raises(ValueError, match="blank_index must be given"):
        tf.nn.ctc_loss_v2(sp, tf.constant(logits), None, tl)
    with pytest.raises(ValueError, match="label_length"):
        tf.nn.ctc_loss_v2(labels, tf.constant(logits), None, tl)
    with pytest.raises(ValueError, match="blank_index"):
        tf.nn.ctc_loss_v2(labels, tf.constant(logits), ll, tl, blank_index=5)


def test_ctc_loss_v2_gradient():
    _, labels, ll, tl = _ctc_data(2, t=5)
    tl = np.minimum(tl, 5)
    labels, ll = labels[:2, :3], np.array([3, 2], np.int32)
    check_case(Case("CTCLoss", lambda x: tf.nn.ctc_loss_v2(labels, x, ll, tl[:2], blank_index=2),
                    [(5, 2, 5)], rtol=1e-5, atol=1e-6, id="ctc_loss_v2 blank 2"))


def test_ctc_beam_search_decoder_v2_matches_brute_force():
    rng = np.random.RandomState(3)
    t, c = 3, 3  # classes 0, 1 and the blank 2
    logits = rng.randn(t, 1, c) * 2
    p = np.exp(logits[:, 0]) / np.exp(logits[:, 0]).sum(-1, keepdims=True)
    totals = {}
    for path in itertools.product(range(c), repeat=t):
        lab = tuple(k for i, k in enumerate(path) if k != c - 1 and (i == 0 or path[i - 1] != k))
        totals[lab] = totals.get(lab, 0.0) + np.prod([p[i, k] for i, k in enumerate(path)])
    best = sorted(totals.items(), key=lambda kv: -kv[1])[:2]
    (d0, d1), lp = tf.nn.ctc_beam_search_decoder_v2(tf.constant(logits), [t], beam_width=50, top_paths=2)
    v0, v1, lpv = _run([d0, d1, lp])
    assert tuple(v0.values) == best[0][0] and tuple(v1.values) == best[1][0]
    np.testing.assert_allclose(lpv[0], np.log([best[0][1], best[1][1]]), rtol=1e-5)


# --- tf.strings.bytes_split ---------------------------------------------------------------------
def test_bytes_split():
    vec = tf.strings.bytes_split(["hello", "", b"a\xffb"])
    scal = tf.strings.bytes_split("abc")
    mat = tf.strings.bytes_split([["ab", "c"], ["", "de"]])
    rag = tf.strings.bytes_split(tf.ragged.constant([["xy"], ["z", "uv"]]))
    v, s, m, r = _run([vec, scal, mat, rag])
    # fetched as bytes, as TF's: a byte that is no UTF-8 comes back as itself
    assert v.to_list() == [[b"h", b"e", b"l", b"l", b"o"], [], [b"a", b"\xff", b"b"]]
    assert list(s) == [b"a", b"b", b"c"] and s.ndim == 1
    assert m.to_list() == [[[b"a", b"b"], [b"c"]], [[], [b"d", b"e"]]]
    assert r.to_list() == [[[b"x", b"y"]], [[b"z"], [b"u", b"v"]]]
    with pytest.raises(ValueError, match="statically-known rank"):
        tf.strings.bytes_split(tf.placeholder(tf.string))


# --- linear operators ---------------------------------------------------------------------------
def test_householder_against_dense():
    rng = np.random.RandomState(4)
    v = rng.randn(2, 4)
    x = rng.randn(2, 4, 3)
    dense = np.eye(4) - 2 * v[:, :, None] * v[:, None, :] / (v * v).sum(-1)[:, None, None]
    op = tf.linalg.LinearOperatorHouseholder(v)
    assert op.shape.as_list() == [2, 4, 4] and op.is_self_adjoint and op.is_square
    assert op.is_positive_definite is False and op.adjoint() is op and op.inverse() is op
    out = _run([op.to_dense(), op.matmul(x), op.solve(x), op.matmul(np.swapaxes(x, -1, -2), adjoint_arg=True), op.determinant(),
                op.log_abs_determinant(), op.trace(), op.diag_part(), op.eigvals(), op.shape_tensor()])
    np.testing.assert_allclose(out[0], dense, atol=1e-12)
    np.testing.assert_allclose(out[1], dense @ x, atol=1e-12)
    np.testing.assert_allclose(out[2], np.linalg.solve(dense, x), atol=1e-10)
    np.testing.assert_allclose(out[3], dense @ x, atol=1e-12)
    np.testing.assert_allclose(out[4], np.linalg.det(dense), atol=1e-10)
    np.testing.assert_allclose(out[5], np.log(np.abs(np.linalg.det(dense))), atol=1e-10)
    np.testing.assert_allclose(out[6], np.trace(dense, axis1=1, axis2=2), atol=1e-12)
    np.testing.assert_allclose(out[7], np.diagonal(dense, axis1=1, axis2=2), atol=1e-12)
    np.testing.assert_allclose(out[8], np.linalg.eigvalsh(dense), atol=1e-10)
    assert out[9].tolist() == [2, 4, 4]


def test_householder_complex_and_hints():
    rng = np.random.RandomState(5)
    v = rng.randn(3) + 1j * rng.randn(3)
    u = v / np.linalg.norm(v)
    dense = np.eye(3) - 2 * np.outer(u, u.conj())
    op = tf.linalg.LinearOperatorHouseholder(v.astype(np.complex128))
    x = rng.randn(3, 2) + 1j * rng.randn(3, 2)
    d, y = _run([op.to_dense(), op.matmul(x)])
    np.testing.assert_allclose(d, dense, atol=1e-12)
    np.testing.assert_allclose(y, dense @ x, atol=1e-12)
    for kw, msg in [({"is_self_adjoint": False}, "always self adjoint"),
                    ({"is_positive_definite": True}, "non-positive definite"), ({"is_square": False}, "square")]:
        with pytest.raises(ValueError, match=msg):
            tf.linalg.LinearOperatorHouseholder([1., 0.], **kw)
    with pytest.raises(ValueError, match="at least 1 dimension"):
        tf.linalg.LinearOperatorHouseholder(1.0)
    with pytest.raises(errors.InvalidArgumentError):
        op.assert_positive_definite()


def test_householder_gradient():
    check_case(Case("MatMul", lambda v, x: tf.linalg.LinearOperatorHouseholder(v).matmul(x), [(2, 3), (2, 3, 2)],
                    low=0.5, high=2.0, id="householder matmul"))


def _block_circulant_dense(spec):
    """The matrix whose action is u -> ifftn(spec * fftn(u reshaped to the block shape))."""
    n = spec.size
    cols = []
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1
        cols.append(np.fft.ifftn(spec * np.fft.fftn(e.reshape(spec.shape))).reshape(-1))
    return np.stack(cols, axis=1)


def test_circulant_2d_3d_against_dense():
    rng = np.random.RandomState(6)
    spec2 = (rng.randn(2, 2, 3) + 1j * rng.randn(2, 2, 3)) + 2
    op2 = tf.linalg.LinearOperatorCirculant2D(spec2, input_output_dtype=tf.complex128)
    x = rng.randn(2, 6, 2) + 1j * rng.randn(2, 6, 2)
    dense = np.stack([_block_circulant_dense(s) for s in spec2])
    assert op2.shape.as_list() == [2, 6, 6] and op2.block_depth == 2 and op2.block_shape.as_list() == [2, 3]
    out = _run([op2.to_dense(), op2.matmul(x), op2.solve(x), op2.matmul(x, adjoint=True), op2.determinant(),
                op2.log_abs_determinant(), op2.trace(), op2.diag_part(), op2.convolution_kernel(),
                op2.shape_tensor()])
    np.testing.assert_allclose(out[0], dense, atol=1e-10)
    np.testing.assert_allclose(out[1], dense @ x, atol=1e-10)
    np.testing.assert_allclose(out[2], np.linalg.solve(dense, x), atol=1e-9)
    np.testing.assert_allclose(out[3], np.conj(np.swapaxes(dense, -1, -2)) @ x, atol=1e-10)
    np.testing.assert_allclose(out[4], np.linalg.det(dense), rtol=1e-9)
    np.testing.assert_allclose(out[5], np.log(np.abs(np.linalg.det(dense))), rtol=1e-9)
    np.testing.assert_allclose(out[6], np.trace(dense, axis1=1, axis2=2), atol=1e-10)
    np.testing.assert_allclose(out[7], np.diagonal(dense, axis1=1, axis2=2), atol=1e-10)
    np.testing.assert_allclose(out[8], np.fft.ifft2(spec2), atol=1e-12)
    assert out[9].tolist() == [2, 6, 6]
    spec3 = rng.rand(2, 2, 2) + 0.5  # real spectrum: a self-adjoint operator
    op3 = tf.linalg.LinearOperatorCirculant3D(spec3, input_output_dtype=tf.float64)
    x3 = rng.randn(8, 3)
    assert op3.is_self_adjoint and op3.shape.as_list() == [8, 8]
    d3, y3, det3 = _run([op3.to_dense(), op3.matmul(x3), op3.determinant()])
    np.testing.assert_allclose(d3, _block_circulant_dense(spec3).real, atol=1e-12)
    np.testing.assert_allclose(y3, _block_circulant_dense(spec3).real @ x3, atol=1e-12)
    assert det3 == pytest.approx(np.prod(spec3))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        tf.linalg.LinearOperatorCirculant2D(np.ones([3], np.complex64))
    with pytest.raises(ValueError, match="always square"):
        tf.linalg.LinearOperatorCirculant3D(np.ones([2, 2, 2], np.complex64), is_square=False)


def test_circulant_2d_gradient():
    check_case(Case("FFT2D", lambda s, x: tf.linalg.LinearOperatorCirculant2D(
        s, input_output_dtype=tf.float64).matmul(x), [(2, 2), (4, 2)], low=0.5, high=2.0, id="circulant2d matmul"))


# --- session handles ----------------------------------------------------------------------------
def test_session_handles_round_trip():
    a = tf.constant([[1., 2.], [3., 4.]])
    h = tf.get_session_handle(a * 10)
    with tf.Session() as s:
        hv = s.run(h)
        assert type(hv).__name__ == "TensorHandle" and str(hv) == hv.handle
        assert hv.handle.startswith("GetSessionHandle;0;") and hv.handle.endswith("device:CPU:0")
        p, x = tf.get_session_tensor(hv.handle, tf.float32)
        y = x + 1
        np.testing.assert_allclose(s.run(y, {p: hv.handle}), [[11., 21.], [31., 41.]])
        np.testing.assert_allclose(s.run(y, {p: hv}), [[11., 21.], [31., 41.]])  # the TensorHandle itself
        np.testing.assert_allclose(hv.eval(), [[10., 20.], [30., 40.]])
        b = a * 2  # a handle fed to an ordinary tensor: its stored value
        np.testing.assert_allclose(s.run(b, {a: hv}), [[20., 40.], [60., 80.]])
        nested = s.run({"k": [h]})
        assert type(nested["k"][0]).__name__ == "TensorHandle" and nested["k"][0].handle != hv.handle
        dp, dop = tf.delete_session_tensor(hv.handle)
        assert s.run(dop, {dp: hv.handle}) is None
        with pytest.raises(errors.InvalidArgumentError, match="not in the session store"):
            s.run(y, {p: hv.handle})
        with pytest.raises(errors.InvalidArgumentError, match="not in the session store"):
            s.run(dop, {dp: hv.handle})
        h2 = nested["k"][0]
        p2, x2 = tf.get_session_tensor(h2.handle, tf.int32)
        with pytest.raises(errors.InternalError, match="float32"):
            s.run(x2, {p2: h2.handle})
        h2.delete()
        with pytest.raises(TypeError, match="already been deleted"):
            h2.eval()
    with pytest.raises(TypeError, match="must be of type Tensor"):
        tf.get_session_handle(3.0)


def test_session_handles_are_per_session_and_collected_in_batches():
    h = tf.get_session_handle(tf.constant(5))
    with tf.Session() as s1, tf.Session() as s2:
        raw = s1.run(h).handle  # the TensorHandle object is garbage already
        p, x = tf.get_session_tensor(raw, tf.int32)
        assert s1.run(x, {p: raw}) == 5
        with pytest.raises(errors.InvalidArgumentError):
            s2.run(x, {p: raw})
        for _ in range(9):
            s1.run(h)  # ten dead handles: TF deletes them as a batch
        gc.collect()
        with pytest.raises(errors.InvalidArgumentError):
            s1.run(x, {p: raw})
        kept = s1.run(h)
        raw2 = kept.get_raw_handle()  # no automatic deletion any more
        del kept
        for _ in range(12):
            s1.run(h)
        gc.collect()
        assert s1.run(x, {p: raw2}) == 5


# --- sysconfig, loaders, switches, SaverDef -----------------------------------------------------
def test_sysconfig_and_library_loaders(tmp_path):
    import collflow
    pkg = os.path.dirname(os.path.abspath(collflow.__file__))
    assert tf.sysconfig.get_include() == pkg and tf.sysconfig.get_lib() == pkg
    assert tf.sysconfig.CXX11_ABI_FLAG == 0 and tf.sysconfig.MONOLITHIC_BUILD == 0
    for f in (tf.sysconfig.get_compile_flags, tf.sysconfig.get_link_flags):
        with pytest.raises(NotImplementedError, match="pure Python"):
            f()
    missing = str(tmp_path / "nope.so")
    for f in (tf.load_op_library, tf.load_file_system_library):
        with pytest.raises(errors.NotFoundError, match="cannot open shared object file"):
            f(missing)
    with pytest.raises(OSError, match="does not exist"):
        tf.load_library(missing)
    lib = tmp_path / "my_ops.so"
    lib.write_bytes(b"\x7fELF")
    for f in (tf.load_op_library, tf.load_file_system_library, tf.load_library):
        with pytest.raises(NotImplementedError, match="my_ops.so"):
            f(str(lib))


def test_equality_and_tensorshape_switches():
    a = tf.constant(1.0)
    tf.disable_tensor_equality()
    assert (a == a) is True and len({a, a}) == 1
    with pytest.raises(NotImplementedError, match="tf.equal"):
        tf.enable_tensor_equality()
    s = tf.TensorShape([2, None])
    try:
        tf.enable_v2_tensorshape()
        assert type(s[0]) is int and s[0] == 2 and s[1] is None
        assert tf.TensorShape(None)[0] is None
        assert tf.placeholder(tf.float32, [3, None]).shape[1] is None
    finally:
        tf.disable_v2_tensorshape()
    assert s[0].value == 2 and s[1].value is None


def test_saver_def():
    sd = tf.train.SaverDef(max_to_keep=3, version=tf.train.SaverDef.V2)
    assert (tf.train.SaverDef.LEGACY, tf.train.SaverDef.V1, tf.train.SaverDef.V2) == (0, 1, 2)
    assert sd.max_to_keep == 3 and sd.sharded is False and sd.filename_tensor_name == ""
    assert tf.train.SaverDef.CheckpointFormatVersion.Name(2) == "V2"
    assert tf.train.SaverDef.CheckpointFormatVersion.Value("V1") == 1
    other = tf.train.SaverDef()
    other.CopyFrom(sd)
    assert other == sd
    with pytest.raises(ValueError, match="no \"bogus\" field"):
        tf.train.SaverDef(bogus=1)
