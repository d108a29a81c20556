"""The elastic mode: a rank killed with SIGKILL mid-run, the others go on without a restart.

The MPI cases run `mpirun --with-ft ulfm -n 3 scripts/train.py --elastic K` with the fault
drill COLLFLOW_FAULT_KILL=R:S (world rank R kills itself with SIGKILL after its step S) and
assert what issue 21 asks: the job finishes on 2 ranks, within 10 s of the failure, at most K
steps are trained again, the replicas end bit-identical, and the model still learns.  The
commit bookkeeping is tested in one process with thread ranks.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import collflow as cf
from collflow.comm import ThreadWorld
from collflow.errors import DataLossError
from collflow.launcher import build_command
from collflow.train.elastic import ElasticState

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(ROOT, "scripts", "train.py")
needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not found")
pytestmark = pytest.mark.timeout(180)


def _env(**extra):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", COLLFLOW_COLLECTIVE_TIMEOUT="60", PYTHONPATH=ROOT)
    for k in ("COLLFLOW_CHECK_OUTPUTS", "COLLFLOW_FAULT_KILL"):
        env.pop(k, None)
    env.update(extra)
    return env


def _graph():
    g = cf.Graph()
    with g.as_default():
        w = cf.Variable(np.zeros((2, 3)), name="w")
        step = cf.Variable(0, name="step", dtype=cf.int64)
        bump = [cf.assign_add(w, np.ones((2, 3))), cf.assign_add(step, 1)]
        init = cf.global_variables_initializer()
    return g, [w, step], bump, init


def test_survivors_agree_on_the_newest_commit_they_all_hold():
    """One survivor got a commit further than the other (a collective that completed on one
    rank and failed on the other): both roll back to the older one, and hold equal values."""
    def rank(c):
        g, vs, bump, init = _graph()
        el = ElasticState(every=2)
        with cf.Session(graph=g) as s:
            s.run(init)
            for k in range(1, 5 + c.rank):  # rank 0 stops after 4 steps, rank 1 after 5
                s.run(bump)
                if el.due(k):
                    el.commit(s, vs, k)
            el.failed(4 + c.rank)
            back = el.agree(c)
        g2, vs2, _, init2 = _graph()  # the rebuilt graph and session of the survivors
        with cf.Session(graph=g2) as s2:
            s2.run(init2)
            el.restore(s2, vs2, back)
            return back.step, s2.run(vs2), el.lost_steps

    a, b = ThreadWorld(2, timeout=30).run(rank)
    assert a[0] == b[0] == 4
    np.testing.assert_array_equal(a[1][0], np.full((2, 3), 4.0))
    np.testing.assert_array_equal(a[1][0], b[1][0])
    assert a[1][1] == b[1][1] == 4
    assert (a[2], b[2]) == (0, 1)


def test_a_commit_no_longer_held_is_a_named_data_loss():
    def rank(c):
        g, vs, bump, init = _graph()
        el = ElasticState(every=1)
        with cf.Session(graph=g) as s:
            s.run(init)
            steps = 2 if c.rank == 0 else 5  # rank 1 keeps steps 4 and 5 only
            for k in range(1, steps + 1):
                s.run(bump)
                el.commit(s, vs, k)
            try:
                el.agree(c)
            except DataLossError as e:
                return str(e)
            return None

    out = ThreadWorld(2, timeout=30).run(rank)
    assert out[0] is None and "step 2" in out[1] and "[4, 5]" in out[1]


def test_no_commit_yet_agrees_on_none():
    out = ThreadWorld(2, timeout=30).run(lambda c: ElasticState(3).agree(c))
    assert out == [None, None]


def test_elastic_without_fault_tolerant_mpi_is_one_clear_line():
    env = _env()
    env.pop("OMPI_MCA_mpi_ft_enable", None)
    p = subprocess.run([sys.executable, TRAIN, "--steps", "3", "--elastic", "5", "--no-progress"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2
    assert "--with-ft ulfm" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("args,msg", [(["--elastic", "-1"], "K >= 1"),
                                      (["--elastic-respawn"], "goes with --elastic"),
                                      (["--elastic", "5", "--backup-ranks", "1"], "--backup-ranks")])
def test_elastic_flag_errors(args, msg):
    p = subprocess.run([sys.executable, TRAIN, "--steps", "3", *args], capture_output=True, text=True, env=_env(),
                       timeout=120)
    assert p.returncode == 2 and msg in p.stderr


def test_collflowrun_starts_fault_tolerant_mpi_for_an_elastic_program():
    argv, _, notes = build_command(3, ["python", "train.py", "--elastic", "10"], mpirun="/x/mpirun",
                                   flavour="openmpi", cores=4)
    assert argv[3:5] == ["--with-ft", "ulfm"] and any("--with-ft ulfm" in n for n in notes)
    argv, _, _ = build_command(3, ["python", "train.py", "--elastic=0"], mpirun="/x/mpirun", flavour="openmpi",
                               cores=4)
    assert "--with-ft" not in argv
    with pytest.raises(SystemExit, match="Open MPI"):
        build_command(3, ["python", "train.py"], mpirun="/x/mpiexec.hydra", flavour="mpich", cores=4, elastic=True)


def _elastic_job(tmp_path, victim, steps=100, kill_after=35, every=10):
    out = tmp_path / "metrics.json"
    cmd = ["timeout", "150", "mpirun", "--with-ft", "ulfm", "-n", "3", "--oversubscribe", "--bind-to", "none",
           sys.executable, TRAIN, "--steps", str(steps), "--elastic", str(every), "--check-replicas",
           "--no-progress", "--metrics-out", str(out)]
    env = _env(COLLFLOW_FAULT_KILL=f"{victim}:{kill_after}") if victim is not None else _env()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=200)
    return p, (json.loads(out.read_text()) if out.exists() and out.read_text().strip() else None)


@needs_mpirun
@pytest.mark.parametrize("victim", [0, 2])
def test_a_killed_rank_is_survived_on_the_others(tmp_path, victim):
    p, m = _elastic_job(tmp_path, victim)
    assert p.returncode == 0, p.stderr[-3000:]
    assert m is not None and m["world_size"] == 2 and m["steps"] == 100
    el = m["elastic"]
    assert el["shrinks"] == 1 and 0 <= el["steps_lost"] <= 10
    assert len(el["recovery_s"]) == 1 and el["recovery_s"][0] < 10.0
    assert "rolled back to the commit of step 30" in p.stderr
    assert "replicas are bit-identical across ranks" in p.stderr
    assert m["test_accuracy"] > 0.85


@needs_mpirun
def test_no_failure_no_shrink_and_the_same_training_as_without_elastic(tmp_path):
    p, m = _elastic_job(tmp_path, None, steps=40)
    assert p.returncode == 0, p.stderr[-3000:]
    assert m["world_size"] == 3 and m["elastic"]["shrinks"] == 0 and m["elastic"]["last_commit"] == 40
    out = tmp_path / "plain.json"
    q = subprocess.run(["timeout", "150", "mpirun", "-n", "3", "--oversubscribe", "--bind-to", "none",
                        sys.executable, TRAIN, "--steps", "40", "--no-progress", "--metrics-out", str(out)],
                       capture_output=True, text=True, env=_env(COLLFLOW_SHM="0"), timeout=200)
    assert q.returncode == 0, q.stderr[-3000:]
    plain = json.loads(out.read_text())
    # equal up to the summation order of MPI's all-reduce algorithms (blocking vs nonblocking)
    assert plain["final_loss"] == pytest.approx(m["final_loss"], rel=1e-6)
    assert plain["test_loss"] == pytest.approx(m["test_loss"], rel=1e-6)


def test_a_newcomer_gets_the_survivors_commit_from_rank_0():
    """A rank spawned to replace a dead one has no commit: rank 0 hands over the one the
    survivors agree on (values, step, input position), and all load the same values."""
    def rank(c):
        g, vs, bump, init = _graph()
        el = ElasticState(every=3)
        with cf.Session(graph=g) as s:
            s.run(init)
            if c.rank < 2:  # the survivors trained 7 steps; rank 2 is the newcomer
                for k in range(1, 8):
                    s.run(bump)
                    if el.due(k):
                        el.commit(s, vs, k, {"epoch": 1, "offset": 64 + k}, world_size=3)
            back = el.agree(c, vs)
            el.restore(s, vs, back)
            return back.step, back.pipeline["epoch"], back.pipeline["offset"], back.world_size, s.run(vs)

    out = ThreadWorld(3, timeout=30).run(rank)
    for step, epoch, offset, ws, (w, st) in out:
        assert (step, epoch, offset, ws) == (6, 1, 70, 3)
        np.testing.assert_array_equal(w, np.full((2, 3), 6.0))
        assert st == 6


@needs_mpirun
def test_a_respawned_rank_rejoins_and_the_run_equals_an_uninterrupted_one(tmp_path):
    """--elastic-respawn: the survivors start a new process for the dead rank, which joins at
    the commit they roll back to; the world stays at 3 ranks, so the steps after the rollback
    are the uninterrupted run's steps again: the same losses, bit for bit."""
    out = tmp_path / "respawn.json"
    cmd = ["timeout", "150", "mpirun", "--with-ft", "ulfm", "-n", "3", "--oversubscribe", "--bind-to", "none",
           sys.executable, TRAIN, "--steps", "100", "--elastic", "10", "--elastic-respawn", "--check-replicas",
           "--no-progress", "--metrics-out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(COLLFLOW_FAULT_KILL="1:35"), timeout=200)
    assert p.returncode == 0, p.stderr[-3000:]
    m = json.loads(out.read_text())
    assert m["world_size"] == 3 and m["elastic"]["shrinks"] == 1 and m["elastic"]["respawned"] == 1
    assert m["elastic"]["recovery_s"][0] < 10.0
    assert "joined the job as rank 2 of 3" in p.stderr and "replicas are bit-identical" in p.stderr
    _, plain = _elastic_job(tmp_path, None, steps=100)
    assert plain["elastic"]["shrinks"] == 0
    # the loss record up to the commit comes back with it: the reported losses match too
    keys = ("initial_loss", "final_loss", "test_loss", "test_accuracy")
    assert [m[k] for k in keys] == [plain[k] for k in keys]


USER_PROGRAM = r'''
import json, os, signal, sys
import numpy as np
import collflow as cf
from collflow.train import elastic
from mpi4py import MPI

WORLD_RANK = MPI.COMM_WORLD.Get_rank()
KILL = os.environ.get("DRILL") == "1" and WORLD_RANK == 2 and MPI.Comm.Get_parent() == MPI.COMM_NULL

def train(ctx):
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float64, (None, 4))
        y = cf.placeholder(cf.float64, (None, 1))
        w = cf.Variable(np.zeros((4, 1)), name="w")
        loss = cf.reduce_mean(cf.square(cf.matmul(x, w) - y))
        opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.1), comm=ctx.comm)
        step_op = opt.minimize(loss)
        init = cf.global_variables_initializer()
        vs = g.get_collection(cf.GraphKeys.GLOBAL_VARIABLES)
    true_w = np.array([[1.0], [-2.0], [0.5], [3.0]])
    with cf.Session(graph=g, config={"comm": ctx.comm}) as s:
        s.run(init)
        step = ctx.restore(s, vs)
        while step < 60:
            rng = np.random.default_rng(1000 * step + ctx.rank)
            xb = rng.normal(size=(8, 4))
            s.run(step_op, {x: xb, y: xb @ true_w})
            step += 1
            ctx.step_done(s, vs, step)
            if KILL and step == 23:
                os.kill(os.getpid(), signal.SIGKILL)
        return s.run(w), ctx.comm

w, comm = elastic.run(train, commit_every=5, respawn=os.environ.get("RESPAWN") == "1")
print(json.dumps({"rank": comm.rank, "size": comm.size, "w": w.ravel().tolist()}), flush=True)
elastic.exit_rank(comm)
'''


@needs_mpirun
@pytest.mark.parametrize("respawn", ["0", "1"])
def test_a_user_program_survives_through_elastic_run(tmp_path, respawn):
    """collflow.train.elastic.run for a program of one's own (not train.py): the kill of rank
    2 after step 23 is survived, the survivors end with equal weights close to the truth."""
    prog = tmp_path / "job.py"
    prog.write_text(USER_PROGRAM)
    cmd = ["timeout", "150", "mpirun", "--with-ft", "ulfm", "-n", "3", "--oversubscribe", "--bind-to", "none",
           sys.executable, str(prog)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(DRILL="1", RESPAWN=respawn), timeout=200)
    assert p.returncode == 0, p.stderr[-3000:]
    outs = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    want = 3 if respawn == "1" else 2
    assert sorted(o["rank"] for o in outs) == list(range(want)) and all(o["size"] == want for o in outs)
    ws = [o["w"] for o in outs]
    assert all(w == ws[0] for w in ws)
    np.testing.assert_allclose(ws[0], [1.0, -2.0, 0.5, 3.0], atol=0.05)


@needs_mpirun
@pytest.mark.parametrize("respawn", [False, True])
def test_wide_deep_rolls_back_to_its_sharded_checkpoint(tmp_path, respawn):
    """wide_deep's table shards of a dead rank are gone from memory: the survivors restore the
    last sharded checkpoint (written every K steps) onto their number of ranks and go on; with
    respawn the world is whole again and the run equals an uninterrupted one."""
    def job(name, kill, extra):
        out = tmp_path / f"{name}.json"
        cmd = ["timeout", "150", "mpirun", "--with-ft", "ulfm", "-n", "3", "--oversubscribe", "--bind-to", "none",
               sys.executable, TRAIN, "--model", "wide_deep", "--mode", "ps", "--steps", "60", "--elastic", "10",
               "--checkpoint-dir", str(tmp_path / f"ck_{name}"), "--no-progress", "--metrics-out", str(out), *extra]
        env = _env(COLLFLOW_FAULT_KILL=kill) if kill else _env()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=200)
        assert p.returncode == 0, p.stderr[-3000:]
        return p, json.loads(out.read_text())

    p, m = job("killed", "1:25", ["--elastic-respawn"] if respawn else [])
    assert "at step 20 (written by 3 rank(s))" in p.stderr
    assert m["resumed_from_step"] == 20 and m["elastic"]["shrinks"] == 1
    assert m["world_size"] == (3 if respawn else 2)
    if respawn:
        _, plain = job("plain", None, [])
        assert (m["final_loss"], m["test_loss"]) == (plain["final_loss"], plain["test_loss"])
    else:
        assert m["final_loss"] < m["initial_loss"] + 0.05 and m["test_accuracy"] > 0.55


def test_wide_deep_elastic_needs_a_checkpoint_dir():
    p = subprocess.run([sys.executable, TRAIN, "--model", "wide_deep", "--steps", "3", "--elastic", "5"],
                       capture_output=True, text=True, env=_env(), timeout=120)
    assert p.returncode == 2 and "--checkpoint-dir" in p.stderr


@needs_mpirun
def test_an_external_kill_9_at_an_arbitrary_moment(tmp_path):
    """kill -9 from outside, mid-step (not the drill's clean point between steps)."""
    import random
    import signal
    import threading
    import time
    out = tmp_path / "ext.json"
    cmd = ["timeout", "150", "mpirun", "--with-ft", "ulfm", "-n", "3", "--oversubscribe", "--bind-to", "none",
           sys.executable, TRAIN, "--model", "cnn", "--steps", "1500", "--elastic", "20", "--check-replicas",
           "--no-progress", "--metrics-out", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())
    lines: list = []
    reader = threading.Thread(target=lambda: lines.extend(iter(p.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        victim = None
        deadline = time.monotonic() + 90
        # a rank that dies inside MPI_Init cannot be survived (the MPI library aborts the job):
        # wait for rank 0's first epoch line, so the kill lands mid-training, at an unplanned moment
        while victim is None and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
            if any("epoch 1:" in ln for ln in list(lines)):
                time.sleep(random.uniform(0.0, 1.0))
                ps = subprocess.run(["pgrep", "-f", f"^{sys.executable} {TRAIN} --model cnn"], capture_output=True,
                                    text=True).stdout.split()  # rank processes: children of prterun
                if len(ps) == 3:
                    victim = int(sorted(ps)[1])
        assert victim is not None, "the ranks did not start training: " + "".join(lines)[-2000:]
        os.kill(victim, signal.SIGKILL)
        p.wait(timeout=180)
        reader.join(timeout=10)
        stderr = "".join(lines)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        reader.join(timeout=10)
        p.stderr.close()
    assert p.returncode == 0, stderr[-3000:]
    m = json.loads(out.read_text())
    assert m["world_size"] == 2 and m["steps"] == 1500 and m["elastic"]["shrinks"] == 1
    assert m["elastic"]["steps_lost"] <= 20 and m["elastic"]["recovery_s"][0] < 10.0
    assert "replicas are bit-identical across ranks" in stderr
