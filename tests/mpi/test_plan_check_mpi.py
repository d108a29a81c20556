"""Ranks that build different models get a clear error before the first collective runs."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import collflow as cf  # noqa: E402
import dp_model as dp  # noqa: E402


@pytest.mark.mpi(min_size=2)
def test_mismatched_models_are_named_on_every_rank():
    comm = cf.comm.init(backend="mpi", timeout=30)
    # the last rank buckets its gradients differently: the sequences of collectives differ
    fusion = 0 if comm.rank == comm.size - 1 else 1 << 20
    m = dp.build("sgd", comm=comm, fusion=fusion)
    xs, ys, ids = dp.data(1, 4 * comm.size)
    with cf.Session(graph=m["graph"], config={"comm": comm}) as s:
        s.run(m["init"])
        with pytest.raises(cf.errors.InvalidArgumentError) as ei:
            s.run(m["train"], {m["x"]: xs[0, :4], m["y"]: ys[0, :4], m["ids"]: ids[0, :4]})
    msg = str(ei.value)
    assert "collective #0 differs" in msg and "rank 0:" in msg and f"rank {comm.size - 1}:" in msg
    comm.barrier()
