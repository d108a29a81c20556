"""TF1's cluster API (tf.train.ClusterSpec, tf.train.Server) over MPI ranks.

A TF1 between-graph program starts one process per task of its ClusterSpec, each told its
job and task by flags, and each builds a `tf.train.Server` for its task.  Under collflow
those processes are the ranks of one MPI job, launched with each task's own flags
(OpenMPI's MPMD form: `mpirun -np 1 python prog.py --job_name=worker --task_index=0 :
-np 1 python prog.py --job_name=worker --task_index=1`).  Creating the Server is
collective: the ranks tell each other their tasks, and every rank checks that no two run
the same task and that every compute task of the cluster is running.  The ranks of
compute jobs (every job but "ps") then form the communicator the program's collectives
use, ordered chief first, then by job name and task (so worker task 0 is rank 0).

Parameter-server tasks hold nothing in collflow: every worker keeps a replica of the
variables a TF program puts on "/job:ps" and the optimizers keep the replicas equal
(collflow/train/between_graph.py: SyncReplicasOptimizer's all-reduce, or, for the
asynchronous programs, every worker applying every worker's update in rank order).  A ps
rank's `server.join()` returns once every compute rank has finished (TF's blocks forever
and the launcher kills it), so an mpirun that starts ps tasks ends by itself.  Starting
them is not needed: `mpirun -np 2 ...` with the worker flags alone runs the same program.
"""
from __future__ import annotations

import atexit
import logging
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["ClusterSpec", "ClusterDef", "JobDef", "ServerDef", "Server", "current_server", "PS_JOBS"]

_log = logging.getLogger("collflow")

PS_JOBS = ("ps",)  # jobs whose tasks serve variables in TF; their ranks compute nothing here


class JobDef:
    """A job of a ClusterDef: `name` and `tasks` {task index: address}."""

    def __init__(self, name: str, tasks: Mapping[int, str]):
        self.name = name
        self.tasks = dict(tasks)

    def __repr__(self) -> str:
        return f"JobDef(name={self.name!r}, tasks={self.tasks!r})"


class ClusterDef:
    """TF's ClusterDef message, as far as ClusterSpec reads and writes it: `job`, a list of JobDef."""

    def __init__(self, job: Optional[List[JobDef]] = None):
        self.job = list(job or [])

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ClusterDef) and [(j.name, j.tasks) for j in self.job] == \
            [(j.name, j.tasks) for j in other.job]

    def __repr__(self) -> str:
        return f"ClusterDef(job={self.job!r})"


class ClusterSpec:
    """tf.train.ClusterSpec: job name -> task index -> network address.

    `cluster`: a dict of job name to a list of addresses (task i at position i) or to a dict
    {task index: address}, a ClusterSpec or a ClusterDef.  The addresses are kept for the
    program to read; collflow's ranks find each other through MPI, not through them.
    """

    def __init__(self, cluster: Any):
        self._spec: Dict[str, Dict[int, str]] = {}
        if isinstance(cluster, ClusterSpec):
            self._spec = {j: dict(t) for j, t in cluster._spec.items()}
        elif isinstance(cluster, ClusterDef):
            for job in cluster.job:
                if job.name in self._spec:
                    raise ValueError(f"Duplicate job name in cluster_def: {job.name}")
                self._spec[job.name] = {int(i): str(a) for i, a in job.tasks.items()}
        elif isinstance(cluster, Mapping):
            for job, tasks in cluster.items():
                if not isinstance(job, str):
                    raise TypeError(f"ClusterSpec: job names must be strings, got {job!r}")
                if isinstance(tasks, (list, tuple)):
                    self._spec[job] = {i: str(a) for i, a in enumerate(tasks)}
                elif isinstance(tasks, Mapping):
                    self._spec[job] = {int(i): str(a) for i, a in tasks.items()}
                else:
                    raise TypeError(f"The tasks for job {job!r} must be a list or a dictionary from integers "
                                    f"to strings, got {type(tasks).__name__}")
        else:
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to lists of network "
                            "addresses, or a `ClusterDef` protocol buffer")
        self._spec = {j: dict(sorted(self._spec[j].items())) for j in sorted(self._spec)}

    def __bool__(self) -> bool:
        return bool(self._spec)

    __nonzero__ = __bool__

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ClusterSpec) and self._spec == other._spec

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(tuple((j, tuple(t.items())) for j, t in self._spec.items()))

    def __str__(self) -> str:
        return "ClusterSpec(" + repr(self.as_dict()) + ")"

    __repr__ = __str__

    def as_dict(self) -> Dict[str, Union[List[str], Dict[int, str]]]:
        """{job: [addresses]} where a job's tasks are 0..n-1, else {job: {index: address}}."""
        out: Dict[str, Union[List[str], Dict[int, str]]] = {}
        for job, tasks in self._spec.items():
            if list(tasks) == list(range(len(tasks))):
                out[job] = list(tasks.values())
            else:
                out[job] = dict(tasks)
        return out

    def as_cluster_def(self) -> ClusterDef:
        return ClusterDef([JobDef(j, t) for j, t in self._spec.items()])

    @property
    def jobs(self) -> List[str]:
        return list(self._spec)

    def _job(self, job_name: str) -> Dict[int, str]:
        try:
            return self._spec[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name: str) -> int:
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> List[int]:
        return list(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        tasks = self._job(job_name)
        try:
            return tasks[int(task_index)]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name: str) -> List[Optional[str]]:
        """The job's addresses by task index, None where an index has no task."""
        tasks = self._job(job_name)
        out: List[Optional[str]] = [None] * (max(tasks) + 1 if tasks else 0)
        for i, a in tasks.items():
            out[i] = a
        return out


class ServerDef:
    """TF's ServerDef: the cluster, this task's job_name and task_index, the protocol."""

    def __init__(self, cluster: ClusterSpec, job_name: str, task_index: int, protocol: str = "grpc",
                 default_session_config: Any = None):
        self.cluster = cluster.as_cluster_def()
        self.job_name = job_name
        self.task_index = task_index
        self.protocol = protocol
        self.default_session_config = default_session_config

    def __repr__(self) -> str:
        return f"ServerDef(job_name={self.job_name!r}, task_index={self.task_index}, protocol={self.protocol!r})"


_servers: Dict[str, "Server"] = {}  # target -> Server made in this process
_current: Optional["Server"] = None


def current_server() -> Optional["Server"]:
    """The Server this process made for its task (the latest), None if none."""
    return _current


def is_server_target(target: str) -> bool:
    """Whether `target` is a Server's of this process (a Session may name it as its master)."""
    return target in _servers


class Server:
    """tf.train.Server: this process's task of a cluster (see the module doc).

    `server_or_cluster_def`: a ClusterSpec, a dict or ClusterDef for one, or a ServerDef.
    job_name / task_index may be left out only where the cluster leaves no choice.
    """

    def __init__(self, server_or_cluster_def: Any, job_name: Optional[str] = None,
                 task_index: Optional[int] = None, protocol: Optional[str] = None, config: Any = None,
                 start: bool = True):
        if isinstance(server_or_cluster_def, ServerDef):
            sd = server_or_cluster_def
            cluster = ClusterSpec(sd.cluster)
            job_name = sd.job_name if job_name is None else job_name
            task_index = sd.task_index if task_index is None else task_index
            protocol = protocol or sd.protocol
        else:
            cluster = ClusterSpec(server_or_cluster_def)
        if not cluster:
            raise ValueError("tf.train.Server needs a cluster with at least one job")
        if job_name is None:
            if len(cluster.jobs) != 1:
                raise ValueError(f"Must specify an explicit `job_name`: the cluster has jobs {cluster.jobs}")
            job_name = cluster.jobs[0]
        if job_name not in cluster.jobs:
            raise ValueError(f"No such job in cluster: {job_name!r} (jobs: {cluster.jobs})")
        if task_index is None:
            if cluster.num_tasks(job_name) != 1:
                raise ValueError(f"Must specify an explicit `task_index`: job {job_name!r} has "
                                 f"{cluster.num_tasks(job_name)} tasks")
            task_index = cluster.task_indices(job_name)[0]
        task_index = int(task_index)
        address = cluster.task_address(job_name, task_index)  # raises for a task the cluster lacks
        protocol = protocol or "grpc"
        if protocol not in ("grpc", "grpc+verbs", "grpc+mpi", "grpc+gdr"):
            raise ValueError(f"tf.train.Server: unknown protocol {protocol!r}")
        self._cluster = cluster
        self._job, self._task = job_name, task_index
        self._server_def = ServerDef(cluster, job_name, task_index, protocol, config)
        self._target = f"{protocol.split('+')[0]}://{_local_address(address)}"
        self._started = False
        self._world: Any = None    # an mpi4py duplicate of the launch world, for join()
        self._ranks: Dict[Tuple[str, int], int] = {}
        if start:
            self.start()

    # -- TF's interface -----------------------------------------------------------------
    @property
    def server_def(self) -> ServerDef:
        return self._server_def

    @property
    def target(self) -> str:
        """The master address a Session or MonitoredTrainingSession may be given."""
        return self._target

    @staticmethod
    def create_local_server(config: Any = None, start: bool = True) -> "Server":
        """A one-task cluster in this process (TF's test and single-process idiom)."""
        return Server({"localhost": ["localhost:0"]}, protocol="grpc", config=config, start=start)

    def start(self) -> None:
        """Joins this process's task to the others' (collective over the launch's ranks)."""
        global _current
        if self._started:
            return
        self._ranks, self._world = _match_tasks(self._cluster, self._job, self._task)
        self._started = True
        _servers[self._target] = self
        _current = self

    def join(self) -> None:
        """A ps task's main loop in TF (blocks for ever there).  Here: returns once every
        compute rank has finished its program; on a compute task, at once."""
        if not self._started:
            self.start()
        if self._world is None:
            return
        req = self._world.Ibarrier()
        while not req.Test():  # a polled wait: Ctrl-C still reaches this process
            time.sleep(0.05)

    # -- collflow -------------------------------------------------------------------------
    @property
    def cluster_spec(self) -> ClusterSpec:
        return self._cluster

    @property
    def job_name(self) -> str:
        return self._job

    @property
    def task_index(self) -> int:
        return self._task

    @property
    def is_compute_task(self) -> bool:
        return self._job not in PS_JOBS

    def rank_of(self, job_name: str, task_index: int) -> Optional[int]:
        """The launch rank running a task, None where no rank does."""
        return self._ranks.get((job_name, int(task_index)))


def _local_address(address: str) -> str:
    host, _, port = address.rpartition(":")
    return f"localhost:{port}" if host in ("localhost", "127.0.0.1", "") else address


def _compute_order(job: str, task: int) -> Tuple[int, str, int]:
    return (0 if job == "chief" else 1, job, task)


def _match_tasks(cluster: ClusterSpec, job: str, task: int) -> Tuple[Dict[Tuple[str, int], int], Any]:
    """Every rank's task, checked alike on every rank; makes the compute ranks' communicator.
    Returns {task: launch rank} and, where the ranks were regrouped, the launch world's
    duplicate that join() waits on."""
    from .. import comm as _comm
    world = _comm.get()
    if world.size == 1:
        return _alone(cluster, job, task), None
    mine = f"{job}\0{task}".encode()
    if len(mine) > 250:
        raise ValueError(f"tf.train.Server: job name {job!r} is too long")
    row = np.zeros((1, 256), np.uint8)
    row[0, 0] = len(mine)
    row[0, 1:1 + len(mine)] = np.frombuffer(mine, np.uint8)
    rows = world.allgather(row, name="tf_server_tasks")
    tasks: List[Tuple[str, int]] = []
    for r in rows:
        name, _, idx = bytes(r[1:1 + int(r[0])]).decode().partition("\0")
        tasks.append((name, int(idx)))
    ranks: Dict[Tuple[str, int], int] = {}
    for r, t in enumerate(tasks):
        if t in ranks:
            raise InvalidArgumentError(
                f"tf.train.Server: ranks {ranks[t]} and {r} both run /job:{t[0]}/task:{t[1]}; collflow runs each "
                "task of the ClusterSpec as one MPI rank, each launched with its own flags, e.g. `mpirun -np 1 "
                "python prog.py --task_index=0 : -np 1 python prog.py --task_index=1`")
        ranks[t] = r
    compute = [(j, i) for j in cluster.jobs if j not in PS_JOBS for i in cluster.task_indices(j)]
    missing = [t for t in compute if t not in ranks]
    if missing:
        raise InvalidArgumentError(
            "tf.train.Server: the cluster's tasks " + ", ".join(f"/job:{j}/task:{i}" for j, i in missing)
            + f" run on no rank (this job has {world.size} ranks); collflow runs each task of the ClusterSpec "
            "as one MPI rank: launch one per task")
    order = sorted(range(world.size), key=lambda r: _compute_order(*tasks[r]))
    ps_ranks = [r for r in range(world.size) if tasks[r][0] in PS_JOBS]
    if ps_ranks or order != list(range(world.size)):
        return ranks, _split(world, tasks, order)
    return ranks, None


def _alone(cluster: ClusterSpec, job: str, task: int) -> Dict[Tuple[str, int], int]:
    others = [(j, i) for j in cluster.jobs if j not in PS_JOBS for i in cluster.task_indices(j)
              if (j, i) != (job, task)]
    if others:
        _log.warning("tf.train.Server: this process is the only rank, so the cluster's other compute tasks (%s) "
                     "are not running: it trains alone.  collflow runs each task of a ClusterSpec as one MPI rank "
                     "(mpirun with each task's flags)", ", ".join(f"/job:{j}/task:{i}" for j, i in others))
    return {(job, task): 0}


def _split(world: Any, tasks: List[Tuple[str, int]], order: List[int]) -> Any:
    """Compute ranks get a communicator of their own (chief, then workers by task); every
    rank keeps a duplicate of the launch world for join()."""
    mpi_comm = getattr(world, "mpi_comm", None)
    if mpi_comm is None:
        raise InvalidArgumentError(
            f"tf.train.Server: parameter-server tasks among the ranks, or tasks launched out of order, need an "
            f"MPI communicator to regroup the ranks; this one is {type(world).__name__}")
    from .. import comm as _comm
    rank = world.rank
    is_ps = tasks[rank][0] in PS_JOBS
    sub = mpi_comm.Split(1 if is_ps else 0, order.index(rank))
    server_world = mpi_comm.Dup()
    if is_ps:
        sub.Free()
    else:
        _comm.init(comm=sub)
        atexit.register(_finish_compute_rank, server_world)
    return server_world


def _finish_compute_rank(server_world: Any) -> None:
    """At a compute rank's exit: lets the parameter-server ranks' join() return."""
    try:
        # nonblocking like join()'s: MPI never matches a blocking collective with a nonblocking one
        server_world.Ibarrier().Wait()
    except Exception:  # noqa: BLE001 - MPI may already be gone when the process is torn down
        pass
