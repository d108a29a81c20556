"""TF1's `tf.extract_volume_patches`: 3-D patches of a [batch, planes, rows, cols, depth]
tensor, each flattened in (plane, row, col, depth) order into the last dimension, as
TensorFlow's ExtractVolumePatches.  Built from pad, strided slices, stack and reshape, so it
is differentiable through their gradients; the spatial sizes must be known when the graph
is built."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a

__all__ = ["extract_volume_patches"]


def _five(v: Sequence[int], what: str) -> List[int]:
    v = [int(x) for x in v]
    if len(v) != 5 or v[0] != 1 or v[4] != 1:
        raise ValueError(f"extract_volume_patches: {what} must be [1, p, r, c, 1], got {v}")
    if any(x < 1 for x in v):
        raise ValueError(f"extract_volume_patches: {what} must be positive, got {v}")
    return v


def extract_volume_patches(input: Any, ksizes: Sequence[int], strides: Sequence[int], padding: str,  # noqa: A002
                           name: Optional[str] = None) -> _g.Tensor:
    """Patches of size ksizes[1:4] every strides[1:4] ("SAME": zero padding split as TF's,
    the larger half after; "VALID": whole patches only)."""
    x = _g.convert_to_tensor(input)
    k, s = _five(ksizes, "ksizes"), _five(strides, "strides")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"extract_volume_patches: padding must be 'SAME' or 'VALID', got {padding!r}")
    shp = x.shape
    if shp.rank is not None and shp.rank != 5:
        raise ValueError(f"extract_volume_patches: input must be 5-D [batch, planes, rows, cols, depth], got {shp}")
    dims = shp.as_list() if shp.rank is not None else [None] * 5
    if shp.rank is None or any(d is None for d in dims[1:4]):
        raise InvalidArgumentError("extract_volume_patches: the planes, rows and cols sizes must be known when the "
                                   f"graph is built, got shape {shp}")
    g = x.graph
    with g.as_default(), g.name_scope(name or "ExtractVolumePatches"):
        outs, pads = [], [[0, 0]]
        for i in (1, 2, 3):
            n, kk, ss = dims[i], k[i], s[i]
            if padding == "SAME":
                o = -(-n // ss)
                total = max((o - 1) * ss + kk - n, 0)
                pads.append([total // 2, total - total // 2])
            else:
                o = max(-(-(n - kk + 1) // ss), 0)
                pads.append([0, 0])
            outs.append(o)
        pads.append([0, 0])
        xp = _a.pad(x, pads) if any(p != [0, 0] for p in pads) else x
        pieces = []
        for dp in range(k[1]):
            for dr in range(k[2]):
                for dc in range(k[3]):
                    pieces.append(xp[:, dp:dp + (outs[0] - 1) * s[1] + 1:s[1],
                                     dr:dr + (outs[1] - 1) * s[2] + 1:s[2],
                                     dc:dc + (outs[2] - 1) * s[3] + 1:s[3], :])
        stacked = _a.stack(pieces, axis=4)  # [b, op, or, oc, K, depth]: depth fastest, as TF
        kdim = k[1] * k[2] * k[3]
        last = kdim * dims[4] if dims[4] is not None else -1
        if dims[0] is not None:
            return _a.reshape(stacked, [dims[0], outs[0], outs[1], outs[2], last])
        return _a.reshape(stacked, _a.stack([_a.shape(x)[0], outs[0], outs[1], outs[2], last]))
