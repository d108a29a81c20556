"""Backup ranks, written once per rank and run in two worlds (tests/worlds.py): thread ranks in
the serial run, MPI ranks through both transports under `mpiexec -n 2|3 ... --with-mpi`
(scripts/test.sh).  A delayed rank is left out of the step and nobody waits for it; a
straggler that changes every step never hangs the job; b=0 is the plain synchronous path.
The model and helpers are tests/backup_model.py's."""
import numpy as np
import pytest

import dp_model as dp
from backup_model import _build, _two_rank_reference, train_rank


def _train(comm, b, steps, delays, per_rank=3):
    xs, ys, _ = dp.data(steps, per_rank * comm.size)
    vals, hist, times = train_rank(_build(comm, b), comm, xs, ys, delays, per_rank)
    return vals, hist, times, xs, ys


def _identical_across_ranks(comm, vals):
    flat = np.concatenate([v.ravel() for v in vals])
    allv = np.asarray(comm.allgather(flat)).reshape(comm.size, -1)
    assert all(np.array_equal(allv[r], allv[0]) for r in range(comm.size))


def test_a_delayed_rank_is_left_out_and_nobody_waits_for_it(world):
    if world.size != 3:
        pytest.skip("written for 3 ranks (one backup)")

    def body(comm):
        vals, hist, times, xs, ys = _train(comm, 1, 4, lambda k, r: 1.5 if r == 2 else 0.0)
        assert [h["late"] for h in hist] == [[2]] * 4
        if comm.rank != 2:
            assert max(times) < 1.0, times  # nobody waited the 1.5 s the straggler took
        _identical_across_ranks(comm, vals)
        # the same as ranks 0 and 1 alone: one process with their rows
        for a, b in zip(vals, _two_rank_reference(xs, ys, 4)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    world.run(body)


def test_a_straggler_that_changes_every_step_never_hangs(world):
    if world.size != 3:
        pytest.skip("written for 3 ranks (one backup)")

    def body(comm):
        vals, hist, _, _, _ = _train(comm, 1, 6, lambda k, r: 0.5 if r == k % 3 else 0.0)
        assert [h["late"] for h in hist] == [[k % 3] for k in range(6)]
        _identical_across_ranks(comm, vals)
    world.run(body)


def test_b0_is_the_plain_synchronous_path(world):
    def body(comm):
        vals, hist, _, _, _ = _train(comm, 0, 3, lambda k, r: 0.0)
        assert hist == []  # no quorum protocol ran
        _identical_across_ranks(comm, vals)
    world.run(body)
    m = _build(None, 0)
    assert "gate" not in " ".join(op.name for op in m["graph"].get_operations())
