"""By-hand checks (no TensorFlow needed) of the structural and indexing behaviours that the
randomised comparison (test_vs_tensorflow_index_fuzz.py) found wrong; each states TF's rule
and the expected numbers, computed independently with NumPy."""
import numpy as np
import pytest

import collflow.compat.v1 as tf


def _run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


def _graph(fn):
    g = tf.Graph()
    with g.as_default():
        return fn()


# -- empty tensors: reductions and gradients ------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 0), (2, 0, 3), (3, 0), (1, 1, 0)])
def test_gradients_through_empty_tensors(shape):
    # d/dx sum((x * x) * x) of an empty x is an empty zero tensor; the broadcast gradient's
    # reduction over leading axes of an empty tensor must not try a (-1, 0) view
    def build():
        x = tf.placeholder(tf.float32, shape)
        b = tf.placeholder(tf.float32, shape[-1:])
        y = tf.nn.bias_add(x, b) * x
        gx, gb = tf.gradients(tf.reduce_sum(y * y), [x, b])
        s = tf.reduce_sum(x, axis=0)
        with tf.Session() as sess:
            return sess.run([gx, gb, s], {x: np.zeros(shape, np.float32), b: np.zeros(shape[-1:], np.float32)})
    gx, gb, s = _graph(build)
    assert gx.shape == shape and gb.shape == shape[-1:] and s.shape == shape[1:]
    assert not gx.any() and not gb.any()


def test_gather_gradient_with_empty_slices():
    # gather along axis 0 of params [4, 0]: the IndexedSlices gradient has [n, 0] values
    def build():
        p = tf.placeholder(tf.float32, [4, 0])
        out = tf.gather(p, [[1, 2], [3, 3]])
        (g,) = tf.gradients(tf.reduce_sum(out), [p])
        return _run([out, tf.convert_to_tensor(g)], {p: np.zeros((4, 0), np.float32)})
    out, g = _graph(build)
    assert out.shape == (2, 2, 0) and g.shape == (4, 0)


def test_gather_of_an_empty_result_checks_no_index():
    # TF's GatherV2 reads nothing (and so checks no index) when the result is empty
    def build():
        p = tf.placeholder(tf.float32, [4, 0, 2])
        out = tf.gather(p, [7, -1], axis=2)
        out0 = tf.gather(p, [9])
        (g,) = tf.gradients(tf.reduce_sum(out0), [p])
        return _run([out, out0, tf.convert_to_tensor(g)], {p: np.zeros((4, 0, 2), np.float32)})
    out, out0, g = _graph(build)
    assert out.shape == (4, 0, 2) and out0.shape == (1, 0, 2) and g.shape == (4, 0, 2)


def test_unsorted_segment_sum_gradient_with_no_segments():
    def build():
        x = tf.placeholder(tf.float32, [1, 0, 3])
        y = tf.math.unsorted_segment_sum(x, [-1], 0)
        (g,) = tf.gradients(tf.reduce_sum(y), [x])
        return _run([y, g], {x: np.zeros((1, 0, 3), np.float32)})
    y, g = _graph(build)
    assert y.shape == (0, 0, 3) and g.shape == (1, 0, 3)


# -- slicing --------------------------------------------------------------------------------
def test_strided_slice_with_constant_tensor_bounds_and_masks():
    # begin/end/strides given as constant tensors act as the Python values (masks included)
    x = np.arange(20, dtype=np.float32).reshape(5, 4)

    def build():
        t = tf.constant(x)
        a = tf.strided_slice(t, tf.constant([4, 1]), tf.constant([0, 0]), tf.constant([-2, 2]), end_mask=2)
        b = tf.strided_slice(t, tf.constant([0, 0], tf.int64), tf.constant([0, 0], tf.int64),
                             tf.constant([1, -1], tf.int64), begin_mask=3, end_mask=3, new_axis_mask=0)
        c = tf.strided_slice(t, tf.constant([0, 2]), tf.constant([0, 3]), tf.constant([1, 1]), ellipsis_mask=1,
                             shrink_axis_mask=2)
        return _run([a, b, c])
    a, b, c = _graph(build)
    np.testing.assert_array_equal(a, x[4:0:-2, 1::2])
    np.testing.assert_array_equal(b, x[:, ::-1])
    np.testing.assert_array_equal(c, x[..., 2])


def test_strided_slice_shrink_with_a_negative_stride_is_an_error():
    # TF: "only stride 1 allowed on non-range indexing" (a positive stride is ignored there)
    def build():
        t = tf.constant(np.arange(5.0, dtype=np.float32))
        with pytest.raises(ValueError, match="stride"):
            tf.strided_slice(t, [1], [2], [-1], shrink_axis_mask=1)
        return _run(tf.strided_slice(t, [1], [2], [2], shrink_axis_mask=1))
    assert _graph(build) == 1.0


# -- where / squeeze / sequence_mask / searchsorted -------------------------------------------
def test_where_v2_gradient_broadcasts_plainly():
    # out[i, j] = c[j] ? x[i, 0] : y; with weights w[i, j] = j + 1: dx[i] = sum of w over the
    # true columns (1 + 3), dy = sum over the false ones (2 per row, 3 rows)
    def build():
        c = tf.constant([True, False, True])
        x = tf.constant([[1.0], [2.0], [3.0]])
        y = tf.constant(10.0)
        o = tf.where_v2(c, x, y)
        gx, gy = tf.gradients(tf.reduce_sum(o * tf.constant([[1.0, 2.0, 3.0]] * 3)), [x, y])
        return _run([o, gx, gy])
    o, gx, gy = _graph(build)
    np.testing.assert_array_equal(o, [[1, 10, 1], [2, 10, 2], [3, 10, 3]])
    np.testing.assert_array_equal(gx, [[4.0], [4.0], [4.0]])
    assert gy == 6.0


def test_squeeze_with_empty_axis_list_squeezes_all():
    # TF: squeeze_dims=[] means every size-1 dimension
    out = _graph(lambda: _run(tf.squeeze(tf.zeros([1, 2, 1, 3]), [])))
    assert out.shape == (2, 3)


def test_sequence_mask_of_no_lengths_and_float_lengths():
    def build():
        empty = tf.sequence_mask(tf.zeros([3, 0], tf.int64))          # maxlen max(no lengths) -> 0
        fl = tf.sequence_mask([1.5, 2.0])                              # maxlen 2.0: j < 1.5, j < 2
        fl3 = tf.sequence_mask([1.5, 2.0], 3)                          # lengths cast to int: 1, 2
        return _run([empty, fl, fl3])
    empty, fl, fl3 = _graph(build)
    assert empty.shape == (3, 0, 0)
    np.testing.assert_array_equal(fl, [[True, True], [True, True]])
    np.testing.assert_array_equal(fl3, [[True, False, False], [True, True, False]])


def test_searchsorted_with_empty_rows_or_values():
    def build():
        a = tf.searchsorted(tf.constant([[1.0, 2.0], [0.0, 5.0]]), tf.zeros([2, 0]))
        b = tf.searchsorted(tf.zeros([2, 0]), tf.constant([[1.0, 2.0], [3.0, 4.0]]), side="right")
        return _run([a, b])
    a, b = _graph(build)
    assert a.shape == (2, 0)
    np.testing.assert_array_equal(b, np.zeros((2, 2), np.int32))


# -- reverse / band_part / where(c) / histogram -----------------------------------------------
def test_reverse_with_a_constant_axis_tensor_and_bad_axes():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def build():
        t = tf.constant(x)
        out = tf.reverse(t, tf.constant([-1], tf.int64))
        with pytest.raises(ValueError, match="more than once"):
            tf.reverse(t, [1, -1])
        with pytest.raises(ValueError, match="out of range"):
            tf.reverse(t, [2])
        fed = tf.placeholder(tf.int32, [1])  # an axis computed at run time, as TF1 takes it
        late = tf.reverse(t, fed)
        with tf.Session() as s:
            np.testing.assert_array_equal(s.run(late, {fed: [0]}), x[::-1])
        return _run(out)
    np.testing.assert_array_equal(_graph(build), x[:, ::-1])


def test_matrix_band_part_wider_than_the_matrix_is_an_error():
    # TF: num_lower <= rows and num_upper <= cols (negative: the whole triangle)
    def build():
        x = tf.ones([2, 2, 3])
        ok = tf.matrix_band_part(x, 2, 3)
        with tf.Session() as s:
            got = s.run(ok)
            for lo, hi in ((3, 0), (0, 4)):
                with pytest.raises(tf.errors.InvalidArgumentError, match="num_lower"):
                    s.run(tf.matrix_band_part(x, lo, hi))
        return got
    np.testing.assert_array_equal(_graph(build), np.ones((2, 2, 3)))


def test_where_of_a_scalar_condition_is_an_error():
    def build():
        with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError, match="scalar"):
            s.run(tf.where(tf.constant(True)))
    _graph(build)


def test_histogram_fixed_width_checks_range_and_bins():
    def build():
        v = tf.constant([0.0, 1.0, 2.0, 5.0])
        with pytest.raises(ValueError, match="nbins"):
            tf.histogram_fixed_width(v, [0.0, 4.0], nbins=0)
        with tf.Session() as s:
            got = s.run(tf.histogram_fixed_width(v, [0.0, 4.0], nbins=4))
            with pytest.raises(tf.errors.InvalidArgumentError, match="value_range"):
                s.run(tf.histogram_fixed_width(v, [4.0, 4.0], nbins=4))
        return got
    np.testing.assert_array_equal(_graph(build), [1, 1, 1, 1])


# -- gather / gather_nd with batch_dims ----------------------------------------------------
def _np_gather_batched(p, idx, axis, b):
    """out[b.., m.., i.., r..] = p[b.., m.., idx[b.., i..], r..] by loops over the batch."""
    if b == 0:
        return np.take(p, idx, axis=axis)
    return np.stack([_np_gather_batched(p[k], idx[k], axis - 1, b - 1) for k in range(p.shape[0])])


@pytest.mark.parametrize("pshape,ishape,axis,b", [
    ((3, 4), (3, 2), 1, 1), ((2, 3, 4), (2, 5), 2, 1), ((2, 3, 4, 2), (2, 3), 2, 1),
    ((2, 3, 4), (2, 3, 2), 2, 2), ((2, 3, 4), (2, 3, 2), -1, -1), ((2, 0, 4), (2, 3), 2, 1)])
def test_gather_with_batch_dims(pshape, ishape, axis, b):
    r = np.random.default_rng(3)
    p = r.normal(size=pshape).astype(np.float32)
    ax = axis % len(pshape)
    bb = b % len(ishape) if b < 0 else b
    idx = r.integers(0, pshape[ax], ishape).astype(np.int64)

    def build():
        pt = tf.placeholder(tf.float32, pshape)
        out = tf.gather(pt, idx, axis=axis, batch_dims=b)
        (g,) = tf.gradients(tf.reduce_sum(out), [pt])
        return _run([out, tf.convert_to_tensor(g)], {pt: p})
    out, g = _graph(build)
    want = _np_gather_batched(p, idx, ax, bb)
    np.testing.assert_array_equal(out, want)
    # the gradient of the sum: how often each entry was gathered
    counts = _np_gather_batched(np.arange(p.size).reshape(pshape), idx, ax, bb).reshape(-1)
    np.testing.assert_array_equal(g.reshape(-1), np.bincount(counts, minlength=p.size))


def test_gather_with_axis_0_ignores_batch_dims():
    # TF's gather takes a given axis of 0 as a plain gather whatever batch_dims says
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = _graph(lambda: _run(tf.gather(tf.constant(x), [[0], [1], [2]], axis=0, batch_dims=1)))
    np.testing.assert_array_equal(out, x[[[0], [1], [2]]])


def test_gather_nd_with_batch_dims():
    r = np.random.default_rng(4)
    p = r.normal(size=(2, 3, 4, 5)).astype(np.float32)
    idx = np.array([[[0, 1], [2, 3]], [[1, 0], [0, 3]]], np.int32)  # [batch 2, 2 vectors, K=2]

    def build():
        pt = tf.placeholder(tf.float32, p.shape)
        out = tf.gather_nd(pt, idx, batch_dims=1)
        (g,) = tf.gradients(tf.reduce_sum(out), [pt])
        with pytest.raises(ValueError, match="batch_dims"):
            tf.gather_nd(pt, idx, batch_dims=3)
        return _run([out, g], {pt: p})
    out, g = _graph(build)
    want = np.stack([np.stack([p[b][tuple(v)] for v in idx[b]]) for b in range(2)])
    np.testing.assert_array_equal(out, want)
    ones = np.zeros_like(p)
    for b in range(2):
        for v in idx[b]:
            ones[b][tuple(v)] += 1
    np.testing.assert_array_equal(g, ones)


# -- space_to_batch_nd on empty dimensions, scatters into empty tensors --------------------
def test_space_to_batch_nd_with_an_empty_dimension():
    def build():
        x = tf.zeros([2, 3, 0])
        y = tf.space_to_batch_nd(x, [3, 3], [[2, 1], [0, 0]])   # padded [6, 0] -> blocks [2, 0]
        z = tf.batch_to_space_nd(y, [3, 3], [[2, 1], [0, 0]])
        return _run([y, z])
    y, z = _graph(build)
    assert y.shape == (18, 2, 0) and z.shape == (2, 3, 0)


def test_scatters_into_an_empty_tensor_with_indices_are_errors():
    # TF's shape check: "Indices and updates specified for empty output/input"
    def build():
        with pytest.raises(ValueError, match="empty"):
            tf.scatter_nd([[0]], tf.zeros([1, 0]), [2, 0])
        with pytest.raises(ValueError, match="empty"):
            tf.tensor_scatter_nd_add(tf.zeros([2, 0]), [[0]], tf.zeros([1, 0]))
        with pytest.raises(ValueError, match="empty"):
            tf.tensor_scatter_nd_max(tf.zeros([2, 0]), [[0]], tf.zeros([1, 0]))
        # no indices: fine
        return _run(tf.scatter_nd(tf.zeros([0, 1], tf.int32), tf.zeros([0, 0]), [2, 0]))
    assert _graph(build).shape == (2, 0)


def test_slice_with_run_time_begin_and_size_is_checked():
    # TF's Slice: 0 <= begin <= begin + size <= dim (size -1: to the end), else an error
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def build():
        b = tf.placeholder(tf.int32, [2])
        n = tf.placeholder(tf.int32, [2])
        out = tf.slice(tf.constant(x), b, n)
        with tf.Session() as s:
            got = s.run(out, {b: [1, 1], n: [-1, 2]})
            for bb, nn in (([0, 0], [4, 1]), ([-1, 0], [1, 1]), ([0, 3], [1, 2]), ([0, 0], [1, -2])):
                with pytest.raises(tf.errors.InvalidArgumentError, match="begin"):
                    s.run(out, {b: bb, n: nn})
        return got
    np.testing.assert_array_equal(_graph(build), x[1:, 1:3])


def test_run_time_scalar_index_counts_from_the_end():
    # x[i] with a fed i: a negative i counts from the end; out of [-dim, dim) is an error,
    # even where an earlier slice left nothing to read
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def build():
        i = tf.placeholder(tf.int64, [])
        t = tf.constant(x)
        out, empty = t[:, i], t[2:1, i]
        with tf.Session() as s:
            got = [s.run(out, {i: -1}), s.run(out, {i: 2})]
            for bad in (4, -5):
                with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
                    s.run(out, {i: bad})
                with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
                    s.run(empty, {i: bad})
        return got
    a, b = _graph(build)
    np.testing.assert_array_equal(a, x[:, -1])
    np.testing.assert_array_equal(b, x[:, 2])


def test_gather_gradient_of_complex_params_densifies():
    # d/dp sum(real(g * conj(g))) for g = gather(p, [0, 0, 2]) is 2 * count * p
    p = np.array([1 + 2j, 3 - 1j, -2 + 0.5j], np.complex64)

    def build():
        pt = tf.placeholder(tf.complex64, [3])
        out = tf.gather(pt, [0, 0, 2])
        (g,) = tf.gradients(tf.reduce_sum(tf.math.real(out * tf.math.conj(out))), [pt])
        return _run(tf.convert_to_tensor(g), {pt: p})
    np.testing.assert_allclose(_graph(build), 2 * np.array([2, 0, 1]) * p, rtol=1e-6)


def test_list_arguments_take_the_ops_index_dtypes():
    # TF converts a Python/NumPy partitions to int32 and seq_lengths (even empty) to int64
    x = np.arange(8, dtype=np.float32).reshape(4, 2)

    def build():
        a, b = tf.dynamic_partition(tf.constant(x), np.array([1, 0, 1, 1], np.int64), 2)
        r = tf.reverse_sequence(tf.zeros([0, 3]), [], seq_axis=1, batch_axis=0)
        return _run([a, b, r])
    a, b, r = _graph(build)
    np.testing.assert_array_equal(a, x[[1]])
    np.testing.assert_array_equal(b, x[[0, 2, 3]])
    assert r.shape == (0, 3)


def test_sparse_gradients_with_int32_and_int64_indices_add_up():
    # two gathers of one params with int64 and int32 indices: TF casts the indices to int64
    # and concatenates; d/dp of sum(gather(p, [0, 1, 1])) + 2 * sum(gather(p, [3, 1])) counts
    # 1 at row 0, 1 + 1 + 2 at row 1, 2 at row 3
    def build():
        p = tf.placeholder(tf.float32, [4, 2])
        a = tf.gather(p, np.array([0, 1, 1], np.int64))
        b = tf.gather(p, np.array([3, 1], np.int32))
        (g,) = tf.gradients(tf.reduce_sum(a) + 2.0 * tf.reduce_sum(b), [p])
        return _run(tf.convert_to_tensor(g), {p: np.zeros((4, 2), np.float32)})
    np.testing.assert_array_equal(_graph(build), [[1, 1], [4, 4], [0, 0], [2, 2]])
