"""Shared helpers of the benchmarks: timing, machine description, tables, JSON results.

Conventions (DESIGN.md): the median of repeats, a table printed last, a ratio against a
peer or a limit measured in the same run; results saved to benchmarks/results/<name>.json
together with a description of the machine they were measured on.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# a user's run writes to benchmarks/results/local/ (ignored by git); `--save` (any benchmark)
# or COLLFLOW_BENCH_SAVE=1 writes the committed results in benchmarks/results/
SAVE = "--save" in sys.argv or os.environ.get("COLLFLOW_BENCH_SAVE") == "1"
if "--save" in sys.argv:  # consumed here, before the benchmark's own argument parser
    sys.argv.remove("--save")
    os.environ["COLLFLOW_BENCH_SAVE"] = "1"  # and for the copies a benchmark launches under mpiexec
RESULTS_DIR = os.path.join(ROOT, "benchmarks", "results") if SAVE else os.path.join(ROOT, "benchmarks", "results",
                                                                                      "local")

if ROOT not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, ROOT)
# the tests' output checking must never slow down a measurement
if os.environ.get("COLLFLOW_CHECK_OUTPUTS") == "1":
    os.environ["COLLFLOW_CHECK_OUTPUTS"] = "0"

# a forced OpenBLAS core (some hosts set OPENBLAS_CORETYPE for old OpenBLAS builds) runs
# NumPy's products on that core's kernels instead of the CPU's own: on an AVX-512 AMD EPYC
# (Zen 5) forced to Haswell, collflow's MNIST conv step took 54.8 ms against 38.5 ms with
# the kernels OpenBLAS picks itself (SkylakeX), while TensorFlow's and PyTorch's own
# kernels ignore the variable.  Results record it (machine_info); say so when it is set.
BLAS_ENV = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
if "OPENBLAS_CORETYPE" in BLAS_ENV:
    print(f"note: OPENBLAS_CORETYPE={BLAS_ENV['OPENBLAS_CORETYPE']} forces NumPy's BLAS kernels; the peers' own "
          "kernels ignore it. For a fair comparison run with `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`.",
          file=sys.stderr)

import numpy as np  # noqa: E402


def try_import_torch() -> Any:
    """torch, or None when it is not installed (the benchmarks then skip it with a note)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def blas_threads() -> Optional[int]:
    """Threads NumPy's BLAS uses (threadpoolctl when present, else the usual env vars)."""
    try:
        from threadpoolctl import threadpool_info
        for info in threadpool_info():
            if info.get("user_api") == "blas" and "numpy" in info.get("filepath", ""):
                return int(info["num_threads"])
        for info in threadpool_info():
            if info.get("user_api") == "blas":
                return int(info["num_threads"])
    except Exception:
        pass
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return os.cpu_count()


def load_average() -> Optional[List[float]]:
    """The 1/5/15-minute load averages (other work on the machine skews timings)."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def load_note() -> Optional[str]:
    """A warning line when other processes keep the CPUs busy, else None."""
    la = load_average()
    cpus = os.cpu_count() or 1
    if la is not None and la[0] > 0.5 * cpus:
        return (f"the machine is busy (1-min load average {la[0]:.2f} on {cpus} logical CPUs): timings are "
                "contended; the min column is the least disturbed")
    return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> Optional[str]:
    try:
        out = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        if out.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except Exception:
        return None


def machine_info() -> Dict[str, Any]:
    """Where and with what a result was measured."""
    info: Dict[str, Any] = {
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas_threads": blas_threads(),
        "git_commit": _git_commit(),
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_1_5_15": load_average(),
        "openblas_env": BLAS_ENV,
    }
    try:
        from threadpoolctl import threadpool_info
        blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        if blas:
            info["blas"] = f"{blas[0].get('internal_api')} {blas[0].get('version')} ({blas[0].get('architecture')})"
    except Exception:
        pass
    torch = try_import_torch()
    info["torch"] = torch.__version__ if torch is not None else None
    try:
        import collflow
        info["collflow"] = collflow.__version__
    except Exception:
        pass
    return info


def time_calls(fn: Callable[[], Any], number: int) -> List[float]:
    """Seconds taken by each of `number` consecutive calls of fn()."""
    out = []
    pc = time.perf_counter
    for _ in range(number):
        t0 = pc()
        fn()
        out.append(pc() - t0)
    return out


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def summarize(per_repeat_medians: Sequence[float]) -> Dict[str, float]:
    """The median over repeats (each a median of timed calls) and the spread across repeats."""
    xs = list(per_repeat_medians)
    return {"median": median(xs), "min": float(min(xs)), "max": float(max(xs)), "repeats": len(xs)}


def fmt_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain fixed-width table (right-aligned numbers)."""
    cells = [[str(h) for h in headers]] + [[c if isinstance(c, str) else _fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 100:
            return f"{v:,.0f}"
        if abs(v) >= 1:
            return f"{v:.2f}"
        return f"{v:.3g}"
    return str(v)


def save_results(name: str, payload: Dict[str, Any]) -> str:
    """Writes benchmarks/results/<name>.json (with machine info) and returns its path."""
    os.makedirs(RESULTS_DIR, exist_ok=True)
    path = os.path.join(RESULTS_DIR, f"{name}.json")
    doc = {"benchmark": name, "machine": machine_info(), **payload}
    with open(path, "w") as f:
        json.dump(doc, f, indent=2, sort_keys=False, default=_json_default)
        f.write("\n")
    return path


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"cannot serialize {type(o).__name__}")


# -- benchmarks that launch themselves under mpiexec ------------------------------------------

def wait_for_quiet(max_load: float, max_wait: float) -> List[str]:
    """Waits (up to max_wait s) until the 1-minute load average is below max_load; notes if not."""
    import time
    t0 = time.monotonic()
    la = load_average()
    while la is not None and la[0] > max_load and time.monotonic() - t0 < max_wait:
        time.sleep(10)
        la = load_average()
    if la is not None and la[0] > max_load:
        return [f"the 1-minute load average was still {la[0]:.2f} (> {max_load}) after waiting "
                f"{max_wait:.0f} s for other work to finish: timings are contended"]
    return []


def mpi_launch_env() -> Tuple[str, Dict[str, str]]:
    """(mpiexec's path, the environment of a benchmark's MPI job): one BLAS thread per rank,
    output checks off, unbuffered, and Open MPI's root variables when running as root."""
    import shutil
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               COLLFLOW_CHECK_OUTPUTS="0", PYTHONUNBUFFERED="1")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    mpiexec = shutil.which("mpiexec") or shutil.which("mpirun")
    if mpiexec is None:
        raise SystemExit("mpiexec not found: install Open MPI (and mpi4py)")
    return mpiexec, env


def launch_mpi(script: str, np_: int, extra: Sequence[str], timeout: float = 1800) -> Dict[str, Any]:
    """Runs `script --worker extra...` under mpiexec with np_ ranks (one BLAS thread each, root
    allowed, oversubscription allowed); returns the JSON of rank 0's "RESULT " line."""
    import json
    import subprocess
    import sys
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpiexec", "-n", str(np_), "--oversubscribe", "--bind-to", "none", sys.executable,
           os.path.abspath(script), "--worker", *extra]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not line:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise SystemExit(f"{os.path.basename(script)}: the MPI run failed at np={np_} (exit {p.returncode})")
    return json.loads(line[-1][len("RESULT "):])


# -- models more than one benchmark builds ---------------------------------------------------


def mlp_session(cf: Any, comm: Any, sizes: Sequence[int], lr: float, fusion_bytes: int, sync: bool,
                average_parameters: Any = None) -> Tuple[Any, Any, Any]:
    """(session, model, optimizer) of collflow.models' MLP `sizes` with SGD at `lr`, wrapped
    in SyncReplicasOptimizer when `sync`; variables initialized (and broadcast when `sync`)."""
    from collflow import models
    g = cf.Graph()
    with g.as_default():
        sgd = cf.train.GradientDescentOptimizer(lr)
        opt = cf.train.SyncReplicasOptimizer(sgd, comm=comm, fusion_threshold_bytes=fusion_bytes,
                                             average_parameters=average_parameters) if sync else sgd
        m = models.build_mlp(sizes[0], sizes[1:-1], sizes[-1], optimizer=opt, seed=0, global_step=False)
        init = cf.global_variables_initializer()
        bcast = cf.train.broadcast_global_variables(0) if sync else None
    sess = cf.Session(graph=g, config={"comm": comm, "check_outputs": False})
    sess.run(init)
    if bcast is not None:
        sess.run(bcast)
    return sess, m, opt


def straggler_graph(cf: Any, comm: Any, din: int, hid: int, classes: int, lr: float, backup_ranks: int) -> Any:
    """The backup-rank benchmarks' model: a 2-layer ReLU classifier whose input passes through
    cf.delay (placeholder `slow`: seconds), Momentum(lr, 0.9) under SyncReplicasOptimizer with
    `backup_ranks`.  (graph, x, y, slow, loss, optimizer, train op, init op, broadcast op)."""
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, din), name="x")
        y = cf.placeholder(cf.int32, (None,), name="y")
        slow = cf.placeholder_with_default(cf.constant(0.0, dtype=cf.float64), (), name="slow")
        init_rng = np.random.default_rng(1)
        w1 = cf.Variable((init_rng.normal(size=(din, hid)) * 0.05).astype(np.float32))
        w2 = cf.Variable((init_rng.normal(size=(hid, classes)) * 0.05).astype(np.float32))
        h = cf.nn.relu(cf.matmul(cf.delay(x, slow), w1))
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(h, w2)))
        opt = cf.train.SyncReplicasOptimizer(cf.train.MomentumOptimizer(lr, 0.9), comm=comm,
                                             backup_ranks=backup_ranks)
        train = opt.minimize(loss)
        init = cf.global_variables_initializer()
        bcast = cf.train.broadcast_global_variables(0)
    return g, x, y, slow, loss, opt, train, init, bcast


# -- each library in a process of its own -------------------------------------------------------
# Libraries set process-wide state that changes whoever shares the process: collflow fixes
# glibc malloc's thresholds (collflow/kernels/host_memory.py), and glibc's own dynamic
# thresholds make a step faster after a bigger model ran in the same process (TensorFlow's
# char-LSTM step: 68 ms alone, 58 ms after the conv net).  A peer is measured as it ships,
# training one model, so benchmarks that compare libraries run each (library, model) in a
# process of its own and still interleave their timed blocks: the parent asks each worker
# in turn for one block.


class IsolatedRunner:
    """A child process that builds step functions with `factory(name, *args)` (a module-level
    function: spawn pickles it by name) and times blocks of them on request."""

    def __init__(self, factory: Callable[..., Any], names: Sequence[str], args: tuple = (), warmup: int = 3):
        import multiprocessing as mp
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_isolated_worker, args=(child, factory, list(names), args, warmup),
                                 daemon=True)
        self._proc.start()
        child.close()
        msg = self._conn.recv()
        if isinstance(msg, BaseException):
            self.close()
            raise msg
        self.names: List[str] = msg

    def time(self, name: str, steps: int, untimed: int = 2) -> List[float]:
        """Seconds of each of `steps` consecutive steps of `name`, after `untimed` steps."""
        self._conn.send((name, steps, untimed))
        out = self._conn.recv()
        if isinstance(out, BaseException):
            raise out
        return out

    def close(self) -> None:
        try:
            self._conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self._proc.join(30)
        if self._proc.is_alive():
            self._proc.kill()


def _isolated_worker(conn: Any, factory: Callable[..., Any], names: List[str], args: tuple, warmup: int) -> None:
    try:
        fns = {}
        for n in names:
            fn = factory(n, *args)
            if fn is not None:
                fns[n] = fn
        for fn in fns.values():
            for _ in range(warmup):
                fn()  # compile plans, warm caches
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which raises it
        conn.send(RuntimeError(f"{factory.__name__}: {type(e).__name__}: {e}"))
        return
    conn.send(sorted(fns))
    while True:
        msg = conn.recv()
        if msg is None:
            return
        name, steps, untimed = msg
        try:
            for _ in range(untimed):
                fns[name]()
            conn.send(time_calls(fns[name], steps))
        except BaseException as e:  # noqa: BLE001
            conn.send(RuntimeError(f"{factory.__name__}({name}): {type(e).__name__}: {e}"))
