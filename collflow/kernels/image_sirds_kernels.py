"""The kernel of SingleImageRandomDotStereograms (graph/ops/image_sirds_ops.py), on host
NumPy buffers: TF's SIRDS algorithm (Thimbleby, Inglis and Witten), each output pixel tied
to the one a separation s(z) = round((1 - mu z) E / (2 - mu z)) further right, hidden
surfaces removed, then random dots (TF draws them with C's rand(); here a NumPy generator
seeded once per kernel, so the dots differ, the ties between pixels do not).  The tying
runs left to right along each row, so rows are processed together, one column at a time."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from .registry import KernelContext, register_kernel


def _cdiv(a: Any, b: int) -> Any:
    """C's integer division (truncation toward zero)."""
    q = np.abs(a) // abs(b)
    return np.where((np.asarray(a) < 0) != (b < 0), -q, q)


def _round(x: Any) -> Any:
    """std::round: half away from zero."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _zbuffer(depth: np.ndarray, normalize: bool, lo_attr: float, hi_attr: float) -> np.ndarray:
    z = depth.astype(np.float64)
    if normalize:
        if hi_attr < lo_attr:  # autoscale when the fixed max is below the fixed min
            hi, lo = (z.max(), z.min()) if z.size else (1.0, 0.0)
        else:
            hi, lo = hi_attr, lo_attr
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (z - lo) / (hi - lo)
    return np.where(z > 1.0, 1.0, np.where(z < 0.0, 0.0, z))  # NaN stays NaN, as the kernel's ifs leave it


class _Layout:
    """Where the depth data sits in the output (TF's data window arithmetic)."""

    def __init__(self, attrs: dict, zbuf: np.ndarray):
        self.width, self.height, channels = attrs["output_image_shape"]
        self.channels = 3 if attrs["number_colors"] > 256 else channels
        win_x, win_y = attrs["output_data_window"]
        dots = attrs["convergence_dots_size"]
        dx, dy = self.width - win_x, self.height - win_y
        if dots > 0:  # three bands in y: border, data, dots
            dy = max(0, dy - dots)
            self.top = dy // 3
            self.dot_row = self.height - 1 - self.top
        else:
            self.top = int(_cdiv(dy, 2))
            self.dot_row = self.height - 1
        self.left = int(_cdiv(dx, 2))
        self.win_x, self.win_y = win_x, win_y
        self.zbuf = zbuf
        self.border = float(np.float32(attrs["border_level"]))

    def depth_at(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """The depth behind output pixels (xs, ys): the data, truncated, or the border level."""
        in_y, in_x = self.zbuf.shape
        with np.errstate(divide="ignore", invalid="ignore"):
            xz = float(in_x) * (xs - self.left) / float(self.win_x)
            yz = float(in_y) * (ys - self.top) / float(self.win_y)
        inside = (xz >= 0) & (yz >= 0) & (yz < in_y) & (xz < in_x)
        xi = np.where(inside, xz, 0).astype(np.int64)
        yi = np.where(inside, yz, 0).astype(np.int64)
        if not self.zbuf.size:
            return np.full(np.shape(xs), self.border)
        return np.where(inside, self.zbuf[yi, xi], self.border)


def _separation(attrs: dict) -> Any:
    """z -> the pixel separation s(z) of the attrs (mu a float32, E2E an int as in TF)."""
    mu = float(np.float32(attrs["mu"]))
    e2e = int(np.float32(attrs["eye_separation"]) * np.float32(attrs["dots_per_inch"]))

    def separation(z: Any) -> Any:
        with np.errstate(divide="ignore", invalid="ignore"):
            s = _round((1 - mu * z) * e2e / (2 - mu * z))
        return np.where(np.isfinite(s), s, -1).astype(np.int64)  # NaN depths tie nothing
    return separation


def _roots(depth: np.ndarray, attrs: dict) -> Any:
    """(the layout, [height, width] the column whose dot each output pixel copies)."""
    lay = _Layout(attrs, _zbuffer(depth, attrs["normalize"], attrs["normalize_min"], attrs["normalize_max"]))
    width, height = lay.width, lay.height
    mu = float(np.float32(attrs["mu"]))
    e2e = int(np.float32(attrs["eye_separation"]) * np.float32(attrs["dots_per_inch"]))
    separation = _separation(attrs)
    ys, xs = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    gz = lay.depth_at(xs, ys)
    s = separation(gz)
    left = xs - _cdiv(s, 2)
    right = left + s
    linkable = (left >= 0) & (right < width) & (s >= 0)  # s < 0 (mu z > 1) is left out
    if attrs["hidden_surface_removal"]:
        visible = np.ones_like(linkable)
        running = linkable.copy()
        den = float(np.float32(mu) * np.float32(e2e))  # mu * E2Epixels is a float product in TF
        t = 1
        while running.any() and t <= 4 * width + 4:  # zt grows with t: the loop ends at zt >= 1
            zt = gz + 2 * (2 - mu * gz) * t / den
            ok = (lay.depth_at(xs - t, ys) < zt) & (lay.depth_at(xs + t, ys) < zt)
            visible = np.where(running, ok, visible)
            running &= ok & (zt < 1)
            t += 1
        linkable &= visible
    same = np.tile(np.arange(width), (height, 1))
    for x in range(width):
        rows = np.nonzero(linkable[:, x])[0]
        if not rows.size:
            continue
        lft, rgt = left[rows, x].copy(), right[rows, x].copy()
        lnk = same[rows, lft]
        while True:
            moving = (lnk != lft) & (lnk != rgt)
            if not moving.any():
                break
            step = moving & (lnk < rgt)
            swap = moving & ~(lnk < rgt)
            lft = np.where(step, lnk, lft)
            same[rows[swap], lft[swap]] = rgt[swap]
            lft = np.where(swap, rgt, lft)
            lnk = same[rows, lft]
            rgt = np.where(swap, lnk, rgt)
        same[rows, lft] = rgt
    root = same
    while True:  # every tie points right, so following them ends at the row's free pixels
        nxt = np.take_along_axis(same, root, axis=1)
        if np.array_equal(nxt, root):
            break
        root = nxt
    return lay, root


def _stereogram(depth: np.ndarray, attrs: dict, rng: np.random.Generator) -> np.ndarray:
    width, height, channels = attrs["output_image_shape"]
    channels = 3 if attrs["number_colors"] > 256 else channels
    out = np.zeros((height, width, channels), np.uint8)
    if out.size == 0:
        return out
    lay, root = _roots(depth, attrs)
    if attrs["number_colors"] == 2:
        colors = np.where(rng.integers(0, 2, size=out.shape) == 0, 0, 255).astype(np.uint8)
    else:
        colors = rng.integers(0, 256, size=out.shape).astype(np.uint8)
    out[...] = np.take_along_axis(colors, root[:, :, None].repeat(channels, axis=2), axis=1)
    dots = attrs["convergence_dots_size"]
    if dots > 0:  # two black squares above the dot row, written flat as TF writes them
        far = int(_separation(attrs)(np.float64(0.0)))
        flat = out.reshape(-1)
        for cx in (width // 2 - far // 2, width // 2 + far // 2):
            for lloop in range(dots):
                for wloop in range(dots):
                    base = (width * channels) * (lay.dot_row - lloop) + (cx - dots // 2 + wloop) * channels
                    if 0 <= base and base + channels <= flat.size:
                        flat[base:base + channels] = 0
    return out


@register_kernel("SingleImageRandomDotStereograms")
def _sirds(op: Any, ctx: KernelContext) -> Any:
    attrs = dict(op.attrs)
    rng = np.random.default_rng(1)  # one stream per kernel, as C's rand() is one per process

    def run(depth_values: Any) -> Any:
        depth = np.asarray(depth_values)
        if depth.ndim != 2:
            raise InvalidArgumentError(f"depth_values must be a 2-D tensor, got shape {list(depth.shape)}", op)
        return _stereogram(depth, attrs, rng)
    return run
