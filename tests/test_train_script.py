"""scripts/train.py end to end: runs it as a subprocess and checks its one JSON line."""
import importlib.util
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "train.py")
REQUIRED = {"final_loss", "test_accuracy", "samples_per_sec", "steps", "model", "dataset", "optimizer",
            "batch_size", "epochs", "wall_time_s"}


def run_train(*args, check=True, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=120, env=e)
    if check:
        assert p.returncode == 0, f"train.py failed ({p.returncode}):\n{p.stderr}"
    return p


def the_json(p):
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected exactly one stdout line, got {lines!r}"
    return json.loads(lines[0])


def check_log(p):
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert lines, "train.py logged nothing"
    for ln in lines:
        assert ln.startswith("[rank 0]"), ln


@pytest.fixture(scope="module")
def train_mod():
    spec = importlib.util.spec_from_file_location("collflow_train_script", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_short_run_prints_one_json_line_and_writes_metrics(tmp_path):
    out = tmp_path / "sub" / "m.json"
    p = run_train("--steps", "5", "--no-progress", "--metrics-out", str(out))
    m = the_json(p)
    check_log(p)
    assert REQUIRED <= set(m)
    assert m["steps"] == 5 and m["model"] == "mlp" and m["dataset"] == "digits" and m["optimizer"] == "adam"
    assert m["batch_size"] == 64 and m["samples_per_sec"] > 0 and 0 <= m["test_accuracy"] <= 1
    assert np.isfinite(m["final_loss"])
    assert json.loads(out.read_text()) == m


@pytest.mark.parametrize("opt", ["sgd", "momentum", "adagrad", "rmsprop"])
def test_every_optimizer_runs(opt):
    m = the_json(run_train("--steps", "40", "--optimizer", opt, "--no-progress"))
    assert m["optimizer"] == opt and m["steps"] == 40
    assert m["final_loss"] < m["initial_loss"]


def test_digits_mlp_reaches_95_percent():
    t0 = time.perf_counter()
    p = run_train("--model", "mlp", "--dataset", "digits", "--no-progress",
                  env={"COLLFLOW_CHECK_OUTPUTS": "0"})
    took = time.perf_counter() - t0
    m = the_json(p)
    assert m["test_accuracy"] >= 0.95, m
    assert took < 60, f"took {took:.1f} s"


def test_cnn_trains_on_digits():
    m = the_json(run_train("--model", "cnn", "--epochs", "3", "--no-progress", "--seed", "1"))
    assert m["model"] == "cnn" and m["filters"] == [16, 32]
    assert m["final_loss"] < m["initial_loss"] * 0.7
    assert m["test_accuracy"] > 0.5  # chance is 0.1


def test_synthetic_and_hidden_layers():
    m = the_json(run_train("--dataset", "synthetic", "--synthetic-size", "2000", "--synthetic-shape", "32",
                           "--hidden", "64,32", "--steps", "60", "--no-progress"))
    assert m["dataset"] == "synthetic" and m["hidden"] == [64, 32]
    assert m["num_params"] == 32 * 64 + 64 + 64 * 32 + 32 + 32 * 10 + 10
    assert m["final_loss"] < m["initial_loss"]


def test_user_npz_file(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.random((200, 12)).astype(np.float32)
    y = (x[:, 0] > 0.5).astype(np.int64)
    path = tmp_path / "mine.npz"
    np.savez(path, x=x, y=y)
    m = the_json(run_train("--dataset", str(path), "--steps", "20", "--batch-size", "16", "--no-progress"))
    assert m["dataset"] == str(path) and m["steps"] == 20


def test_bad_dataset_file_contents_give_a_clear_error(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, features=np.zeros((3, 2)))
    p = run_train("--dataset", str(path), "--steps", "1", check=False)
    assert p.returncode == 2 and p.stdout == ""
    assert "lacks 'x' and 'y'" in p.stderr and p.stderr.startswith("[rank 0]")


@pytest.mark.parametrize("args,msg", [
    (["--batch-size", "0"], "positive integer"),
    (["--lr", "-1"], "positive number"),
    (["--optimizer", "lbfgs"], "invalid choice"),
    (["--model", "rnn"], "invalid choice"),
    (["--epochs", "2", "--steps", "3"], "not allowed with"),
    (["--model", "cnn", "--hidden", "32"], "--hidden applies to --model mlp"),
    (["--hidden", "12,x"], "comma-separated"),
    (["--dataset", "/no/such/file.h5"], "no such file"),
    (["--trace-step", "0"], "counts steps from 1"),
    (["--trace-step", "2", "--backup-ranks", "1"], "cannot trace a step with --backup-ranks"),
])
def test_bad_arguments_are_argparse_errors(train_mod, capsys, args, msg):
    with pytest.raises(SystemExit) as ei:
        train_mod.parse_args(args)
    assert ei.value.code == 2
    assert msg in capsys.readouterr().err


def test_missing_dataset_path_via_subprocess():
    p = run_train("--dataset", "nowhere.npz", check=False)
    assert p.returncode == 2 and "nowhere.npz" in p.stderr and "no such file" in p.stderr


def test_defaults(train_mod):
    a = train_mod.parse_args([])
    assert (a.model, a.dataset, a.optimizer, a.batch_size, a.hidden) == ("mlp", "digits", "adam", 64, (128,))
    assert a.epochs == train_mod.DEFAULT_EPOCHS and a.steps is None and a.lr == 3e-3
    assert train_mod.parse_args(["--optimizer", "sgd"]).lr == 0.1


def test_trace_step_writes_a_chrome_trace_of_that_step(tmp_path):
    out = tmp_path / "trace.json"
    p = run_train("--steps", "3", "--trace-step", "2", "--trace-path", str(out), "--no-progress")
    assert the_json(p)["steps"] == 3
    assert "step trace written" in p.stderr
    ev = json.loads(out.read_text())["traceEvents"]
    ops = {e["args"]["op"] for e in ev if e["ph"] == "X"}
    assert {"MatMul", "SparseSoftmaxCrossEntropyWithLogits"} <= ops
    assert not [f for f in os.listdir(tmp_path) if ".tmp" in f]  # written atomically


def test_progress_lines_without_a_terminal_and_tensorboard_logdir(tmp_path):
    """Under mpirun stderr is no terminal: rank 0 logs progress lines (at least every 10% of the
    steps) with loss, samples/s and ETA; --logdir writes TensorBoard event files that TensorBoard's
    own reader (when installed) or our record reader finds the scalars in."""
    p = run_train("--model", "mlp", "--dataset", "digits", "--steps", "30", "--logdir", str(tmp_path / "tb"))
    lines = [ln for ln in p.stderr.splitlines() if "ETA" in ln]
    assert len(lines) >= 9, p.stderr  # 10%, 20%, ... of 30 steps
    assert "step 3/30 (10%): loss" in lines[0] and "samples/s" in lines[0]
    assert "step 30/30 (100%)" in lines[-1]
    files = os.listdir(tmp_path / "tb")
    assert len(files) == 1 and files[0].startswith("events.out.tfevents.")
    import collflow as cf
    tags = {}
    for ev in cf.summary.summary_iterator(str(tmp_path / "tb" / files[0])):
        if ev.HasField("summary"):
            for v in ev.summary.value:
                tags.setdefault(v.tag, []).append(ev.step)
    assert tags["loss"] == list(range(1, 31)) and "samples_per_sec" in tags and "learning_rate" in tags
    assert tags["test_accuracy"] == [30]
    q = run_train("--model", "mlp", "--dataset", "digits", "--steps", "5", "--no-progress")
    assert "ETA" not in q.stderr


def test_unwritable_outputs_fail_before_training(tmp_path):
    """A path that cannot be written is found before training (one line naming the flag, exit 2),
    not after it with the run's result lost.  A regular file where a directory must be makes a
    path no one can write, root included."""
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    for flag, target in (("--metrics-out", blocker / "m.json"), ("--logdir", blocker / "tb")):
        p = run_train("--model", "mlp", "--steps", "50", flag, str(target), check=False)
        assert p.returncode == 2, p.stderr
        assert f"{flag}: cannot write" in p.stderr and not p.stdout.strip()


def test_library_messages_carry_the_rank_and_ctrl_c_is_one_line(tmp_path):
    """collflow's own warnings (here SIGTERM's save-and-exit) print as "[rank R] ..." like train.py's
    lines; a serial Ctrl-C (SIGINT) ends with one line and status 130, not a traceback."""
    import signal
    e = dict(os.environ)
    args = [sys.executable, SCRIPT, "--model", "mlp", "--steps", "100000", "--batch-size", "8"]
    p = subprocess.Popen(args + ["--checkpoint-dir", str(tmp_path / "ck")], stderr=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=e)
    time.sleep(4)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 143, err[-2000:]
    sig_lines = [ln for ln in err.splitlines() if "SIGTERM" in ln]
    assert sig_lines and all(ln.startswith("[rank 0] ") for ln in sig_lines), err[-2000:]
    # A shell that starts the suite in the background leaves SIGINT ignored, and children inherit
    # that; restore the default so the child sees Ctrl-C as a user's terminal would deliver it.
    q = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=e,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(4)
    q.send_signal(signal.SIGINT)
    out, err = q.communicate(timeout=60)
    assert q.returncode == 130 and "Traceback" not in err and "[rank 0] error: interrupted (Ctrl-C)" in err, err[-2000:]
