"""Kernels of graph/ops/sets_ops.py (tf.sets) on the host: each input is grouped by its
leading indices, each group's last-dimension values taken as a set, and the result laid out
as TF's SparseTensor (groups in row-major order, each group's values sorted)."""
from __future__ import annotations

import itertools
from typing import Any, Dict, List, Set, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel

Groups = Dict[Tuple[int, ...], Set[Any]]


def _key(v: Any) -> Any:
    return v if isinstance(v, (bytes, str)) else v.item() if hasattr(v, "item") else v


def _dense_groups(x: Any, op: Any) -> Tuple[Tuple[int, ...], Groups]:
    x = np.asarray(x)
    if x.ndim < 2:
        raise InvalidArgumentError(f"Invalid rank {x.ndim}: the set ops need inputs of rank 2 or more", op)
    lead = tuple(int(d) for d in x.shape[:-1])
    flat = x.reshape(-1, x.shape[-1]) if x.size else np.zeros((int(np.prod(lead)), 0), x.dtype)
    groups: Groups = {}
    for i, g in enumerate(itertools.product(*[range(d) for d in lead])):
        vals = {_key(v) for v in flat[i]}
        if vals:
            groups[g] = vals
    return lead, groups


def _sparse_groups(indices: Any, values: Any, shape: Any, validate: bool, op: Any) -> Tuple[Tuple[int, ...], Groups]:
    idx = np.asarray(indices, np.int64).reshape(len(np.asarray(values).reshape(-1)), -1)
    vals = np.asarray(values).reshape(-1)
    shp = [int(d) for d in np.asarray(shape).reshape(-1)]
    if len(shp) < 2:
        raise InvalidArgumentError(f"Invalid rank {len(shp)}: the set ops need inputs of rank 2 or more", op)
    if idx.shape[1] != len(shp):
        raise InvalidArgumentError(f"Expected indices of rank {len(shp)}, got {idx.shape[1]}", op)
    if validate:
        for n, row in enumerate(idx):
            if np.any(row < 0) or np.any(row >= np.asarray(shp)):
                raise InvalidArgumentError(f"Invalid indices[{n}] = {row.tolist()}: out of bounds of the dense shape "
                                           f"{shp}", op)
            if n and tuple(row) <= tuple(idx[n - 1]):
                raise InvalidArgumentError(f"indices[{n}] = {row.tolist()} is out of order (after "
                                           f"{idx[n - 1].tolist()}): the set ops need sorted, unique indices", op)
    groups: Groups = {}
    for row, v in zip(idx, vals):
        groups.setdefault(tuple(int(i) for i in row[:-1]), set()).add(_key(v))
    return tuple(shp[:-1]), groups


def _check_lead(a: Tuple[int, ...], b: Tuple[int, ...], op: Any) -> None:
    if a != b:
        raise InvalidArgumentError(f"Mismatched group dims {list(a)} vs {list(b)}: the set ops need inputs whose "
                                   "shapes agree in all but the last dimension", op)


def _sorted(s: Set[Any]) -> List[Any]:
    return sorted(s)


@register_kernel("SetOperation")
def _set_operation(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    how, validate, a_sp, b_sp = a["set_operation"], a["validate_indices"], a["a_sparse"], a["b_sparse"]
    np_dt = a["T"].as_numpy_dtype

    def run(*xs: Any) -> tuple:
        i = 0
        if a_sp:
            lead_a, ga = _sparse_groups(xs[0], xs[1], xs[2], validate, op)
            i = 3
        else:
            lead_a, ga = _dense_groups(xs[0], op)
            i = 1
        if b_sp:
            lead_b, gb = _sparse_groups(xs[i], xs[i + 1], xs[i + 2], validate, op)
        else:
            lead_b, gb = _dense_groups(xs[i], op)
        _check_lead(lead_a, lead_b, op)
        out_idx: List[Tuple[int, ...]] = []
        out_val: List[Any] = []
        width = 0
        for g in sorted(set(ga) | set(gb)):
            sa, sb = ga.get(g, set()), gb.get(g, set())
            res = {"intersection": sa & sb, "union": sa | sb, "a-b": sa - sb, "b-a": sb - sa}[how]
            res_sorted = _sorted(res)
            out_idx.extend(g + (j,) for j in range(len(res_sorted)))
            out_val.extend(res_sorted)
            width = max(width, len(res_sorted))
        rank = len(lead_a) + 1
        indices = np.asarray(out_idx, np.int64).reshape(-1, rank)
        if np_dt is object:
            values = np.empty(len(out_val), object)
            values[:] = out_val
        else:
            values = np.asarray(out_val, np_dt).reshape(-1)
        return indices, values, np.asarray(list(lead_a) + [width], np.int64)
    return run


@register_kernel("SetSize")
def _set_size(op: Any, ctx: KernelContext) -> Any:
    validate = op.attrs["validate_indices"]

    def run(indices: Any, values: Any, shape: Any) -> np.ndarray:
        lead, groups = _sparse_groups(indices, values, shape, validate, op)
        out = np.zeros(lead, np.int32)
        for g, s in groups.items():
            out[g] = len(s)
        return out
    return run
