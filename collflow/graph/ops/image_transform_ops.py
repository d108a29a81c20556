"""Projective image transforms (TF 1.x's tf.contrib.image.transform, rotate, translate): the
ImageProjectiveTransformV2 op, its TF gradient, and the transform-vector helpers.

A transform [a0, a1, a2, b0, b1, b2, c0, c1] maps each output pixel (x, y) to the input
point ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1, read by
NEAREST (rounded half away from zero) or BILINEAR interpolation; points outside the image
read 0 (as does k == 0).  The gradient is TF's: the incoming gradient transformed by the
inverse transform back to the input's size (not the exact adjoint of the sampling).
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from .op_util import single

__all__ = ["transform", "rotate", "translate", "angles_to_projective_transforms",
           "translations_to_projective_transforms", "compose_transforms", "flat_transforms_to_matrices",
           "matrices_to_flat_transforms"]

_IMAGE_DTYPES = (_dt.uint8, _dt.int32, _dt.int64, _dt.float16, _dt.float32, _dt.float64)


def _spec(op: _g.Operation) -> list:
    images, transforms, output_shape = op.inputs
    if images.dtype not in _IMAGE_DTYPES:
        raise TypeError(f"Invalid dtype {images.dtype.name}.")
    if images.shape.rank not in (None, 4):
        raise ValueError(f"Input images must be rank 4, got shape {images.shape}")
    if transforms.shape.rank not in (None, 2) or (transforms.shape.rank == 2 and transforms.shape.dims[1] not in
                                                  (None, 8)):
        raise ValueError(f"Input transform should be num_images x 8, got shape {transforms.shape}")
    from .shape_eval import partial_vector
    hw = partial_vector(output_shape)
    h, w = (hw[0], hw[1]) if hw is not None and len(hw) == 2 else (None, None)
    n, c = (images.shape.dims[0], images.shape.dims[3]) if images.shape.rank == 4 else (None, None)
    return [(images.dtype, TensorShape([n, h, w, c]))]


register_op("ImageProjectiveTransformV2", _spec)


def _as_batch(transforms: Any) -> _g.Tensor:
    t = _g.convert_to_tensor(transforms, dtype=_dt.float32)
    if t.shape.rank == 1:
        return t[None]
    if t.shape.rank == 2:
        return t
    raise TypeError("Transforms should have rank 1 or 2.")


@register_gradient("ImageProjectiveTransformV2")
def _transform_grad(op: _g.Operation, grad: Any) -> list:
    images, transforms = op.inputs[0], op.inputs[1]
    if not images.dtype.is_floating:
        return [None, None, None]
    from .linalg_ops import matrix_inverse
    inverse = matrices_to_flat_transforms(matrix_inverse(flat_transforms_to_matrices(transforms)))
    out = single("ImageProjectiveTransformV2", [_g.convert_to_tensor(grad), inverse, _a.shape(images)[1:3]],
                 {"interpolation": op.attrs["interpolation"]}, name="ImageProjectiveTransformV2")
    return [out, None, None]


def transform(images: Any, transforms: Any, interpolation: str = "NEAREST", output_shape: Any = None,
              name: Optional[str] = None) -> _g.Tensor:
    """Applies the projective transform(s) to images [height, width], [height, width,
    channels] or [batch, height, width, channels]: one transform [8] for all, or [batch, 8];
    output_shape [new_height, new_width] (default the input's)."""
    x = _g.convert_to_tensor(images)
    g = x.graph
    with g.as_default(), g.name_scope(name or "transform"):
        if x.dtype not in _IMAGE_DTYPES:
            raise TypeError(f"Invalid dtype {x.dtype.name}.")
        rank = x.shape.rank
        if rank == 2:
            x4 = x[None, :, :, None]
        elif rank == 3:
            x4 = x[None]
        elif rank == 4:
            x4 = x
        else:
            raise TypeError("Images should have rank between 2 and 4.")
        if output_shape is None:
            out_hw = _a.shape(x4)[1:3]
        else:
            out_hw = _g.convert_to_tensor(output_shape, dtype=_dt.int32)
            if out_hw.shape.rank != 1 or out_hw.shape.dims[0] not in (None, 2):
                raise ValueError("output_shape must be a 1-D Tensor of 2 elements: new_height, new_width")
        interp = str(interpolation).upper()
        if interp not in ("NEAREST", "BILINEAR"):
            raise ValueError(f"Invalid interpolation {interpolation!r}: NEAREST or BILINEAR")
        out = single("ImageProjectiveTransformV2", [x4, _as_batch(transforms), out_hw], {"interpolation": interp},
                     name="ImageProjectiveTransformV2")
        if rank == 2:
            return out[0, :, :, 0]
        if rank == 3:
            return out[0]
        return out


def _image_hw(x: _g.Tensor) -> tuple:
    dims = x.shape.dims
    rank = x.shape.rank
    h_axis, w_axis = (0, 1) if rank in (2, 3) else (1, 2)
    dyn = _a.shape(x)
    h = dims[h_axis] if dims[h_axis] is not None else dyn[h_axis]
    w = dims[w_axis] if dims[w_axis] is not None else dyn[w_axis]
    return _m.cast(h, _dt.float32), _m.cast(w, _dt.float32)


def angles_to_projective_transforms(angles: Any, image_height: Any, image_width: Any,
                                    name: Optional[str] = None) -> _g.Tensor:
    """The transforms [n, 8] rotating images counterclockwise by `angles` radians (a scalar
    or [n]) about their centres."""
    g = _g.get_default_graph()
    with g.name_scope(name or "angles_to_projective_transforms"):
        a = _g.convert_to_tensor(angles, dtype=_dt.float32)
        if a.shape.rank == 0:
            a = a[None]
        elif a.shape.rank != 1:
            raise TypeError("Angles should have rank 0 or 1.")
        h = _m.cast(_g.convert_to_tensor(image_height), _dt.float32)
        w = _m.cast(_g.convert_to_tensor(image_width), _dt.float32)
        cos, sin = _m.cos(a), _m.sin(a)
        x_offset = ((w - 1) - (cos * (w - 1) - sin * (h - 1))) / 2.0
        y_offset = ((h - 1) - (sin * (w - 1) + cos * (h - 1))) / 2.0
        zeros = _a.zeros_like(a)
        return _a.stack([cos, -sin, x_offset, sin, cos, y_offset, zeros, zeros], axis=1)


def rotate(images: Any, angles: Any, interpolation: str = "NEAREST", name: Optional[str] = None) -> _g.Tensor:
    """images rotated counterclockwise by `angles` radians (one, or one per image) about
    their centres; corners that leave the image read 0."""
    x = _g.convert_to_tensor(images)
    g = x.graph
    with g.as_default(), g.name_scope(name or "rotate"):
        if x.shape.rank not in (2, 3, 4):
            raise TypeError("Images should have rank between 2 and 4.")
        h, w = _image_hw(x)
        return transform(x, angles_to_projective_transforms(angles, h, w), interpolation=interpolation)


def translations_to_projective_transforms(translations: Any, name: Optional[str] = None) -> _g.Tensor:
    """The transforms [n, 8] shifting images by translations [dx, dy] (or [n, 2])."""
    g = _g.get_default_graph()
    with g.name_scope(name or "translations_to_projective_transforms"):
        t = _g.convert_to_tensor(translations, dtype=_dt.float32)
        if t.shape.rank == 1:
            t = t[None]
        elif t.shape.rank != 2:
            raise TypeError("Translations should have rank 1 or 2.")
        ones, zeros = _a.ones_like(t[:, 0]), _a.zeros_like(t[:, 0])
        return _a.stack([ones, zeros, -t[:, 0], zeros, ones, -t[:, 1], zeros, zeros], axis=1)


def translate(images: Any, translations: Any, interpolation: str = "NEAREST", name: Optional[str] = None) -> _g.Tensor:
    """images shifted by translations [dx, dy] pixels (one, or one per image)."""
    x = _g.convert_to_tensor(images)
    with x.graph.as_default(), x.graph.name_scope(name or "translate"):
        return transform(x, translations_to_projective_transforms(translations), interpolation=interpolation)


def flat_transforms_to_matrices(transforms: Any) -> _g.Tensor:
    """[n, 8] transforms as [n, 3, 3] matrices (the last entry 1)."""
    t = _as_batch(transforms)
    n = _a.shape(t)[0]
    return _a.reshape(_a.concat([t, _a.ones(_a.stack([n, 1]), dtype=t.dtype)], 1), _a.stack([-1, 3, 3]))


def matrices_to_flat_transforms(transform_matrices: Any) -> _g.Tensor:
    """[n, 3, 3] matrices as [n, 8] transforms (each divided by its last entry)."""
    m = _g.convert_to_tensor(transform_matrices, dtype=_dt.float32)
    if m.shape.rank not in (2, 3):
        raise ValueError(f"Matrices should be 2D or 3D, got: {m.shape}")
    flat = _a.reshape(m, _a.stack([-1, 9]))
    return flat[:, :8] / flat[:, 8:9]


def compose_transforms(*transforms: Any) -> _g.Tensor:
    """One transform equivalent to applying each of `transforms` to the image in order (the
    product of their matrices in the order given, as TF's)."""
    if not transforms:
        raise ValueError("compose_transforms needs at least one transform")
    composed = flat_transforms_to_matrices(transforms[0])
    for t in transforms[1:]:
        composed = _m.matmul(composed, flat_transforms_to_matrices(t))
    return matrices_to_flat_transforms(composed)

