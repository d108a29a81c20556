"""Into-variants (kernels/into_kernels.py): each op written into a given array equals its
plain kernel's result, for every op type that has one."""
import os

import numpy as np
import pytest

import collflow as cf
from collflow.graph.ops.op_util import make_op
from collflow.kernels.device import get_device
from collflow.kernels.registry import KernelContext, get_into, get_kernel
from collflow.kernels import into_kernels  # noqa: F401  (registers them)


def _cases():
    rng = np.random.default_rng(0)
    pos = lambda *s: rng.uniform(0.5, 2.0, s)  # noqa: E731
    any_ = lambda *s: rng.standard_normal(s)  # noqa: E731
    return [
        ("add", lambda a, b: a + b, [any_(3, 4), any_(4)]),
        ("sub", lambda a, b: a - b, [any_(3, 4), any_(3, 4)]),
        ("mul", lambda a, b: a * b, [any_(3, 4), any_(1, 4)]),
        ("div", lambda a, b: a / b, [any_(3, 4), pos(3, 4)]),
        ("maximum", cf.maximum, [any_(5), any_(5)]),
        ("minimum", cf.minimum, [any_(2, 3), any_(2, 3)]),
        ("neg", cf.negative, [any_(6)]),
        ("square", cf.square, [any_(2, 2)]),
        ("exp", cf.exp, [any_(4)]),
        ("log", cf.log, [pos(4)]),
        ("sqrt", cf.sqrt, [pos(3, 3)]),
        ("abs", cf.abs, [any_(7)]),
        ("matmul", cf.matmul, [any_(3, 4), any_(4, 5)]),
        ("matmul_ta", lambda a, b: cf.matmul(a, b, transpose_a=True), [any_(4, 3), any_(4, 5)]),
        ("matmul_tb", lambda a, b: cf.matmul(a, b, transpose_b=True), [any_(3, 4), any_(5, 4)]),
        ("matmul_tt", lambda a, b: cf.matmul(a, b, transpose_a=True, transpose_b=True), [any_(4, 3), any_(5, 4)]),
        ("sum_all", lambda a: cf.reduce_sum(a), [any_(3, 4)]),
        ("sum_0", lambda a: cf.reduce_sum(a, axis=0), [any_(3, 4)]),
        ("sum_keep", lambda a: cf.reduce_sum(a, axis=[1], keepdims=True), [any_(3, 4)]),
        ("sum_neg_axes", lambda a: cf.reduce_sum(a, axis=[-1, 0]), [any_(3, 4, 5)]),
        ("sum_all_keep", lambda a: cf.reduce_sum(a, keepdims=True), [any_(3, 4)]),
        ("mean_1", lambda a: cf.reduce_mean(a, axis=1), [any_(3, 4)]),
        ("mean_multi", lambda a: cf.reduce_mean(a, axis=[0, 2], keepdims=True), [any_(30, 4, 50)]),
        ("add_bcast", lambda a, b: a + b, [any_(1, 4), any_(3, 1)]),
        ("matmul_big", cf.matmul, [any_(64, 300), any_(300, 70)]),
        # short and wide: computed as (b @ a^T)^T (math_kernels.wide_nt_product)
        ("matmul_tb_wide", lambda a, b: cf.matmul(a, b, transpose_b=True), [any_(16, 256), any_(640, 256)]),
        ("add_n", lambda a, b, c: cf.add_n([a, b, c]), [any_(2, 3), any_(2, 3), any_(2, 3)]),
        ("bias_add_grad", lambda a: make_op("BiasAddGrad", [a], {}, name="bag").outputs[0], [any_(2, 3, 4)]),
    ]


_NO_F16 = {"matmul", "matmul_ta", "matmul_tb", "matmul_tt", "matmul_big", "matmul_tb_wide", "mean_1", "mean_multi"}


# float16: the elementwise ops and sums (products of float16 matrices are not a gradient
# path here; the float16 mean has no into-variant, see below)
_PARAMS = [pytest.param(name, fn, args, dt, id=f"{name}-{np.dtype(dt).name}")
           for name, fn, args in _cases() for dt in (np.float16, np.float32, np.float64)
           if not (dt == np.float16 and name in _NO_F16)]


@pytest.mark.parametrize("name,fn,args,dtype", _PARAMS)
def test_into_variant_equals_the_kernel(name, fn, args, dtype):
    g = cf.Graph()
    with g.as_default():
        phs = [cf.placeholder(cf.as_dtype(dtype), a.shape) for a in args]
        out = fn(*phs)
    op = out.op
    ctx = KernelContext(np, get_device("/cpu:0"), None, None, {})
    factory = get_into(op.type)
    assert factory is not None, f"{op.type} has no into-variant"
    into = factory(op, ctx)
    assert into is not None
    vals = [a.astype(dtype) for a in args]
    want = get_kernel(op, "CPU")[0](op, ctx)(*vals)
    buf = np.full(out.shape.num_elements() + 3, np.nan, dtype)  # a slot inside a larger buffer
    slot = buf[1:1 + out.shape.num_elements()].reshape(out.shape.as_list())
    got = into(*vals, out=slot)
    assert got is slot or np.shares_memory(got, slot)
    np.testing.assert_array_equal(slot, want)  # bit for bit: the same arithmetic
    assert np.isnan(buf[0]) and np.isnan(buf[-2:]).all()  # nothing written outside the slot


def test_no_into_variant_for_integer_outputs():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.int32, (3,))
        out = a + a
    ctx = KernelContext(np, get_device("/cpu:0"), None, None, {})
    assert get_into("Add")(out.op, ctx) is None


def test_float16_mean_has_no_into_variant():
    """NumPy's float16 mean sums in float32; written into a float16 slot the sum would round
    (and overflow: 1000 x 100 > 65504) before the division."""
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float16, (1000,))
        out = cf.reduce_mean(a)
    ctx = KernelContext(np, get_device("/cpu:0"), None, None, {})
    assert get_into("Mean")(out.op, ctx) is None
    assert get_kernel(out.op, "CPU")[0](out.op, ctx)(np.full(1000, 100, np.float16)) == 100


def test_no_slot_for_a_gradient_of_another_dtype_than_the_bucket():
    """A bucket mixing float32 and float64 travels as float64: only the float64 gradients are
    computed into it (a float32 op writing into a float64 slot would compute in float64)."""
    from collflow.comm.local import LocalCommunicator
    from collflow.graph.ops.fusion_ops import fused_all_reduce
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float32, (4,))
        b = cf.placeholder(cf.float64, (3,))
        red = fused_all_reduce([a * 2.0, b * 2.0], key="mixed", average=False)
    feed = {a: np.arange(4, dtype=np.float32), b: np.arange(3.0)}
    with cf.Session(graph=g, config={"comm": LocalCommunicator()}) as s:
        got = s.run(red, feed)
        plan = s.plan_for(red, feed)
        k = [k for o, k in zip(plan.ops, plan.kernels) if o.type == "FusedAllReduce"][0]
        assert k.input_slots.slot_for(0) is None and k.input_slots.slot_for(1) is not None
        # computing into the slot is the NumPy kernels' (the into-variants); on a device,
        # simulated or real, every gradient is copied into the bucket
        on_host = os.environ.get("COLLFLOW_TEST_DEVICE") not in ("gpu", "sim")
        assert k.input_slots.bucket.placed == (1 if on_host else 0)
    assert got[0].dtype == np.float32
    np.testing.assert_array_equal(got[0], 2 * np.arange(4))
    np.testing.assert_array_equal(got[1], 2 * np.arange(3.0))
