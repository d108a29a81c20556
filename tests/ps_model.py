"""A small float64 wide_deep shared by the PS tests (serial thread worlds and MPI)."""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

import collflow as cf
from collflow.models.wide_deep import build_wide_deep
from collflow.train import sharded as sh

VOCAB, DIM, FIELDS, DENSE = 23, 3, 3, 2


def build(mode: str, opt: str, comm: Any, strategy: str = "mod", seed: int = 1, sparse_as_dense: bool = False,
          vocab: int = VOCAB, prefetch_routes: bool = False):
    return build_wide_deep(vocab_size=vocab, embedding_dim=DIM, mode=mode, num_fields=FIELDS, num_dense=DENSE,
                           hidden=(5,), optimizer=opt, dtype=cf.float64, partition_strategy=strategy, comm=comm,
                           sync=True, sparse_as_dense=sparse_as_dense, batch_size=4, zipf_exponent=0.8, seed=seed,
                           data_seed=0, prefetch_routes=prefetch_routes)


def state(sess: Any, m: Any) -> Dict[str, Any]:
    """{name: (global ids or None, value)}: dense variables whole, per-rank table state by its rows."""
    out: Dict[str, Any] = {}
    per_rank = sh.shard_state_variables(m.graph)
    for lg, (sv, v) in per_rank.items():
        out[lg] = (sv.owned_ids(), sess.run(v))
    if not per_rank:  # all-reduce mode: tables and their slots are whole on every rank
        for v in m.graph.get_collection(cf.GraphKeys.GLOBAL_VARIABLES):
            name = v.op.name
            if name.startswith(("embedding", "wide/")) or name == "wide":
                out[name] = (None, sess.run(v))
    for v in m.dense_variables:
        out[v.op.name] = (None, sess.run(v))
    return out


def train(m: Any, comm: Any, steps: int) -> Dict[str, Any]:
    """Trains `steps` steps (feeding the routes back with RoutePrefetch when m prefetches them)
    and returns state(); "__losses__" holds the losses."""
    with cf.Session(graph=m.graph, config={"comm": comm}) as s:
        s.run(m.init_op)
        s.run(m.bcast_op)
        pf = sh.RoutePrefetch(m.graph, m.train_op) if m.next_ids is not None else None
        losses = []
        for fd in m.batches(steps):
            if pf is None:
                losses.append(s.run([m.loss, m.train_op], fd)[0])
                continue
            out = s.run([m.loss, m.train_op] + pf.fetches, pf.feed(fd))
            pf.update(out[2:])
            losses.append(out[0])
        out = state(s, m)
        out["__losses__"] = (None, np.array(losses))
        return out


def assert_same_parameters(ps: Dict[str, Any], ar: Dict[str, Any], rtol: float = 1e-10, atol: float = 1e-12) -> None:
    """PS-mode state of one rank equals all-reduce-mode state (tables compared on the rank's rows)."""
    for name, (ids, val) in ps.items():
        if ids is None:
            np.testing.assert_allclose(val, ar[name][1], rtol=rtol, atol=atol, err_msg=name)
            continue
        # a shard state "embedding/Adam" is the rows `ids` of the replicated "embedding/Adam"
        np.testing.assert_allclose(val, ar[name][1][ids], rtol=rtol, atol=atol, err_msg=name)


def assemble(states: List[Dict[str, Any]], vocab: int = VOCAB) -> Dict[str, np.ndarray]:
    """Whole tables from every rank's per-rank state (name -> array)."""
    out: Dict[str, np.ndarray] = {}
    for st in states:
        for name, (ids, val) in st.items():
            if ids is None:
                out[name] = val
                continue
            t = out.setdefault(name, np.full((vocab,) + val.shape[1:], np.nan))
            t[ids] = val
    return out
