"""Kernels of graph/ops/image_ops2.py: sample_distorted_bounding_box, draw_bounding_boxes,
crop_and_resize (and its two gradients), non-max suppression, and the bicubic and area resizes
(bicubic's gradient too), following TensorFlow's CPU kernels' arithmetic (float32 throughout).

All of these ops are host-only: their kernels work on NumPy arrays (box loops and a
priority queue do not vectorize onto a device usefully).
"""
from __future__ import annotations

import heapq
from typing import Any, List, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from .random_kernels import RandomStream
from .registry import KernelContext, register_kernel

_F32 = np.float32


def _host(a: Any) -> np.ndarray:
    return np.asarray(a.get() if hasattr(a, "get") else a)


def _lrint(v: float) -> int:
    # lrintf rounds half to even, as np.rint
    return int(np.rint(_F32(v)))


# -- SampleDistortedBoundingBoxV2 --------------------------------------------------------------


def _random_crop(rs: RandomStream, width: int, height: int, min_area: float, max_area: float,
                 aspect: float) -> Any:
    """TF's GenerateRandomCrop: (x, y, w, h) or None when no crop of this aspect ratio fits."""
    aspect = _F32(aspect)
    h = _lrint(np.sqrt(_F32(min_area) / aspect))
    max_h = _lrint(np.sqrt(_F32(max_area) / aspect))
    if _lrint(_F32(max_h) * aspect) > width:
        max_h = int((width + 0.5 - 0.0000001) / aspect)
        if _lrint(_F32(max_h) * aspect) > width:
            max_h -= 1
    max_h = min(max_h, height)
    h = min(h, max_h)
    if h < max_h:
        h += int(rs.integers(0, max_h - h + 1, (), np.int64))
    w = _lrint(_F32(h) * aspect)
    area = _F32(w * h)
    if area < min_area:
        h += 1
        w = _lrint(_F32(h) * aspect)
        area = _F32(w * h)
    if area > max_area:
        h -= 1
        w = _lrint(_F32(h) * aspect)
        area = _F32(w * h)
    if area < min_area or area > max_area or w > width or h > height or w <= 0 or h <= 0:
        return None
    y = int(rs.integers(0, height - h, (), np.int64)) if h < height else 0
    x = int(rs.integers(0, width - w, (), np.int64)) if w < width else 0
    return x, y, w, h


def _covers(crop: Tuple[int, int, int, int], boxes: List[Tuple[int, int, int, int]], min_covered: float) -> bool:
    """TF's SatisfiesOverlapConstraints: some box (of area >= 1) is covered by at least min_covered."""
    x, y, w, h = crop
    if w * h < 1:
        return False
    for x0, y0, x1, y1 in boxes:
        area = (x1 - x0) * (y1 - y0)
        if area < 1:
            continue
        iw, ih = min(x + w, x1) - max(x, x0), min(y + h, y1) - max(y, y0)
        inter = iw * ih if iw > 0 and ih > 0 else 0
        if _F32(inter) / _F32(area) >= min_covered:
            return True
    return False


@register_kernel("SampleDistortedBoundingBoxV2")
def _sample_distorted_bounding_box(op: Any, ctx: KernelContext) -> Any:
    seed, seed2 = op.attrs["seed"], op.attrs["seed2"]
    ar_lo, ar_hi = (float(v) for v in op.attrs["aspect_ratio_range"])
    area_lo, area_hi = (float(v) for v in op.attrs["area_range"])
    attempts, use_image = int(op.attrs["max_attempts"]), bool(op.attrs["use_image_if_no_bounding_boxes"])

    def run(image_size: Any, bounding_boxes: Any, min_object_covered: Any) -> Any:
        size = _host(image_size).reshape(-1)
        if size.size != 3:
            raise InvalidArgumentError(f"image_size must contain 3 elements, got {size.size}", op)
        height, width = int(size[0]), int(size[1])
        if height <= 0 or width <= 0:
            raise InvalidArgumentError(f"image height and width must be positive, got {height} x {width}", op)
        bb = _host(bounding_boxes).astype(_F32)
        if bb.ndim != 3 or bb.shape[-1] != 4:
            raise InvalidArgumentError(f"input boxes must be 3-dimensional [batch, num_boxes, coords] with 4 "
                                       f"coords, got shape {bb.shape}", op)
        min_cov = float(_host(min_object_covered))
        if min_cov < 0:
            raise InvalidArgumentError(f"min_object_covered must be non-negative: {min_cov}", op)
        boxes = []
        for ymin, xmin, ymax, xmax in bb.reshape(-1, 4):
            if not all(0.0 <= v <= 1.0 for v in (ymin, xmin, ymax, xmax)):
                raise InvalidArgumentError("All bounding box coordinates must be in [0.0, 1.0]", op)
            if ymin > ymax or xmin > xmax:
                raise InvalidArgumentError("All bounding box coordinates must satisfy min <= max", op)
            boxes.append((int(xmin * _F32(width)), int(ymin * _F32(height)), int(xmax * _F32(width)),
                          int(ymax * _F32(height))))
        if not boxes:
            if not use_image:
                raise InvalidArgumentError("No bounding boxes provided as input. One must enable "
                                           "use_image_if_no_bounding_boxes if you wish to not provide any bounding "
                                           "boxes.", op)
            boxes = [(0, 0, width, height)]
        rs = ctx.resources.get_or_create("rng", op.name, lambda: RandomStream(np, seed, seed2))
        min_area, max_area = _F32(area_lo * width * height), _F32(area_hi * width * height)
        crop = None
        for _ in range(attempts):
            aspect = _F32(rs.uniform((), np.float32)) * _F32(ar_hi - ar_lo) + _F32(ar_lo)
            c = _random_crop(rs, width, height, min_area, max_area, aspect)
            if c is not None and _covers(c, boxes, min_cov):
                crop = c
                break
        x, y, w, h = crop if crop is not None else (0, 0, width, height)
        dt = size.dtype
        begin = np.array([y, x, 0], dtype=dt)
        sz = np.array([h, w, -1], dtype=dt)
        out_box = np.array([[[y / height, x / width, (y + h) / height, (x + w) / width]]], dtype=_F32)
        return begin, sz, out_box
    return run


# -- DrawBoundingBoxesV2 ----------------------------------------------------------------------

_DEFAULT_COLORS = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0.5, 0, 0.5, 1],
                            [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1], [0, 1, 1, 1], [1, 0, 1, 1]],
                           dtype=np.float32)


@register_kernel("DrawBoundingBoxesV2")
def _draw_bounding_boxes(op: Any, ctx: KernelContext) -> Any:
    def run(images: Any, boxes: Any, colors: Any) -> Any:
        img = _host(images)
        if img.ndim != 4:
            raise InvalidArgumentError(f"images must be 4-D [batch, height, width, depth], got shape {img.shape}", op)
        depth = img.shape[3]
        if depth not in (1, 3, 4):
            raise InvalidArgumentError(f"Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA), got {depth}",
                                       op)
        bx = _host(boxes).astype(_F32)
        if bx.ndim != 3 or bx.shape[0] != img.shape[0] or bx.shape[2] != 4:
            raise InvalidArgumentError(f"boxes must be [batch, num_boxes, 4] for a batch of {img.shape[0]}, got "
                                       f"shape {bx.shape}", op)
        table = _host(colors).astype(_F32)
        if table.size == 0:
            table = _DEFAULT_COLORS.copy()
        elif table.ndim != 2 or table.shape[1] < depth:
            raise InvalidArgumentError(f"colors must be a 2-D matrix with at least {depth} columns, got shape "
                                       f"{table.shape}", op)
        if depth == 1:
            table = table.copy()
            table[:, 0] = 1   # grayscale boxes are white
        canvas = img.copy()
        height, width = img.shape[1], img.shape[2]
        for b in range(bx.shape[0]):
            for k in range(bx.shape[1]):
                color = table[k % len(table), :depth].astype(img.dtype)
                # float -> int64 truncates toward zero, as TF's kernel
                r0, r1 = int(bx[b, k, 0] * _F32(height - 1)), int(bx[b, k, 2] * _F32(height - 1))
                c0, c1 = int(bx[b, k, 1] * _F32(width - 1)), int(bx[b, k, 3] * _F32(width - 1))
                if r0 > r1 or c0 > c1 or r0 >= height or r1 < 0 or c0 >= width or c1 < 0:
                    continue
                r0c, r1c, c0c, c1c = max(r0, 0), min(r1, height - 1), max(c0, 0), min(c1, width - 1)
                if r0 >= 0:
                    canvas[b, r0, c0c:c1c + 1] = color
                if r1 < height:
                    canvas[b, r1, c0c:c1c + 1] = color
                if c0 >= 0:
                    canvas[b, r0c:r1c + 1, c0] = color
                if c1 < width:
                    canvas[b, r0c:r1c + 1, c1] = color
        return canvas
    return run


# -- CropAndResize and its gradients -----------------------------------------------------------


def _crop_grid(boxes: np.ndarray, crop: int, size: int, lo: int, hi: int) -> np.ndarray:
    """[num_boxes, crop] float32 sampling positions along one axis (coords lo, hi of each box)."""
    b0, b1 = boxes[:, lo:lo + 1], boxes[:, hi:hi + 1]
    if crop > 1:
        scale = (b1 - b0) * _F32(size - 1) / _F32(crop - 1)
        return b0 * _F32(size - 1) + np.arange(crop, dtype=_F32)[None, :] * scale
    return _F32(0.5) * (b0 + b1) * _F32(size - 1)


def _crop_args(op: Any, image_shape: Tuple[int, ...], boxes: Any, box_ind: Any, crop_size: Any = None) -> Tuple:
    bx = _host(boxes).astype(_F32)
    bi = _host(box_ind).astype(np.int64).reshape(-1)
    if bx.ndim != 2 or bx.shape[1] != 4:
        raise InvalidArgumentError(f"boxes must be 2-D [num_boxes, 4], got shape {bx.shape}", op)
    if bi.size != bx.shape[0]:
        raise InvalidArgumentError(f"box_index has incompatible shape: {bi.size} indices for {bx.shape[0]} boxes",
                                   op)
    if bi.size and (bi.min() < 0 or bi.max() >= image_shape[0]):
        raise InvalidArgumentError(f"box_index has values outside [0, batch_size): {bi.tolist()}", op)
    if crop_size is not None:
        ch, cw = (int(v) for v in _host(crop_size).reshape(-1))
        if ch <= 0 or cw <= 0:
            raise InvalidArgumentError("crop dimensions must be positive", op)
        return bx, bi, ch, cw
    return bx, bi


def _lerp_parts(pos: np.ndarray, size: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(valid mask, floor index, ceil index, fraction) with out-of-range positions' indices 0."""
    valid = (pos >= 0) & (pos <= _F32(size - 1))
    p = np.where(valid, pos, _F32(0))
    lo = np.floor(p).astype(np.int64)
    hi = np.ceil(p).astype(np.int64)
    return valid, lo, hi, (p - np.floor(p)).astype(_F32)


@register_kernel("CropAndResize")
def _crop_and_resize(op: Any, ctx: KernelContext) -> Any:
    method, extrap = op.attrs["method"], _F32(op.attrs["extrapolation_value"])

    def run(image: Any, boxes: Any, box_ind: Any, crop_size: Any) -> Any:
        img = _host(image)
        if img.ndim != 4:
            raise InvalidArgumentError(f"input image must be 4-D, got shape {img.shape}", op)
        n, h, w, d = img.shape
        if h <= 0 or w <= 0:
            raise InvalidArgumentError("image dimensions must be positive", op)
        bx, bi, ch, cw = _crop_args(op, img.shape, boxes, box_ind, crop_size)
        yv, y0, y1, yl = _lerp_parts(_crop_grid(bx, ch, h, 0, 2), h)
        xv, x0, x1, xl = _lerp_parts(_crop_grid(bx, cw, w, 1, 3), w)
        b = bi[:, None, None]
        if method == "bilinear":
            f = img.astype(_F32)

            def at(yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
                return f[b, yy[:, :, None], xx[:, None, :]]
            xw = xl[:, None, :, None]
            top = at(y0, x0) + (at(y0, x1) - at(y0, x0)) * xw
            bottom = at(y1, x0) + (at(y1, x1) - at(y1, x0)) * xw
            out = top + (bottom - top) * yl[:, :, None, None]
        else:
            # roundf: halves away from zero (positions are >= 0 where valid)
            yr = np.floor(np.where(yv, _crop_grid(bx, ch, h, 0, 2), 0) + _F32(0.5)).astype(np.int64)
            xr = np.floor(np.where(xv, _crop_grid(bx, cw, w, 1, 3), 0) + _F32(0.5)).astype(np.int64)
            out = img[b, yr[:, :, None], xr[:, None, :]].astype(_F32)
        mask = yv[:, :, None] & xv[:, None, :]
        return np.where(mask[..., None], out, extrap).astype(_F32)
    return run


@register_kernel("CropAndResizeGradImage")
def _crop_and_resize_grad_image(op: Any, ctx: KernelContext) -> Any:
    method, dt = op.attrs["method"], op.attrs["T"].np

    def run(grads: Any, boxes: Any, box_ind: Any, image_size: Any) -> Any:
        g = _host(grads).astype(_F32)
        n, h, w, d = (int(v) for v in _host(image_size).reshape(-1))
        bx, bi = _crop_args(op, (n, h, w, d), boxes, box_ind)
        ch, cw = g.shape[1], g.shape[2]
        out = np.zeros((n, h, w, d), dtype=_F32)
        yv, y0, y1, yl = _lerp_parts(_crop_grid(bx, ch, h, 0, 2), h)
        xv, x0, x1, xl = _lerp_parts(_crop_grid(bx, cw, w, 1, 3), w)
        mask = (yv[:, :, None] & xv[:, None, :])[..., None]
        g = np.where(mask, g, _F32(0))
        b = np.broadcast_to(bi[:, None, None], (len(bi), ch, cw))
        if method == "bilinear":
            yw, xw = yl[:, :, None, None], xl[:, None, :, None]
            top, bottom = g * (1 - yw), g * yw
            for yy, part in ((y0, top), (y1, bottom)):
                for xx, wgt in ((x0, 1 - xw), (x1, xw)):
                    yi = np.broadcast_to(yy[:, :, None], b.shape)
                    xi = np.broadcast_to(xx[:, None, :], b.shape)
                    np.add.at(out, (b, yi, xi), part * wgt)
        else:
            yr = np.floor(np.where(yv, _crop_grid(bx, ch, h, 0, 2), 0) + _F32(0.5)).astype(np.int64)
            xr = np.floor(np.where(xv, _crop_grid(bx, cw, w, 1, 3), 0) + _F32(0.5)).astype(np.int64)
            np.add.at(out, (b, np.broadcast_to(yr[:, :, None], b.shape), np.broadcast_to(xr[:, None, :], b.shape)), g)
        return out.astype(dt)
    return run


@register_kernel("CropAndResizeGradBoxes")
def _crop_and_resize_grad_boxes(op: Any, ctx: KernelContext) -> Any:
    def run(grads: Any, image: Any, boxes: Any, box_ind: Any) -> Any:
        g = _host(grads).astype(_F32)
        img = _host(image).astype(_F32)
        n, h, w, d = img.shape
        bx, bi = _crop_args(op, img.shape, boxes, box_ind)
        nb, ch, cw = g.shape[0], g.shape[1], g.shape[2]
        yv, y0, y1, yl = _lerp_parts(_crop_grid(bx, ch, h, 0, 2), h)
        xv, x0, x1, xl = _lerp_parts(_crop_grid(bx, cw, w, 1, 3), w)
        b = bi[:, None, None]

        def at(yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
            return img[b, yy[:, :, None], xx[:, None, :]]
        tl, tr, bl, br = at(y0, x0), at(y0, x1), at(y1, x0), at(y1, x1)
        xw, yw = xl[:, None, :, None], yl[:, :, None, None]
        top, bottom = tl + (tr - tl) * xw, bl + (br - bl) * xw
        mask = (yv[:, :, None] & xv[:, None, :])[..., None]
        gy = np.where(mask, (bottom - top) * g, _F32(0)).sum(axis=(2, 3))            # [nb, ch]
        gx = np.where(mask, ((1 - yw) * (tr - tl) + yw * (br - bl)) * g, _F32(0)).sum(axis=(1, 3))  # [nb, cw]
        out = np.zeros((nb, 4), dtype=_F32)
        # d(position)/d(coordinate): position = c0 * (size - 1) + k * (c1 - c0) * ratio
        for gk, crop, size, lo, hi in ((gy, ch, h, 0, 2), (gx, cw, w, 1, 3)):
            if crop > 1:
                ratio = _F32(size - 1) / _F32(crop - 1)
                k = np.arange(crop, dtype=_F32) * ratio
                out[:, lo] = (gk * (_F32(size - 1) - k)).sum(axis=1)
                out[:, hi] = (gk * k).sum(axis=1)
            else:
                out[:, lo] = out[:, hi] = gk.sum(axis=1) * _F32(0.5) * _F32(size - 1)
        return out
    return run


# -- NonMaxSuppressionV3 / V5 ------------------------------------------------------------------


def _iou(boxes: np.ndarray, i: int, j: int) -> float:
    bi, bj = boxes[i], boxes[j]
    ymin_i, ymax_i = min(bi[0], bi[2]), max(bi[0], bi[2])
    xmin_i, xmax_i = min(bi[1], bi[3]), max(bi[1], bi[3])
    ymin_j, ymax_j = min(bj[0], bj[2]), max(bj[0], bj[2])
    xmin_j, xmax_j = min(bj[1], bj[3]), max(bj[1], bj[3])
    area_i = (ymax_i - ymin_i) * (xmax_i - xmin_i)
    area_j = (ymax_j - ymin_j) * (xmax_j - xmin_j)
    if area_i <= 0 or area_j <= 0:
        return 0.0
    inter = (max(min(ymax_i, ymax_j) - max(ymin_i, ymin_j), _F32(0))
             * max(min(xmax_i, xmax_j) - max(xmin_i, xmin_j), _F32(0)))
    return float(inter / (area_i + area_j - inter))


def nms(boxes: np.ndarray, scores: np.ndarray, max_out: int, iou_thr: float, score_thr: float,
        sigma: float) -> Tuple[List[int], List[float]]:
    """TF's greedy (soft) non-max suppression: the selected indices and their (soft) scores."""
    scale = -0.5 / sigma if sigma > 0 else 0.0

    def weight(sim: float) -> float:
        # soft NMS decays every overlap by exp(-sim^2 / (2 sigma)), above the IoU threshold too
        # (TF 2.x's kernel; the hard rule below drops such boxes only when sigma is 0)
        if sigma > 0:
            return float(np.exp(_F32(scale * sim * sim)))
        return 0.0 if sim > iou_thr else 1.0
    # heap of (-score, index, suppress_begin): highest score first, ties to the lower index
    heap = [(-float(s), i, 0) for i, s in enumerate(scores) if s > score_thr]
    heapq.heapify(heap)
    sel: List[int] = []
    sel_scores: List[float] = []
    while len(sel) < max_out and heap:
        neg, i, begin = heapq.heappop(heap)
        score = original = -neg
        hard = False
        for j in range(len(sel) - 1, begin - 1, -1):
            sim = _iou(boxes, i, sel[j])
            score = float(_F32(score * weight(sim)))
            if sigma <= 0 and sim > iou_thr:   # soft NMS never suppresses outright
                hard = True
                break
            if score <= score_thr:
                break
        if hard:
            continue
        if score == original:
            sel.append(i)
            sel_scores.append(score)
        elif score > score_thr:
            heapq.heappush(heap, (-score, i, len(sel)))
    return sel, sel_scores


def _nms_inputs(op: Any, boxes: Any, scores: Any, max_output_size: Any, iou: Any) -> Tuple:
    bx = _host(boxes).astype(_F32)
    sc = _host(scores).astype(_F32).reshape(-1)
    if bx.ndim != 2 or bx.shape[1] != 4:
        raise InvalidArgumentError(f"boxes must be 2-D [num_boxes, 4], got shape {bx.shape}", op)
    if sc.size != bx.shape[0]:
        raise InvalidArgumentError(f"scores has incompatible shape: {sc.size} scores for {bx.shape[0]} boxes", op)
    m = int(_host(max_output_size))
    if m < 0:
        raise InvalidArgumentError("max_output_size must be non-negative", op)
    thr = float(_host(iou))
    if not 0 <= thr <= 1:
        raise InvalidArgumentError("iou_threshold must be in [0, 1]", op)
    return bx, sc, m, thr


@register_kernel("NonMaxSuppressionV3")
def _nms_v3(op: Any, ctx: KernelContext) -> Any:
    def run(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any, score_threshold: Any) -> Any:
        bx, sc, m, thr = _nms_inputs(op, boxes, scores, max_output_size, iou_threshold)
        sel, _ = nms(bx, sc, m, thr, float(_F32(_host(score_threshold))), 0.0)
        return np.asarray(sel, dtype=np.int32)
    return run


@register_kernel("NonMaxSuppressionV5")
def _nms_v5(op: Any, ctx: KernelContext) -> Any:
    pad = bool(op.attrs["pad_to_max_output_size"])

    def run(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any, score_threshold: Any,
            soft_nms_sigma: Any) -> Any:
        bx, sc, m, thr = _nms_inputs(op, boxes, scores, max_output_size, iou_threshold)
        sigma = float(_host(soft_nms_sigma))
        if sigma < 0:
            raise InvalidArgumentError("soft_nms_sigma must be non-negative", op)
        sel, ss = nms(bx, sc, m, thr, float(_F32(_host(score_threshold))), sigma)
        valid = len(sel)
        if pad:
            sel, ss = sel + [0] * (m - valid), ss + [0.0] * (m - valid)
        return np.asarray(sel, dtype=np.int32), np.asarray(ss, dtype=_F32), np.int32(valid)
    return run


# -- ResizeBicubic (and its gradient), ResizeArea ----------------------------------------------

_TABLE = 1024


def _cubic_table(a: float) -> np.ndarray:
    x = np.arange(_TABLE + 1, dtype=_F32) / _F32(_TABLE)
    a = _F32(a)
    t = np.empty((_TABLE + 1, 2), dtype=_F32)
    t[:, 0] = ((a + 2) * x - (a + 3)) * x * x + 1
    x1 = x + 1
    t[:, 1] = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a
    return t


_TABLES = {True: _cubic_table(-0.5), False: _cubic_table(-0.75)}   # Keys' kernel with half pixels only


def resize_scale(in_size: int, out_size: int, align: bool) -> np.float32:
    if align and out_size > 1:
        return _F32(in_size - 1) / _F32(out_size - 1)
    return _F32(in_size) / _F32(out_size)


def cubic_axis(in_size: int, out_size: int, align: bool, half: bool) -> Tuple[np.ndarray, np.ndarray]:
    """([out, 4] input indices, [out, 4] float32 weights) of TF's bicubic resize along an axis."""
    s = resize_scale(in_size, out_size, align)
    o = np.arange(out_size, dtype=_F32)
    pos = (o + _F32(0.5)) * s - _F32(0.5) if half else o * s
    f = np.floor(pos)
    loc = f.astype(np.int64)
    off = np.rint((pos - f) * _F32(_TABLE)).astype(np.int64)
    t = _TABLES[half]
    w = np.stack([t[off, 1], t[off, 0], t[_TABLE - off, 0], t[_TABLE - off, 1]], axis=1)
    want = loc[:, None] + np.arange(-1, 3)[None, :]
    idx = np.clip(want, 0, in_size - 1)
    if half:
        # samples outside the image get no weight, the rest renormalized (as TF's Keys path)
        w = np.where(idx == want, w, _F32(0))
        tot = w.sum(axis=1, keepdims=True, dtype=_F32)
        ok = np.abs(tot) >= 1000.0 * np.finfo(np.float32).tiny
        w = np.where(ok, w * (_F32(1) / np.where(ok, tot, _F32(1))), w)
    return idx, w.astype(_F32)


def _check4(op: Any, x: np.ndarray) -> None:
    if x.ndim != 4:
        raise InvalidArgumentError(f"{op.type}: input must be 4-dimensional, got shape {x.shape}", op)
    if x.shape[1] <= 0 or x.shape[2] <= 0:
        raise InvalidArgumentError(f"{op.type}: input image must be of non-zero size", op)


def _out_size(op: Any, size: Any) -> Tuple[int, int]:
    oh, ow = (int(v) for v in _host(size).reshape(-1))
    if oh <= 0 or ow <= 0:
        raise InvalidArgumentError(f"{op.type}: output dimensions must be positive, got [{oh}, {ow}]", op)
    return oh, ow


@register_kernel("ResizeBicubic")
def _resize_bicubic(op: Any, ctx: KernelContext) -> Any:
    align, half = op.attrs["align_corners"], op.attrs["half_pixel_centers"]

    def run(images: Any, size: Any) -> Any:
        x = _host(images).astype(_F32)
        _check4(op, x)
        oh, ow = _out_size(op, size)
        yi, yw = cubic_axis(x.shape[1], oh, align, half)
        xi, xw = cubic_axis(x.shape[2], ow, align, half)
        # along x first (TF caches the four rows' x-interpolations), then y; float32 sums in order
        cols = x[:, :, xi]                                   # [n, h, ow, 4, c]
        rowv = cols[:, :, :, 0] * xw[None, None, :, 0, None]
        for k in range(1, 4):
            rowv = rowv + cols[:, :, :, k] * xw[None, None, :, k, None]
        rows = rowv[:, yi]                                   # [n, oh, 4, ow, c]
        out = rows[:, :, 0] * yw[None, :, 0, None, None]
        for k in range(1, 4):
            out = out + rows[:, :, k] * yw[None, :, k, None, None]
        return out.astype(_F32)
    return run


@register_kernel("ResizeBicubicGrad")
def _resize_bicubic_grad(op: Any, ctx: KernelContext) -> Any:
    align, half = op.attrs["align_corners"], op.attrs["half_pixel_centers"]

    def run(grads: Any, original_image: Any) -> Any:
        g = _host(grads)
        orig = _host(original_image)
        work = np.float64 if orig.dtype == np.float64 else _F32
        n, oh, ow, c = g.shape
        ih, iw = orig.shape[1], orig.shape[2]
        yi, yw = cubic_axis(ih, oh, align, half)
        xi, xw = cubic_axis(iw, ow, align, half)
        gw = g.astype(work)
        cols = np.zeros((n, oh, iw, c), dtype=work)
        for k in range(4):
            np.add.at(cols, (slice(None), slice(None), xi[:, k]), gw * xw[None, None, :, k, None].astype(work))
        out = np.zeros((n, ih, iw, c), dtype=work)
        for k in range(4):
            np.add.at(out, (slice(None), yi[:, k]), cols * yw[None, :, k, None, None].astype(work))
        return out.astype(orig.dtype)
    return run


def _area_scale(in_size: int, out_size: int, align: bool) -> np.float32:
    # align_corners on a dimension of one pixel would make the scale 0 (no span at all); TF's
    # area resize then takes the plain in / out scale (found against TF: its output equals
    # align_corners=False's there, where a zero scale gives NaN)
    return resize_scale(in_size, out_size, align and in_size > 1)


def _area_axis(in_size: int, out_size: int, align: bool) -> np.ndarray:
    """[out, in] float32 coverage of each input pixel by each output pixel's span."""
    s = _area_scale(in_size, out_size, align)
    m = np.zeros((out_size, in_size), dtype=_F32)
    for o in range(out_size):
        a, b = _F32(o) * s, _F32(o + 1) * s
        for i in range(int(np.floor(a)), int(np.ceil(b))):
            v = min(_F32(i + 1), b) - max(_F32(i), a)
            m[o, min(i, in_size - 1)] += v
    return m


@register_kernel("ResizeArea")
def _resize_area(op: Any, ctx: KernelContext) -> Any:
    align = op.attrs["align_corners"]

    def run(images: Any, size: Any) -> Any:
        x = _host(images).astype(_F32)
        _check4(op, x)
        oh, ow = _out_size(op, size)
        ym, xm = _area_axis(x.shape[1], oh, align), _area_axis(x.shape[2], ow, align)
        scale = _F32(1) / (_area_scale(x.shape[1], oh, align) * _area_scale(x.shape[2], ow, align))
        out = np.einsum("yh,nhwc,xw->nyxc", ym, x, xm, dtype=_F32, optimize=True)
        return (out * scale).astype(_F32)
    return run


# -- TF2's non_max_suppression_padded (its tiled algorithm, emulated greedily) --------------------


def padded_nms(boxes: np.ndarray, scores: np.ndarray, max_out: int, iou_thr: float, score_thr: float,
               canonical: bool) -> Tuple[np.ndarray, int]:
    """(indices padded to max_out, number valid) as TF's non_max_suppression_padded_v2 computes
    them: boxes at or below score_thr zeroed; corners ordered by the *first* box's order only;
    IoU = inter / (union + 1e-8), suppression when > iou_thr; a kept box with no positive
    coordinate suppresses but is not output; padded with index 0."""
    b, s = boxes.astype(_F32), scores.astype(_F32)
    n = len(b)
    if score_thr != float("-inf"):
        keep = s > _F32(score_thr)
        s, b = s * keep, b * keep[:, None]
    if not canonical and n:
        if not b[0, 0] <= b[0, 2]:
            b = b[:, [2, 1, 0, 3]]
        if not b[0, 1] <= b[0, 3]:
            b = b[:, [0, 3, 2, 1]]
    order = np.argsort(-s, kind="stable")
    b = b[order]
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    kept: List[int] = []
    out: List[int] = []
    for i in range(n):
        if len(out) >= max_out:
            break
        if kept:
            k = np.asarray(kept)
            ih = np.maximum(np.minimum(b[i, 2], b[k, 2]) - np.maximum(b[i, 0], b[k, 0]), _F32(0))
            iw = np.maximum(np.minimum(b[i, 3], b[k, 3]) - np.maximum(b[i, 1], b[k, 1]), _F32(0))
            inter = ih * iw
            iou = inter / (area[i] + area[k] - inter + _F32(1e-8))
            if np.any(iou > _F32(iou_thr)):
                continue
        kept.append(i)
        if np.any(b[i] > 0):
            out.append(i)
    valid = len(out)
    idx = np.zeros(max_out, np.int32)
    idx[:valid] = order[np.asarray(out, dtype=np.int64)]
    return idx, valid


@register_kernel("NonMaxSuppressionPadded")
def _nms_padded(op: Any, ctx: KernelContext) -> Any:
    canonical = bool(op.attrs["canonicalized_coordinates"])

    def run(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any, score_threshold: Any) -> Any:
        bx, sc, m, thr = _nms_inputs(op, boxes, scores, max_output_size, iou_threshold)
        idx, valid = padded_nms(bx, sc, m, thr, float(_host(score_threshold)), canonical)
        return idx, np.int32(valid)
    return run


# -- CombinedNonMaxSuppression -----------------------------------------------------------------


@register_kernel("CombinedNonMaxSuppression")
def _combined_nms(op: Any, ctx: KernelContext) -> Any:
    pad_per_class, clip = bool(op.attrs["pad_per_class"]), bool(op.attrs["clip_boxes"])

    def run(boxes: Any, scores: Any, max_per_class: Any, max_total: Any, iou_threshold: Any,
            score_threshold: Any) -> Any:
        bx = _host(boxes).astype(_F32)
        sc = _host(scores).astype(_F32)
        if bx.ndim != 4 or bx.shape[3] != 4:
            raise InvalidArgumentError(f"boxes must be 4-D [batch, num_boxes, q, 4], got shape {bx.shape}", op)
        if sc.ndim != 3 or sc.shape[:2] != bx.shape[:2]:
            raise InvalidArgumentError(f"scores must be 3-D [batch, num_boxes, num_classes] matching boxes, got "
                                       f"shape {sc.shape}", op)
        batch, _, q, _ = bx.shape
        classes = sc.shape[2]
        if q not in (1, classes):
            raise InvalidArgumentError(f"third dimension of boxes must be either 1 or {classes}, got {q}", op)
        per_class, total = int(_host(max_per_class)), int(_host(max_total))
        if per_class <= 0 or total <= 0:
            raise InvalidArgumentError("max_output_size_per_class and max_total_size must be positive", op)
        thr, sthr = float(_host(iou_threshold)), float(_F32(_host(score_threshold)))
        if not 0 <= thr <= 1:
            raise InvalidArgumentError("iou_threshold must be in [0, 1]", op)
        det = min(total, per_class * classes) if pad_per_class else total
        out_b = np.zeros((batch, det, 4), _F32)
        out_s = np.zeros((batch, det), _F32)
        out_c = np.zeros((batch, det), _F32)
        valid = np.zeros(batch, np.int32)
        for b in range(batch):
            found = []   # (score, class, box index)
            for c in range(classes):
                cb = bx[b, :, 0 if q == 1 else c]
                sel, ss = nms(cb, sc[b, :, c], per_class, thr, sthr, 0.0)
                found += [(s, c, i) for i, s in zip(sel, ss)]
            # by descending score (TF's sort is unstable; ties here keep class, then selection order)
            found.sort(key=lambda t: -t[0])
            n = min(len(found), det)
            for k, (s, c, i) in enumerate(found[:n]):
                box = bx[b, i, 0 if q == 1 else c]
                out_b[b, k] = np.clip(box, 0, 1) if clip else box
                out_s[b, k], out_c[b, k] = s, c
            valid[b] = n
        return out_b, out_s, out_c, valid
    return run


# -- ExtractGlimpse ----------------------------------------------------------------------------


def glimpse_corner(offset: float, size: int, glimpse: int, centered: bool, normalized: bool) -> int:
    """The glimpse's first row (column) as TF 2's kernel places it: un-normalize, un-center
    (halved, as TF does even for pixel offsets), remove half the window, truncate toward 0."""
    v = _F32(offset)
    if normalized:
        v = v * _F32(size)
    if centered:
        v = v / _F32(2) + _F32(size) / _F32(2)
    return int(v - _F32(glimpse) / _F32(2))


@register_kernel("ExtractGlimpse")
def _extract_glimpse(op: Any, ctx: KernelContext) -> Any:
    centered, normalized = bool(op.attrs["centered"]), bool(op.attrs["normalized"])

    def run(images: Any, size: Any, offsets: Any) -> Any:
        x = _host(images).astype(_F32)
        if x.ndim != 4:
            raise InvalidArgumentError(f"input must be a 4-D tensor [batch, height, width, channels], got shape "
                                       f"{x.shape}", op)
        gh, gw = (int(v) for v in _host(size).reshape(-1))
        off = _host(offsets).astype(_F32)
        if off.shape != (x.shape[0], 2):
            raise InvalidArgumentError(f"offsets must be [batch, 2] (y, x) for a batch of {x.shape[0]}, got shape "
                                       f"{off.shape}", op)
        if gh <= 0 or gw <= 0:
            raise InvalidArgumentError("glimpse height and width must be positive", op)
        n, h, w, c = x.shape
        out = np.empty((n, gh, gw, c), _F32)
        rs = ctx.resources.get_or_create("rng", op.name, lambda: RandomStream(np, None, None))
        for i in range(n):
            y0 = glimpse_corner(off[i, 0], h, gh, centered, normalized)
            x0 = glimpse_corner(off[i, 1], w, gw, centered, normalized)
            ys, ye, xs, xe = max(y0, 0), min(y0 + gh, h), max(x0, 0), min(x0 + gw, w)
            if y0 < 0 or x0 < 0 or y0 + gh > h or x0 + gw > w:
                # outside the image: uniform noise over the image's [min, max] (all channels), as TF
                lo, hi = x[i].min(), x[i].max()
                out[i] = lo + rs.uniform((gh, gw, c), np.float32) * (hi - lo)
            if ys < ye and xs < xe:
                out[i, ys - y0:ye - y0, xs - x0:xe - x0] = x[i, ys:ye, xs:xe]
        return out
    return run
