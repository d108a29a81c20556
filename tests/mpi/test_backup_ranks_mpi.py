"""Backup ranks under real MPI (needs 3 ranks): a delayed rank is left out, no hang."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import collflow as cf  # noqa: E402
import dp_model as dp  # noqa: E402
from test_backup_ranks import _build, _two_rank_reference, train_rank  # noqa: E402


@pytest.fixture(scope="module")
def comm():
    return cf.comm.init(backend="mpi", timeout=60)


def _train(comm, b, steps, delays, per_rank=3):
    xs, ys, _ = dp.data(steps, per_rank * comm.size)
    vals, hist, times = train_rank(_build(comm, b), comm, xs, ys, delays, per_rank)
    return vals, hist, times, xs, ys


def _identical(comm, vals):
    flat = np.concatenate([v.ravel() for v in vals])
    allv = comm.allgather(flat).reshape(comm.size, -1)
    return all(np.array_equal(allv[r], allv[0]) for r in range(comm.size))


@pytest.mark.mpi(min_size=3)
def test_delayed_rank_is_left_out(comm):
    if comm.size != 3:
        pytest.skip("written for 3 ranks")
    vals, hist, times, xs, ys = _train(comm, 1, 4, lambda k, r: 1.5 if r == 2 else 0.0)
    assert [h["late"] for h in hist] == [[2]] * 4
    if comm.rank != 2:
        assert max(times) < 1.0, times
    assert _identical(comm, vals)
    ref = _two_rank_reference(xs, ys, 4)
    for a, b in zip(vals, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.mpi(min_size=3)
def test_changing_straggler_never_hangs(comm):
    if comm.size != 3:
        pytest.skip("written for 3 ranks")
    vals, hist, _, _, _ = _train(comm, 1, 6, lambda k, r: 0.5 if r == k % 3 else 0.0)
    assert [h["late"] for h in hist] == [[k % 3] for k in range(6)]
    assert _identical(comm, vals)


@pytest.mark.mpi(min_size=2)
def test_b0_matches_the_plain_path(comm):
    vals, hist, _, xs, ys = _train(comm, 0, 3, lambda k, r: 0.0)
    assert hist == [] and _identical(comm, vals)
