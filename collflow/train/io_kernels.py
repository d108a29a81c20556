"""Kernels of Save and Restore (graph/ops/io_ops.py): HDF5 checkpoints written and read in a run.

The file format and the atomic write live in collflow/train/checkpoint_io.py (the format is
shared with cf.train.Saver); the kernels live here, beside it, in the train layer.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError, NotFoundError
from ..graph.shape import as_shape
from ..kernels.device import to_host as _host
from ..kernels.registry import register_kernel, KernelContext
from . import checkpoint_io as cio


def _path(value: Any) -> str:
    v = np.asarray(value).reshape(()).item() if not isinstance(value, (str, bytes)) else value
    if isinstance(v, bytes):
        v = v.decode()
    return str(v)


@register_kernel("Save")
def _save(op: Any, ctx: KernelContext) -> Any:
    names = list(op.attrs["tensor_names"])
    rank, size = cio.process_rank_and_size()
    skip = op.attrs.get("chief_only", True) and rank != 0
    fingerprint = op.graph.fingerprint()

    def save(filename: Any, *data: Any) -> None:
        if skip:
            return None
        data_ = cio.CheckpointData(variables={n: _host(d) for n, d in zip(names, data)}, world_size=size,
                                   graph_fingerprint=fingerprint)
        cio.write_checkpoint(_path(filename), data_)
        return None
    return save


@register_kernel("Restore")
def _restore(op: Any, ctx: KernelContext) -> Any:
    names = list(op.attrs["tensor_names"])
    dts = [d.np for d in op.attrs["dtypes"]]
    shapes = [as_shape(s) for s in op.attrs["shapes"]]
    xp = ctx.xp

    def restore(filename: Any) -> Any:
        path = _path(filename)
        with cio.open_checkpoint(path) as r:
            specs = r.variable_specs()
            missing = [n for n in names if n not in specs]
            if missing:
                raise NotFoundError(f"checkpoint {path} has no entries {', '.join(map(repr, missing))} "
                                    f"(it holds {len(specs)}: {', '.join(sorted(specs)[:10])}"
                                    f"{', ...' if len(specs) > 10 else ''})", op)
            bad = []
            for n, dt, sh in zip(names, dts, shapes):
                fdt, fsh = specs[n]
                if fdt != dt or not sh.matches_value(fsh):
                    bad.append(f"{n!r}: checkpoint {fdt}{list(fsh)}, expected {dt}{sh}")
            if bad:
                raise InvalidArgumentError(f"checkpoint {path} does not match the Restore op: " + "; ".join(bad), op)
            vals = r.read(names)
        out = tuple(vals[n] if xp is np else xp.asarray(vals[n]) for n in names)
        return out[0] if len(out) == 1 else out
    return restore
