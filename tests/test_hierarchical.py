"""The hierarchical communicator: host assignment (serially), and 4 ranks as 2 x 2 pretend hosts
under mpiexec (the collectives' own tests, then train.py against the flat communicator)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from collflow.comm.hierarchical import host_assignment, wants_hierarchical
from collflow.errors import InvalidArgumentError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _FakeComm:
    def __init__(self, size):
        self.size = size

    def Get_size(self):
        return self.size


def test_pretend_hosts_by_count_and_by_label(monkeypatch):
    assert host_assignment(_FakeComm(4), "2") == [0, 0, 1, 1]
    assert host_assignment(_FakeComm(6), "3") == [0, 0, 1, 1, 2, 2]
    assert host_assignment(_FakeComm(4), "b,a,b,c") == [0, 1, 0, 2]   # labels in order of first appearance
    monkeypatch.setenv("COLLFLOW_PRETEND_HOSTS", "2")
    assert host_assignment(_FakeComm(4)) == [0, 0, 1, 1]
    assert wants_hierarchical(_FakeComm(4))
    monkeypatch.setenv("COLLFLOW_HIERARCHICAL", "0")
    assert not wants_hierarchical(_FakeComm(4))
    monkeypatch.delenv("COLLFLOW_HIERARCHICAL")
    monkeypatch.setenv("COLLFLOW_PRETEND_HOSTS", "4")  # a rank per host: the flat path is the leaders' stage
    assert not wants_hierarchical(_FakeComm(4))
    monkeypatch.setenv("COLLFLOW_PRETEND_HOSTS", "1")
    assert not wants_hierarchical(_FakeComm(4))


@pytest.mark.parametrize("spec,msg", [("3", "do not split into 3 hosts"), ("0,1", "2 host labels for 4 ranks"),
                                      ("two", "a number of hosts or one host label per rank")])
def test_bad_pretend_hosts_say_what_is_wrong(spec, msg):
    with pytest.raises(InvalidArgumentError, match=msg):
        host_assignment(_FakeComm(4), spec)


# -- 4 ranks as 2 hosts of 2, under mpiexec -----------------------------------------------------

needs_mpi = pytest.mark.skipif(shutil.which("mpiexec") is None, reason="mpiexec not found")


def _env(**extra):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    env.pop("COLLFLOW_CHECK_OUTPUTS", None)
    for k in [k for k in env if k.startswith("PYTEST_XDIST")]:  # the inner pytest is no xdist worker
        env.pop(k)
    env.update(extra)
    return env


@needs_mpi
def test_four_ranks_as_two_hosts_run_the_collective_tests():
    cmd = ["timeout", "240", "mpiexec", "-n", "4", "--oversubscribe", "--bind-to", "none", sys.executable, "-m",
           "pytest", "-q", "--with-mpi", "-p", "no:cacheprovider", "--timeout", "120",
           "--timeout-method=thread", os.path.join(ROOT, "tests", "mpi", "test_hierarchical_mpi.py")]
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(COLLFLOW_PRETEND_HOSTS="2"), timeout=300,
                       cwd=ROOT)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-3000:]
    assert "passed" in p.stdout and "failed" not in p.stdout


def _train(extra_env, *args):
    cmd = ["timeout", "240", "mpiexec", "-n", "4", "--oversubscribe", "--bind-to", "none", sys.executable,
           os.path.join(ROOT, "scripts", "train.py"), "--no-progress", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(**extra_env), timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]), p.stderr


@needs_mpi
def test_training_on_two_pretend_hosts_matches_the_flat_communicator():
    args = ("--model", "mlp", "--dataset", "digits", "--steps", "30", "--optimizer", "momentum", "--check-replicas")
    hier, err = _train({"COLLFLOW_PRETEND_HOSTS": "2"}, *args)
    flat, _ = _train({"COLLFLOW_PRETEND_HOSTS": "2", "COLLFLOW_HIERARCHICAL": "0"}, *args)
    assert hier["transport"] == "hierarchical (2 hosts x 2 ranks)" and flat["transport"] == "shared memory"
    assert "replicas are bit-identical" in err
    # the same training up to the order of summation
    assert hier["final_loss"] == pytest.approx(flat["final_loss"], rel=1e-4)
    assert hier["test_loss"] == pytest.approx(flat["test_loss"], rel=1e-4)
    assert hier["final_loss"] < hier["initial_loss"] / 2
