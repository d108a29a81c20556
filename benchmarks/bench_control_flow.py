"""Control flow in the graph: what a cf.while_loop iteration costs, and an LSTM training step
built with it, against the alternatives and against PyTorch.

    python benchmarks/bench_control_flow.py [--iters 200] [--repeats 5] [--threads 1] [--profile]

Part 1, per-iteration cost of a small loop body (v = v * 0.5 + 1.0 on a float32 vector of 16,
`--iters` iterations, the same math in every row):
- while_loop: one sess.run of a cf.while_loop whose trip count is fed (compiled to a Python
  `while` block, runtime/control_plan.py), and the same run by the frame-by-frame interpreter
  (`config={"control_flow": "interpret"}`, the fallback for raw control flow);
- unrolled: one sess.run of the body copied `--iters` times into the graph (static plan);
- python loop: a Python loop calling sess.run once per step, feeding the previous value
  (and the same through Session.make_callable);
- numpy: the Python loop of the two NumPy calls (the floor for any executor driven from Python);
- while_loop / unrolled fwd+bwd: the same with cf.gradients of sum(v) w.r.t. the input.
Part 2, an LSTM character model's training step (embedding 64 -> LSTM 128 -> softmax over
100 symbols, batch 32, 50 steps, Adam, cross-entropy, float32), random data:
- collflow dynamic_rnn (the loop in the graph, trip count at run time);
- collflow unrolled: the same cell and math unrolled over the 50 steps in the graph;
- torch nn.LSTM (+ nn.Embedding, nn.Linear, Adam) on the CPU, when torch is installed.
Each row is the median over `--repeats` repeats of the median of several timed calls; the
repeats go round-robin over the rows, so load changes on a shared machine hit all alike.  BLAS
and torch use `--threads` threads (default 1: small matmuls, and a fair, steadier comparison
on a shared machine).  `--profile` adds where an LSTM step's time goes (kernels vs executor,
cProfile's top functions).  Results go to benchmarks/results/bench_control_flow.json.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import common  # sets sys.path and disables output checking before collflow loads
import numpy as np

import collflow as cf
from collflow.nn import rnn

VOCAB, EMBED, HIDDEN, BATCH, SEQ = 100, 64, 128, 32, 50


# -- part 1: the loop ------------------------------------------------------------------------

def _loop_graphs(iters: int) -> Dict[str, Any]:
    """Graphs of the small body as a while loop, unrolled, and one step for a Python loop."""
    out: Dict[str, Any] = {}
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (16,), name="x")
        n = cf.placeholder(cf.int32, (), name="n")
        half, c1, one = cf.constant(0.5), cf.constant(1.0), cf.constant(1)
        v = cf.while_loop(lambda i, v: i < n, lambda i, v: (i + one, v * half + c1), [cf.constant(0), x])[1]
        gx = cf.gradients(cf.reduce_sum(v), x)[0]
    out["while"] = (g, x, n, v, gx)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (16,), name="x")
        half, c1 = cf.constant(0.5), cf.constant(1.0)
        v = x
        for _ in range(iters):
            v = v * half + c1
        gx = cf.gradients(cf.reduce_sum(v), x)[0]
    out["unrolled"] = (g, x, v, gx)
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (16,), name="x")
        v = x * cf.constant(0.5) + cf.constant(1.0)
    out["step"] = (g, x, v)
    return out


def bench_loop(iters: int, repeats: int, runs: int) -> List[Dict[str, Any]]:
    gr = _loop_graphs(iters)
    x0 = np.zeros((16,), np.float32)
    expect = x0.copy()
    for _ in range(iters):
        expect = expect * np.float32(0.5) + np.float32(1.0)
    cases: List[Tuple[Dict[str, Any], Any]] = []

    def measure(label: str, fn: Callable[[], Any], ops_per_iter: Optional[float], note: str = "") -> None:
        cases.append(({"name": label, "ops_per_iter": ops_per_iter, "note": note}, fn))

    g, x, n, v, gx = gr["while"]
    sw = cf.Session(graph=g)
    np.testing.assert_allclose(sw.run(v, {x: x0, n: iters}), expect, rtol=1e-5)
    fw = sw.make_callable(v, [x, n])
    fwb = sw.make_callable([v, gx], [x, n])
    fired = _firings(sw, v, {x: x0, n: iters})
    fired_b = _firings(sw, [v, gx], {x: x0, n: iters})
    measure("while_loop", lambda: fw(x0, iters), fired / iters if fired else None)
    measure("while_loop fwd+bwd", lambda: fwb(x0, iters), fired_b / iters if fired_b else None)
    # the same graph run by the frame-by-frame interpreter (the fallback for raw control flow)
    si = cf.Session(graph=g, config={"control_flow": "interpret"})
    fi = si.make_callable(v, [x, n])
    fib = si.make_callable([v, gx], [x, n])
    measure("while_loop, interpreted", lambda: fi(x0, iters), None)
    measure("while_loop fwd+bwd, interpreted", lambda: fib(x0, iters), None)

    g, x, v, gx = gr["unrolled"]
    su = cf.Session(graph=g)
    np.testing.assert_allclose(su.run(v, {x: x0}), expect, rtol=1e-5)
    fu = su.make_callable(v, [x])
    fub = su.make_callable([v, gx], [x])
    measure("unrolled in graph", lambda: fu(x0), len(su.plan_for(v, {x: x0}).ops) / iters)
    measure("unrolled fwd+bwd", lambda: fub(x0), len(su.plan_for([v, gx], {x: x0}).ops) / iters)

    g, x, v = gr["step"]
    ss = cf.Session(graph=g)
    step = ss.make_callable(v, [x])

    def py_run() -> Any:
        val = x0
        for _ in range(iters):
            val = ss.run(v, {x: val})
        return val

    def py_callable() -> Any:
        val = x0
        for _ in range(iters):
            val = step(val)
        return val
    np.testing.assert_allclose(py_run(), expect, rtol=1e-5)
    n_step = len(ss.plan_for(v, {x: x0}).ops)
    measure("python loop of sess.run", py_run, n_step, "one run per step")
    measure("python loop of make_callable", py_callable, n_step, "one call per step")

    half, c1 = np.float32(0.5), np.float32(1.0)

    def numpy_loop() -> Any:
        val = x0
        for _ in range(iters):
            val = np.add(np.multiply(val, half), c1)
        return val
    measure("numpy loop", numpy_loop, 2, "floor")
    rows = []
    for (row, _), st in zip(cases, interleaved([fn for _, fn in cases], repeats, runs)):
        rows.append(dict(row, us_per_iter=st["median"] / iters * 1e6, min_us=st["min"] / iters * 1e6,
                         max_us=st["max"] / iters * 1e6))
    for sess in (sw, su, ss):
        sess.close()
    return rows


def interleaved(fns: List[Any], repeats: int, number: int) -> List[Dict[str, float]]:
    """Per fn: the median over repeats of the median of `number` timed calls.

    The repeats go round-robin over the fns, so a change of machine load hits every row
    alike (the ratios between rows stay meaningful on a shared machine).  An entry may be a
    (common.IsolatedRunner, name) pair: that step runs in its worker's process.
    """
    for fn in fns:
        if callable(fn):
            fn()
            fn()
    meds: List[List[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            times = common.time_calls(fn, number) if callable(fn) else fn[0].time(fn[1], number)
            meds[k].append(common.median(times))
    return [common.summarize(m) for m in meds]


def _plan_kernels(plan: Any) -> Tuple[Callable[[], List[Callable]], Callable[[List[Callable]], None]]:
    """(get, set) of a plan's kernel callables: a compiled plan calls the `k<i>` globals of its
    generated function, the dynamic executor its `_kern` list."""
    if hasattr(plan, "_kern"):
        def get_d() -> List[Callable]:
            return list(plan._kern)

        def set_d(ks: List[Callable]) -> None:
            plan._kern = list(ks)
        return get_d, set_d
    glb = plan.fn.__globals__
    keys = sorted(k for k in glb if k.startswith("k") and k[1:].isdigit())

    def get_c() -> List[Callable]:
        return [glb[k] for k in keys]

    def set_c(ks: List[Callable]) -> None:
        for k, f in zip(keys, ks):
            glb[k] = f
    return get_c, set_c


def _firings(sess: Any, fetches: Any, feed: dict) -> Optional[int]:
    """How many kernel calls one run makes (what the executor dispatches per run)."""
    sess.run(fetches, feed)
    plan = sess.plan_for(fetches, feed)
    get, put = _plan_kernels(plan)
    orig = get()
    calls = [0]

    def count(k: Callable) -> Callable:
        def counted(*a: Any) -> Any:
            calls[0] += 1
            return k(*a)
        return counted
    put([count(k) for k in orig])
    try:
        sess.run(fetches, feed)
    finally:
        put(orig)
    return calls[0]


# -- part 2: the LSTM ---------------------------------------------------------------------------

def _head(h: Any, y: Any, rng: np.random.Generator, opt: Any) -> Tuple[Any, Any]:
    w = cf.Variable(rng.uniform(-0.1, 0.1, (HIDDEN, VOCAB)).astype(np.float32), name="softmax_w")
    b = cf.Variable(np.zeros((VOCAB,), np.float32), name="softmax_b")
    logits = cf.matmul(cf.reshape(h, (-1, HIDDEN)), w) + b
    loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=cf.reshape(y, (-1,)), logits=logits))
    return loss, opt.minimize(loss)


def build_collflow(unrolled: bool) -> Tuple[Any, Any, Any, Any, Any]:
    g = cf.Graph()
    with g.as_default():
        if not unrolled:
            m = rnn.build_char_lm(VOCAB, EMBED, HIDDEN, SEQ, optimizer=cf.train.AdamOptimizer(2e-3),
                                  global_step=False, seed=0)
            return g, m.x, m.y, m.loss, m.train_op
        rng = np.random.default_rng(0)
        x = cf.placeholder(cf.int32, (None, SEQ), name="x")
        y = cf.placeholder(cf.int32, (None, SEQ), name="y")
        emb = cf.Variable(rng.uniform(-0.1, 0.1, (VOCAB, EMBED)).astype(np.float32), name="embedding")
        e = cf.transpose(cf.nn.embedding_lookup(emb, x), (1, 0, 2))  # [time, batch, embed]
        cell = rnn.LSTMCell(HIDDEN, seed=1)
        cell.build(EMBED, cf.float32)
        project, step = cell.input_projection()
        p = cf.reshape(project(cf.reshape(e, (-1, EMBED))), (SEQ, -1, 4 * HIDDEN))
        state = cell.zero_state(cf.shape(x)[0], cf.float32)
        outs = []
        # the same math as dynamic_rnn, one copy per step; unstack (not p[t]) so the gradient
        # is one stack, not one dense [SEQ, ...] scatter per step
        for p_t in cf.unstack(p, num=SEQ):
            o, state = step(p_t, state)
            outs.append(o)
        h = cf.stack(outs, axis=1)
        loss, train_op = _head(h, y, rng, cf.train.AdamOptimizer(2e-3))
    return g, x, y, loss, train_op


def build_torch(torch: Any) -> Tuple[Callable[[], float], Callable[[], float]]:
    nn = torch.nn
    torch.manual_seed(0)
    emb, lstm, head = nn.Embedding(VOCAB, EMBED), nn.LSTM(EMBED, HIDDEN, batch_first=True), nn.Linear(HIDDEN, VOCAB)
    params = list(emb.parameters()) + list(lstm.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=2e-3)
    rng = np.random.default_rng(1)
    xb = torch.from_numpy(rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int64))
    yb = torch.from_numpy(rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int64))
    lossf = nn.CrossEntropyLoss()

    def loss_of() -> Any:
        h, _ = lstm(emb(xb))
        return lossf(head(h.reshape(-1, HIDDEN)), yb.reshape(-1))

    def train_step() -> float:
        opt.zero_grad(set_to_none=True)
        loss = loss_of()
        loss.backward()
        opt.step()
        return loss.item()

    def forward() -> float:
        with torch.no_grad():
            return loss_of().item()
    return train_step, forward


def bench_lstm(repeats: int, steps: int, threads: int, profile: bool) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    rng = np.random.default_rng(1)
    xb = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    yb = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    cases: List[Tuple[Dict[str, Any], Any]] = []
    prof_info: Dict[str, Any] = {}

    def measure(label: str, fn: Any, kind: str) -> None:
        cases.append(({"name": label, "kind": kind}, fn))

    # each model in a process of its own (common.IsolatedRunner), as a user trains one: collflow's
    # malloc settings are process-wide and apply to torch too, and the unrolled graph's run
    # changed the dynamic_rnn step's time when both shared a process (15.8 against 13.4-14.5 ms)
    workers = [common.IsolatedRunner(collflow_case, [f"{kind}:train", f"{kind}:forward"], (threads,))
               for kind in ("dynamic_rnn", "unrolled")]
    for w, kind in zip(workers, ("dynamic_rnn", "unrolled")):
        measure(f"collflow {kind}", (w, f"{kind}:train"), "train step")
        measure(f"collflow {kind}", (w, f"{kind}:forward"), "forward (loss)")
    if profile:
        g, x, y, loss, train_op = build_collflow(False)
        with g.as_default():
            init = cf.global_variables_initializer()
        with cf.Session(graph=g) as sess:
            sess.run(init)
            prof_info = profile_step(sess, [loss, train_op], {x: xb, y: yb})
    if common.try_import_torch() is not None:
        workers.append(common.IsolatedRunner(torch_case, ["train", "forward"], (threads,)))
        measure("torch nn.LSTM", (workers[-1], "train"), "train step")
        measure("torch nn.LSTM", (workers[-1], "forward"), "forward (loss)")
    try:
        rows = [dict(row, ms=st["median"] * 1e3, min_ms=st["min"] * 1e3, max_ms=st["max"] * 1e3)
                for (row, _), st in zip(cases, interleaved([fn for _, fn in cases], repeats, steps))]
    finally:
        for w in workers:
            w.close()
    return rows, prof_info


def collflow_case(name: str, threads: int) -> Callable[[], Any]:
    """A collflow LSTM model's train step or forward pass, "dynamic_rnn:train" etc.
    (IsolatedRunner's factory, run in its process)."""
    global _LIMITER
    try:
        from threadpoolctl import threadpool_limits
        _LIMITER = threadpool_limits(limits=threads, user_api="blas")
    except ImportError:
        pass
    kind, part = name.split(":")
    g, x, y, loss, train_op = build_collflow(kind == "unrolled")
    with g.as_default():
        init = cf.global_variables_initializer()
    sess = cf.Session(graph=g)
    sess.run(init)
    rng = np.random.default_rng(1)
    xb = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    yb = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    fn = sess.make_callable([loss, train_op] if part == "train" else loss, [x, y])
    return lambda: fn(xb, yb)


_LIMITER = None  # collflow_case's BLAS thread limit, kept for the worker's life


def torch_case(name: str, threads: int) -> Callable[[], Any]:
    """The torch train step or forward pass (IsolatedRunner's factory, run in its process)."""
    import torch
    torch.set_num_threads(threads)
    train, fwd = build_torch(torch)
    return train if name == "train" else fwd


def profile_step(sess: Any, fetches: Any, feed: dict) -> Dict[str, Any]:
    """Where one dynamic_rnn training step spends its time.

    Kernel time: every kernel the plan calls wrapped in a timer (a compiled plan's `k<i>`
    globals, or the interpreter's `_kern` list); the rest of the step is the executor's own
    Python.  Plus cProfile's top functions by own time.
    """
    sess.run(fetches, feed)
    plan = sess.plan_for(fetches, feed) if hasattr(sess, "plan_for") else None
    info: Dict[str, Any] = {}
    if plan is not None:
        get, put = _plan_kernels(plan)
        kern = get()
        spent = [0.0]
        calls = [0]
        pc = time.perf_counter

        def wrap(k: Callable) -> Callable:
            def timed(*a: Any) -> Any:
                t0 = pc()
                try:
                    return k(*a)
                finally:
                    spent[0] += pc() - t0
                    calls[0] += 1
            return timed
        put([wrap(k) for k in kern])
        try:
            totals = []
            kts = []
            for _ in range(3):
                spent[0], calls[0] = 0.0, 0
                t0 = pc()
                sess.run(fetches, feed)
                totals.append(pc() - t0)
                kts.append(spent[0])
            info["step_ms_timed_kernels"] = common.median(totals) * 1e3
            info["kernel_ms"] = common.median(kts) * 1e3
            info["kernel_calls"] = calls[0]
            info["kernel_fraction"] = info["kernel_ms"] / info["step_ms_timed_kernels"]
        finally:
            put(kern)
        ops = getattr(plan, "ops", [])
        info["plan_ops"] = len(ops)
        info["ops_in_forward_loop_body"] = sum(1 for o in ops if "/while/" in o.name and "_grad" not in o.name)
        info["ops_in_backward_loop_body"] = sum(1 for o in ops if "while_grad/" in o.name)
    prof = cProfile.Profile()
    prof.enable()
    sess.run(fetches, feed)
    prof.disable()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf)
    st.sort_stats("tottime").print_stats(12)
    info["cprofile_top"] = [ln.rstrip() for ln in buf.getvalue().splitlines() if ln.strip()][-14:]
    return info


# -- main -------------------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=200, help="loop iterations in part 1")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5, help="timed runs per repeat in part 1 (median taken)")
    ap.add_argument("--lstm-steps", type=int, default=3, help="timed LSTM steps per repeat (median taken)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS and torch threads (default 1)")
    ap.add_argument("--profile", action="store_true", help="also profile an LSTM step")
    ap.add_argument("--skip-lstm", action="store_true")
    args = ap.parse_args()
    limiter = None
    try:
        from threadpoolctl import threadpool_limits
        limiter = threadpool_limits(limits=args.threads, user_api="blas")
    except ImportError:
        print("note: threadpoolctl is not installed; BLAS uses its default thread count")

    loop_rows = bench_loop(args.iters, args.repeats, args.runs)
    lstm_rows: List[Dict[str, Any]] = []
    prof: Dict[str, Any] = {}
    if not args.skip_lstm:
        lstm_rows, prof = bench_lstm(args.repeats, args.lstm_steps, args.threads, args.profile)

    floor = next(r["us_per_iter"] for r in loop_rows if r["name"] == "numpy loop")
    unrolled = next(r["us_per_iter"] for r in loop_rows if r["name"] == "unrolled in graph")
    for r in loop_rows:
        r["x_numpy"] = r["us_per_iter"] / floor
        r["x_unrolled"] = r["us_per_iter"] / unrolled
    torch_ms = {r["kind"]: r["ms"] for r in lstm_rows if r["name"].startswith("torch")}
    for r in lstm_rows:
        r["x_torch"] = r["ms"] / torch_ms[r["kind"]] if r["kind"] in torch_ms else None
    notes = []
    if lstm_rows and not torch_ms:
        notes.append("torch is not installed: no PyTorch rows (pip install torch)")
    path = common.save_results("bench_control_flow", {
        "config": {"iters": args.iters, "repeats": args.repeats, "runs": args.runs, "threads": args.threads,
                   "lstm": {"vocab": VOCAB, "embed": EMBED, "hidden": HIDDEN, "batch": BATCH, "seq_len": SEQ,
                            "optimizer": "adam", "dtype": "float32"}},
        "loop": loop_rows, "lstm": lstm_rows, "profile": prof, "notes": notes})
    if limiter is not None:
        limiter.restore_original_limits()

    if prof:
        print("\nLSTM training step, dynamic_rnn, profile:")
        for k in ("step_ms_timed_kernels", "kernel_ms", "kernel_fraction", "kernel_calls", "plan_ops",
                  "ops_in_forward_loop_body", "ops_in_backward_loop_body"):
            if k in prof:
                print(f"  {k}: {common._fmt(prof[k]) if isinstance(prof[k], float) else prof[k]}")
        for ln in prof.get("cprofile_top", []):
            print("  " + ln)
    for n in notes:
        print("note:", n)
    print(f"\nresults: {path}")
    print(f"\nwhile_loop per-iteration cost: body v = v * 0.5 + 1.0 (float32[16]), {args.iters} iterations, "
          f"BLAS threads {args.threads}")
    print(common.fmt_table(["", "us/iter", "min", "max", "ops/iter", "x numpy", "x unrolled"],
                           [[r["name"], r["us_per_iter"], r["min_us"], r["max_us"], r["ops_per_iter"], r["x_numpy"],
                             r["x_unrolled"]] for r in loop_rows]))
    if lstm_rows:
        print(f"\nLSTM char model: batch {BATCH}, seq {SEQ}, embed {EMBED}, hidden {HIDDEN}, vocab {VOCAB}, Adam, "
              f"float32, {args.threads} thread(s)")
        print(common.fmt_table(["", "", "ms", "min", "max", "x torch"],
                               [[r["name"], r["kind"], r["ms"], r["min_ms"], r["max_ms"], r["x_torch"]]
                                for r in lstm_rows]))


if __name__ == "__main__":
    main()
