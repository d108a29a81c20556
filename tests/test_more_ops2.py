"""TensorFlow 1.x's remaining common ops (TF1 fidelity, part 3) against closed forms, NumPy and
TF1's documented behaviour: division and rounding, erf / atan2, count_nonzero, linspace,
einsum / tensordot and the diagonal ops, gather_nd / scatter_nd / boolean_mask /
sparse_to_dense, the segment reductions, multinomial, tf.Print / tf.print, the assertions and
check_numerics, the extra activations, lrn, conv2d_transpose and the image resizes.

Gradients against finite differences live in gradtable_more.py; the same ops against real
TensorFlow in tf1/test_vs_tensorflow_more.py.
"""
import math

import numpy as np
import pytest

import collflow as cf
import collflow.compat.v1 as tf

RNG = np.random.default_rng(11)


def _run(fetches, feed=None, graph=None):
    with cf.Session(graph=graph or cf.get_default_graph()) as s:
        return s.run(fetches, feed)


@pytest.fixture(autouse=True)
def _fresh_graph():
    g = cf.Graph()
    with g.as_default():
        yield g


# -- division and rounding ------------------------------------------------------------------------


def test_div_is_python2_division_and_the_integer_variants_round_as_documented():
    a = cf.constant([-7, 7, -8, 6])
    b = cf.constant([2, -2, 3, 4])
    x, y = cf.constant([-7.0, 7.0]), cf.constant([2.0, -2.0])
    outs = [tf.div(a, b), tf.div(x, y), tf.realdiv(x, y), tf.truncatediv(a, b), tf.truncatemod(a, b),
            tf.floormod(a, b), tf.truncatediv(x, y)]
    assert outs[0].dtype == cf.int32 and outs[1].dtype == cf.float32
    v = _run(outs)
    np.testing.assert_array_equal(v[0], [-4, -4, -3, 1])        # floor division for integers
    np.testing.assert_array_equal(v[1], [-3.5, -3.5])            # true division for floats
    np.testing.assert_array_equal(v[2], [-3.5, -3.5])
    np.testing.assert_array_equal(v[3], [-3, -3, -2, 1])         # toward zero, as C
    np.testing.assert_array_equal(v[4], [-1, 1, -2, 2])          # sign of x
    np.testing.assert_array_equal(v[5], [1, -1, 1, 2])           # sign of y
    np.testing.assert_array_equal(v[6], [-3.0, -3.0])


@pytest.mark.host_only("TF's CPU kernels raise on an integer division by zero; its GPU kernels do not check (a check would synchronize the device)")
def test_integer_division_by_zero_is_an_error():
    t = tf.truncatediv(cf.constant([4, 5]), cf.constant([2, 0]))
    with pytest.raises(cf.InvalidArgumentError, match="Integer division by zero"):
        _run(t)


def test_rounding_ops_round_halves_to_even():
    x = cf.constant([0.5, 1.5, 2.5, -0.5, -1.5, -2.7, 2.2])
    v = _run([tf.round(x), tf.rint(x), tf.floor(x), tf.ceil(x)])
    np.testing.assert_array_equal(v[0], [0, 2, 2, -0, -2, -3, 2])
    np.testing.assert_array_equal(v[1], v[0])
    np.testing.assert_array_equal(v[2], [0, 1, 2, -1, -2, -3, 2])
    np.testing.assert_array_equal(v[3], [1, 2, 3, -0, -1, -2, 3])
    ints = cf.constant([1, 2])
    assert tf.round(ints) is ints                                 # TensorFlow returns integers as they are
    with pytest.raises(cf.InvalidArgumentError, match="floating-point"):
        tf.floor(ints)
    assert cf.gradients(tf.reduce_sum(tf.floor(x)), x) == [None]  # no gradient, as TensorFlow


def test_is_nan_is_finite_is_inf():
    x = cf.constant([np.nan, np.inf, -np.inf, 1.0, 0.0])
    v = _run([tf.is_nan(x), tf.is_finite(x), tf.is_inf(x)])
    np.testing.assert_array_equal(v[0], [True, False, False, False, False])
    np.testing.assert_array_equal(v[1], [False, False, False, True, True])
    np.testing.assert_array_equal(v[2], [False, True, True, False, False])
    with pytest.raises(cf.InvalidArgumentError, match="floating-point"):
        tf.is_nan(cf.constant([1]))


# -- erf, atan2, count_nonzero, linspace ---------------------------------------------------------


def test_erf_matches_math_erf_in_float64_and_float32():
    xs = np.concatenate([np.linspace(-6, 6, 2001), [0.0, 1e-300, -1e-8, 30.0, -np.inf, np.inf]])
    ref = np.array([math.erf(v) for v in xs])
    v64, v32 = _run([tf.erf(cf.constant(xs)), tf.erf(cf.constant(xs.astype(np.float32)))])
    np.testing.assert_allclose(v64, ref, rtol=2e-15, atol=1e-300)
    assert np.max(np.abs(v32 - ref.astype(np.float32))) <= np.finfo(np.float32).eps
    assert np.isnan(_run(tf.erf(cf.constant([np.nan])))[0])


def test_atan2_covers_all_quadrants():
    y = np.array([1.0, 1.0, -1.0, -1.0, 0.0, 2.0], np.float32)
    x = np.array([1.0, -1.0, -1.0, 1.0, -1.0, 0.0], np.float32)
    np.testing.assert_allclose(_run(tf.atan2(cf.constant(y), cf.constant(x))), np.arctan2(y, x), rtol=1e-6)


def test_count_nonzero_dtype_axis_and_bools():
    x = cf.constant([[0.0, 1.5, 0.0], [2.0, -1.0, 0.0]])
    a, b, c, d = tf.count_nonzero(x), tf.count_nonzero(x, axis=1, keepdims=True), \
        tf.count_nonzero(cf.constant([True, False, True])), tf.count_nonzero(x, 0, dtype=cf.int32)
    assert (a.dtype, d.dtype) == (cf.int64, cf.int32)
    assert b.shape.as_list() == [2, 1]
    va, vb, vc, vd = _run([a, b, c, d])
    assert va == 3 and vc == 2
    np.testing.assert_array_equal(vb, [[1], [2]])
    np.testing.assert_array_equal(vd, [1, 2, 0])


def test_linspace_values_static_shape_and_errors():
    a, b = tf.linspace(1.0, 2.0, 5), tf.lin_space(cf.constant(3.0, cf.float64), 3.5, 1)
    n = cf.placeholder(cf.int32, ())
    c = tf.linspace(0.0, 1.0, n)
    assert a.shape.as_list() == [5] and c.shape.as_list() == [None] and b.dtype == cf.float64
    va, vb, vc = _run([a, b, c], {n: 3})
    np.testing.assert_allclose(va, [1.0, 1.25, 1.5, 1.75, 2.0])
    np.testing.assert_array_equal(vb, [3.0])
    np.testing.assert_array_equal(vc, [0.0, 0.5, 1.0])
    with pytest.raises(cf.InvalidArgumentError, match="num > 0"):
        tf.linspace(0.0, 1.0, 0)
    with pytest.raises(cf.InvalidArgumentError, match="num > 0"):
        _run(c, {n: 0})


# -- matrices and contractions ------------------------------------------------------------------


def test_eye_static_batched_and_run_time_sizes():
    n = cf.placeholder(cf.int32, ())
    a, b, c = tf.eye(2), tf.eye(2, 3, batch_shape=[2], dtype=cf.int32), tf.eye(n, 2)
    assert b.shape.as_list() == [2, 2, 3] and c.shape.as_list() == [None, 2]
    va, vb, vc = _run([a, b, c], {n: 3})
    np.testing.assert_array_equal(va, np.eye(2))
    np.testing.assert_array_equal(vb, np.broadcast_to(np.eye(2, 3), (2, 2, 3)))
    np.testing.assert_array_equal(vc, np.eye(3, 2))


def test_meshgrid_xy_and_ij_match_numpy():
    x, y, z = np.arange(3.0), np.arange(10.0, 12.0), np.arange(4.0)
    xy = tf.meshgrid(cf.constant(x), cf.constant(y))
    ij = tf.meshgrid(cf.constant(x), cf.constant(y), cf.constant(z), indexing="ij")
    assert xy[0].shape.as_list() == [2, 3] and ij[2].shape.as_list() == [3, 2, 4]
    for got, want in zip(_run(xy + ij), np.meshgrid(x, y) + np.meshgrid(x, y, z, indexing="ij")):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("eq, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), ("i,j->ij", [(2,), (3,)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ijk->", [(2, 3, 4)]), ("a b c, c d -> a d b", [(2, 3, 4), (4, 5)]),
])
def test_einsum_matches_numpy(eq, shapes):
    xs = [RNG.standard_normal(s) for s in shapes]
    out = tf.einsum(eq, *[cf.constant(x) for x in xs])
    want = np.einsum(eq.replace(" ", ""), *xs)
    assert out.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(_run(out), want, rtol=1e-12)


def test_einsum_errors_name_the_problem():
    a = cf.constant(np.ones((2, 3)))
    with pytest.raises(cf.InvalidArgumentError, match="2 operands, 1 tensors"):
        tf.einsum("ij,jk->ik", a)
    with pytest.raises(cf.InvalidArgumentError, match="do not match an operand of rank 2"):
        tf.einsum("ijk->i", a)
    with pytest.raises(cf.InvalidArgumentError, match="appear in no input"):
        tf.einsum("ij->iz", a)
    with pytest.raises(cf.InvalidArgumentError, match="label 'j' has size 3 in one operand and 2"):
        tf.einsum("ij,jk->ik", a, a)
    p = cf.placeholder(cf.float64, (None, 2))
    bad = tf.einsum("ij,jk->ik", a, p)
    with pytest.raises(cf.InvalidArgumentError, match="label 'j' has size 3 in one operand and 2"):
        _run(bad, {p: np.ones((2, 2))})


def test_tensordot_matches_numpy():
    a, b = RNG.standard_normal((3, 2, 4)), RNG.standard_normal((4, 3, 5))
    outs = [tf.tensordot(cf.constant(a), cf.constant(b), [[0, 2], [1, 0]]),
            tf.tensordot(cf.constant(a), cf.constant(b), 1),
            tf.tensordot(cf.constant(a[0]), cf.constant(b[0]), 0),
            tf.tensordot(cf.constant(a), cf.constant(b), [-1, 0])]
    wants = [np.tensordot(a, b, [[0, 2], [1, 0]]), np.tensordot(a, b, 1), np.tensordot(a[0], b[0], 0),
             np.tensordot(a, b, [[2], [0]])]
    for got, want in zip(_run(outs), wants):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(cf.InvalidArgumentError, match="axes"):
        tf.tensordot(cf.constant(a), cf.constant(b), [[0], [0, 1]])


def test_diagonal_ops_match_numpy():
    d = RNG.standard_normal((2, 3))
    m = RNG.standard_normal((2, 3, 4))
    outs = [tf.diag(cf.constant(d)), tf.diag_part(cf.constant(np.arange(16.0).reshape(2, 2, 2, 2))),
            tf.matrix_diag(cf.constant(d)), tf.matrix_diag_part(cf.constant(m)),
            tf.matrix_set_diag(cf.constant(m), cf.constant(d))]
    v = _run(outs)
    want_diag = np.zeros((2, 3, 2, 3))
    for i in range(2):
        for j in range(3):
            want_diag[i, j, i, j] = d[i, j]
    np.testing.assert_array_equal(v[0], want_diag)
    np.testing.assert_array_equal(v[1], [[0.0, 5.0], [10.0, 15.0]])
    np.testing.assert_array_equal(v[2], np.stack([np.diag(r) for r in d]))
    np.testing.assert_array_equal(v[3], np.diagonal(m, axis1=-2, axis2=-1))
    want_set = m.copy()
    for b in range(2):
        want_set[b][np.arange(3), np.arange(3)] = d[b]
    np.testing.assert_array_equal(v[4], want_set)
    with pytest.raises(cf.InvalidArgumentError, match="even rank"):
        tf.diag_part(cf.constant(np.ones((2, 3, 4))))


# -- gathering and scattering -------------------------------------------------------------------


def test_gather_nd_and_scatter_nd_match_numpy():
    p = np.arange(24.0).reshape(2, 3, 4)
    g = tf.gather_nd(cf.constant(p), [[1, 2], [0, 0]])
    h = tf.gather_nd(cf.constant(p), [[[1, 2, 3]], [[0, 1, 0]]])
    s = tf.scatter_nd([[1], [3], [1]], cf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), [4, 2])
    assert g.shape.as_list() == [2, 4] and h.shape.as_list() == [2, 1] and s.shape.as_list() == [4, 2]
    vg, vh, vs = _run([g, h, s])
    np.testing.assert_array_equal(vg, [p[1, 2], p[0, 0]])
    np.testing.assert_array_equal(vh, [[p[1, 2, 3]], [p[0, 1, 0]]])
    np.testing.assert_array_equal(vs, [[0, 0], [6, 8], [0, 0], [3, 4]])   # duplicates add


def test_gather_nd_and_scatter_nd_reject_indices_out_of_range():
    p = cf.constant(np.zeros((2, 2)))
    with pytest.raises(cf.InvalidArgumentError, match=r"indices\[1\] = \[2, 0\] does not index into param shape "
                                                       r"\[2,2\]"):
        _run(tf.gather_nd(p, [[0, 0], [2, 0]]))
    with pytest.raises(cf.InvalidArgumentError, match=r"indices\[0\] = \[5\] does not index into shape \[4\]"):
        _run(tf.scatter_nd([[5]], cf.constant([1.0]), [4]))


def test_boolean_mask_selects_in_row_major_order():
    t = np.arange(24.0).reshape(2, 3, 4)
    m2 = np.array([[True, False, True], [False, True, True]])
    a = tf.boolean_mask(cf.constant(t), cf.constant(m2))
    b = tf.boolean_mask(cf.constant(t), cf.constant([False, True, True, False]), axis=2)
    c = tf.boolean_mask(cf.constant(t), cf.constant([True, False]))
    assert a.shape.as_list() == [None, 4] and b.shape.as_list() == [2, 3, None]
    va, vb, vc = _run([a, b, c])
    np.testing.assert_array_equal(va, t[m2])
    np.testing.assert_array_equal(vb, t[:, :, 1:3])
    np.testing.assert_array_equal(vc, t[:1])
    with pytest.raises(cf.InvalidArgumentError, match="does not match"):
        tf.boolean_mask(cf.constant(t), cf.constant([True, False, True]))
    with pytest.raises(cf.InvalidArgumentError, match="scalar"):
        tf.boolean_mask(cf.constant(t), cf.constant(True))


def test_sparse_to_dense_values_defaults_and_validation():
    a = tf.sparse_to_dense([[0, 1], [1, 0], [2, 2]], [3, 3], cf.constant([1.0, 2.0, 3.0]), -1.0)
    b = tf.sparse_to_dense([1, 3], [5], 7)
    c = tf.sparse_to_dense(2, [4], cf.constant(5.0))
    va, vb, vc = _run([a, b, c])
    np.testing.assert_array_equal(va, [[-1, 1, -1], [2, -1, -1], [-1, -1, 3]])
    np.testing.assert_array_equal(vb, [0, 7, 0, 7, 0])
    np.testing.assert_array_equal(vc, [0, 0, 5, 0])
    for idx, msg in (([[1, 0], [0, 1]], r"indices\[1\] = \[0,1\] is out of order"),
                     ([[0, 1], [0, 1]], r"indices\[1\] = \[0,1\] is repeated"),
                     ([[0, 1], [2, 0]], r"indices\[1\] = \[2,0\] is out of bounds: need 0 <= index < \[2,2\]")):
        with pytest.raises(cf.InvalidArgumentError, match=msg):
            _run(tf.sparse_to_dense(idx, [2, 2], cf.constant([1.0, 2.0])))
    # without validation an unsorted list is fine
    unsorted = tf.sparse_to_dense([[1, 0], [0, 1]], [2, 2], cf.constant([1.0, 2.0]), validate_indices=False)
    np.testing.assert_array_equal(_run(unsorted), [[0, 2], [1, 0]])


# -- segment reductions --------------------------------------------------------------------------


def _segments(data, ids, n, fn, empty):
    out = np.full((n,) + data.shape[ids.ndim:], empty, dtype=data.dtype)
    flat_ids = ids.reshape(-1)
    rows = data.reshape((flat_ids.size,) + data.shape[ids.ndim:])
    for s in range(n):
        sel = rows[flat_ids == s]
        if len(sel):
            out[s] = fn(sel, axis=0)
    return out


def test_sorted_segment_reductions_match_loops_and_empty_segments_are_zero():
    d = RNG.standard_normal((6, 2)).astype(np.float32)
    ids = np.array([0, 0, 2, 2, 2, 4])
    outs = [tf.segment_sum(cf.constant(d), ids), tf.segment_mean(cf.constant(d), ids),
            tf.segment_max(cf.constant(d), ids), tf.segment_min(cf.constant(d), ids)]
    assert outs[0].shape.as_list() == [5, 2]     # constant ids: the number of segments is known
    for got, fn in zip(_run(outs), (np.sum, np.mean, np.max, np.min)):
        np.testing.assert_allclose(got, _segments(d, ids, 5, fn, 0.0), rtol=1e-6)
    ints = tf.segment_mean(cf.constant([-3, -4, 5]), [0, 0, 1])
    np.testing.assert_array_equal(_run(ints), [-3, 5])           # integer means truncate toward zero


def test_sorted_segment_ids_must_increase():
    ids = cf.placeholder(cf.int32, (3,))
    s = tf.segment_sum(cf.constant([1.0, 2.0, 3.0]), ids)
    with pytest.raises(cf.InvalidArgumentError, match="segment ids are not increasing"):
        _run(s, {ids: [0, 2, 1]})
    with pytest.raises(cf.InvalidArgumentError, match="must be >= 0"):
        _run(s, {ids: [-1, 0, 0]})
    with pytest.raises(cf.InvalidArgumentError, match="same size as dimension 0"):
        tf.segment_sum(cf.constant([1.0, 2.0, 3.0]), [0, 1])


def test_unsorted_segment_reductions_drop_negative_ids_and_fill_empty_segments():
    d = RNG.standard_normal((2, 3, 2)).astype(np.float32)
    ids = np.array([[3, -1, 0], [3, 0, 1]])
    outs = [tf.unsorted_segment_sum(cf.constant(d), ids, 5), tf.unsorted_segment_mean(cf.constant(d), ids, 5),
            tf.unsorted_segment_max(cf.constant(d), ids, 5), tf.unsorted_segment_min(cf.constant(d), ids, 5)]
    assert outs[0].shape.as_list() == [5, 2]
    lo, hi = np.finfo(np.float32).min, np.finfo(np.float32).max
    wants = [_segments(d, ids, 5, np.sum, 0.0), _segments(d, ids, 5, np.mean, 0.0),
             _segments(d, ids, 5, np.max, lo), _segments(d, ids, 5, np.min, hi)]
    d1 = cf.constant(d[..., 0])   # rows of one element: the 1-D paths
    flat = [tf.unsorted_segment_sum(d1, ids, 5), tf.unsorted_segment_max(d1, ids, 5)]
    wants += [_segments(d[..., 0], ids, 5, np.sum, 0.0), _segments(d[..., 0], ids, 5, np.max, lo)]
    for got, want in zip(_run(outs + flat), wants):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(cf.InvalidArgumentError, match=r"segment_ids\[1\] = 7 is out of range \[0, 5\)"):
        _run(tf.unsorted_segment_sum(cf.constant([1.0, 2.0]), [0, 7], 5))


# -- multinomial ----------------------------------------------------------------------------------


def test_multinomial_follows_softmax_and_is_seeded_like_the_random_ops():
    with np.errstate(divide="ignore"):   # log 0 = -inf: a class that is never drawn
        logits = cf.constant(np.log(np.array([[0.2, 0.5, 0.3], [0.9, 0.0, 0.1]])).astype(np.float32))
    s = tf.multinomial(logits, 20000, seed=3)
    s32 = tf.multinomial(logits, 4, seed=3, output_dtype=cf.int32)
    assert s.dtype == cf.int64 and s32.dtype == cf.int32 and s.shape.as_list() == [2, 20000]
    with cf.Session() as sess:
        a, b = sess.run(s), sess.run(s)
    with cf.Session() as sess:
        a2 = sess.run(s)
    np.testing.assert_array_equal(a, a2)           # a new Session starts the stream again
    assert (a != b).any()                          # successive runs draw new samples
    freq = np.stack([np.bincount(r, minlength=3) / r.size for r in a])
    np.testing.assert_allclose(freq, [[0.2, 0.5, 0.3], [0.9, 0.0, 0.1]], atol=0.015)
    assert (a[1] != 1).all()                       # a class of probability 0 is never drawn
    with pytest.raises(cf.InvalidArgumentError, match="2-D"):
        tf.multinomial(cf.constant([1.0, 2.0]), 3)


# -- printing -------------------------------------------------------------------------------------


def test_Print_writes_message_and_summaries_and_honours_first_n(capsys):
    x = cf.constant([1.0, 2.5, 1 / 3, 4.0])
    p = tf.Print(x * 2.0, [x, cf.constant([[1, 2], [3, 4]]), cf.constant(True)], message="values: ", first_n=2)
    with cf.Session() as s:
        for _ in range(3):
            out = s.run(p)
    np.testing.assert_allclose(out, [2.0, 5.0, 2 / 3, 8.0], rtol=1e-6)
    assert capsys.readouterr().err == "values: [1 2.5 0.333333343...][[1 2][3...]...][1]\n" * 2
    with cf.Session() as s:                         # the count is per Session
        s.run(p)
    assert capsys.readouterr().err.count("values: ") == 1
    g = cf.gradients(tf.reduce_sum(p), x)[0]
    np.testing.assert_array_equal(_run(g), [2.0] * 4)


def test_print_writes_to_the_chosen_stream_when_run(capsys, tmp_path):
    x = cf.constant(np.arange(10))
    op = tf.print("x:", x, [1, "a"], summarize=2, sep=",", end="!\n", output_stream=__import__("sys").stdout)
    path = tmp_path / "log.txt"
    to_file = tf.print("m", cf.constant([[1.5, 2.0], [3.0, 4.0]]), output_stream=f"file://{path}")
    with cf.control_dependencies([op]):
        y = tf.identity(x)
    _run([y, to_file])
    assert capsys.readouterr().out == "x:,[0 1 ... 8 9],[1, 'a']!\n"
    assert path.read_text() == "m [[1.5 2]\n [3 4]]\n"
    assert isinstance(op, cf.Operation) and not op.outputs
    with pytest.raises(ValueError, match="output_stream"):
        tf.print(x, output_stream="nowhere")


# -- checks ---------------------------------------------------------------------------------------


def test_Assert_passes_silently_and_fails_with_summarized_data():
    x = cf.placeholder(cf.float32, (None,))
    check = tf.Assert(tf.reduce_all(x > 0), ["x must be positive:", x], summarize=2)
    assert isinstance(check, cf.Operation)
    with cf.control_dependencies([check]):
        y = tf.identity(x)
    np.testing.assert_array_equal(_run(y, {x: [1.0, 2.0]}), [1.0, 2.0])
    with pytest.raises(cf.InvalidArgumentError, match=r"^assertion failed: \[x must be positive:\] \[1 -2\.\.\.\]"):
        _run(y, {x: [1.0, -2.0, 3.0]})


def test_assert_family_messages_and_static_checks():
    x = cf.placeholder(cf.float32, (None,), name="x")
    ops = {"eq": tf.assert_equal(x, cf.constant([1.0, 2.0])), "lt": tf.assert_less(x, 3.0),
           "pos": tf.assert_positive(x, message="need"), "nn": tf.assert_non_negative(x)}
    assert all(isinstance(o, cf.Operation) and o.type == "Assert" for o in ops.values())
    _run(list(ops.values()), {x: [1.0, 2.0]})
    msgs = {
        "eq": r"assertion failed: \[Condition x == y did not hold element-wise:\] \[x \(x:0\) = \] \[1 5\]",
        "lt": r"assertion failed: \[Condition x < y did not hold element-wise:\] \[x \(x:0\) = \] \[1 5\]",
        "pos": r"assertion failed: \[need\.  \] \[Condition x > 0 did not hold element-wise:\]",
        "nn": r"assertion failed: \[\] \[Condition x >= 0 did not hold element-wise:\] \[x \(x:0\) = \] \[-1 5\]",
    }
    feeds = {"eq": [1.0, 5.0], "lt": [1.0, 5.0], "pos": [0.0, 5.0], "nn": [-1.0, 5.0]}
    for k, op in ops.items():
        with pytest.raises(cf.InvalidArgumentError, match=msgs[k]):
            _run(op, {x: feeds[k]})
    with pytest.raises(cf.InvalidArgumentError, match=r"^Condition x == y did not hold element-wise:\n"):
        tf.assert_equal(cf.constant([1, 2]), cf.constant([1, 3]))
    ok = tf.assert_rank(x, 1)
    assert ok.type == "NoOp"
    with pytest.raises(ValueError, match=r"Tensor x:0 must have rank 2\.  Received rank 1"):
        tf.assert_rank(x, 2)
    u = cf.placeholder(cf.float32)
    dyn = tf.assert_rank(u, 2)
    _run(dyn, {u: np.zeros((2, 2))})
    with pytest.raises(cf.InvalidArgumentError, match=r"must have rank\] \[2\] \[Received shape: \] \[3\]"):
        _run(dyn, {u: np.zeros(3)})


def test_check_numerics_and_verify_tensor_all_finite():
    x = cf.placeholder(cf.float32, (None,))
    c = tf.check_numerics(x, "bad x")
    v = tf.verify_tensor_all_finite(x * 2.0, "bad y")
    np.testing.assert_array_equal(_run([c, v], {x: [1.0, 2.0]})[1], [2.0, 4.0])
    for vals, what in (([np.nan], "NaN"), ([np.inf], "Inf"), ([np.nan, -np.inf], "Inf and NaN")):
        with pytest.raises(cf.InvalidArgumentError, match=f"^bad x : Tensor had {what} values"):
            _run(c, {x: vals})
    with pytest.raises(cf.InvalidArgumentError, match="bad y : Tensor had NaN values"):
        _run(v, {x: [np.nan]})
    # the gradient passes through, checked on the way back (TensorFlow's rule)
    dy = cf.placeholder(cf.float32, (None,))
    g = cf.gradients(tf.sqrt(c), x, grad_ys=dy)[0]
    np.testing.assert_allclose(_run(g, {x: [4.0], dy: [1.0]}), [0.25])
    with pytest.raises(cf.InvalidArgumentError, match=r"^Not a number \(NaN\) or infinity \(Inf\) values detected "
                                                       r"in gradient\. bad x : Tensor had Inf values"):
        _run(g, {x: [4.0], dy: [np.inf]})


# -- activations, lrn, conv2d_transpose ------------------------------------------------------------


def test_activations_match_their_closed_forms():
    x = np.array([-100.0, -3.0, -0.5, 0.0, 0.5, 3.0, 7.0, 100.0])
    v = _run([tf.nn.relu6(cf.constant(x)), tf.nn.elu(cf.constant(x)), tf.nn.selu(cf.constant(x)),
              tf.nn.softplus(cf.constant(x)), tf.nn.softsign(cf.constant(x))])
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    np.testing.assert_array_equal(v[0], np.clip(x, 0, 6))
    np.testing.assert_allclose(v[1], np.where(x < 0, np.expm1(np.minimum(x, 0)), x), rtol=1e-15)
    np.testing.assert_allclose(v[2], scale * np.where(x < 0, alpha * np.expm1(np.minimum(x, 0)), x), rtol=1e-15)
    np.testing.assert_allclose(v[3], [np.exp(-100.0), np.log1p(np.exp(-3.0)), np.log1p(np.exp(-0.5)), np.log(2.0),
                                      np.log1p(np.exp(0.5)), np.log1p(np.exp(3.0)), np.log1p(np.exp(7.0)), 100.0],
                               rtol=1e-14)
    np.testing.assert_allclose(v[4], x / (1 + np.abs(x)), rtol=1e-15)


def test_lrn_matches_its_definition():
    x = RNG.standard_normal((2, 3, 2, 7))
    r, bias, alpha, beta = 2, 1.5, 0.3, 0.75
    want = np.empty_like(x)
    for d in range(7):
        sq = np.sum(x[..., max(0, d - r):d + r + 1] ** 2, axis=-1)
        want[..., d] = x[..., d] / (bias + alpha * sq) ** beta
    got = _run(tf.nn.lrn(cf.constant(x), depth_radius=r, bias=bias, alpha=alpha, beta=beta))
    np.testing.assert_allclose(got, want, rtol=1e-13)
    with pytest.raises(cf.InvalidArgumentError, match="4-D"):
        tf.nn.local_response_normalization(cf.constant(np.ones((2, 3))))


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    x = RNG.standard_normal((2, 6, 5, 3))
    w = RNG.standard_normal((3, 3, 3, 4))
    y = RNG.standard_normal((2, 3, 3, 4))
    fwd = tf.nn.conv2d(cf.constant(x), cf.constant(w), [1, 2, 2, 1], "SAME")
    back = tf.nn.conv2d_transpose(cf.constant(y), cf.constant(w), [2, 6, 5, 3], [1, 2, 2, 1], "SAME")
    assert back.shape.as_list() == [2, 6, 5, 3]
    vf, vb = _run([fwd, back])
    np.testing.assert_allclose(np.sum(vf * y), np.sum(x * vb), rtol=1e-12)   # <conv(x), y> = <x, conv^T(y)>
    with pytest.raises(cf.InvalidArgumentError, match="output channels"):
        tf.nn.conv2d_transpose(cf.constant(y), cf.constant(w), [2, 6, 5, 2], [1, 2, 2, 1], "SAME")
    with pytest.raises(cf.InvalidArgumentError, match="would convolve back to height and width"):
        tf.nn.conv2d_transpose(cf.constant(y), cf.constant(w), [2, 9, 5, 3], [1, 2, 2, 1], "SAME")


# -- images ---------------------------------------------------------------------------------------


def test_resize_bilinear_samples_tf1s_grid():
    img = np.array([[0.0, 10.0], [20.0, 30.0]], np.float32).reshape(1, 2, 2, 1)
    legacy = tf.image.resize_bilinear(cf.constant(img), [4, 4])
    aligned = tf.image.resize_bilinear(cf.constant(img), [3, 3], align_corners=True)
    half = tf.image.resize_bilinear(cf.constant(img), [4, 4], half_pixel_centers=True)
    ints = tf.image.resize_bilinear(cf.constant(img.astype(np.int32)), [4, 4])
    assert legacy.dtype == cf.float32 and ints.dtype == cf.float32 and legacy.shape.as_list() == [1, 4, 4, 1]
    vl, va, vh, vi = (v[0, :, :, 0] for v in _run([legacy, aligned, half, ints]))
    # legacy grid: output i reads input i * in/out = i / 2, clamped at the last row/column
    ax = np.array([0.0, 0.5, 1.0, 1.0])
    np.testing.assert_allclose(vl, 20 * ax[:, None] + 10 * ax[None, :])
    np.testing.assert_allclose(vi, vl)
    np.testing.assert_allclose(va, [[0, 5, 10], [10, 15, 20], [20, 25, 30]])
    hx = np.clip((np.arange(4) + 0.5) / 2 - 0.5, 0, 1)
    np.testing.assert_allclose(vh, 20 * hx[:, None] + 10 * hx[None, :])


def test_resize_nearest_neighbor_and_resize_images():
    img = np.arange(12, dtype=np.int32).reshape(1, 3, 4, 1)
    near = tf.image.resize_nearest_neighbor(cf.constant(img), [2, 6])
    aligned = tf.image.resize_nearest_neighbor(cf.constant(img), [5, 4], align_corners=True)
    assert near.dtype == cf.int32
    vn, va = _run([near, aligned])
    rows = np.floor(np.arange(2) * 1.5).astype(int)
    cols = np.floor(np.arange(6) * (4 / 6)).astype(int)
    np.testing.assert_array_equal(vn[0, :, :, 0], img[0, :, :, 0][rows][:, cols])
    np.testing.assert_array_equal(va[0, :, 0, 0], img[0, [0, 1, 1, 2, 2], 0, 0])   # 0.5 rounds up
    single = cf.constant(np.ones((3, 5, 2), np.float32))
    r = tf.image.resize_images(single, [6, 4])
    same = tf.image.resize_images(cf.constant(img), [3, 4])
    kept = tf.image.resize_images(single, [8, 8], preserve_aspect_ratio=True)
    assert r.shape.as_list() == [6, 4, 2] and kept.shape.as_list() == [5, 8, 2]
    assert same.op.type == "Const"                 # nothing to resize: the images as they are
    cubic = tf.image.resize_images(single, [2, 2], method=tf.image.ResizeMethod.BICUBIC)   # (tests/test_image_more.py)
    assert cubic.shape.as_list() == [2, 2, 2] and cubic.dtype == cf.float32
    with pytest.raises(cf.InvalidArgumentError, match="align_corners must be False"):
        tf.image.resize_bilinear(cf.constant(img), [2, 2], align_corners=True, half_pixel_centers=True)
