"""collflowrun: the mpirun line it builds, and a real two-rank run through it."""
import os
import subprocess
import sys

import pytest

from collflow.launcher import build_command, find_mpirun


def test_root_oversubscribe_threads_and_hosts():
    argv, env, notes = build_command(4, ["python", "t.py"], mpirun="/x/mpirun", flavour="openmpi", env={},
                                     is_root=True, cores=2)
    assert argv[:3] == ["/x/mpirun", "-n", "4"] and "--oversubscribe" in argv
    assert argv[argv.index("--bind-to") + 1] == "none" and argv[-2:] == ["python", "t.py"]
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    assert env["OMP_NUM_THREADS"] == "1" and ["-x", "OMP_NUM_THREADS"] == argv[argv.index("-x"):argv.index("-x") + 2]
    assert any("root" in n for n in notes) and any("--oversubscribe" in n for n in notes)
    # not root, enough cores, a user's thread count kept
    argv, env, notes = build_command(2, ["python", "t.py"], mpirun="/x/mpirun", flavour="openmpi",
                                     env={"OMP_NUM_THREADS": "3"}, is_root=False, cores=8)
    assert "--oversubscribe" not in argv and "OMPI_ALLOW_RUN_AS_ROOT" not in env and env["OMP_NUM_THREADS"] == "3"
    # many hosts: their slots decide
    argv, _, _ = build_command(8, ["p"], hosts="a:4,b:4", mpirun="/x/mpirun", flavour="openmpi", env={},
                               is_root=False, cores=2)
    assert "--oversubscribe" not in argv and argv[argv.index("-H") + 1] == "a:4,b:4"
    argv, _, _ = build_command(8, ["p"], hosts="a:2,b:2", mpirun="/x/mpirun", flavour="openmpi", env={},
                               is_root=False, cores=64)
    assert "--oversubscribe" in argv


def test_bad_input_is_one_clear_line():
    with pytest.raises(SystemExit, match="at least 1"):
        build_command(0, ["p"], mpirun="/x/mpirun", flavour="openmpi", env={})
    with pytest.raises(SystemExit, match="give the program"):
        build_command(2, [], mpirun="/x/mpirun", flavour="openmpi", env={})
    with pytest.raises(SystemExit, match="hostfile .* does not exist"):
        build_command(2, ["p"], hostfile="/nonexistent/hosts", mpirun="/x/mpirun", flavour="openmpi", env={})


@pytest.mark.skipif(find_mpirun() is None, reason="no mpirun next to this Python or on PATH")
def test_two_ranks_through_the_launcher():
    code = "import collflow as cf; c = cf.comm.init(); print('RANK', c.rank, c.size, flush=True)"
    r = subprocess.run([sys.executable, "-m", "collflow.launcher", "-np", "2", "--verbose", sys.executable, "-c", code],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(ln for ln in r.stdout.splitlines() if ln.startswith("RANK")) == ["RANK 0 2", "RANK 1 2"]
    assert "collflowrun: " in r.stderr and " -n 2 " in r.stderr  # the exact command, with --verbose


def test_dry_run_prints_the_command_only():
    r = subprocess.run([sys.executable, "-m", "collflow.launcher", "-np", "3", "--dry-run", "python", "x.py"],
                       capture_output=True, text=True, timeout=60)
    if find_mpirun() is None:
        assert r.returncode != 0 and "no mpirun found" in r.stderr
    else:
        assert r.returncode == 0 and "-n 3" in r.stderr and r.stderr.rstrip().endswith("python x.py")
