"""Every op's GPU (CuPy) kernel against its NumPy kernel, values and gradients.

Reuses the gradient-check table: each Case's graph runs once on /cpu:0 and once on /gpu:0,
in float64, float32 and float16 (half precision within half's rounding).  Skipped cleanly
when CuPy or a GPU is absent.
"""
import numpy as np
import pytest

import collflow as cf
from collflow.kernels import gpu

pytestmark = pytest.mark.gpu

if gpu.setup() is None:
    pytest.skip("no CuPy or no GPU on this machine", allow_module_level=True)

import gradcheck  # noqa: E402
import test_gradients  # noqa: E402

CASES = [c for c in test_gradients.ALL_CASES if c.op not in ("FusedAllReduce",)]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_gpu_kernel_matches_numpy(case, dtype):
    try:
        cg = gradcheck.case_graph(case, dtype)  # as the gradient check builds it
    except cf.errors.InvalidArgumentError as e:
        if dtype != np.float64 and "float64" in str(e):  # the case builds float64 tensors of its own
            pytest.skip(f"{case} is written in float64 only")
        raise
    except TypeError as e:
        # TF1 has no half form of these ops either (complex parts, FFTs and fractional pools
        # take float32/float64): the graph is refused when built, on every device
        if dtype == np.float16 and ("float16" in str(e)):
            pytest.skip(f"{case} has no float16 form: {str(e)[:80]}")
        raise
    out = {}
    for dev in ("/cpu:0", "/gpu:0"):
        with cf.Session(graph=cg.graph, config={"device": dev}) as s:
            try:
                s.run(cg.init)
                out[dev] = s.run(cg.ys + cg.grads, cg.feed)
            except cf.CollflowError as e:
                if dtype == np.float16 and dev == "/cpu:0":  # no reference: NumPy has no half kernel
                    pytest.skip(f"{case.op} has no float16 kernel on the CPU: {e.message[:80]}")
                raise
    for a, b in zip(out["/gpu:0"], out["/cpu:0"]):
        assert a.dtype == b.dtype and a.shape == b.shape
        if dtype == np.float16:  # both sides round to half after every op: compare at half's scale
            scale = max(1.0, float(np.max(np.abs(b.astype(np.float64)), initial=0.0)))
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=2e-2, atol=2e-2 * scale)
        else:
            tol = 1e-10 if dtype == np.float64 else 2e-4
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_sparse_xent_out_of_range_label_is_nan_on_gpu():
    """TF1's GPU kernel: a label outside [0, classes) gives a NaN loss and gradient row (the
    CPU kernel raises); the other rows are unaffected and nothing synchronises the host."""
    g = cf.Graph()
    with g.as_default():
        logits = cf.placeholder(cf.float32, (3, 4))
        labels = cf.placeholder(cf.int64, (3,))
        loss = cf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        grad = cf.gradients(cf.reduce_sum(loss), logits)[0]
    x = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)
    with cf.Session(graph=g, config={"device": "/gpu:0"}) as s:
        lv, gv = s.run([loss, grad], {logits: x, labels: np.array([1, 7, -1])})
    with cf.Session(graph=g, config={"device": "/cpu:0"}) as s:
        with pytest.raises(cf.errors.InvalidArgumentError, match="out of range"):
            s.run(loss, {logits: x, labels: np.array([1, 7, -1])})
        ok_l, ok_g = s.run([loss, grad], {logits: x, labels: np.array([1, 0, 0])})
    assert np.isnan(lv[1:]).all() and np.isnan(gv[1:]).all()
    np.testing.assert_allclose(lv[0], ok_l[0], rtol=1e-5)
    np.testing.assert_allclose(gv[0], ok_g[0], rtol=1e-5, atol=1e-6)


def test_training_step_on_gpu_matches_cpu():
    import dp_model as dp
    m = dp.build("adam", sync=False)
    ref = dp.train_single(m, steps=3, global_batch=8)
    xs, ys, idss = dp.data(3, 8)
    with cf.Session(graph=m["graph"], config={"device": "/gpu:0"}) as s:
        s.run(m["init"])
        for k in range(3):
            s.run(m["train"], {m["x"]: xs[k], m["y"]: ys[k], m["ids"]: idss[k]})
        got = s.run(m["vars"])
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_nccl_allreduce_with_one_rank():
    import cupy as cp
    from collflow.comm import LocalCommunicator
    from collflow.comm.nccl import NCCLCommunicator
    nc = NCCLCommunicator(LocalCommunicator())
    x = cp.arange(10, dtype=cp.float32)
    out = nc.allreduce_group_async([x, x * 2]).wait()
    cp.cuda.get_current_stream().synchronize()
    np.testing.assert_array_equal(cp.asnumpy(out[0]), np.arange(10))
    np.testing.assert_array_equal(cp.asnumpy(out[1]), 2 * np.arange(10))


def test_sgd_variable_averaging_on_gpu_matches_cpu():
    """SyncReplicasOptimizer(SGD) averages the updated variables (AverageVariables) with the
    GPU kernel: two thread ranks sharing the GPU go through host staging."""
    from collflow.comm import ThreadWorld

    def rank(c, dev):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, (None, 6))
            y = cf.placeholder(cf.int32, (None,))
            w = cf.Variable(np.random.default_rng(0).normal(size=(6, 3)), name="w")
            b = cf.Variable(np.zeros(3), name="b")
            loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(x, w) + b))
            train = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.5), comm=c,
                                                   average_parameters=True).minimize(loss)
            init = cf.global_variables_initializer()
        rng = np.random.default_rng(c.rank)
        with cf.Session(graph=g, config={"comm": c, "device": dev}) as s:
            s.run(init)
            for _ in range(3):
                s.run(train, {x: rng.normal(size=(4, 6)), y: rng.integers(0, 3, 4).astype(np.int32)})
            assert "AverageVariables" in [op.type for op in g.get_operations()]
            cf.train.check_replicas_identical(s, comm=c)  # hashes the GPU variables' bytes
            return s.run([w, b])

    gpu = ThreadWorld(2, timeout=60).run(lambda c: rank(c, "/gpu:0"))
    cpu = ThreadWorld(2, timeout=60).run(lambda c: rank(c, "/cpu:0"))
    for r in range(2):
        for a, b in zip(gpu[r], cpu[r]):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        for a, b in zip(gpu[r], gpu[0]):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_a_captured_cuda_graph_step_trains_as_the_eager_step(model):
    """gpu.capture_graph records one static SGD step (GEMMs through collflow's own cuBLAS
    handle, which CuPy's wrappers refuse during a capture); replaying it must train the
    variables exactly as running the step again does."""
    import cupy as cp
    from collflow import models
    from collflow.kernels import gpu as gpu_mod

    def build():
        g = cf.Graph()
        with g.as_default():
            cf.set_random_seed(3)
            opt = cf.train.GradientDescentOptimizer(0.05)
            m = (models.build_mlp(20, (32, 16), 5, optimizer=opt) if model == "mlp"
                 else models.build_cnn((8, 8, 1), 5, filters=(4, 8), optimizer=opt))
            init = cf.global_variables_initializer()
        return g, m, init

    rng = np.random.default_rng(0)
    shape = (16, 20) if model == "mlp" else (16, 8, 8, 1)
    xh, yh = rng.normal(size=shape).astype(np.float32), rng.integers(0, 5, 16).astype(np.int32)
    results = []
    for captured in (False, True):
        g, m, init = build()
        stream = cp.cuda.Stream(non_blocking=True)
        with stream, cf.Session(graph=g, config={"device": "/gpu:0"}) as s:
            s.run(init)
            x, y = cp.asarray(xh), cp.asarray(yh)
            step = s.make_callable(m.train_op, [m.x, m.y])
            step(x, y)  # warm: buffers come from the pool, kernels are compiled
            if captured:
                graph = gpu_mod.capture_graph(lambda: step(x, y), stream)
                for _ in range(4):
                    graph.launch(stream)
            else:
                for _ in range(4):
                    step(x, y)
            stream.synchronize()
            results.append(s.run(list(m.variables)))
    for a, b in zip(results[1], results[0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_philox_kernel_gives_the_host_words_bit_for_bit():
    """The CUDA Philox kernel of GPU random streams against kernels/philox.py (TF's words),
    across a carry of the 128-bit counter's lower half."""
    import cupy as cp
    from collflow.kernels import philox as P
    from collflow.kernels.device_random import PhiloxStream
    s = PhiloxStream(gpu.setup().xp, 5, 6)
    s.counter = ((1 << 32) - 1, (1 << 32) - 1, s.counter[2], s.counter[3])  # lower half = 2**64 - 1
    a = cp.asnumpy(s.words(4 * 1000 + 3))
    host = P.blocks(s.key, s.counter, np.arange(0, 1001)).reshape(-1)
    np.testing.assert_array_equal(a, host[:4003])
    u = cp.asnumpy(s.uniform((500,), np.float32))
    assert u.min() >= 0 and u.max() < 1


def test_dropout_masks_continue_after_a_restore_on_the_gpu(tmp_path):
    from collflow.train import Saver

    def build():
        g = cf.Graph()
        with g.as_default():
            r = cf.nn.dropout(cf.ones((64, 32)), keep_prob=0.5, seed=11, name="drop")
            v = cf.Variable(cf.zeros((1,)), name="v")
        return g, r, v
    g, r, v = build()
    with cf.Session(graph=g, config={"device": "/gpu:0"}) as s:
        s.run(v.initializer)
        s.run(r)
        path = Saver([v]).save(s, str(tmp_path / "r.h5"))
        want = [s.run(r) for _ in range(3)]
    g, r, v = build()
    with cf.Session(graph=g, config={"device": "/gpu:0"}) as s:
        Saver([v]).restore(s, path)
        for w in want:
            np.testing.assert_array_equal(s.run(r), w)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_recurrent_steps_on_gpu_match_cpu(kind, dtype):
    """dynamic_rnn over an LSTMCell or GRUCell runs BlockLSTM / BlockGRU, whose elementwise
    steps on the GPU are fused CUDA kernels (kernels/gpu_kernels.py), forward and backward:
    outputs, final state and gradients equal the CPU's NumPy passes."""
    from collflow.kernels import rnn_kernels
    assert set(rnn_kernels.FUSED_STEPS) == {"lstm", "lstm_grad", "gru_gates", "gru_out", "gru_grad_cu",
                                            "gru_grad_r", "gru_grad_h"}
    rng = np.random.default_rng(3)
    xv = rng.normal(size=(8, 12, 16)).astype(dtype)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(dtype, (8, 12, 16))
        cell = cf.nn.rnn_cell.LSTMCell(32) if kind == "lstm" else cf.nn.rnn_cell.GRUCell(32)
        out, state = cf.nn.dynamic_rnn(cell, x, dtype=dtype)
        final = [state.c, state.h] if kind == "lstm" else [state]
        loss = cf.reduce_sum(out * out) + cf.reduce_sum(final[0])
        grads = cf.gradients(loss, [x] + cf.trainable_variables())
        init = cf.global_variables_initializer()
    assert ("BlockLSTM" if kind == "lstm" else "BlockGRU") in [op.type for op in g.get_operations()]
    res = {}
    for dev in ("/cpu:0", "/gpu:0"):
        with cf.Session(graph=g, config={"device": dev}) as s:
            s.run(init)
            res[dev] = s.run([out] + final + grads, {x: xv})
    tol = 1e-10 if dtype == np.float64 else 2e-4
    for a, b in zip(res["/gpu:0"], res["/cpu:0"]):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
