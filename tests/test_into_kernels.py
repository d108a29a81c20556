"""Into-variants (kernels/into_kernels.py): each op written into a given array equals its
plain kernel's result, for every op type that has one."""
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
        ("mean_1", lambda a: cf.reduce_mean(a, axis=1), [any_(3, 4)]),
        ("add_n", lambda a, b, c: cf.add_n([a, b, c]), [any_(2, 3), any_(2, 3), any_(2, 3)]),
        ("bias_add_grad", lambda a: make_op("BiasAddGrad", [a], {}, name="bag").outputs[0], [any_(2, 3, 4)]),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,args", _cases(), ids=[c[0] for c in _cases()])
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
    got = into(slot, *vals)
    assert got is slot or np.shares_memory(got, slot)
    np.testing.assert_allclose(slot, want, rtol=1e-6 if dtype == np.float32 else 1e-13)
    assert np.isnan(buf[0]) and np.isnan(buf[-2:]).all()  # nothing written outside the slot


def test_no_into_variant_for_integer_or_mixed_dtypes():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.int32, (3,))
        out = a + a
    ctx = KernelContext(np, get_device("/cpu:0"), None, None, {})
    assert get_into("Add")(out.op, ctx) is None
