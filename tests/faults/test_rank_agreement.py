"""What the ranks of a job must agree on: COLLFLOW_* settings (collflow.comm.settings), the
run's flags and data, the checkpoint they resume from (collflow.train.agreement), and a rank's
exit (collflow.comm.departure).  Each MPI case launches mpirun with a `timeout` and asserts
that the error names the cause and arrives within seconds (the collective timeout is 300 s),
and that a job whose ranks agree loses nothing."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from collflow.comm import departure, settings
from collflow.errors import AbortedError, InvalidArgumentError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(ROOT, "scripts", "train.py")
needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not found")
pytestmark = pytest.mark.timeout(120)

# a hang would show as this timeout, not as a pass; every case must fail (or pass) far sooner
COLLECTIVE_TIMEOUT_S = "60"
FAST_S = 20.0


def _env(**extra):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               COLLFLOW_COLLECTIVE_TIMEOUT=COLLECTIVE_TIMEOUT_S, PYTHONPATH=ROOT)
    env.pop("COLLFLOW_CHECK_OUTPUTS", None)
    env.update(extra)
    return env


def mpirun(*apps, timeout=90, env=None):
    """Runs `mpirun app0 : app1 ...` (each app: [-n, N, program, args...]); (returncode, stdout,
    stderr, seconds)."""
    cmd = ["timeout", str(timeout), "mpirun", "--oversubscribe", "--bind-to", "none"]
    for i, app in enumerate(apps):
        cmd += ([":"] if i else []) + list(app)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env or _env(), timeout=timeout + 30)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def script(tmp_path, body):
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


# -- COLLFLOW_* settings ------------------------------------------------------------------------


def test_every_collflow_variable_read_in_collflow_has_a_policy():
    pkg = os.path.join(ROOT, "collflow")
    found = {}
    for dp, _, files in os.walk(pkg):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(dp, f)) as fh:
                    for name in re.findall(r"COLLFLOW_[A-Z0-9_]*[A-Z0-9]", fh.read()):
                        found.setdefault(name, os.path.relpath(os.path.join(dp, f), ROOT))
    missing = {k: v for k, v in found.items() if k not in settings.SETTINGS}
    assert not missing, f"COLLFLOW_* variables without a policy in collflow/comm/settings.py: {missing}"
    assert {p for p, _ in settings.SETTINGS.values()} <= {"agreed", "compared", "local"}


class FakeComm:
    """An mpi4py-like communicator whose allgather returns the given ranks' payloads."""

    def __init__(self, rank, envs, opts=None):
        self.rank, self.envs = rank, envs
        self.opts = opts or [{} for _ in envs]

    def Get_rank(self):
        return self.rank

    def allgather(self, mine):
        out = list(zip(self.envs, self.opts))
        out[self.rank] = mine
        return out


def test_agreed_settings_take_rank_0s_value_and_say_so(capsys):
    env = {"COLLFLOW_TRACK_ARRIVALS": "0", "COLLFLOW_OVERLAP": "0", "COLLFLOW_TIMELINE": "/tmp/mine.json"}
    rank0 = {"COLLFLOW_COLLECTIVE_TIMEOUT": "30"}
    opts = settings.negotiate(FakeComm(1, [rank0, {}], [{"track_arrivals": None}, {}]), {"track_arrivals": False},
                              environ=env)
    # rank 0's values, its unset ones removed; a local setting untouched
    assert env == {"COLLFLOW_COLLECTIVE_TIMEOUT": "30", "COLLFLOW_TIMELINE": "/tmp/mine.json"}
    assert opts == {"track_arrivals": None}  # rank 0's choice
    err = capsys.readouterr().err
    assert "[rank 1] collflow: COLLFLOW_TRACK_ARRIVALS is '0' here but unset on rank 0" in err
    assert "COLLFLOW_COLLECTIVE_TIMEOUT is unset here but '30' on rank 0" in err
    assert "track_arrivals=False here but None on rank 0" in err
    # ranks that agree: nothing said, nothing changed
    env2 = dict(rank0)
    assert settings.negotiate(FakeComm(1, [rank0, {}]), environ=env2) == {}
    assert env2 == rank0 and capsys.readouterr().err == ""


def test_compared_settings_that_differ_fail_naming_the_variable_and_values():
    envs = [{"COLLFLOW_NUMPY_BLAS": "0"}, {}, {"COLLFLOW_NUMPY_BLAS": "0"}]
    with pytest.raises(InvalidArgumentError) as e:
        settings.negotiate(FakeComm(1, envs), environ={})
    msg = str(e.value)
    assert "COLLFLOW_NUMPY_BLAS differs between ranks (ranks 0, 2: '0'; rank 1: unset)" in msg
    assert "same environment" in msg


def test_departure_notices_name_the_rank_and_its_reason():
    d = departure.Departures()
    assert not d and d.error_for(5, "collective #5", 0) is None
    d.record(1, departure.encode(27, "it finished after 27 steps"))
    assert d.error_for(26, "collective #26", 0) is None  # rank 1 issued that one: it completes
    err = d.error_for(27, "collective #27 allreduce 'g' float32(4,) op=sum", 0)
    assert isinstance(err, AbortedError)
    assert str(err) == ("rank 1 left the job (it finished after 27 steps) after 27 collective(s); collective #27 "
                        "allreduce 'g' float32(4,) op=sum on rank 0 will never complete")
    d2 = departure.Departures()
    d2.record(0, departure.encode(0, None))
    assert departure.DEFAULT_REASON in str(d2.error_for(0, "collective #0", 1))


@needs_mpirun
def test_track_arrivals_off_on_one_rank_is_agreed_not_a_hang(tmp_path):
    job = script(tmp_path, """
        import os, sys, time
        if os.environ["OMPI_COMM_WORLD_RANK"] == "1":
            os.environ["COLLFLOW_TRACK_ARRIVALS"] = "0"   # as if exported on one node only
        import numpy as np
        import collflow as cf
        comm = cf.comm.init()
        for k in range(3):
            got = comm.allreduce(np.arange(4, dtype=np.float32) * (comm.rank + 1))
            assert got.tolist() == [0.0, 3.0, 6.0, 9.0], got
        print(f"rank {comm.rank} ok track={comm._track} env={os.environ.get('COLLFLOW_TRACK_ARRIVALS')}", flush=True)
    """)
    # the MPI transport, where it hung (shared memory compares records in the arenas)
    rc, out, err, took = mpirun(["-n", "2", sys.executable, job], env=_env(COLLFLOW_SHM="0"))
    assert rc == 0, out + err
    assert "rank 0 ok track=True env=None" in out and "rank 1 ok track=True env=None" in out
    assert "[rank 1] collflow: COLLFLOW_TRACK_ARRIVALS is '0' here but unset on rank 0" in err
    assert took < FAST_S, took


@needs_mpirun
def test_compared_setting_differing_fails_on_every_rank_at_start(tmp_path):
    job = script(tmp_path, """
        import os
        if os.environ["OMPI_COMM_WORLD_RANK"] == "2":
            os.environ["COLLFLOW_NUMPY_BLAS"] = "0"
        import collflow as cf
        try:
            cf.comm.init()
        except cf.errors.InvalidArgumentError as e:
            print(f"rank {os.environ['OMPI_COMM_WORLD_RANK']}: {e}", flush=True)
    """)
    rc, out, err, took = mpirun(["-n", "3", sys.executable, job])
    for r in range(3):
        assert f"rank {r}: the ranks of this job run with different settings: COLLFLOW_NUMPY_BLAS differs between " \
               "ranks (ranks 0, 1: unset; rank 2: '0')" in out, out + err
    assert took < FAST_S


# -- the run's flags and data ---------------------------------------------------------------------


def _each_rank(fn, n=3):
    """fn(comm) on n thread ranks; the exception (or None) each raised, by rank."""
    import collflow as cf

    def body(comm):
        try:
            fn(comm)
        except cf.CollflowError as e:
            return e
        return None
    return cf.comm.ThreadWorld(n).run(body, timeout=30)


def test_run_agreement_names_each_differing_key_and_every_ranks_value():
    from collflow.train import agreement

    def values(comm):
        return {"seed": 0, "lr": 0.1 if comm.rank != 2 else 0.2, "steps": 30, "hidden": [128],
                "batch_size": 64 + 32 * (comm.rank == 1)}
    errs = _each_rank(lambda c: agreement.check_run_agreement(c, values(c)))
    for e in errs:
        assert isinstance(e, InvalidArgumentError)
        assert str(e) == ("the ranks must agree on their settings, but 2 differ: batch_size (ranks 0, 2: 64; rank 1: "
                          "96); lr (ranks 0, 1: 0.1; rank 2: 0.2). Launch every rank with the same arguments and "
                          "the same data")
    assert _each_rank(lambda c: agreement.check_run_agreement(c, {"seed": 0, "steps": 30})) == [None] * 3
    # a rank that cannot start is named on every rank, whatever else differs
    errs = _each_rank(lambda c: agreement.check_run_agreement(
        c, {"seed": c.rank}, problem="'d.npz': no such file" if c.rank == 1 else None))
    assert all(str(e) == "rank 1 cannot start: 'd.npz': no such file" for e in errs)


def test_identities_see_changes_at_either_end_and_ignore_the_middle(tmp_path):
    import numpy as np
    from collflow.train import agreement
    x = np.arange(200_000, dtype=np.float32)
    base = agreement.dataset_identity({"x": x})
    assert base.startswith("x float32(200000,); digest ") and agreement.dataset_identity({"x": x.copy()}) == base
    for i in (0, len(x) - 1):
        y = x.copy()
        y[i] += 1
        assert agreement.dataset_identity({"x": y}) != base
    assert agreement.dataset_identity({"x": x[:-1]}) != base  # the shape is part of it
    p = tmp_path / "f.bin"
    p.write_bytes(bytes(300_000))
    d = agreement.file_digest(str(p))
    assert d.startswith("300000 bytes, digest ")
    p.write_bytes(bytes(299_999) + b"\x01")
    assert agreement.file_digest(str(p)) != d


def test_resume_agreement_names_each_ranks_checkpoint(tmp_path):
    from types import SimpleNamespace
    from collflow.errors import FailedPreconditionError
    from collflow.train import agreement
    new, old = tmp_path / "ckpt-600.h5", tmp_path / "ckpt-500.h5"
    new.write_bytes(b"n" * 100)
    old.write_bytes(b"o" * 90)
    results = [SimpleNamespace(path=str(new), global_step=600), SimpleNamespace(path=str(old), global_step=500), None]
    errs = _each_rank(lambda c: agreement.check_resume_agreement(c, results[c.rank], str(tmp_path)))
    for e in errs:
        assert isinstance(e, FailedPreconditionError)
        msg = str(e)
        assert "rank 0 sees ckpt-600.h5 (step 600, 100 bytes, digest " in msg
        assert "rank 1 sees ckpt-500.h5 (step 500, 90 bytes, digest " in msg
        assert "rank 2 sees no checkpoint (it would start from step 0)" in msg
    same = [results[0]] * 3
    assert _each_rank(lambda c: agreement.check_resume_agreement(c, same[c.rank], str(tmp_path))) == [None] * 3


def _train_app(n, *args):
    return ["-n", str(n), sys.executable, TRAIN, "--no-progress", "--steps", "4", *args]


@needs_mpirun
@pytest.mark.parametrize("rank1_args, names", [
    (["--seed", "1"], ["seed (rank 0: 0; rank 1: 1)"]),
    (["--lr", "0.2", "--batch-size", "32"], ["lr (rank 0: 0.1; rank 1: 0.2)", "batch_size (rank 0: 64; rank 1: 32)"]),
])
def test_ranks_with_different_flags_fail_before_training_naming_each_difference(rank1_args, names):
    rc, out, err, took = mpirun(_train_app(1, "--lr", "0.1"), _train_app(1, "--lr", "0.1", *rank1_args))
    assert rc == 2, out + err
    for r in (0, 1):
        line = next(ln for ln in err.splitlines() if ln.startswith(f"[rank {r}] error:"))
        assert all(n in line for n in names), line
    assert f"{len(names)} differ" in err and not out.strip()  # no metrics: nothing trained
    assert took < FAST_S


@needs_mpirun
def test_ranks_with_different_data_fail_naming_the_data(tmp_path):
    import numpy as np
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((200, 8)).astype(np.float32), rng.integers(0, 3, 200)
    np.savez(tmp_path / "a.npz", x=x, y=y)
    x[-1, -1] += 1  # another version of the file: the same size, one value changed at its end
    np.savez(tmp_path / "b.npz", x=x, y=y)
    rc, out, err, took = mpirun(_train_app(1, "--dataset", str(tmp_path / "a.npz")),
                                _train_app(1, "--dataset", str(tmp_path / "b.npz")))
    assert rc == 2, out + err
    assert "differ: data (rank 0: " in err and "rank 1: " in err and "digest" in err
    assert took < FAST_S


@needs_mpirun
def test_a_rank_that_cannot_start_is_named_by_every_rank(tmp_path):
    # rank 1's --timeline cannot be written: it stops before the pre-run check, and rank 0
    # hears why at once instead of waiting in that check
    rc, out, err, took = mpirun(_train_app(1), _train_app(1, "--timeline", str(tmp_path / "no" / "dir" / "t.json")))
    assert rc != 0
    assert "[rank 1] error: --timeline" in err
    line = next(ln for ln in err.splitlines() if ln.startswith("[rank 0] error:"))
    assert "rank 1 left the job (--timeline" in line and "train/agreement" in line, line
    assert took < FAST_S


# -- resuming --------------------------------------------------------------------------------------


@needs_mpirun
def test_ranks_resuming_from_different_checkpoints_fail_naming_them(tmp_path):
    shared, local = tmp_path / "shared", tmp_path / "node1"
    rc, out, err, _ = mpirun(_train_app(2, "--checkpoint-dir", str(shared)))
    assert rc == 0, err
    before = {f: (shared / f).read_bytes() for f in os.listdir(shared)}
    # rank 1's directory is "node-local": it sees nothing there
    rc, out, err, took = mpirun(["-n", "1", sys.executable, TRAIN, "--no-progress", "--steps", "8",
                                 "--checkpoint-dir", str(shared)],
                                ["-n", "1", sys.executable, TRAIN, "--no-progress", "--steps", "8",
                                 "--checkpoint-dir", str(local)])
    assert rc == 1, out + err
    for r in (0, 1):
        line = next(ln for ln in err.splitlines() if ln.startswith(f"[rank {r}] error:"))
        assert "would resume from different checkpoints" in line
        assert re.search(r"rank 0 sees ckpt-4\.h5 \(step 4, \d+ bytes, digest [0-9a-f]+\)", line), line
        assert "rank 1 sees no checkpoint (it would start from step 0)" in line
        assert "node-local" in line and "network file system" in line
    assert took < FAST_S
    # nothing lost or overwritten: the shared directory holds exactly what it held
    assert {f: (shared / f).read_bytes() for f in os.listdir(shared)} == before
    assert "ckpt-4.h5" in before and not [f for f in os.listdir(local) if f.endswith(".h5")]


# -- a rank that leaves --------------------------------------------------------------------------


EARLY = """
    import os, sys, time
    import numpy as np
    import collflow as cf
    from collflow.train import agreement
    comm = cf.comm.init()
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 4), name="x")
        w = cf.Variable(np.ones((4, 2), np.float32), name="w")
        loss = cf.reduce_mean(cf.square(cf.matmul(x, w)))
        opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.01), comm=comm)
        train = opt.minimize(loss)
        init = cf.global_variables_initializer()
    steps = 27 if comm.rank == 1 else 30
    t0 = time.monotonic()
    done = 0
    with cf.Session(graph=g, config={"comm": comm}) as sess:
        sess.run(init)
        try:
            for done in range(1, steps + 1):
                sess.run(train, {x: np.ones((8, 4), np.float32)})
        except cf.errors.CollflowError as e:
            print(f"rank {comm.rank} failed at step {done} after {time.monotonic() - t0:.2f} s: {e.message}",
                  flush=True)
            sys.exit(1)
    agreement.announce_exit(comm, f"it finished after {steps} steps")
    print(f"rank {comm.rank} finished {steps} steps", flush=True)
"""


@needs_mpirun
@pytest.mark.parametrize("shm", ["1", "0"])
def test_a_rank_that_finishes_early_ends_the_others_wait_at_once(tmp_path, shm):
    job = script(tmp_path, EARLY)
    rc, out, err, took = mpirun(["-n", "3", sys.executable, job], env=_env(COLLFLOW_SHM=shm))
    assert rc == 1, out + err
    assert "rank 1 finished 27 steps" in out
    for r in (0, 2):
        m = re.search(rf"rank {r} failed at step 28 after ([0-9.]+) s: (.*)", out)
        assert m, out + err
        # rank 1 left: its own reason, or a peer passing it on
        assert "rank 1 left the job (it finished after 27 steps)" in m.group(2), m.group(2)
        assert float(m.group(1)) < 10.0
    assert took < FAST_S
