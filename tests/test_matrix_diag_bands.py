"""tf.linalg.diag / diag_part / set_diag with a band of diagonals k, num_rows/num_cols,
padding_value and align (graph/ops/matrix_band_diag_ops.py), against a NumPy reference built
element by element from TF's documented definition (no TensorFlow needed)."""
import itertools

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import InvalidArgumentError

ALIGNS = ["LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT"]


# -- the reference: one element at a time -----------------------------------------------------


def _pair(k):
    return (k, k) if np.ndim(k) == 0 else (k[0], k[-1])


def _diag_len(rows, cols, d):
    return min(rows + min(d, 0), cols - max(d, 0))


def _offset(d, max_len, rows, cols, align):
    sup, sub = align.split("_")
    left = (d >= 0 and sup == "LEFT") or (d <= 0 and sub == "LEFT")
    return 0 if left else max_len - _diag_len(rows, cols, d)


def ref_diag(diag, k, num_rows=-1, num_cols=-1, pad=0.0, align="RIGHT_LEFT"):
    lo, hi = _pair(k)
    packed = diag[..., None, :] if lo == hi else diag
    max_len = packed.shape[-1]
    min_r, min_c = max_len - min(hi, 0), max_len + max(lo, 0)
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = max(min_r, min_c)
    elif num_rows == -1:
        num_rows = min_r
    elif num_cols == -1:
        num_cols = min_c
    batch = packed.shape[:-2]
    out = np.full(batch + (num_rows, num_cols), pad, dtype=diag.dtype)
    for b in np.ndindex(*batch):
        for i in range(num_rows):
            for j in range(num_cols):
                d = j - i
                if lo <= d <= hi:
                    out[b + (i, j)] = packed[b + (hi - d, min(i, j) + _offset(d, max_len, num_rows, num_cols, align))]
    return out


def ref_diag_part(x, k, pad=0.0, align="RIGHT_LEFT"):
    lo, hi = _pair(k)
    rows, cols = x.shape[-2:]
    max_len = min(rows + min(hi, 0), cols - max(lo, 0))
    batch = x.shape[:-2]
    out = np.full(batch + (hi - lo + 1, max_len), pad, dtype=x.dtype)
    for b in np.ndindex(*batch):
        for d in range(lo, hi + 1):
            off = _offset(d, max_len, rows, cols, align)
            for n in range(_diag_len(rows, cols, d)):
                out[b + (hi - d, n + off)] = x[b + (n - min(d, 0), n + max(d, 0))]
    return out[..., 0, :] if lo == hi else out


def ref_set_diag(x, diag, k, align="RIGHT_LEFT"):
    lo, hi = _pair(k)
    rows, cols = x.shape[-2:]
    max_len = min(rows + min(hi, 0), cols - max(lo, 0))
    packed = diag[..., None, :] if lo == hi else diag
    out = x.copy()
    for b in np.ndindex(*x.shape[:-2]):
        for d in range(lo, hi + 1):
            off = _offset(d, max_len, rows, cols, align)
            for n in range(_diag_len(rows, cols, d)):
                out[b + (n - min(d, 0), n + max(d, 0))] = packed[b + (hi - d, n + off)]
    return out


def _run(fetch, feed=None):
    with tf.Session() as s:
        return s.run(fetch, feed)


# -- the documented examples -------------------------------------------------------------------


def test_doc_example_band_of_three():
    # RIGHT_LEFT (the default): superdiagonals padded on the left, subdiagonals on the right
    diagonals = np.array([[[0, 8, 9], [1, 2, 3], [4, 5, 0]],
                          [[0, 2, 3], [6, 7, 9], [9, 1, 0]]], np.float32)
    with tf.Graph().as_default():
        out = _run(tf.linalg.diag(diagonals, k=(-1, 1)))
    want = np.array([[[1, 8, 0], [4, 2, 9], [0, 5, 3]],
                     [[6, 2, 0], [9, 7, 3], [0, 1, 9]]], np.float32)
    np.testing.assert_array_equal(out, want)


def test_doc_example_diag_part_left_right():
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    with tf.Graph().as_default():
        out = _run(tf.linalg.diag_part(x, k=(-1, 2), align="LEFT_RIGHT", padding_value=9))
    want = np.array([[3, 8, 9], [2, 7, 12], [1, 6, 11], [9, 5, 10]], np.float32)
    np.testing.assert_array_equal(out, want)


# -- random shapes against the reference --------------------------------------------------------


def _bands(rows, cols):
    """Some (k_low, k_high) valid for a rows x cols matrix, negative and positive."""
    ks = list(range(-rows + 1, cols))
    return [(a, b) for a, b in itertools.combinations_with_replacement(ks, 2)][::3] + [(ks[0], ks[-1])]


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (5, 2), (2, 3, 4), (2, 1, 4, 3), (1, 1)])
@pytest.mark.parametrize("align", ALIGNS)
def test_diag_part_and_set_diag(shape, align):
    r = np.random.default_rng(len(shape) * 10 + shape[-1])
    x = r.normal(size=shape).astype(np.float32)
    for lo, hi in _bands(*shape[-2:]):
        k = lo if lo == hi and lo % 2 else (lo, hi)
        want = ref_diag_part(x, k, pad=-7.0, align=align)
        new = r.normal(size=want.shape).astype(np.float32)
        with tf.Graph().as_default():
            part = tf.linalg.diag_part(x, k=k, padding_value=-7.0, align=align)
            assert part.shape.as_list() == list(want.shape)
            setd = tf.linalg.set_diag(x, new, k=k, align=align)
            got_part, got_set = _run([part, setd])
        np.testing.assert_array_equal(got_part, want, err_msg=f"k={k}")
        np.testing.assert_array_equal(got_set, ref_set_diag(x, new, k, align), err_msg=f"k={k}")


@pytest.mark.parametrize("align", ALIGNS)
@pytest.mark.parametrize("k", [0, 2, -3, (-1, 1), (1, 3), (-3, -2), (-2, 0), (0, 0), (4, 5)])
@pytest.mark.parametrize("size", ["auto", "rows", "cols", "both"])
def test_diag(align, k, size):
    lo, hi = _pair(k)
    r = np.random.default_rng(abs(lo) * 7 + abs(hi))
    max_len = 3
    shape = (2, max_len) if lo == hi else (2, hi - lo + 1, max_len)
    diag = r.normal(size=shape).astype(np.float32)
    min_r, min_c = max_len - min(hi, 0), max_len + max(lo, 0)
    rows, cols = {"auto": (-1, -1), "rows": (min_r + 2, -1), "cols": (-1, min_c + 1), "both": (min_r, min_c + 2)}[size]
    want = ref_diag(diag, k, rows, cols, pad=2.5, align=align)
    with tf.Graph().as_default():
        out = tf.linalg.diag(diag, k=k, num_rows=rows, num_cols=cols, padding_value=2.5, align=align)
        assert out.shape.as_list() == list(want.shape)
        np.testing.assert_array_equal(_run(out), want)
        # diag_part inverts diag (the padding of shorter diagonals comes back as the pad value)
        back = _run(tf.linalg.diag_part(out, k=k, padding_value=0.0, align=align))
    np.testing.assert_array_equal(back, ref_diag_part(want, k, 0.0, align))


def test_k_as_constant_tensor_and_compat_names():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    with tf.Graph().as_default():
        a = tf.matrix_diag_part(x, k=tf.constant([-1, 1]))
        b = tf.linalg.diag_part(x, k=tf.constant(2))
        c = tf.matrix_set_diag(x, np.zeros((2, 4), np.float32), k=[0, 1])
        d = tf.matrix_diag(np.ones((2, 3), np.float32), k=(0, 1))
        ga, gb, gc, gd = _run([a, b, c, d])
    np.testing.assert_array_equal(ga, ref_diag_part(x, (-1, 1)))
    np.testing.assert_array_equal(gb, ref_diag_part(x, 2))
    np.testing.assert_array_equal(gc, ref_set_diag(x, np.zeros((2, 4), np.float32), (0, 1)))
    np.testing.assert_array_equal(gd, ref_diag(np.ones((2, 3), np.float32), (0, 1)))


def test_run_time_padding_value_and_unknown_shapes():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [])
        ph = tf.placeholder(tf.float32, None)
        part = tf.linalg.diag_part(ph, k=(-2, 1), padding_value=p)
        assert part.shape.rank is None
        dg = tf.placeholder(tf.float32, [None, None])
        full = tf.linalg.diag(dg, k=(-1, 0), padding_value=p)
        assert full.shape.as_list() == [None, None]
        got, got_full = _run([part, full], {p: 5.0, ph: x, dg: np.ones((2, 3), np.float32)})
    np.testing.assert_array_equal(got, ref_diag_part(x, (-2, 1), 5.0))
    np.testing.assert_array_equal(got_full, ref_diag(np.ones((2, 3), np.float32), (-1, 0), pad=5.0))


def test_k_zero_keeps_the_fast_ops():
    with tf.Graph().as_default():
        assert tf.linalg.diag(np.ones(3, np.float32)).op.type == "MatrixDiag"
        assert tf.linalg.diag(np.ones(3, np.float32), k=(0, 0)).op.type == "MatrixDiag"
        assert tf.linalg.diag_part(np.ones((3, 4), np.float32), padding_value=3).op.type == "MatrixDiagPart"
        assert tf.linalg.set_diag(np.ones((3, 4), np.float32), np.ones(3, np.float32)).op.type == "MatrixSetDiag"
        assert tf.linalg.diag(np.ones(3, np.float32), num_rows=4).op.type == "MatrixDiagV3"
        assert tf.linalg.diag(np.ones(3, np.float32), padding_value=1).op.type == "MatrixDiagV3"


# -- gradients ---------------------------------------------------------------------------------


def test_gradients_by_linearity():
    """diag and diag_part are adjoint; set_diag's gradients split the output gradient."""
    r = np.random.default_rng(3)
    x = r.normal(size=(2, 4, 5))
    w = r.normal(size=(2, 4, 5))
    k, align = (-2, 1), "LEFT_RIGHT"
    part_shape = ref_diag_part(x, k).shape
    d = r.normal(size=part_shape)
    wd = r.normal(size=part_shape)
    with tf.Graph().as_default():
        xt, dt_ = tf.constant(x), tf.constant(d)
        gx_part = tf.gradients(tf.reduce_sum(tf.linalg.diag_part(xt, k=k, align=align, padding_value=4.0) * wd), xt)[0]
        gd_diag = tf.gradients(tf.reduce_sum(tf.linalg.diag(dt_, k=k, num_rows=4, num_cols=5, align=align,
                                                            padding_value=4.0) * w), dt_)[0]
        s = tf.linalg.set_diag(xt, dt_, k=k, align=align)
        gx_set, gd_set = tf.gradients(tf.reduce_sum(s * w), [xt, dt_])
        got = _run([gx_part, gd_diag, gx_set, gd_set])
    mask = ref_diag(np.ones(part_shape), k, 4, 5, 0.0, align)   # 1 on the band
    np.testing.assert_allclose(got[0], ref_diag(wd, k, 4, 5, 0.0, align) * np.broadcast_to(mask, x.shape))
    want_gd = ref_diag_part(w, k, 0.0, align)
    np.testing.assert_allclose(got[1], want_gd)
    np.testing.assert_allclose(got[2], w * (1 - mask))
    np.testing.assert_allclose(got[3], want_gd)


# -- errors ------------------------------------------------------------------------------------


def test_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="lower_diag_index"):
            tf.linalg.diag(np.ones((2, 3), np.float32), k=(1, 0))
        with pytest.raises(ValueError, match="at most 2"):
            tf.linalg.diag_part(np.ones((3, 3), np.float32), k=(0, 1, 2))
        with pytest.raises(ValueError, match="align"):
            tf.linalg.diag(np.ones(3, np.float32), k=1, align="UP_DOWN")
        with pytest.raises(ValueError, match="number of diagonals"):
            tf.linalg.diag(np.ones((3, 3), np.float32), k=(0, 1))
        with pytest.raises(ValueError, match="out of bound"):
            tf.linalg.diag_part(np.ones((3, 4), np.float32), k=4)
        with pytest.raises(ValueError, match="out of bound"):
            tf.linalg.set_diag(np.ones((3, 4), np.float32), np.ones(2, np.float32), k=-3)
        with pytest.raises(ValueError, match="too small"):
            tf.linalg.diag(np.ones(3, np.float32), num_rows=2)
        with pytest.raises(ValueError, match="not consistent"):
            tf.linalg.diag(np.ones(3, np.float32), num_rows=5, num_cols=5)
        with pytest.raises(ValueError, match="does not fit"):
            tf.linalg.set_diag(np.ones((3, 4), np.float32), np.ones((2, 2), np.float32), k=(-1, 0))
        with pytest.raises(NotImplementedError):
            tf.linalg.diag(np.ones(3, np.float32), k=tf.placeholder(tf.int32, []))
    # shapes known only at run time: the kernels check
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, None)
        d = tf.placeholder(tf.float32, None)
        with tf.Session() as s:
            with pytest.raises(InvalidArgumentError, match="out of bound"):
                s.run(tf.linalg.diag_part(x, k=(0, 5)), {x: np.ones((3, 3))})
            with pytest.raises(InvalidArgumentError, match="does not fit"):
                s.run(tf.linalg.set_diag(x, d, k=(0, 1)), {x: np.ones((3, 3)), d: np.ones((2, 2))})
            with pytest.raises(InvalidArgumentError, match="number of diagonals"):
                s.run(tf.linalg.diag(d, k=(0, 1)), {d: np.ones((3, 3))})
            with pytest.raises(InvalidArgumentError, match="not consistent"):
                s.run(tf.linalg.diag(d, k=0, num_rows=4, num_cols=4), {d: np.ones(3)})


def test_gradient_of_diagonals_outside_the_output_is_zero():
    """k reaching past the output matrix (its diagonals are dropped): their gradient is zero
    (TF's gradient raises 'out of bound' here)."""
    r = np.random.default_rng(5)
    d = r.normal(size=(2, 4, 2))          # k = (0, 3), diagonals of length 2: a 2 x 2 output
    w = r.normal(size=(2, 2, 2))
    with tf.Graph().as_default():
        dt_ = tf.constant(d)
        out = tf.linalg.diag(dt_, k=(0, 3), align="LEFT_LEFT")
        assert out.shape.as_list() == [2, 2, 2]
        g = _run(tf.gradients(tf.reduce_sum(out * w), dt_)[0])
    want = np.zeros_like(d)
    want[:, 3] = w[:, [0, 1], [0, 1]]      # row k_high - 0 = 3: the main diagonal
    want[:, 2, 0] = w[:, 0, 1]             # row 2: diagonal 1, one element, left-aligned
    np.testing.assert_allclose(g, want)
