"""More of TF1's tf.image, as new op types (kernels in kernels/image_kernels2.py):
sample_distorted_bounding_box (Inception / ResNet preprocessing), draw_bounding_boxes,
crop_and_resize (with its image and boxes gradients), non_max_suppression (plain, with scores
and soft-NMS, padded), resize_bicubic (with its gradient) and resize_area.

The random op draws from collflow's per-op stream seeded by (seed, seed2) as TF1 passes them
(no graph seed, as TF1's op), so its draws are collflow's, not TensorFlow's; the constraints
on the crop are TF's.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from .constant_op import constant
from .op_util import dense, make_op, single

__all__ = ["sample_distorted_bounding_box", "draw_bounding_boxes", "crop_and_resize", "non_max_suppression",
           "non_max_suppression_with_scores", "non_max_suppression_padded", "combined_non_max_suppression",
           "extract_glimpse", "resize_bicubic", "resize_area"]


def _const(t: _g.Tensor) -> Optional[np.ndarray]:
    return np.asarray(t.op.attrs["value"]) if t.op.type == "Const" else None


def _dims(t: _g.Tensor, rank: int) -> list:
    return list(t.shape.dims) if t.shape.rank == rank else [None] * rank


# -- shape functions ---------------------------------------------------------------------------


def _sdbb_spec(op: _g.Operation) -> list:
    size = op.inputs[0]
    if not size.dtype.is_integer:
        raise ValueError(f"sample_distorted_bounding_box: image_size must be an integer tensor, got {size.dtype.name}")
    return [(size.dtype, TensorShape([3])), (size.dtype, TensorShape([3])), (_dt.float32, TensorShape([1, 1, 4]))]


def _draw_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.shape.rank not in (None, 4):
        raise ValueError(f"draw_bounding_boxes: images must be 4-D [batch, height, width, depth], got {x.shape}")
    return [(x.dtype, x.shape)]


def _crop_spec(op: _g.Operation) -> list:
    image, boxes, _, size = op.inputs
    n = _dims(boxes, 2)[0]
    d = _dims(image, 4)[3]
    c = _const(size)
    h, w = (int(c.reshape(-1)[0]), int(c.reshape(-1)[1])) if c is not None else (None, None)
    return [(_dt.float32, TensorShape([n, h, w, d]))]


def _crop_grad_image_spec(op: _g.Operation) -> list:
    c = _const(op.inputs[3])
    shape = TensorShape([int(v) for v in c.reshape(-1)]) if c is not None else TensorShape([None] * 4)
    return [(op.attrs["T"], shape)]


def _crop_grad_boxes_spec(op: _g.Operation) -> list:
    return [(_dt.float32, TensorShape([_dims(op.inputs[2], 2)[0], 4]))]


def _nms3_spec(op: _g.Operation) -> list:
    return [(_dt.int32, TensorShape([None]))]


def _nms5_spec(op: _g.Operation) -> list:
    m = _const(op.inputs[2]) if op.attrs["pad_to_max_output_size"] else None
    n = int(m) if m is not None else None
    return [(_dt.int32, TensorShape([n])), (_dt.float32, TensorShape([n])), (_dt.int32, TensorShape([]))]


def _nms_padded_spec(op: _g.Operation) -> list:
    m = _const(op.inputs[2])
    return [(_dt.int32, TensorShape([int(m) if m is not None else None])), (_dt.int32, TensorShape([]))]


def _combined_nms_spec(op: _g.Operation) -> list:
    boxes, scores, per_class, total = op.inputs[:4]
    n = _dims(boxes, 4)[0]
    classes = _dims(scores, 3)[2]
    pc, tot = _const(per_class), _const(total)
    det = None if tot is None else int(tot)
    if op.attrs["pad_per_class"] and det is not None:
        det = None if pc is None or classes is None else min(det, int(pc) * int(classes))
    return [(_dt.float32, TensorShape([n, det, 4])), (_dt.float32, TensorShape([n, det])),
            (_dt.float32, TensorShape([n, det])), (_dt.int32, TensorShape([n]))]


def _glimpse_spec(op: _g.Operation) -> list:
    x, size = op.inputs[:2]
    n, _, _, c = _dims(x, 4)
    v = _const(size)
    h, w = (int(v.reshape(-1)[0]), int(v.reshape(-1)[1])) if v is not None else (None, None)
    return [(_dt.float32, TensorShape([n, h, w, c]))]


def _resize_spec(op: _g.Operation) -> list:
    x, size = op.inputs
    if x.shape.rank not in (None, 4):
        raise ValueError(f"{op.type}: images must be 4-D [batch, height, width, channels], got shape {x.shape}")
    n, _, _, c = _dims(x, 4)
    v = _const(size)
    h, w = (int(v.reshape(-1)[0]), int(v.reshape(-1)[1])) if v is not None else (None, None)
    return [(_dt.float32, TensorShape([n, h, w, c]))]


def _bicubic_grad_spec(op: _g.Operation) -> list:
    orig = op.inputs[1]
    return [(orig.dtype, orig.shape)]


register_op("SampleDistortedBoundingBoxV2", _sdbb_spec, stateful=True, host_only=True)
register_op("DrawBoundingBoxesV2", _draw_spec, host_only=True)
register_op("CropAndResize", _crop_spec, host_only=True)
register_op("CropAndResizeGradImage", _crop_grad_image_spec, host_only=True)
register_op("CropAndResizeGradBoxes", _crop_grad_boxes_spec, host_only=True)
register_op("NonMaxSuppressionV3", _nms3_spec, host_only=True)
register_op("NonMaxSuppressionV5", _nms5_spec, host_only=True)
register_op("NonMaxSuppressionPadded", _nms_padded_spec, host_only=True)   # (collflow's: TF's is a composite)
register_op("CombinedNonMaxSuppression", _combined_nms_spec, host_only=True)
register_op("ExtractGlimpse", _glimpse_spec, stateful=True, host_only=True)   # (its noise is random)
register_op("ResizeBicubic", _resize_spec, host_only=True)
register_op("ResizeBicubicGrad", _bicubic_grad_spec, host_only=True)
register_op("ResizeArea", _resize_spec, host_only=True)
# TF declares these not differentiable (their inputs get None); the area resize, the box
# drawing, non-max suppression and the resize/crop gradients have no gradient registered at
# all, so tf.gradients through them raises LookupError, as TF's does (none registered here)
not_differentiable("SampleDistortedBoundingBoxV2", "ExtractGlimpse")


@register_gradient("CropAndResize")
def _crop_and_resize_grad(op: _g.Operation, g: Any) -> list:
    image, boxes, box_ind, _ = op.inputs
    g = dense(g)
    if image.dtype in (_dt.float16, _dt.float32, _dt.float64):
        gi = single("CropAndResizeGradImage", [g, boxes, box_ind, _a.shape(image)],
                    {"T": image.dtype, "method": op.attrs["method"]})
    else:
        gi = None
    gb = single("CropAndResizeGradBoxes", [g, image, boxes, box_ind], {"method": op.attrs["method"]})
    return [gi, gb, None, None]


@register_gradient("ResizeBicubic")
def _resize_bicubic_grad(op: _g.Operation, g: Any) -> list:
    x = op.inputs[0]
    if x.dtype not in (_dt.float32, _dt.float64):
        return [None, None]
    return [single("ResizeBicubicGrad", [dense(g), x], dict(op.attrs)), None]


# -- constructors ------------------------------------------------------------------------------


def _t(v: Any, dtype: Any = None) -> _g.Tensor:
    if isinstance(v, _g.Tensor) or hasattr(v, "handle"):
        return _g.convert_to_tensor(v)
    return constant(v, dtype=dtype)


def sample_distorted_bounding_box(image_size: Any, bounding_boxes: Any, seed: Optional[int] = None,
                                  seed2: Optional[int] = None, min_object_covered: Any = 0.1,
                                  aspect_ratio_range: Optional[Sequence[float]] = None,
                                  area_range: Optional[Sequence[float]] = None, max_attempts: Optional[int] = None,
                                  use_image_if_no_bounding_boxes: Optional[bool] = None,
                                  name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    """(begin, size, bboxes): a random crop of an image of image_size [h, w, c] covering at least
    min_object_covered of one of bounding_boxes [batch, N, 4] (normalized ymin, xmin, ymax, xmax),
    with aspect ratio and area (fraction of the image) in the given ranges; the whole image when
    max_attempts (100) draws fail.  begin/size feed tf.slice; bboxes [1, 1, 4] the crop's box."""
    ar = [0.75, 1.33] if aspect_ratio_range is None else [float(v) for v in aspect_ratio_range]
    area = [0.05, 1.0] if area_range is None else [float(v) for v in area_range]
    if len(ar) != 2 or len(area) != 2:
        raise InvalidArgumentError("aspect_ratio_range and area_range must each have 2 elements")
    if ar[0] <= 0 or ar[1] <= 0:
        raise InvalidArgumentError(f"aspect_ratio_range must be positive: [{ar[0]}, {ar[1]}]")
    if area[0] <= 0 or area[1] <= 0:
        raise InvalidArgumentError(f"area_range must be positive: [{area[0]}, {area[1]}]")
    if area[0] > 1 or area[1] > 1:
        raise InvalidArgumentError(f"area_range must be less then or equal to 1.0: [{area[0]}, {area[1]}]")
    attempts = 100 if max_attempts is None else int(max_attempts)
    if attempts <= 0:
        raise InvalidArgumentError(f"max_attempts must be positive: {attempts}")
    s1, s2 = int(seed or 0), int(seed2 or 0)
    seeds = (None, None) if s1 == 0 and s2 == 0 else (s1, s2)   # TF1: (0, 0) is nondeterministic
    size = _t(image_size, _dt.int32)
    with size.graph.as_default(), size.graph.name_scope(name or "sample_distorted_bounding_box"):
        bb = _t(bounding_boxes, _dt.float32)
        cov = _t(min_object_covered, _dt.float32)
        op = make_op("SampleDistortedBoundingBoxV2", [size, bb, cov],
                     {"seed": seeds[0], "seed2": seeds[1], "aspect_ratio_range": ar, "area_range": area,
                      "max_attempts": attempts, "use_image_if_no_bounding_boxes": bool(use_image_if_no_bounding_boxes)},
                     name="SampleDistortedBoundingBoxV2")
        return op.outputs[0], op.outputs[1], op.outputs[2]


def draw_bounding_boxes(images: Any, boxes: Any, name: Optional[str] = None, colors: Any = None) -> _g.Tensor:
    """images [batch, h, w, depth] (float) with the outline of each box [batch, N, 4] (normalized
    ymin, xmin, ymax, xmax) drawn one pixel wide, box k in colors[k % len(colors)] (TF's ten
    default colours when None)."""
    x = _t(images)
    with x.graph.as_default():
        c = _t(np.zeros((0, 4), np.float32)) if colors is None else _t(colors, _dt.float32)
        return single("DrawBoundingBoxesV2", [x, _t(boxes, _dt.float32), c], {}, name=name or "DrawBoundingBoxes")


def crop_and_resize(image: Any, boxes: Any, box_ind: Any = None, crop_size: Any = None, method: str = "bilinear",
                    extrapolation_value: float = 0.0, name: Optional[str] = None,
                    box_indices: Any = None) -> _g.Tensor:
    """[num_boxes, crop_h, crop_w, depth] float32: each box [y1, x1, y2, x2] (normalized, y1 > y2
    flips) of image[box_ind[k]] resampled to crop_size ("bilinear" or "nearest"); samples outside
    the image take extrapolation_value.  Differentiable in image and boxes (bilinear)."""
    if box_ind is None:
        box_ind = box_indices
    if box_ind is None or crop_size is None:
        raise InvalidArgumentError("crop_and_resize needs box_ind (box_indices) and crop_size")
    if method not in ("bilinear", "nearest"):
        raise InvalidArgumentError(f"method must be 'bilinear' or 'nearest', got {method!r}")
    x = _t(image)
    with x.graph.as_default():
        return single("CropAndResize", [x, _t(boxes, _dt.float32), _t(box_ind, _dt.int32), _t(crop_size, _dt.int32)],
                      {"method": method, "extrapolation_value": float(extrapolation_value)},
                      name=name or "CropAndResize")


def _nms(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any, score_threshold: Any, sigma: Any,
         pad: bool, name: str) -> _g.Operation:
    b = _t(boxes, _dt.float32)
    with b.graph.as_default():
        args = [b, _t(scores, _dt.float32), _t(max_output_size, _dt.int32), _t(iou_threshold, _dt.float32),
                _t(score_threshold, _dt.float32)]
        if sigma is None:
            return make_op("NonMaxSuppressionV3", args, {}, name=name)
        return make_op("NonMaxSuppressionV5", args + [_t(sigma, _dt.float32)], {"pad_to_max_output_size": pad},
                       name=name)


def non_max_suppression(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any = 0.5,
                        score_threshold: Any = float("-inf"), name: Optional[str] = None) -> _g.Tensor:
    """Indices of at most max_output_size boxes [N, 4], greedily by descending score, each
    dropped whose IoU with an already selected box exceeds iou_threshold, or whose score is not
    above score_threshold."""
    return _nms(boxes, scores, max_output_size, iou_threshold, score_threshold, None, False,
                name or "non_max_suppression").outputs[0]


def non_max_suppression_with_scores(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any = 0.5,
                                    score_threshold: Any = float("-inf"), soft_nms_sigma: Any = 0.0,
                                    name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
    """(selected indices, their scores); soft_nms_sigma > 0 decays overlapping boxes' scores by
    exp(-iou^2 / (2 sigma)) instead of dropping them (Soft-NMS, Bodla et al.)."""
    op = _nms(boxes, scores, max_output_size, iou_threshold, score_threshold, soft_nms_sigma, False,
              name or "non_max_suppression_with_scores")
    return op.outputs[0], op.outputs[1]


def non_max_suppression_padded(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any = 0.5,
                               score_threshold: Any = float("-inf"), pad_to_max_output_size: bool = False,
                               name: Optional[str] = None, sorted_input: bool = False,
                               canonicalized_coordinates: bool = False,
                               tile_size: int = 512) -> Tuple[_g.Tensor, _g.Tensor]:
    """(selected indices, number valid) for one image's boxes [N, 4], as TF's tiled algorithm
    selects them (its quirks kept: see kernels/image_kernels2.padded_nms); padded to
    max_output_size when pad_to_max_output_size, else the valid ones.  Batched boxes and
    sorted_input are not supported; tile_size does not change the result."""
    b = _t(boxes, _dt.float32)
    if b.shape.rank not in (None, 2):
        raise InvalidArgumentError("non_max_suppression_padded: only a single image's boxes [num_boxes, 4] are "
                                   "supported in collflow")
    if sorted_input:
        raise InvalidArgumentError("non_max_suppression_padded: sorted_input=True is not supported in collflow")
    with b.graph.as_default(), b.graph.name_scope(name or "non_max_suppression_padded"):
        args = [b, _t(scores, _dt.float32), _t(max_output_size, _dt.int32), _t(iou_threshold, _dt.float32),
                _t(score_threshold, _dt.float32)]
        op = make_op("NonMaxSuppressionPadded", args, {"canonicalized_coordinates": bool(canonicalized_coordinates)},
                     name="NonMaxSuppressionPadded")
        idx, valid = op.outputs
        if not pad_to_max_output_size:
            idx = _a.slice(idx, [0], _a.reshape(valid, [1]))
        return idx, valid


def combined_non_max_suppression(boxes: Any, scores: Any, max_output_size_per_class: Any, max_total_size: Any,
                                 iou_threshold: Any = 0.5, score_threshold: Any = float("-inf"),
                                 pad_per_class: bool = False, clip_boxes: bool = True,
                                 name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor, _g.Tensor]:
    """Per image and class greedy NMS of boxes [batch, N, q, 4] (q = 1: shared by the classes)
    by scores [batch, N, classes], then the best max_total_size of all classes by score:
    (nmsed_boxes [batch, D, 4] (clipped to [0, 1] with clip_boxes), nmsed_scores, nmsed_classes
    (float), valid_detections [batch]), zero-padded; D = max_total_size, or
    min(max_total_size, max_output_size_per_class * classes) with pad_per_class."""
    b = _t(boxes, _dt.float32)
    with b.graph.as_default():
        args = [b, _t(scores, _dt.float32), _t(max_output_size_per_class, _dt.int32), _t(max_total_size, _dt.int32),
                _t(iou_threshold, _dt.float32), _t(score_threshold, _dt.float32)]
        op = make_op("CombinedNonMaxSuppression", args, {"pad_per_class": bool(pad_per_class),
                                                         "clip_boxes": bool(clip_boxes)},
                     name=name or "combined_non_max_suppression")
        return op.outputs[0], op.outputs[1], op.outputs[2], op.outputs[3]


def extract_glimpse(input: Any, size: Any, offsets: Any, centered: bool = True,  # noqa: A002 - TF name
                    normalized: bool = True, uniform_noise: bool = True, name: Optional[str] = None) -> _g.Tensor:
    """[batch, gh, gw, c] float32 windows of size [gh, gw] at offsets [batch, 2] (y, x): the
    window's center in pixels, or normalized to [0, 1] (centered: [-1, 1] around the image's
    center); parts outside the image filled with uniform noise over the image's value range
    (TF 2's v1 kernel fills uniform noise whatever uniform_noise says)."""
    x = _t(input, _dt.float32)
    with x.graph.as_default():
        return single("ExtractGlimpse", [x, _size(size, x.graph), _t(offsets, _dt.float32)],
                      {"centered": bool(centered), "normalized": bool(normalized),
                       "uniform_noise": bool(uniform_noise)}, name=name or "ExtractGlimpse")


def _size(size: Any, g: _g.Graph) -> _g.Tensor:
    if isinstance(size, _g.Tensor) or hasattr(size, "handle"):
        return _g.convert_to_tensor(size)
    vals = [int(v) for v in size]
    if len(vals) != 2:
        raise InvalidArgumentError(f"size must have 2 elements (new_height, new_width), got {vals}")
    with g.as_default():
        return constant(np.asarray(vals, np.int32), name="size")


def resize_bicubic(images: Any, size: Any, align_corners: bool = False, name: Optional[str] = None,
                   half_pixel_centers: bool = False) -> _g.Tensor:
    """Bicubic resize of [batch, h, w, c] to size (float32), TF's kernel: the cubic convolution
    with a = -0.75 on the legacy grid, Keys' a = -0.5 with half_pixel_centers (out-of-image taps
    dropped and the weights renormalized)."""
    if align_corners and half_pixel_centers:
        raise InvalidArgumentError("If half_pixel_centers is True, align_corners must be False.")
    x = _t(images)
    return single("ResizeBicubic", [x, _size(size, x.graph)],
                  {"align_corners": bool(align_corners), "half_pixel_centers": bool(half_pixel_centers)},
                  name=name or "ResizeBicubic")


def resize_area(images: Any, size: Any, align_corners: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """Area-averaging resize of [batch, h, w, c] to size (float32): each output pixel the mean of
    the input area it covers (fractional pixels weighted)."""
    x = _t(images)
    return single("ResizeArea", [x, _size(size, x.graph)], {"align_corners": bool(align_corners)},
                  name=name or "ResizeArea")
