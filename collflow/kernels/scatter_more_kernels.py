"""Kernels of graph/ops/scatter_more_ops.py: ScatterMul/Div/Min/Max on a variable's rows
(applied in index order, so repeated indices combine again, as TF's CPU kernel does) and
TensorScatterMin/Max on a copy of a tensor."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .device import to_host
from .registry import KernelContext, register_kernel
from .state_kernels import _check_indices


def _int_div(a: Any, b: Any) -> Any:
    # C++'s integer `/`: the quotient truncated toward zero
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)


def _apply_in_order(how: str, v: Any, idx: Any, upd: Any) -> None:
    """v[idx[k]] = v[idx[k]] (how) upd[k] for k in order (NumPy arrays, in place)."""
    if how == "mul":
        np.multiply.at(v, idx, upd)
    elif how == "min":
        np.minimum.at(v, idx, upd)
    elif how == "max":
        np.maximum.at(v, idx, upd)
    elif v.dtype.kind in "iu":
        flat = idx.reshape(-1)
        u = np.broadcast_to(upd, idx.shape + v.shape[1:]).reshape((flat.size,) + v.shape[1:])
        if np.any(u == 0):
            raise ZeroDivisionError
        for k, i in enumerate(flat):
            v[i] = _int_div(v[i], u[k])
    else:
        np.divide.at(v, idx, upd)


def _variable_scatter(op: Any, ctx: KernelContext, how: str) -> Any:
    xp = ctx.xp

    def scatter(st: Any, idx: Any, upd: Any) -> Any:
        with st.lock:
            _check_indices(st, st.read(op), idx, op, xp)
            v = st.writable_rows(op, idx.reshape(-1))
            try:
                if xp is np:
                    _apply_in_order(how, v, idx, upd)
                else:  # the GPU: combine on the host in order, then write the rows back
                    host = to_host(v).copy()
                    _apply_in_order(how, host, to_host(idx), to_host(upd))
                    v[...] = xp.asarray(host)
            except ZeroDivisionError:
                raise InvalidArgumentError(f"{op.type}: integer division by zero", op) from None
            del v
            return st.snapshot(op)
    return scatter


for _n, _how in (("ScatterMul", "mul"), ("ScatterDiv", "div"), ("ScatterMin", "min"), ("ScatterMax", "max")):
    register_kernel(_n)(lambda op, ctx, _how=_how: _variable_scatter(op, ctx, _how))


def _tensor_scatter(op: Any, ctx: KernelContext, ufunc: Any) -> Any:
    xp = ctx.xp

    def run(t: Any, idx: Any, upd: Any) -> Any:
        on_gpu = xp is not np
        t, idx, upd = to_host(t), to_host(idx), to_host(upd)
        out = np.array(t, copy=True)
        depth = idx.shape[-1]
        lead = out.shape[:depth]
        flat_idx = idx.reshape(-1, depth).astype(np.int64)
        bad = np.flatnonzero(((flat_idx < 0) | (flat_idx >= np.asarray(lead, dtype=np.int64))).any(axis=1))
        if bad.size:
            k = int(bad[0])
            raise InvalidArgumentError(
                f"{op.type}: indices[{k}] = {flat_idx[k].tolist()} does not index into shape {list(t.shape)}", op)
        rest = out.shape[depth:]
        n_lead = int(np.prod(lead, dtype=np.int64))
        view = out.reshape((n_lead,) + rest)
        flat = np.ravel_multi_index(flat_idx.T, lead) if depth else np.zeros(len(flat_idx), np.int64)
        ufunc.at(view, flat, upd.reshape((len(flat_idx),) + rest))
        return xp.asarray(out)
    return run


register_kernel("TensorScatterMin")(lambda op, ctx: _tensor_scatter(op, ctx, np.minimum))
register_kernel("TensorScatterMax")(lambda op, ctx: _tensor_scatter(op, ctx, np.maximum))
