"""The training steps bench_scale_model.py measures and profiles, built one way for a real
communicator and for collflow.profile's LoopbackCommunicator (model-specific glue).

  mlp_shm   MLP 784-1024-1024-10, 256 per rank, SGD through SyncReplicasOptimizer (4 MiB
            buckets) averaging the updated variables in shared memory (its default there)
  mlp_mpi   the same over MPI's own collectives (MPICommunicator(shm=False)): the gradient
            path (all-reduce the gradients, then apply them), MPI's default
  wd_ps     wide_deep (collflow/models/wide_deep.py), 100k x 64 table, 16 fields, Zipf 1.0,
            256 per rank, Adam: tables sharded over the ranks (Alltoallv lookups and pushes)
  wd_ag     the same with replicated tables, sparse gradients allgathered
  bk0, bk1  MLP 512-1024-10 (bench_stragglers' model), 256 per rank, Momentum, each rank
            delayed every step by a draw from a lognormal (median 4 ms, sigma 1.0; a
            cancellable Delay op on the forward path), with 0 and 1 backup ranks
  plain     mlp's step without SyncReplicasOptimizer: run on every rank at once, it measures
            what sharing the machine costs each rank's compute (the model's slowdown)
"""
from __future__ import annotations

import zlib
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

import common  # the benchmarks' shared helpers (benchmarks/ is on sys.path: bench_scale_model.py)

MLP = dict(sizes=(784, 1024, 1024, 10), per_rank=256, lr=1e-3, fusion=4 << 20)
WD = dict(vocab=100_000, dim=64, fields=16, dense=4, hidden=(128, 64), per_rank=256, zipf=1.0)
BK = dict(din=512, hid=1024, classes=10, per_rank=256, median_delay=4e-3, sigma=1.0)
CASES = ("mlp_shm", "mlp_mpi", "wd_ps", "wd_ag", "bk0", "bk1")
BATCH = {"mlp_shm": MLP["per_rank"], "mlp_mpi": MLP["per_rank"], "wd_ps": WD["per_rank"], "wd_ag": WD["per_rank"],
         "bk0": BK["per_rank"], "bk1": BK["per_rank"]}
LABEL = {"mlp_shm": "MLP, shared memory", "mlp_mpi": "MLP, flat MPI", "wd_ps": "wide_deep, PS",
         "wd_ag": "wide_deep, allgather", "bk0": "stragglers, b=0", "bk1": "stragglers, b=1"}


class Case:
    """A built step: `step()` runs one (cycling through its batches), `sess`, and for
    profiling `fetches` and `feeds` (a list of feed dicts), `opt` (for run_step)."""

    def __init__(self, sess: Any, fetches: Any, feeds: List[dict], opt: Any = None,
                 run: Optional[Callable[[int], Any]] = None):
        self.sess, self.fetches, self.feeds, self.opt = sess, fetches, feeds, opt
        self.k = 0
        self._run = run

    def step(self) -> None:
        if self._run is not None:
            self._run(self.k)
        else:
            self.sess.run(self.fetches, self.feeds[self.k % len(self.feeds)])
        self.k += 1

    def pause(self) -> None:
        """Between this case's timed blocks: a backup-rank optimizer's quorum threads poll
        MPI every 0.2 ms while they live and would slow every other case's steps, so they
        are stopped (run_step starts them again)."""
        if self.opt is not None and getattr(self.opt, "backup_ranks", 0):
            self.opt.close(self.sess)

    def close(self) -> None:
        self.pause()
        self.sess.close()


def build_mlp(comm: Any, sync: bool, average_parameters: Optional[bool], seed: int = 0) -> Case:
    import collflow as cf
    sizes = MLP["sizes"]
    sess, m, opt = common.mlp_session(cf, comm, sizes, MLP["lr"], MLP["fusion"], sync, average_parameters)
    rng = np.random.default_rng(100 + seed)
    b = MLP["per_rank"]
    feeds = [{m.x: rng.random((b, sizes[0]), dtype=np.float32),
              m.y: rng.integers(0, sizes[-1], b).astype(np.int32)} for _ in range(4)]
    return Case(sess, [m.loss, m.train_op], feeds, opt)


def build_wide_deep(comm: Any, mode: str, rank: int, peers_hook: bool = False) -> Tuple[Case, Any]:
    """mode 'ps' or 'ag'.  With `peers_hook` (a LoopbackCommunicator of n ranks): for 'ag'
    the allgathered ids of the other ranks are their own ids of the step (their slices of
    the global batch), so the update applies as many distinct rows as the real job's; for
    'ps' see install_ps_peers."""
    import collflow as cf
    from collflow.models.wide_deep import build_wide_deep as build
    m = build(vocab_size=WD["vocab"], embedding_dim=WD["dim"], mode="ps" if mode == "ps" else "allreduce",
              num_fields=WD["fields"], num_dense=WD["dense"], hidden=WD["hidden"], optimizer="adam",
              learning_rate=1e-3, comm=comm, batch_size=WD["per_rank"], zipf_exponent=WD["zipf"], seed=0)
    if peers_hook:
        (install_ps_peers if mode == "ps" else install_peer_ids)(comm, m)
    sess = cf.Session(graph=m.graph, config={"comm": comm, "check_outputs": False})
    sess.run(m.init_op)
    if m.bcast_op is not None:
        sess.run(m.bcast_op)
    feeds = list(m.batches(8))
    return Case(sess, [m.loss, m.train_op], feeds), m


def install_peer_ids(comm: Any, m: Any) -> None:
    """Gives a LoopbackCommunicator the other ranks' ids (see build_wide_deep)."""
    n, b = comm.size, m.batch_size
    by_step: Dict[int, int] = {}
    for k in range(8):
        ids = m.data.batch(k, 0, n, b)[0].reshape(-1)
        by_step[zlib.crc32(ids.astype(np.int64).tobytes())] = k

    def peers(kind: str, name: Optional[str], x: np.ndarray, p: int) -> np.ndarray:
        if kind == "allgatherv" and name is not None and name.endswith("/indices") and x.dtype == np.int64:
            k = by_step.get(zlib.crc32(x.tobytes()))
            if k is not None:
                return m.data.batch(k, p, n, b)[0].reshape(-1)
        return x
    comm.peers = peers


def install_ps_peers(comm: Any, m: Any) -> None:
    """Lets the sharded tables run on a LoopbackCommunicator: it mirrors the all-to-alls
    (peer p asks this rank for the local rows this rank asks p for, and pushes it rows
    likewise: symmetric traffic), and each peer's layout descriptor and route headers name
    the peer's own shard (index 4 of both: collflow/comm/ps.py), as the real ones do."""
    def peers(kind: str, name: Optional[str], x: np.ndarray, p: int) -> np.ndarray:
        if name is not None and ((kind == "alltoallv" and name.endswith("/ids"))
                                 or (kind == "allgather" and name.endswith("/layout"))):
            y = x.copy()
            y[4] = p
            return y
        return x
    comm.peers = peers


def delays(steps: int, rank: int, seed: int = 7) -> np.ndarray:
    """Rank `rank`'s straggler delay (seconds) at each step: lognormal(median, sigma)."""
    rng = np.random.default_rng([seed, rank])
    return BK["median_delay"] * np.exp(BK["sigma"] * rng.standard_normal(steps))


def build_backup(comm: Any, b: int, rank: int, loopback: bool = False) -> Case:
    import collflow as cf
    din, hid, classes, per_rank = BK["din"], BK["hid"], BK["classes"], BK["per_rank"]
    rng = np.random.default_rng(0)
    w_true = rng.normal(size=(din, classes))
    xs = rng.normal(size=(4, per_rank, din)).astype(np.float32) + rank
    ys = np.argmax(xs @ w_true, axis=-1).astype(np.int32)
    g, x, y, slow, loss, opt, train, init, bcast = common.straggler_graph(cf, comm, din, hid, classes, 0.01, b)
    config: Dict[str, Any] = {"comm": comm, "check_outputs": False}
    if loopback and b:
        config["contribution"] = lambda: 1.0  # the backup path's flagged buckets, as a member sends them
    sess = cf.Session(graph=g, config=config)
    sess.run(init)
    sess.run(bcast)
    feeds = [{x: xs[k], y: ys[k]} for k in range(4)]
    if loopback:
        return Case(sess, [loss, train], feeds, opt)
    d = delays(10_000, rank)

    def run(k: int) -> None:
        fd = dict(feeds[k % 4])
        fd[slow] = float(d[k % d.size])
        opt.run_step(sess, loss, fd)
    return Case(sess, [loss, train], feeds, opt, run)


def build_case(name: str, comm: Any, mpi_comm: Any, rank: int) -> Case:
    """A case on the real communicators (`mpi_comm`: MPI's own collectives)."""
    n = comm.size
    if name == "mlp_shm":
        return build_mlp(comm, True, True if getattr(comm, "shm_active", False) else None, rank)
    if name == "mlp_mpi":
        return build_mlp(mpi_comm if mpi_comm is not None else comm, True, False if n > 1 else None, rank)
    if name == "plain":
        return build_mlp(comm, False, None, rank)
    if name in ("wd_ps", "wd_ag"):
        return build_wide_deep(comm, name[3:], rank)[0]
    if name in ("bk0", "bk1"):
        return build_backup(comm, int(name[2]), rank)
    raise ValueError(name)


def build_loopback(name: str, n: int) -> Case:
    """The case built for n ranks on a LoopbackCommunicator."""
    from collflow.profile import LoopbackCommunicator
    comm = LoopbackCommunicator(n)
    if name == "mlp_shm":
        case = build_mlp(comm, True, True if n > 1 else None)
    elif name == "mlp_mpi":
        case = build_mlp(comm, True, False if n > 1 else None)
    elif name == "wd_ps":
        case = build_wide_deep(comm, "ps", 0, peers_hook=n > 1)[0]
    elif name == "wd_ag":
        case = build_wide_deep(comm, "ag", 0, peers_hook=n > 1)[0]
    elif name in ("bk0", "bk1"):
        case = build_backup(comm, int(name[2]) if n > 1 else 0, 0, loopback=True)
    else:
        raise ValueError(name)
    case.comm = comm
    return case


def catchup_seconds(case: Case, repeats: int = 7) -> float:
    """The catch-up run of a rank left out of a step's quorum (SyncReplicasOptimizer.run_step:
    zero gradients fed past the gate, then the collectives and the update), timed on a
    loopback case: what the step's members wait for after the decision."""
    import time
    from collflow.train.sync_replicas import _zeros_for  # the run_step's own zeros
    opt, train = case.opt, case.fetches[1]
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        zeros = {t: _zeros_for(t, shape) for t, shape in opt._local_grads}
        case.sess.run(train, zeros)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))
