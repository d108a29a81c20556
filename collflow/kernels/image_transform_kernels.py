"""The kernel of ImageProjectiveTransformV2 (graph/ops/image_transform_ops.py), written once
against `xp`: every output pixel's input point computed in float32 as TF's kernel computes
it, then read by nearest (half away from zero) or bilinear interpolation, 0 outside."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel

_F32 = np.float32


@register_kernel("ImageProjectiveTransformV2")
def _projective(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    nearest = op.attrs["interpolation"] == "NEAREST"

    def transform(images: Any, transforms: Any, output_shape: Any) -> Any:
        if images.ndim != 4:
            raise InvalidArgumentError(f"Input images must have rank 4, got shape {tuple(images.shape)}", op)
        n, ih, iw, c = images.shape
        t = xp.asarray(transforms, dtype=_F32)
        if t.ndim != 2 or t.shape[1] != 8 or t.shape[0] not in (1, n):
            raise InvalidArgumentError("Input transform should be num_images x 8 or 1 x 8, got shape "
                                       f"{tuple(t.shape)}", op)
        oh, ow = (int(v) for v in np.asarray(output_shape).ravel())
        if oh <= 0 or ow <= 0:
            raise InvalidArgumentError(f"output_shape must be positive, got [{oh}, {ow}]", op)
        out = xp.zeros((n, oh, ow, c), dtype=images.dtype)
        ys, xs = xp.meshgrid(xp.arange(oh, dtype=_F32), xp.arange(ow, dtype=_F32), indexing="ij")
        flat = images.reshape(n, ih * iw, c)
        for b in range(n):
            a0, a1, a2, b0, b1, b2, c0, c1 = (t[b if t.shape[0] > 1 else 0, i] for i in range(8))
            k = c0 * xs + c1 * ys + _F32(1)
            live = k != 0  # TF returns the fill value for points at infinity
            safe = xp.where(live, k, _F32(1))
            in_x = (a0 * xs + a1 * ys + a2) / safe
            in_y = (b0 * xs + b1 * ys + b2) / safe
            if nearest:
                # std::round: half away from zero
                ry = xp.sign(in_y) * xp.floor(xp.abs(in_y) + _F32(0.5))
                rx = xp.sign(in_x) * xp.floor(xp.abs(in_x) + _F32(0.5))
                out[b] = _read(xp, flat[b], ry, rx, ih, iw, live).astype(images.dtype, copy=False)
                continue
            y0, x0 = xp.floor(in_y), xp.floor(in_x)
            wy, wx = in_y - y0, in_x - x0
            v = ((_F32(1) - wy)[..., None] * ((_F32(1) - wx)[..., None] * _read(xp, flat[b], y0, x0, ih, iw, live)
                                              + wx[..., None] * _read(xp, flat[b], y0, x0 + 1, ih, iw, live))
                 + wy[..., None] * ((_F32(1) - wx)[..., None] * _read(xp, flat[b], y0 + 1, x0, ih, iw, live)
                                    + wx[..., None] * _read(xp, flat[b], y0 + 1, x0 + 1, ih, iw, live)))
            out[b] = _cast(xp, v, images.dtype)
        return out
    return transform


def _read(xp: Any, flat: Any, y: Any, x: Any, ih: int, iw: int, live: Any) -> Any:
    """flat[y * iw + x] (float32 for floats, the values' dtype kept otherwise), 0 outside the image."""
    inside = live & (y >= 0) & (y < ih) & (x >= 0) & (x < iw)
    idx = xp.where(inside, y * iw + x, 0).astype(np.int64)
    vals = flat[idx.ravel()].reshape(y.shape + (flat.shape[1],))
    work = np.float64 if vals.dtype == np.float64 else _F32
    return xp.where(inside[..., None], vals.astype(work, copy=False), work(0))


def _cast(xp: Any, v: Any, dtype: Any) -> Any:
    """T(value) as TF's kernel converts: truncation toward zero for integer images."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        return xp.trunc(v).astype(dt)
    return v.astype(dt, copy=False)
