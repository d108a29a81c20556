"""scripts/train.py under mpirun: data-parallel runs, backup ranks, checkpoints across rank counts."""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = os.path.join(ROOT, "scripts", "train.py")
pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not found")


def _run(np_, *args, timeout=240):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    env.pop("COLLFLOW_CHECK_OUTPUTS", None)
    cmd = ["timeout", str(timeout), "mpirun", "-n", str(np_), "--oversubscribe", "--bind-to", "none",
           sys.executable, TRAIN, "--no-progress", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout + 30)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == 1, p.stdout  # only rank 0 prints the JSON
    return json.loads(lines[0]), p.stderr


def test_two_ranks_train_the_digits_mlp():
    m, err = _run(2, "--model", "mlp", "--dataset", "digits", "--epochs", "20", "--check-replicas")
    assert m["world_size"] == 2 and m["global_batch"] == 2 * m["batch_size"]
    assert m["final_loss"] < m["initial_loss"] / 5
    assert m["test_accuracy"] >= 0.93
    assert "replicas are bit-identical" in err
    assert all(line.startswith("[rank ") for line in err.splitlines() if line.strip() and "rank" in line[:10])


def test_backup_rank_leaves_the_straggler_out():
    m, err = _run(3, "--model", "mlp", "--dataset", "digits", "--steps", "12", "--backup-ranks", "1",
                  "--straggler-rank", "2", "--straggler-delay", "0.3", "--check-replicas")
    assert m["late_steps_per_rank"] == [0, 0, 12]
    assert m["train_time_s"] < 12 * 0.3  # nobody waited for the straggler
    assert "replicas are bit-identical" in err


def test_checkpoint_resume_is_exact_and_restores_on_another_rank_count(tmp_path):
    common = ["--model", "mlp", "--dataset", "digits", "--optimizer", "adam", "--checkpoint-every-steps", "5"]
    straight, _ = _run(2, *common, "--steps", "20", "--checkpoint-dir", str(tmp_path / "a"))
    _run(2, *common, "--steps", "10", "--checkpoint-dir", str(tmp_path / "b"))
    resumed, err = _run(2, *common, "--steps", "20", "--checkpoint-dir", str(tmp_path / "b"))
    assert "resumed from" in err and resumed["steps_this_run"] == 10
    assert resumed["test_loss"] == straight["test_loss"]  # bit-identical parameters give identical losses
    # the 2-rank checkpoint goes on with 1 rank and then 3 ranks
    one, err1 = _run(1, *common, "--steps", "30", "--checkpoint-dir", str(tmp_path / "b"))
    assert "written by 2 rank(s)" in err1 and one["steps_this_run"] == 10
    three, err3 = _run(3, *common, "--steps", "36", "--checkpoint-dir", str(tmp_path / "b"))
    assert "written by 1 rank(s)" in err3 and three["test_loss"] < straight["initial_loss"]


def test_wide_deep_ps_and_allreduce_modes_agree_and_learn():
    ps, _ = _run(2, "--model", "wide_deep", "--mode", "ps", "--steps", "60", "--vocab-size", "20000")
    ar, _ = _run(2, "--model", "wide_deep", "--mode", "allreduce", "--steps", "60", "--vocab-size", "20000")
    assert ps["final_loss"] < ps["initial_loss"]
    assert abs(ps["final_loss"] - ar["final_loss"]) < 1e-5
    assert ps["bytes_sent_per_step"] < ar["bytes_sent_per_step"]


def test_wide_deep_checkpoints_and_resumes(tmp_path):
    """--model wide_deep honours --checkpoint-dir: every rank saves its shards, a rerun with more
    steps resumes at the saved step, a rerun of a finished job says so and exits 0."""
    ck = str(tmp_path / "ck")
    args = ["--model", "wide_deep", "--vocab-size", "5000", "--embedding-dim", "8", "--batch-size", "32",
            "--checkpoint-dir", ck, "--checkpoint-every-steps", "10"]
    m1, _ = _run(2, *args, "--steps", "20")
    assert m1["steps"] == 20 and m1["resumed_from_step"] == 0 and m1["transport"] in ("shared memory", "mpi")
    assert m1["rank"] == 0 and os.path.exists(os.path.join(ck, "wide_deep-20.h5"))
    assert any(f.startswith("wide_deep-20.shard-") for f in os.listdir(ck))
    m2, err2 = _run(2, *args, "--steps", "30")
    assert m2["resumed_from_step"] == 20 and m2["steps"] == 10 and "resumed from" in err2
    m3, err3 = _run(2, *args, "--steps", "30")
    assert m3["already_complete"] is True and "already complete" in err3
