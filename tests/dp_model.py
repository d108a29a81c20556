"""A small float64 model and data shared by the data-parallel tests (serial and MPI)."""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

import collflow as cf

IN, HID, OUT, VOCAB = 6, 5, 3, 11


def data(steps: int, global_batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(steps, global_batch, IN))
    y = rng.integers(0, OUT, size=(steps, global_batch)).astype(np.int32)
    ids = rng.integers(0, VOCAB, size=(steps, global_batch)).astype(np.int32)
    return x, y, ids


def build(opt_name: str, comm: Any = None, sync: bool = True, init_seed: int = 1, fusion: int = 1 << 20,
          compression: Optional[str] = None, sparse: bool = False, sparse_as_dense: bool = False):
    g = cf.Graph()
    with g.as_default():
        rng = np.random.default_rng(init_seed)
        x = cf.placeholder(cf.float64, (None, IN), name="x")
        y = cf.placeholder(cf.int32, (None,), name="y")
        ids = cf.placeholder(cf.int32, (None,), name="ids")
        w1 = cf.Variable(rng.normal(size=(IN, HID)) * 0.5, name="w1")
        b1 = cf.Variable(np.zeros(HID), name="b1")
        w2 = cf.Variable(rng.normal(size=(HID, OUT)) * 0.5, name="w2")
        h = cf.nn.relu(cf.matmul(x, w1) + b1)
        if sparse:
            emb = cf.Variable(rng.normal(size=(VOCAB, HID)) * 0.3, name="emb")
            h = h + cf.nn.embedding_lookup(emb, ids)
        logits = cf.matmul(h, w2)
        loss = cf.reduce_mean(cf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        opt = {"sgd": lambda: cf.train.GradientDescentOptimizer(0.3),
               "adam": lambda: cf.train.AdamOptimizer(0.05),
               "momentum": lambda: cf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True)}[opt_name]()
        if sync:
            opt = cf.train.SyncReplicasOptimizer(opt, comm=comm, fusion_threshold_bytes=fusion,
                                                 compression=compression, sparse_as_dense=sparse_as_dense)
        train = opt.minimize(loss)
        init = cf.global_variables_initializer()
        bcast = cf.train.broadcast_global_variables(0) if sync else None
    return dict(graph=g, x=x, y=y, ids=ids, loss=loss, train=train, init=init, bcast=bcast, opt=opt,
                vars=g.get_collection(cf.GraphKeys.TRAINABLE_VARIABLES))


def train_rank(m: dict, comm: Any, steps: int, per_rank: int, seed: int = 0) -> List[np.ndarray]:
    """Trains on this rank's slice of each global batch; returns the trainable values."""
    xs, ys, idss = data(steps, per_rank * comm.size, seed)
    r = comm.rank
    with cf.Session(graph=m["graph"], config={"comm": comm}) as s:
        s.run(m["init"])
        s.run(m["bcast"])
        for k in range(steps):
            sl = slice(r * per_rank, (r + 1) * per_rank)
            s.run(m["train"], {m["x"]: xs[k, sl], m["y"]: ys[k, sl], m["ids"]: idss[k, sl]})
        return s.run(m["vars"])


def train_single(m: dict, steps: int, global_batch: int, seed: int = 0) -> List[np.ndarray]:
    xs, ys, idss = data(steps, global_batch, seed)
    with cf.Session(graph=m["graph"]) as s:
        s.run(m["init"])
        for k in range(steps):
            s.run(m["train"], {m["x"]: xs[k], m["y"]: ys[k], m["ids"]: idss[k]})
        return s.run(m["vars"])
