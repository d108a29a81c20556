"""Kernels placed on a GPU return device arrays, checked without a GPU.

A kernel that builds its result with NumPy (`np.asarray(...)`) instead of the device's array
module hands a host array to the GPU ops after it; on a real GPU that fails far from its cause
(seen on an H200: CommSize's host scalar reached a RealDiv in SyncReplicasOptimizer).  Here a
simulated device computes with NumPy through a module whose every array is a subclass
(`DevArray`): a kernel on that device returning a plain ndarray or NumPy scalar is flagged.
Runs every case of the gradient table and a synchronous two-rank training step on it.
"""
import collections
import contextlib

import numpy as np
import pytest

import collflow as cf
import collflow.kernels.device as device_mod
import collflow.runtime.executor as executor_mod
from collflow.kernels.device import Device

import gradcheck
import test_gradients
from simulated_device import DeviceModule, registered, simulated_copy

# passed through unchanged by design, not made by the kernel: Identity in loop plans forwards
# its input (the consumer moves it); indexing a NumPy array gives a NumPy scalar where CuPy
# gives a 0-d device array (TensorArrayRead of a 1-d array)
ARTIFACTS = {"Identity", "TensorArrayReadV3"}


@pytest.fixture
def strict_gpu(monkeypatch):
    from collflow.kernels import gpu
    if gpu.setup() is not None:
        pytest.skip("a real GPU is /gpu:0 here (tests/test_gpu.py covers it)")
    xp = DeviceModule(np)
    stack = contextlib.ExitStack()
    stack.enter_context(registered(Device("/gpu:0", "GPU", 0, xp)))
    monkeypatch.setattr(device_mod, "copy_between", simulated_copy(device_mod.copy_between, xp))

    flagged = collections.defaultdict(set)
    bind = executor_mod.get_kernel

    def get_kernel(op, device_type):
        factory, is_async = bind(op, device_type)
        if device_type != "GPU" or is_async:
            return factory, is_async

        def watched(op_, ctx):
            k = factory(op_, ctx)
            if ctx.xp is not xp or k is None:
                return k

            def run(*args):
                out = k(*args)
                for v in (out if isinstance(out, tuple) else (out,)):
                    if type(v) is np.ndarray or isinstance(v, np.generic):
                        flagged[op_.type].add(op_.name)
                return out
            for attr in ("constant_result", "is_async"):
                if hasattr(k, attr):
                    setattr(run, attr, getattr(k, attr))
            return run
        return watched, is_async
    monkeypatch.setattr(executor_mod, "get_kernel", get_kernel)
    with stack:
        yield flagged


def test_kernels_of_the_gradient_table_return_device_arrays(strict_gpu):
    ran = 0
    for case in test_gradients.ALL_CASES:
        if case.op in ("PSGather", "PSGatherN"):  # their GPU path stages through CuPy's asnumpy
            continue
        cg = gradcheck.case_graph(case)
        with cf.Session(graph=cg.graph, config={"device": "/gpu:0"}) as s:
            s.run(cg.init)
            s.run(cg.ys + cg.grads, cg.feed)
        ran += 1
    assert ran > 250
    leaks = {t: sorted(n)[:3] for t, n in strict_gpu.items() if t not in ARTIFACTS}
    assert not leaks, f"kernels on the GPU returned host arrays: {leaks}"


def test_a_synchronous_training_step_keeps_device_arrays(strict_gpu):
    """SyncReplicasOptimizer's graph on two thread ranks (CommSize, the averaging scale, the
    fused all-reduce's consumers): the path where a host scalar from CommSize once leaked."""
    from collflow.comm import ThreadWorld

    def rank(c):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, (None, 6))
            y = cf.placeholder(cf.int32, (None,))
            w = cf.Variable(np.random.default_rng(0).normal(size=(6, 3)), name="w")
            loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(x, w)))
            train = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.5), comm=c).minimize(loss)
            init = cf.global_variables_initializer()
        rng = np.random.default_rng(c.rank)
        with cf.Session(graph=g, config={"comm": c, "device": "/gpu:0"}) as s:
            s.run(init)
            for _ in range(2):
                s.run(train, {x: rng.normal(size=(4, 6)), y: rng.integers(0, 3, 4).astype(np.int32)})
            return {op.type for op in g.get_operations()}

    types_made = ThreadWorld(2, timeout=30).run(rank)[0]
    assert "CommSize" in types_made
    leaks = {t: sorted(n)[:3] for t, n in strict_gpu.items() if t not in ARTIFACTS}
    assert not leaks, f"kernels on the GPU returned host arrays: {leaks}"


@pytest.mark.parametrize("with_loop", [False, True])
def test_shape_plumbing_stays_on_the_host(strict_gpu, with_loop):
    """TF's HostMemory: Shape reads only its input's shape and gives a host value, and the
    convolution gradients read their size arguments on the host, so a conv net's step copies
    nothing between devices but its feeds (a host-to-device copy of a shape inside the step
    is what made CUDA-graph capture of the CNN step fail on an H100).  In a plan with a loop
    (no copy nodes) the kernels take the host shape as it is."""
    from collflow import models
    g = cf.Graph()
    with g.as_default():
        m = models.build_cnn((8, 8, 1), 5, filters=(4, 8), optimizer=cf.train.GradientDescentOptimizer(0.1))
        extra = cf.while_loop(lambda i: i < 3, lambda i: i + 1, [cf.constant(0)]) if with_loop else None
        init = cf.global_variables_initializer()
    rng = np.random.default_rng(0)
    feed = {m.x: rng.normal(size=(6, 8, 8, 1)).astype(np.float32), m.y: rng.integers(0, 5, 6).astype(np.int32)}
    with cf.Session(graph=g, config={"device": "/gpu:0"}) as s:
        s.run(init)
        fetches = [m.train_op, m.loss] + ([extra] if with_loop else [])
        loss0 = s.run(fetches, feed)[1]
        for _ in range(5):
            loss = s.run(fetches, feed)[1]
        plan = s.plan_for(fetches, feed)
        shapes = [op for op in g.get_operations() if op.type == "Shape"]
        grads = [op for op in g.get_operations() if op.type == "Conv2DBackpropInput"]
        assert grads and any(op.inputs[0].op.type == "Shape" for op in grads)
        assert {plan.placement[op.name] for op in shapes if op.name in plan.placement} == {"/cpu:0"}
        if not with_loop:
            copies = [n for n in plan.ops if n.type == "_DeviceCopy"]
            assert {c.src.op.type for c in copies} <= {"Placeholder"}, [c.name for c in copies]
    assert loss < loss0
    leaks = {t: sorted(n)[:3] for t, n in strict_gpu.items() if t not in ARTIFACTS}
    assert not leaks, f"kernels on the GPU returned host arrays: {leaks}"


@pytest.mark.parametrize("save_dev,restore_dev", [("/gpu:0", "/gpu:0"), ("/cpu:0", "/gpu:0")])
def test_random_streams_on_the_device_continue_after_restore(strict_gpu, tmp_path, save_dev, restore_dev, caplog):
    """A GPU op's random stream (counter-based Philox) is saved in the checkpoint and a
    restored session continues it exactly (dropout masks of a resumed run repeat the
    uninterrupted run's); a stream saved on another kind of device is not forced onto it."""
    from collflow.train import Saver

    def build():
        g = cf.Graph()
        with g.as_default():
            r = cf.nn.dropout(cf.ones((6, 5)), keep_prob=0.5, seed=11, name="drop")
            n = cf.random_normal((4,), seed=3, name="noise")
            v = cf.Variable(cf.zeros((1,)), name="v")
        return g, [r, n], v
    g, rs, v = build()
    with cf.Session(graph=g, config={"device": save_dev}) as s:
        s.run(v.initializer)
        s.run(rs)
        path = Saver([v]).save(s, str(tmp_path / "r.h5"))
        want = [s.run(rs) for _ in range(3)]
    g, rs, v = build()
    with cf.Session(graph=g, config={"device": restore_dev}) as s:
        Saver([v]).restore(s, path)
        got = [s.run(rs) for _ in range(3)]
    same = all(np.array_equal(a, b) for w, gt in zip(want, got) for a, b in zip(w, gt))
    if save_dev == restore_dev:
        assert same
    else:
        assert not same and "another device" in caplog.text


def test_string_variables_stay_on_the_host(strict_gpu):
    """A string variable's handle goes to the CPU (strings have no device form; on an H100
    match_filenames_once's string variable made a host-to-GPU copy of its file names fail)."""
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(["a.txt", "b.txt"], name="names")
        n = cf.size(v)
        init = cf.global_variables_initializer()
    with cf.Session(graph=g, config={"device": "/gpu:0"}) as s:
        s.run(init)
        names, size = s.run([v, n])
        plan = s.plan_for([init])
        assert plan.placement["names"] == "/cpu:0"
        assert not [c for c in plan.ops if c.type == "_DeviceCopy" and c.src.dtype == cf.string]
    assert list(names) == [b"a.txt", b"b.txt"] and size == 2
