"""Placement and copy insertion, on the CPU with a simulated second device (no GPU needed)."""
import numpy as np
import pytest

import collflow as cf
from collflow.kernels.device import Device
from simulated_device import registered
from collflow.kernels.registry import register_kernel
from collflow.graph.registry import register_op


@pytest.fixture
def fake_gpu():
    # a "GPU" whose array module is NumPy: generic kernels serve it, copies are real copies
    from collflow.kernels import gpu
    if gpu.setup() is not None:  # CuPy's kernels are registered for the GPU type: no simulation
        pytest.skip("a real GPU is /gpu:0 here (tests/test_gpu.py covers it)")
    with registered(Device("/gpu:0", "GPU", 0, np)):
        yield "/gpu:0"


register_op("CpuOnlyTestOp", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)])
register_kernel("CpuOnlyTestOp", device="CPU")(lambda op, ctx: lambda x: x * 2)


def _mlp():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 4), name="x")
        y = cf.placeholder(cf.int32, (None,), name="y")
        w = cf.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), name="w")
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(x, w)))
        train = cf.train.GradientDescentOptimizer(0.5).minimize(loss)
        init = cf.global_variables_initializer()
    return g, x, y, w, loss, train, init


def _train(g, x, y, w, loss, train, init, config):
    xv = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    yv = np.arange(8, dtype=np.int32) % 3
    with cf.Session(graph=g, config=config) as s:
        s.run(init)
        for _ in range(3):
            l, _ = s.run([loss, train], {x: xv, y: yv})
        plan = s.plan_for([loss, train], {x: xv, y: yv})
        return l, s.run(w), plan


def test_ops_go_to_the_default_device_and_feeds_are_copied_in(fake_gpu):
    m = _mlp()
    l_gpu, w_gpu, plan = _train(*m, config={"device": fake_gpu})
    l_cpu, w_cpu, _ = _train(*m, config={"device": "/cpu:0"})
    np.testing.assert_array_equal(w_gpu, w_cpu)
    assert l_gpu == l_cpu
    assert plan.placement["MatMul"] == "/gpu:0"
    # feeds arrive on the host: one copy per fed placeholder into the GPU
    assert sorted(c.split("->")[0] for c in plan.copies) == ["x:0", "y:0"]
    # a variable's reads and updates live where the variable lives
    upd = [n for n in plan.placement if "GradientDescent" in n or "Apply" in n]
    assert upd and all(plan.placement[n] == plan.placement["w"] for n in upd)


def test_device_scope_overrides_and_copies_cross_back(fake_gpu):
    g = cf.Graph()
    with g.as_default():
        a = cf.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="a")
        with cf.device("/cpu:0"):
            b = cf.square(a, name="b")
        c = cf.reduce_sum(b * 2.0, name="c")
    with cf.Session(graph=g, config={"device": fake_gpu}) as s:
        assert s.run(c) == float((np.arange(6) ** 2 * 2).sum())
        plan = s.plan_for(c)
    assert plan.placement["b"] == "/cpu:0" and plan.placement["c"] == "/gpu:0"
    assert any(name.startswith("a:0->/cpu:0") for name in plan.copies)
    assert any(name.startswith("b:0->/gpu:0") for name in plan.copies)


def test_op_without_a_kernel_on_the_device_is_placed_on_the_host(fake_gpu):
    g = cf.Graph()
    with g.as_default():
        a = cf.constant([1.0, 2.0])
        b = g.create_op("CpuOnlyTestOp", [a + 1.0]).outputs[0]
        c = b * 3.0
    with cf.Session(graph=g, config={"device": fake_gpu}) as s:
        np.testing.assert_array_equal(s.run(c), [12.0, 18.0])
        plan = s.plan_for(c)
    assert plan.placement[b.op.name] == "/cpu:0"
    assert len(plan.copies) == 2  # into the CPU op, and back out


def test_host_only_ops_stay_on_the_host(fake_gpu):
    g = cf.Graph()
    with g.as_default():
        q = cf.FIFOQueue(4, [cf.float32], shapes=[(2,)])
        enq = q.enqueue(cf.constant([1.0, 2.0]) * 2.0)
        out = q.dequeue() + 1.0
    with cf.Session(graph=g, config={"device": fake_gpu}) as s:
        s.run(enq)
        np.testing.assert_array_equal(s.run(out), [3.0, 5.0])
        plan = s.plan_for(out)
    assert all(dev == "/cpu:0" for name, dev in plan.placement.items() if "fifo" in name.lower() or "Queue" in name)


def test_pinning_to_an_absent_gpu_is_an_error_unless_soft():
    g = cf.Graph()
    with g.as_default():
        with cf.device("/gpu:3"):
            a = cf.constant(1.0) + 1.0
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.errors.InvalidArgumentError, match="allow_soft_placement"):
            s.run(a)
    with cf.Session(graph=g, config={"allow_soft_placement": True}) as s:
        assert s.run(a) == 2.0


@pytest.mark.host_only("there is a (simulated) GPU")
def test_auto_device_is_the_cpu_without_a_gpu():
    with cf.Session(graph=cf.Graph()) as s:
        assert s._default_device == "/cpu:0"
