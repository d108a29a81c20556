"""scripts/supervise.py: a training job killed mid-run is restarted and resumes from its checkpoint."""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPERVISE = os.path.join(ROOT, "scripts", "supervise.py")
TOTAL_STEPS = 30

# A tiny training job: Adam, dropout, shuffled batches, a checkpoint every 5 steps, SIGTERM
# handling.  On its first attempt it kills itself with $KILL_SIGNAL at step $KILL_AT.
TRAIN = textwrap.dedent("""
    import json, os, signal, sys
    sys.path.insert(0, {root!r})
    import numpy as np
    import collflow as cf
    from collflow.data import BatchIterator
    from collflow.train.checkpoint_manager import CheckpointManager

    out = sys.argv[1]
    total = int(sys.argv[2])
    attempt = int(os.environ.get("COLLFLOW_RESTART_COUNT", "0"))
    g = cf.Graph()
    with g.as_default():
        cf.set_random_seed(1)
        x = cf.placeholder(cf.float32, (None, 6)); y = cf.placeholder(cf.int32, (None,))
        w1 = cf.Variable(cf.random_normal((6, 32), stddev=0.3), name="w1")
        h = cf.nn.dropout(cf.nn.relu(cf.matmul(x, w1)), rate=0.2)
        w2 = cf.Variable(cf.random_normal((32, 3), stddev=0.3), name="w2")
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=cf.matmul(h, w2)))
        gs = cf.train.get_or_create_global_step()
        train = cf.train.AdamOptimizer(0.01).minimize(loss, global_step=gs)
        init = cf.global_variables_initializer()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((96, 6)).astype(np.float32)
    Y = ((X[:, 0] > 0).astype(np.int32) + (X[:, 1] > 0.5)).astype(np.int32)
    it = BatchIterator(X, Y, 16, seed=2, num_epochs=None)
    with cf.Session(graph=g) as sess:
        ck = CheckpointManager(os.path.join(out, "ckpt"), checkpoint_every_steps=5, max_to_keep=3)
        ck.install_signal_handler()
        res = ck.restore_or_initialize(sess, init)
        if res is not None:
            it.load_state_dict(res.pipeline)
        step = int(sess.run(gs))
        with open(os.path.join(out, f"losses-{{attempt}}.txt"), "w") as f:
            f.write(f"start {{step}}\\n")
            while step < total:
                xb, yb = next(it)
                l, _ = sess.run([loss, train], {{x: xb, y: yb}})
                step += 1
                f.write(f"{{step}} {{float(l)!r}}\\n"); f.flush()
                if attempt == 0 and step == int(os.environ.get("KILL_AT", "-1")):
                    os.kill(os.getpid(), getattr(signal, os.environ["KILL_SIGNAL"]))
                ck.maybe_save(sess, step, it.state_dict)
        ck.save(sess, step, it.state_dict())
        ck.close()
        final = {{v.op.name: sess.run(v).tolist() for v in g.get_collection("variables")}}
    with open(os.path.join(out, "final.json"), "w") as f:
        json.dump({{"step": step, "params": final}}, f)
""")


def _write_script(tmp_path):
    p = tmp_path / "train_tiny.py"
    p.write_text(TRAIN.format(root=ROOT))
    return str(p)


def _losses(out, attempt):
    lines = (out / f"losses-{attempt}.txt").read_text().split("\n")
    start = int(lines[0].split()[1])
    return start, {int(a): float(b) for a, b in (ln.split() for ln in lines[1:] if ln)}


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory):
    """The same job run once without interruption (the reference)."""
    out = tmp_path_factory.mktemp("straight")
    script = _write_script(out)
    r = subprocess.run([sys.executable, script, str(out), str(TOTAL_STEPS)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads((out / "final.json").read_text()), _losses(out, 0)[1]


@pytest.mark.parametrize("sig, resume_step", [("SIGKILL", 15), ("SIGTERM", 17)])
def test_killed_job_is_restarted_and_resumes_exactly(tmp_path, straight_run, sig, resume_step):
    script = _write_script(tmp_path)
    env = dict(os.environ, KILL_AT="17", KILL_SIGNAL=sig)
    r = subprocess.run([sys.executable, SUPERVISE, "--max-restarts", "2", "--restart-delay", "0",
                        "--checkpoint-dir", str(tmp_path / "ckpt"), "--",
                        sys.executable, script, str(tmp_path), str(TOTAL_STEPS)],
                       capture_output=True, text=True, timeout=180, env=env)
    assert r.returncode == 0, r.stderr
    why = "killed by signal SIGKILL (9)" if sig == "SIGKILL" else "exited with status 143"
    assert why in r.stderr and "restart 1 of 2" in r.stderr, r.stderr
    assert f"ckpt-{resume_step}.h5 (step {resume_step})" in r.stderr
    assert "finished successfully" in r.stderr and "attempt 3" not in r.stderr

    final = json.loads((tmp_path / "final.json").read_text())
    want_final, want_losses = straight_run
    assert final["step"] == TOTAL_STEPS
    # the first attempt got past the checkpoint; the second resumed from it
    start0, losses0 = _losses(tmp_path, 0)
    start1, losses1 = _losses(tmp_path, 1)
    assert start0 == 0 and max(losses0) == 17 and start1 == resume_step
    curve = [losses0[s] if s <= resume_step else losses1[s] for s in range(1, TOTAL_STEPS + 1)]
    # the loss keeps falling across the restart, and the resumed run is the uninterrupted one, bit for bit
    assert sum(curve[-5:]) < sum(curve[:5]) * 0.8
    assert curve == [want_losses[s] for s in range(1, TOTAL_STEPS + 1)]
    assert final["params"] == want_final["params"]


def test_gives_up_after_max_restarts(tmp_path):
    r = subprocess.run([sys.executable, SUPERVISE, "--max-restarts", "2", "--restart-delay", "0", "--",
                        sys.executable, "-c", "import sys; sys.exit(3)"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 3
    assert r.stderr.count("exited with status 3") == 3
    assert "attempt 3 of 3" in r.stderr and "giving up after 2 restart(s)" in r.stderr


def test_sigterm_to_the_supervisor_stops_the_job_without_restart(tmp_path):
    p = subprocess.Popen([sys.executable, SUPERVISE, "--max-restarts", "5", "--restart-delay", "0", "--",
                          sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "up"
        p.send_signal(signal.SIGTERM)
        rc = p.wait(30)
        err = p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
        p.stdout.close()
        p.stderr.close()
    assert rc == 128 + signal.SIGTERM
    assert "no restart" in err and "attempt 2" not in err


def test_describe_status():
    spec = importlib.util.spec_from_file_location("supervise", SUPERVISE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.describe_status(-9) == "killed by signal SIGKILL (9)"
    assert mod.describe_status(2) == "exited with status 2"
    assert "128 + SIGKILL" in mod.describe_status(137)
    with pytest.raises(SystemExit):
        mod.parse_args([])
    assert mod.parse_args(["--", "echo", "hi"]).command == ["echo", "hi"]


# -- hang-ups, one job per directory, what is not retried -----------------------------------------

TERM_AWARE = ("import signal, sys, time\n"
              "def bye(s, f):\n"
              "    print('child got', signal.Signals(s).name, flush=True); sys.exit(143)\n"
              "signal.signal(signal.SIGTERM, bye)\n"
              "print('up', flush=True)\n"
              "time.sleep(60)\n")


def _start(*args):
    return subprocess.Popen([sys.executable, SUPERVISE, "--restart-delay", "0", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(p, timeout=30):
    try:
        rc = p.wait(timeout)
        return rc, p.stdout.read(), p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()


def test_sighup_stops_the_job_like_sigterm_and_the_lock_goes_with_the_supervisor(tmp_path):
    ckpt = tmp_path / "ckpt"
    p = _start("--max-restarts", "5", "--checkpoint-dir", str(ckpt), "--", sys.executable, "-c", TERM_AWARE)
    assert p.stdout.readline().strip() == "up"
    p.send_signal(signal.SIGHUP)  # the ssh session dropped
    rc, out, err = _finish(p)
    assert rc == 128 + signal.SIGHUP
    assert "child got SIGTERM" in out  # forwarded as TERM: the job can checkpoint and stop
    assert "received SIGHUP: passing SIGTERM to the command and stopping (no restart)" in err
    assert "attempt 2" not in err
    # the supervisor's lock died with it: the directory is free again
    q = _start("--max-restarts", "0", "--checkpoint-dir", str(ckpt), "--", sys.executable, "-c", "pass")
    assert _finish(q)[0] == 0


def test_a_second_supervisor_on_the_same_directory_refuses_at_once(tmp_path):
    ckpt = tmp_path / "ckpt"
    first = _start("--checkpoint-dir", str(ckpt), "--", sys.executable, "-c", TERM_AWARE)
    try:
        assert first.stdout.readline().strip() == "up"
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, SUPERVISE, "--checkpoint-dir", str(ckpt), "--",
                            sys.executable, "-c", "print('second job ran')"], capture_output=True, text=True,
                           timeout=60)
        assert time.monotonic() - t0 < 10
        assert r.returncode == 2 and "second job ran" not in r.stdout
        assert f"is in use: its lock {str(ckpt / 'collflow.lock')!r} is held by pid {first.pid}" in r.stderr
        assert "supervise.py" in r.stderr  # the holder's command line
        assert first.poll() is None  # the first job goes on, untouched
    finally:
        first.send_signal(signal.SIGTERM)
        rc, out, err = _finish(first)
    assert rc == 128 + signal.SIGTERM and "child got SIGTERM" in out


def test_usage_errors_are_not_retried(tmp_path):
    r = subprocess.run([sys.executable, SUPERVISE, "--max-restarts", "3", "--restart-delay", "0", "--",
                        sys.executable, "-c", "import sys; sys.exit(2)"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "exited with status 2" in r.stderr and "a usage error" in r.stderr and "not restarting" in r.stderr
    assert "attempt 2" not in r.stderr


def test_rerunning_a_finished_job_says_it_is_complete_and_succeeds(tmp_path):
    train = os.path.join(ROOT, "scripts", "train.py")
    ckpt = str(tmp_path / "ckpt")
    cmd = [sys.executable, SUPERVISE, "--max-restarts", "2", "--restart-delay", "0", "--checkpoint-dir", ckpt, "--",
           sys.executable, train, "--no-progress", "--steps", "6", "--checkpoint-dir", ckpt]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "the job is already complete" in again.stderr and "ckpt-6.h5 is at step 6" in again.stderr
    assert "attempt 2" not in again.stderr and "finished successfully" in again.stderr
    m1, m2 = json.loads(first.stdout), json.loads(again.stdout)
    assert m2["already_complete"] is True and m2["steps"] == 6 and m2["steps_this_run"] == 0
    assert m2["test_loss"] == m1["test_loss"]  # the finished model, restored as it was
    assert sorted(f for f in os.listdir(ckpt) if f.endswith(".h5")) == ["ckpt-6.h5"]  # nothing rewritten
