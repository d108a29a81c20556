"""Serial tests of collflow.comm.shm's pieces that need no MPI: the arena pool, the owners'
reduction, and when the engine is used at all (tests/mpi/test_shm_mpi.py runs the whole)."""
import os
import platform
import warnings

import numpy as np
import pytest

from collflow.comm import shm


def _pool(tmp_path, size=1 << 16):
    fd = os.open(tmp_path / "arena", os.O_CREAT | os.O_RDWR, 0o600)
    os.ftruncate(fd, size)
    return shm._Pool(fd, 4096, size, 4096), fd


def test_pool_first_fit_coalesces_and_reserves_pages(tmp_path):
    p, fd = _pool(tmp_path)
    try:
        a = p.alloc(100)
        b = p.alloc(64)
        c = p.alloc(1000)
        assert (a, b, c) == (4096, 4096 + 128, 4096 + 192)  # 64-byte aligned, in order
        assert p.reserved >= c + 1000 and p.in_use == 128 + 64 + 1024
        p.release(b, 64)
        assert p.alloc(32) == b               # first fit reuses the hole
        p.release(b, 32)
        p.release(a, 100)
        p.release(c, 1000)
        assert p.free == [[4096, (1 << 16) - 4096]] and p.in_use == 0  # merged back into one range
        assert p.alloc(1 << 20) is None       # larger than the arena
    finally:
        os.close(fd)


def test_pool_frozen_after_a_failure_reuses_nothing(tmp_path):
    p, fd = _pool(tmp_path)
    try:
        a = p.alloc(256)
        p.frozen = True
        p.release(a, 256)                     # a peer may still write there: keep it
        assert p.alloc(64) is None
        assert p.in_use == 256
    finally:
        os.close(fd)


def test_pool_falls_back_when_pages_cannot_be_reserved(tmp_path, monkeypatch):
    p, fd = _pool(tmp_path)

    def full(*_):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "posix_fallocate", full)
    try:
        assert p.alloc(100) is None and p.in_use == 0
    finally:
        os.close(fd)


def test_pool_release_never_waits_for_its_lock(tmp_path):
    """Finalizers release blocks, also inside a garbage collection that starts while this
    thread holds the pool's lock (in alloc): the release is queued, never a deadlock."""
    p, fd = _pool(tmp_path)
    try:
        a = p.alloc(256)
        with p.lock:                 # as if a collection ran inside alloc()
            p.release(a, 256)        # returns at once
            assert p.in_use == 256
        assert p.alloc(64) == a      # the next call under the lock puts it back first
    finally:
        os.close(fd)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_owner_reduction_in_rank_order(op, n):
    rng = np.random.default_rng(n)
    srcs = [rng.standard_normal(100).astype(np.float32) for _ in range(n)]
    if op == "mean" and n == 2:
        want = (srcs[0] + srcs[1]) * np.float32(0.5)
    elif op == "mean":  # s0 + sum of the differences / n
        d = srcs[1] - srcs[0]
        for s in srcs[2:]:
            d += s - srcs[0]
        want = srcs[0] + d / np.float32(n)
    else:
        f = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}[op]
        want = srcs[0].copy()
        for s in srcs[1:]:
            f(want, s, out=want)
    out = np.empty(100, np.float32)
    shm._reduce(srcs, out, op)
    np.testing.assert_array_equal(out, want)
    # in place: the output is one of the inputs (a later one too), same bits
    for k in range(n):
        inputs = [s.copy() for s in srcs]
        shm._reduce(inputs, inputs[k], op)
        np.testing.assert_array_equal(inputs[k], want)


@pytest.mark.parametrize("n", [2, 3, 8])
def test_mean_of_equal_replicas_is_exact(n):
    """Replicas averaged every step must not creep: the mean of n equal arrays is that array
    (sum / n is not: 3 * w rounds), and of arrays a small step apart it is that step, rounded
    about once."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal(10_000).astype(np.float32)
    out = np.empty_like(w)
    shm._reduce([w] * n, out, "mean")
    np.testing.assert_array_equal(out, w)
    reps = [w + rng.standard_normal(w.size).astype(np.float32) * 1e-3 for _ in range(n)]
    exact = np.mean([r.astype(np.float64) for r in reps], axis=0)
    shm._reduce(reps, out, "mean")
    err = np.abs(out.astype(np.float64) - exact) / np.spacing(np.max(np.abs(reps), axis=0))
    assert err.max() <= 1.5  # about one rounding, however many ranks (sum / n: 2.25 ulp at n=8)


def test_float16_mean_does_not_overflow_or_warn():
    big = np.full(4, 40000.0, np.float16)
    out = np.empty(4, np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shm._reduce([big, big], out, "mean")           # (a + b) / 2 would be inf
        np.testing.assert_array_equal(out, big)
        shm._reduce([big, big], out, "sum")            # a true overflow: inf, no warning
        assert np.isinf(out).all()


def test_owner_reduction_of_bools_and_float16():
    a, b, c = (np.array([1, 0, 1, 0], bool), np.array([1, 1, 0, 0], bool), np.array([1, 1, 1, 0], bool))
    out = np.empty(4, bool)
    shm._reduce([a, b, c], out, "max")
    np.testing.assert_array_equal(out, [1, 1, 1, 0])
    shm._reduce([a, b, c], out, "min")
    np.testing.assert_array_equal(out, [1, 0, 0, 0])
    # three float16 terms sum in float32 and round once
    h = [np.array([2048.0], np.float16), np.array([1.0], np.float16), np.array([1.0], np.float16)]
    o = np.empty(1, np.float16)
    shm._reduce(h, o, "sum")
    assert o[0] == np.float16(2050.0)  # float16 steps would give 2048 + 1 -> 2048, + 1 -> 2048


def test_availability_and_ordinary_reasons(monkeypatch):
    assert shm.available(False) == (False, shm._OFF_DISABLED)
    monkeypatch.setenv("COLLFLOW_SHM", "0")
    ok, why = shm.available()
    assert not ok and shm.expected_off(why)
    monkeypatch.delenv("COLLFLOW_SHM")
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    ok, why = shm.available()
    assert not ok and "x86-64 memory ordering" in why and shm.expected_off(why)
    assert not shm.expected_off("creating /dev/shm/x failed: [Errno 28] No space left on device")
    monkeypatch.setenv("COLLFLOW_SHM_ARENA_MB", "lots")
    with pytest.raises(ValueError, match="COLLFLOW_SHM_ARENA_MB must be a number"):
        shm._env_mb("COLLFLOW_SHM_ARENA_MB", 1)


def _dead_pid():
    import subprocess
    import sys
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid  # reaped: no process has it (until the pid is reused, which the test checks)


def test_stale_arenas_of_dead_ranks_are_removed(tmp_path):
    """Files a rank killed during the start-up handshake leaves: removed by the next job at once
    when their creator is gone; when its pid runs, only once older than a handshake could be
    (the pid was reused)."""
    uid = os.getuid()
    dead = _dead_pid()
    try:
        os.kill(dead, 0)
        pytest.skip("the pid was reused already")
    except ProcessLookupError:
        pass
    old = tmp_path / f"collflow-{uid}-abcd-1-{dead}"
    fresh = tmp_path / f"collflow-{uid}-abce-1-{dead}"         # young, but its creator is gone
    alive = tmp_path / f"collflow-{uid}-abcf-0-{os.getppid()}"  # its creator runs: maybe mid-handshake
    reused = tmp_path / f"collflow-{uid}-abci-0-{os.getppid()}"  # the pid runs, the file is old: reused
    legacy = tmp_path / f"collflow-{uid}-abcg-0"               # no pid in the name: kept
    other = tmp_path / f"collflow-{uid + 1}-abch-0-{dead}"     # another user's
    for f in (old, fresh, alive, reused, legacy, other):
        f.write_bytes(b"x")
    for f in (old, reused, legacy, other):
        os.utime(f, (1, 1))  # long ago
    removed = shm.remove_stale_arenas(str(tmp_path), min_age_s=60.0)
    assert sorted(removed) == sorted(str(p) for p in (old, fresh, reused))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (alive, legacy, other))
    assert shm.remove_stale_arenas(str(tmp_path / "missing")) == []
