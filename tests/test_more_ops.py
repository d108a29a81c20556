"""tf.range, tf.to_*, tf.nn.top_k / in_top_k, tf.norm and clipping, tf.case, tf.tuple,
tf.py_func, and the nn formulas (batch_normalization, l2_normalize, weighted cross entropy),
against NumPy and TensorFlow 1.x's documented behaviour.

Gradients against finite differences live in gradtable_losses.py.
"""
import numpy as np
import pytest

import collflow as cf

RNG = np.random.default_rng(7)


def _run(g, fetches, feed=None):
    with cf.Session(graph=g) as s:
        return s.run(fetches, feed)


# -- range and casts -----------------------------------------------------------------------------


def test_range_values_dtypes_and_static_shapes():
    g = cf.Graph()
    with g.as_default():
        a = cf.range(5)
        b = cf.range(3, 18, 3)
        c = cf.range(3, 1, -0.5)
        d = cf.range(0, 5, dtype=cf.int64)
        e = cf.range(cf.constant(2, cf.int64), 7)          # int32 limit widened to int64
        f = cf.range(1, 2.0, 0.3)                         # float32 wins over int32
    assert a.shape.as_list() == [5] and b.shape.as_list() == [5] and c.shape.as_list() == [4]
    assert (a.dtype, c.dtype, d.dtype, e.dtype, f.dtype) == (cf.int32, cf.float32, cf.int64, cf.int64, cf.float32)
    va, vb, vc, vd, ve, vf = _run(g, [a, b, c, d, e, f])
    np.testing.assert_array_equal(va, np.arange(5))
    np.testing.assert_array_equal(vb, [3, 6, 9, 12, 15])
    np.testing.assert_allclose(vc, [3.0, 2.5, 2.0, 1.5])
    np.testing.assert_array_equal(ve, [2, 3, 4, 5, 6])
    np.testing.assert_allclose(vf, [1.0, 1.3, 1.6, 1.9], rtol=1e-6)
    assert a.op.name == "range"


def test_range_of_tensors_and_its_errors():
    g = cf.Graph()
    with g.as_default():
        n = cf.placeholder(cf.int32, ())
        r = cf.range(n)
        bad = cf.range(0, n, -1)
        with pytest.raises(cf.InvalidArgumentError, match="delta != 0"):
            cf.range(0, 4, 0)
        with pytest.raises(cf.InvalidArgumentError, match="start <= limit"):
            cf.range(5, 1)
        with pytest.raises(cf.InvalidArgumentError, match="dtype"):
            cf.range(cf.constant(1.0), 4, dtype=cf.int32)
    assert r.shape.as_list() == [None]
    np.testing.assert_array_equal(_run(g, r, {n: 4}), [0, 1, 2, 3])
    np.testing.assert_array_equal(_run(g, r, {n: 0}), np.zeros(0))
    with pytest.raises(cf.InvalidArgumentError, match="start >= limit"):
        _run(g, bad, {n: 3})


def test_to_casts():
    g = cf.Graph()
    with g.as_default():
        x = cf.constant([1.7, -2.2])
        outs = [cf.to_float(cf.constant([1, 2])), cf.to_double(x), cf.to_int32(x), cf.to_int64(x)]
    assert [o.dtype for o in outs] == [cf.float32, cf.float64, cf.int32, cf.int64]
    assert outs[0].op.name == "ToFloat" and outs[3].op.name == "ToInt64"
    v = _run(g, outs)
    np.testing.assert_array_equal(v[2], [1, -2])   # truncation toward zero, as a C cast


# -- top_k and in_top_k -----------------------------------------------------------------------------


def test_top_k_values_indices_and_ties_lower_index_first():
    x = np.array([[1.0, 3.0, 3.0, 2.0, 3.0], [5.0, -1.0, 0.0, 7.0, 7.0]], np.float32)
    g = cf.Graph()
    with g.as_default():
        v, i = cf.nn.top_k(cf.constant(x), 3)
        v1, i1 = cf.nn.top_k(cf.constant(x))            # k defaults to 1
        vi, ii = cf.nn.top_k(cf.constant(np.array([4, 9, 1, 9], np.int32)), k=2, sorted=False)
    assert v.shape.as_list() == [2, 3] and i.dtype == cf.int32 and vi.dtype == cf.int32
    rv, ri, rv1, ri1, rvi, rii = _run(g, [v, i, v1, i1, vi, ii])
    np.testing.assert_array_equal(ri, [[1, 2, 4], [3, 4, 0]])
    np.testing.assert_array_equal(rv, [[3, 3, 3], [7, 7, 5]])
    np.testing.assert_array_equal(ri1, [[1], [3]])
    np.testing.assert_array_equal(rii, [1, 3])
    np.testing.assert_array_equal(rvi, [9, 9])


def test_top_k_matches_a_full_sort_and_checks_k():
    x = RNG.normal(size=(3, 4, 10)).astype(np.float32)
    g = cf.Graph()
    with g.as_default():
        k = cf.placeholder(cf.int32, ())
        v, i = cf.nn.top_k(cf.constant(x), k)
        with pytest.raises(cf.InvalidArgumentError, match="at least k=11"):
            cf.nn.top_k(cf.constant(x), 11)
    rv, ri = _run(g, [v, i], {k: 4})
    np.testing.assert_array_equal(rv, -np.sort(-x, axis=-1)[..., :4])
    np.testing.assert_array_equal(np.take_along_axis(x, ri, -1), rv)
    with pytest.raises(cf.InvalidArgumentError, match="0 <= k <= 10"):
        _run(g, v, {k: 12})


@pytest.mark.parametrize("ties", [False, True])
def test_top_k_of_long_rows_small_k(ties):
    # k much smaller than the row: a partition instead of a sort, same order and tie rule
    x = (RNG.integers(0, 5, (6, 64)) if ties else RNG.normal(size=(6, 64))).astype(np.float32)
    g = cf.Graph()
    with g.as_default():
        v, i = cf.nn.top_k(cf.constant(x), 4)
    rv, ri = _run(g, [v, i])
    ref = 63 - np.argsort(x[:, ::-1], axis=-1, kind="stable")[:, ::-1][:, :4]
    np.testing.assert_array_equal(ri, ref)
    np.testing.assert_array_equal(rv, np.take_along_axis(x, ref, -1))


def test_in_top_k_ties_out_of_range_and_non_finite():
    pred = np.array([[0.1, 0.3, 0.3, 0.2],     # target 2 ties for first: in the top 1
                     [0.4, 0.1, 0.1, 0.4],     # target 1: two are larger -> not in the top 2
                     [0.5, 0.2, 0.1, 0.2],     # target 3 ties for second with class 1: in the top 2
                     [0.5, np.nan, 0.1, 0.2],  # a non-finite prediction in the row: False
                     [0.5, 0.2, 0.1, 0.2]], np.float32)
    targets = np.array([2, 1, 3, 0, 9])         # 9 is out of range: False
    g = cf.Graph()
    with g.as_default():
        k1 = cf.nn.in_top_k(cf.constant(pred), cf.constant(targets), 1)
        k2 = cf.nn.in_top_k(cf.constant(pred), cf.constant(targets.astype(np.int64)), 2)
    r1, r2 = _run(g, [k1, k2])
    np.testing.assert_array_equal(r1, [True, False, False, False, False])
    np.testing.assert_array_equal(r2, [True, False, True, False, False])


# -- norms and clipping ------------------------------------------------------------------------------


@pytest.mark.parametrize("ord_, axis, ref", [
    ("euclidean", None, lambda x: np.sqrt((x ** 2).sum())),
    (2, 1, lambda x: np.linalg.norm(x, 2, axis=1)),
    (1, 0, lambda x: np.abs(x).sum(0)),
    (np.inf, -1, lambda x: np.abs(x).max(-1)),
    (1, None, lambda x: np.abs(x).sum()),
    (np.inf, None, lambda x: np.abs(x).max()),
    (3, 1, lambda x: (np.abs(x) ** 3).sum(1) ** (1 / 3)),
    ("fro", (0, 1), lambda x: np.linalg.norm(x, "fro")),
    (1, (0, 1), lambda x: np.linalg.norm(x, 1)),
    (np.inf, (0, 1), lambda x: np.linalg.norm(x, np.inf)),
    (1, (1, 0), lambda x: np.linalg.norm(x, np.inf)),   # swapped axes: the transposed matrix
    (2, (0, 1), lambda x: np.linalg.norm(x, 2)),
    (2, (-1, 0), lambda x: np.linalg.norm(x, 2)),
])
def test_norm_against_numpy(ord_, axis, ref):
    x = RNG.normal(size=(3, 4))
    g = cf.Graph()
    with g.as_default():
        n = cf.norm(cf.constant(x), ord=ord_, axis=axis)
        nk = cf.norm(cf.constant(x), ord=ord_, axis=axis, keepdims=True)
    got, gotk = _run(g, [n, nk])
    np.testing.assert_allclose(got, ref(x), rtol=1e-12)
    assert gotk.ndim == 2 and np.size(gotk) == np.size(got)


def test_matrix_2_norm_of_a_batch_over_middle_axes():
    x = RNG.normal(size=(3, 2, 4, 5))
    g = cf.Graph()
    with g.as_default():
        n = cf.norm(cf.constant(x), ord=2, axis=(1, 3))
        nk = cf.norm(cf.constant(x), ord=2, axis=(1, 3), keepdims=True)
    got, gotk = _run(g, [n, nk])
    ref = np.linalg.norm(np.transpose(x, (0, 2, 1, 3)), 2, axis=(-2, -1))
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    assert n.shape.as_list() == [3, 4] and gotk.shape == (3, 1, 4, 1)


def test_norm_argument_errors():
    g = cf.Graph()
    with g.as_default():
        x = cf.constant(np.ones((2, 3)))
        with pytest.raises(cf.InvalidArgumentError, match="matrices"):
            cf.norm(x, ord="fro")
        with pytest.raises(cf.InvalidArgumentError, match="vector norm"):
            cf.norm(x, ord=-1)
        with pytest.raises(cf.InvalidArgumentError, match="2 unique integers"):
            cf.norm(x, axis=(1, 1))
        with pytest.raises(cf.InvalidArgumentError, match="matrix norm"):
            cf.norm(x, ord=3, axis=(0, 1))


def test_global_norm_and_clip_by_global_norm_with_none_and_indexed_slices():
    g = cf.Graph()
    with g.as_default():
        table = cf.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
        ids = cf.constant([1, 3])
        sparse = cf.gradients(cf.reduce_sum(cf.gather(table, ids) * 2.0), table)[0]    # IndexedSlices of 2s
        dense = cf.constant([3.0, 4.0])
        gn = cf.global_norm([dense, None, sparse])
        clipped, used = cf.clip_by_global_norm([dense, None, sparse], 2.0)
        same, _ = cf.clip_by_global_norm([dense], 100.0)
    assert isinstance(sparse, cf.IndexedSlices) and isinstance(clipped[2], cf.IndexedSlices)
    assert clipped[1] is None
    expect = np.sqrt(9 + 16 + 6 * 4)   # the slices' values: two rows of three 2s
    vgn, vused, c0, c2v, c2i, vs = _run(g, [gn, used, clipped[0], clipped[2].values, clipped[2].indices, same[0]])
    assert vgn == pytest.approx(expect) and vused == pytest.approx(expect)
    np.testing.assert_allclose(c0, np.array([3.0, 4.0]) * 2.0 / expect, rtol=1e-6)
    np.testing.assert_allclose(c2v, np.full((2, 3), 2.0 * 2.0 / expect), rtol=1e-6)
    np.testing.assert_array_equal(c2i, [1, 3])
    np.testing.assert_allclose(vs, [3.0, 4.0])      # under the limit: unchanged


def test_clip_by_global_norm_of_an_infinite_norm_is_nan_and_t_list_must_be_a_list():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2,))
        out, n = cf.clip_by_global_norm([x], 1.0)
        with pytest.raises(TypeError, match="list or tuple"):
            cf.clip_by_global_norm(x, 1.0)
    with np.errstate(invalid="ignore"):   # inf - inf: the NaN is the point
        vo, vn = _run(g, [out[0], n], {x: np.array([np.inf, 1.0], np.float32)})
    assert np.isinf(vn) and np.all(np.isnan(vo))


def test_clip_by_norm_per_row_and_the_zero_tensor():
    x = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]], np.float32)
    g = cf.Graph()
    with g.as_default():
        t = cf.placeholder(cf.float32, (3, 2))
        rows = cf.clip_by_norm(t, 1.0, axes=[1])
        whole = cf.clip_by_norm(t, 1.0)
        gz = cf.gradients(cf.reduce_sum(cf.clip_by_norm(t * 0.0, 1.0)), t)[0]
    vr, vw, vg = _run(g, [rows, whole, gz], {t: x})
    np.testing.assert_allclose(vr, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(vw, x / np.linalg.norm(x), rtol=1e-6)
    assert np.all(np.isfinite(vg))


# -- case and tuple ----------------------------------------------------------------------------------


def _case_graph(exclusive=False, with_default=True, as_dict=False):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.int32, ())
        pairs = [(cf.less(x, 0), lambda: cf.constant(-1)), (cf.less(x, 10), lambda: cf.constant(1)),
                 (cf.less(x, 100), lambda: cf.constant(2))]
        if as_dict:
            pairs = dict(pairs)
        out = cf.case(pairs, default=(lambda: cf.constant(99)) if with_default else None, exclusive=exclusive)
    return g, x, out


@pytest.mark.parametrize("as_dict", [False, True])
def test_case_runs_the_first_true_branch_else_the_default(as_dict):
    g, x, out = _case_graph(as_dict=as_dict)
    with cf.Session(graph=g) as s:
        assert [s.run(out, {x: v}) for v in (-5, 5, 50, 500)] == [-1, 1, 2, 99]


def test_case_without_default_uses_the_last_function_where_its_predicate_holds():
    g, x, out = _case_graph(with_default=False)
    with cf.Session(graph=g) as s:
        assert [s.run(out, {x: v}) for v in (-5, 5, 50)] == [-1, 1, 2]
        with pytest.raises(cf.InvalidArgumentError, match="none of the conditions"):
            s.run(out, {x: 500})


def test_case_of_one_pair_without_default_checks_its_predicate():
    g = cf.Graph()
    with g.as_default():
        p = cf.placeholder(cf.bool, ())
        out = cf.case([(p, lambda: cf.constant(7))])
    with cf.Session(graph=g) as s:
        assert s.run(out, {p: True}) == 7
        with pytest.raises(cf.InvalidArgumentError, match="none of the conditions"):
            s.run(out, {p: False})


def test_case_exclusive_fails_when_two_predicates_hold():
    g, x, out = _case_graph(exclusive=True)
    with cf.Session(graph=g) as s:
        assert s.run(out, {x: 500}) == 99
        assert s.run(out, {x: 50}) == 2
        with pytest.raises(cf.InvalidArgumentError, match="more than one predicate"):
            s.run(out, {x: 5})      # x < 10 and x < 100


def test_case_structures_and_bad_arguments():
    g = cf.Graph()
    with g.as_default():
        p = cf.placeholder(cf.bool, ())
        single = cf.case([(p, lambda: [cf.constant(1.0)])], default=lambda: [cf.constant(2.0)])
        pair = cf.case([(p, lambda: (cf.constant(1), cf.constant(2)))],
                       default=lambda: (cf.constant(3), cf.constant(4)))
        with pytest.raises(TypeError, match="callable"):
            cf.case([(p, 3)])
        with pytest.raises(TypeError, match="pairs"):
            cf.case(p)
        with pytest.raises(cf.InvalidArgumentError, match="scalar bool"):
            cf.case([(cf.constant(1), lambda: cf.constant(1))])
    assert isinstance(single, cf.Tensor)     # strict=False unpacks a singleton list
    assert _run(g, single, {p: False}) == 2.0
    assert _run(g, list(pair), {p: True}) == [1, 2]


def test_tuple_gates_every_output_on_every_input():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(0.0)
        bump = cf.assign_add(v, 1.0)
        x = cf.constant(5.0)
        gated = cf.tuple([bump, x, None])
        init = cf.global_variables_initializer()
    assert gated[2] is None
    with cf.Session(graph=g) as s:
        s.run(init)
        assert s.run(gated[1]) == 5.0
        assert s.run(v) == 1.0        # fetching x ran the assignment too
        s.run(x)
        assert s.run(v) == 1.0        # the ungated tensor does not


# -- py_func -------------------------------------------------------------------------------------------


def test_py_func_values_lists_and_stateless():
    g = cf.Graph()
    with g.as_default():
        a = cf.constant([1.0, 2.0])
        b = cf.constant([3, 4])
        one = cf.py_func(lambda x: x * 2, [a], cf.float32)
        two = cf.py_func(lambda x, y: (x + y.astype(np.float32), y.sum()), [a, b], [cf.float32, cf.int64],
                         stateful=False, name="my_fn")
        lst = cf.py_func(lambda x: x, [a], [cf.float32])
        op = cf.py_func(lambda x: None, [a], [])
    assert one.op.type == "PyFunc" and two[0].op.type == "PyFuncStateless" and two[0].op.name == "my_fn"
    assert isinstance(lst, list) and len(lst) == 1 and isinstance(op, cf.Operation)
    assert one.shape.rank is None
    v1, v20, v21 = _run(g, [one, two[0], two[1]])
    np.testing.assert_array_equal(v1, [2.0, 4.0])
    np.testing.assert_array_equal(v20, [4.0, 6.0])
    assert v21 == 7 and v21.dtype == np.int64
    _run(g, op)


def test_py_func_is_stateful_per_run_and_has_no_gradient():
    calls = []

    def count(x):
        calls.append(1)
        return x

    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (2,))
        y = cf.py_func(count, [x], cf.float32)
        y.set_shape([2])
        grad = cf.gradients(cf.reduce_sum(y * x), x)[0]
    with cf.Session(graph=g) as s:
        for _ in range(3):
            s.run(y, {x: np.ones(2, np.float32)})
        gv = s.run(grad, {x: np.full(2, 3.0, np.float32)})
    assert len(calls) == 4
    np.testing.assert_array_equal(gv, [3.0, 3.0])   # only the direct path: y's own gradient is None


def test_py_func_errors_name_the_op():
    def stop(x):
        raise StopIteration("done")

    def bad(x):
        raise ValueError("nope")

    g = cf.Graph()
    with g.as_default():
        a = cf.constant([1.0])
        wrong_dtype = cf.py_func(lambda x: x.astype(np.float64), [a], cf.float32, name="wrong_dtype")
        wrong_count = cf.py_func(lambda x: (x, x), [a], [cf.float32])
        ends = cf.py_func(stop, [a], cf.float32)
        raises = cf.py_func(bad, [a], cf.float32, name="raises")
        with pytest.raises(TypeError, match="callable"):
            cf.py_func(3, [a], cf.float32)
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.InvalidArgumentError, match="is float64, but expects float32") as e:
            s.run(wrong_dtype)
        assert "wrong_dtype" in str(e.value)
        with pytest.raises(cf.InvalidArgumentError, match="returned 2 values"):
            s.run(wrong_count)
        with pytest.raises(cf.OutOfRangeError):
            s.run(ends)
        with pytest.raises(cf.InvalidArgumentError, match="nope") as e:
            s.run(raises)
        assert "raises" in str(e.value)


def test_py_func_kernel_is_a_host_kernel():
    from collflow.kernels.registry import has_kernel
    assert has_kernel("PyFunc", "CPU") and not has_kernel("PyFunc", "GPU")


# -- nn formulas ---------------------------------------------------------------------------------------


def test_nn_batch_normalization_l2_normalize_and_weighted_cross_entropy():
    x = RNG.normal(size=(4, 3))
    mean, var = RNG.normal(size=3), RNG.uniform(0.5, 2, 3)
    off, sc = RNG.normal(size=3), RNG.uniform(0.5, 2, 3)
    z = RNG.uniform(0, 1, (4, 3))
    g = cf.Graph()
    with g.as_default():
        bn = cf.nn.batch_normalization(cf.constant(x), mean, var, cf.constant(off), cf.constant(sc), 1e-3)
        bn_plain = cf.nn.batch_normalization(cf.constant(x), cf.constant(mean), cf.constant(var), None, None, 0.0)
        l2 = cf.nn.l2_normalize(cf.constant(x), axis=1)
        l2_all = cf.nn.l2_normalize(cf.constant(np.zeros(3)))
        wce = cf.nn.weighted_cross_entropy_with_logits(labels=cf.constant(z), logits=cf.constant(x), pos_weight=3.0)
        old = cf.nn.weighted_cross_entropy_with_logits(targets=cf.constant(z), logits=cf.constant(x), pos_weight=3.0)
    vbn, vplain, vl2, vzero, vw, vold = _run(g, [bn, bn_plain, l2, l2_all, wce, old])
    np.testing.assert_allclose(vbn, (x - mean) / np.sqrt(var + 1e-3) * sc + off, rtol=1e-10)
    np.testing.assert_allclose(vplain, (x - mean) / np.sqrt(var), rtol=1e-10)
    np.testing.assert_allclose(vl2, x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-10)
    np.testing.assert_array_equal(vzero, np.zeros(3))
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(vw, -3.0 * z * np.log(sig) - (1 - z) * np.log(1 - sig), rtol=1e-10)
    np.testing.assert_allclose(vold, vw)
