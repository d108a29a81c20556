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


@pytest.mark.mpi(min_size=2)
def test_mismatched_parameter_server_graphs_are_named_not_hung():
    """The PS ops are collectives too: when the last rank looks its table up twice and the
    others once, every rank gets one error naming the difference before any exchange runs
    (without the check the others would wait in the second exchange until the timeout)."""
    comm = cf.comm.init(backend="mpi", timeout=30)
    g = cf.Graph()
    with g.as_default():
        ids = cf.placeholder(cf.int64, (None,), name="ids")
        emb = cf.train.sharded.get_variable("emb", (10, 2), cf.float32, initializer=np.ones((10, 2), np.float32),
                                            partitioner="mod", comm=comm)
        out = cf.reduce_sum(cf.train.sharded.embedding_lookup(emb, ids))
        if comm.rank == comm.size - 1:
            out = out + cf.reduce_sum(cf.train.sharded.embedding_lookup(emb, ids + 1))
        init = cf.global_variables_initializer()
    with cf.Session(graph=g, config={"comm": comm}) as s:
        s.run(init)
        with pytest.raises(cf.errors.InvalidArgumentError) as ei:
            s.run(out, {ids: np.arange(comm.rank + 1, dtype=np.int64)})  # ragged: rank r looks up r+1 ids
    msg = str(ei.value)
    assert "differs" in msg and "PS" in msg and f"rank {comm.size - 1}:" in msg
    comm.barrier()
