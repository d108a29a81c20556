"""Image resizing of TensorFlow 1.x: tf.image.resize_images (tf.image.resize),
resize_bilinear and resize_nearest_neighbor, with TensorFlow 1.x's sampling grid.

Output pixel (i, j) reads input coordinates (i * sy, j * sx), where s = in / out, or
(in - 1) / (out - 1) with align_corners=True; with half_pixel_centers=True (TF >= 1.14) it
reads ((i + 0.5) * s - 0.5) for bilinear and (i + 0.5) * s for nearest neighbour.  Bilinear
output is float32 whatever the input dtype (as TensorFlow's op); nearest keeps the dtype.
Each has a gradient op (a scatter of the output gradient back onto the input grid); kernels
live in kernels/image_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from .constant_op import constant
from .op_util import single

__all__ = ["ResizeMethod", "resize_images", "resize", "resize_bilinear", "resize_nearest_neighbor"]


class ResizeMethod:
    """tf.image.ResizeMethod (TensorFlow 1.x's integer codes)."""
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def _size_value(t: _g.Tensor) -> Tuple[Optional[int], Optional[int]]:
    """The new (height, width) where the graph determines them (TF evaluates the size subgraph)."""
    from .shape_eval import partial_vector
    v = partial_vector(t)
    if v is None or len(v) != 2:
        return None, None
    return v[0], v[1]


def _resize_spec(op: _g.Operation) -> list:
    x, size = op.inputs
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise ValueError(f"{op.type} needs a numeric image, got {x.dtype.name}")
    if x.shape.rank not in (None, 4):
        raise ValueError(f"{op.type} needs a 4-D input [batch, height, width, channels], got shape {x.shape}")
    if size.dtype != _dt.int32 or size.shape.rank not in (None, 1) or size.shape.dims not in (None, (2,)):
        raise ValueError(f"{op.type}: size must be a 1-D int32 tensor of 2 elements, got {size.dtype.name} of "
                         f"shape {size.shape}")
    h, w = _size_value(size)
    for v in (h, w):
        if v is not None and v <= 0:
            raise ValueError(f"{op.type}: size must be positive, got [{h}, {w}]")
    n, c = (x.shape.dims[0], x.shape.dims[3]) if x.shape.rank == 4 else (None, None)
    dt = _dt.float32 if op.type == "ResizeBilinear" else x.dtype
    return [(dt, TensorShape([n, h, w, c]))]


def _resize_grad_spec(op: _g.Operation) -> list:
    g, size = op.inputs
    h, w = _size_value(size)
    n, c = (g.shape.dims[0], g.shape.dims[3]) if g.shape.rank == 4 else (None, None)
    return [(op.attrs["dtype"], TensorShape([n, h, w, c]))]


register_op("ResizeBilinear", _resize_spec)
register_op("ResizeNearestNeighbor", _resize_spec)
# (grads, original size [h, w]) -> the gradient of the original image, of dtype attr
register_op("ResizeBilinearGrad", _resize_grad_spec)
register_op("ResizeNearestNeighborGrad", _resize_grad_spec)
# TF declares ResizeBilinearGrad not differentiable; ResizeNearestNeighborGrad has no gradient
# registered (LookupError through it)
not_differentiable("ResizeBilinearGrad")


def _original_size(x: _g.Tensor) -> _g.Tensor:
    dims = x.shape.dims if x.shape.rank == 4 else None
    if dims is not None and dims[1] is not None and dims[2] is not None:
        return constant(np.asarray(dims[1:3], dtype=np.int32), name="size")
    return _a.strided_slice(_a.shape(x), (slice(1, 3),))


def _resize_grad(grad_type: str, op: _g.Operation, g: Any) -> list:
    x = op.inputs[0]
    if not x.dtype.is_floating:
        return [None, None]
    g = g if isinstance(g, _g.Tensor) else _g.convert_to_tensor(g)
    attrs = dict(op.attrs, dtype=x.dtype)
    return [single(grad_type, [g, _original_size(x)], attrs), None]


register_gradient("ResizeBilinear")(lambda op, g: _resize_grad("ResizeBilinearGrad", op, g))
register_gradient("ResizeNearestNeighbor")(lambda op, g: _resize_grad("ResizeNearestNeighborGrad", op, g))

# -- constructors ------------------------------------------------------------------------------


def _size_tensor(size: Any, g: _g.Graph) -> _g.Tensor:
    if isinstance(size, _g.Tensor) or hasattr(size, "handle"):
        t = _g.convert_to_tensor(size)
        if t.dtype != _dt.int32:
            raise InvalidArgumentError(f"size must be a 1-D int32 tensor, got {t.dtype.name}")
        return t
    if isinstance(size, (list, tuple)) and _g._holds_tensor(size):  # [tf.shape(y)[1], 64]: stacked, as TF
        with g.as_default():
            t = _g.convert_to_tensor(list(size), dtype=_dt.int32, name="size")
        if t.shape.as_list() != [2]:
            raise InvalidArgumentError(f"size must have 2 elements (new_height, new_width), got {list(size)}")
        return t
    vals = [int(d) for d in size]
    if len(vals) != 2:
        raise InvalidArgumentError(f"size must have 2 elements (new_height, new_width), got {list(size)}")
    with g.as_default():
        return constant(np.asarray(vals, dtype=np.int32), name="size")


def _resize(op_type: str, images: Any, size: Any, align_corners: bool, half_pixel_centers: bool,
            name: Optional[str]) -> _g.Tensor:
    if align_corners and half_pixel_centers:
        raise InvalidArgumentError("If half_pixel_centers is True, align_corners must be False.")
    x = _g.convert_to_tensor(images)
    st = _size_tensor(size, x.graph)
    return single(op_type, [x, st], {"align_corners": bool(align_corners),
                                     "half_pixel_centers": bool(half_pixel_centers)}, name=name or op_type)


def resize_bilinear(images: Any, size: Any, align_corners: bool = False, name: Optional[str] = None,
                    half_pixel_centers: bool = False) -> _g.Tensor:
    """Bilinear resize of [batch, height, width, channels] images to size = [new_height, new_width];
    the result is float32."""
    return _resize("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


def resize_nearest_neighbor(images: Any, size: Any, align_corners: bool = False, name: Optional[str] = None,
                            half_pixel_centers: bool = False) -> _g.Tensor:
    """Nearest-neighbour resize of [batch, height, width, channels] images (dtype kept)."""
    return _resize("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers, name)


def _method_code(method: Any) -> int:
    names = {"bilinear": 0, "nearest": 1, "nearest_neighbor": 1, "bicubic": 2, "area": 3}
    if isinstance(method, str):
        if method.lower() not in names:
            raise InvalidArgumentError(f"resize_images: unknown method {method!r}")
        return names[method.lower()]
    return int(method)


def resize_images(images: Any, size: Any, method: Any = ResizeMethod.BILINEAR, align_corners: bool = False,
                  preserve_aspect_ratio: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """Resizes a batch [b, h, w, c] or a single image [h, w, c] to size = [new_height, new_width].

    method: ResizeMethod.BILINEAR, BICUBIC, AREA (float32 results) or NEAREST_NEIGHBOR (dtype kept).  With
    preserve_aspect_ratio the image is scaled by one factor to fit inside `size` (image and
    size static).  When the size is statically unchanged the images come back as they are.
    """
    code = _method_code(method)
    if code not in (ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR, ResizeMethod.BICUBIC, ResizeMethod.AREA):
        raise InvalidArgumentError(f"resize_images: unknown method {method!r}")
    x = _g.convert_to_tensor(images)
    g = x.graph
    with g.as_default(), g.name_scope(name or "resize"):
        if x.shape.rank is None:
            raise InvalidArgumentError("resize_images: 'images' contains no shape")
        if x.shape.rank not in (3, 4):
            raise InvalidArgumentError(f"resize_images: 'images' must have either 3 or 4 dimensions, got shape "
                                       f"{x.shape}")
        single_image = x.shape.rank == 3
        if single_image:
            x = _a.expand_dims(x, 0)
        st = _size_tensor(size, g)
        new_h, new_w = _size_value(st)
        _, h, w, _ = x.shape.dims
        if preserve_aspect_ratio:
            if None in (new_h, new_w, h, w):
                raise InvalidArgumentError("resize_images: preserve_aspect_ratio needs static image and target sizes")
            scale = min(np.float32(new_h) / np.float32(h), np.float32(new_w) / np.float32(w))
            new_h, new_w = int(np.round(scale * np.float32(h))), int(np.round(scale * np.float32(w)))
            st = constant(np.asarray([new_h, new_w], dtype=np.int32), name="size")
        if None not in (new_h, new_w, h, w) and (new_h, new_w) == (h, w):
            out = x   # nothing to resize (TensorFlow returns the images unchanged, dtype included)
        elif code == ResizeMethod.BILINEAR:
            out = resize_bilinear(x, st, align_corners=align_corners)
        elif code in (ResizeMethod.BICUBIC, ResizeMethod.AREA):
            from . import image_ops2   # (bicubic and area live there)
            out = (image_ops2.resize_bicubic if code == ResizeMethod.BICUBIC else image_ops2.resize_area)(
                x, st, align_corners=align_corners)
        else:
            out = resize_nearest_neighbor(x, st, align_corners=align_corners)
        return _a.squeeze(out, [0]) if single_image else out


resize = resize_images

