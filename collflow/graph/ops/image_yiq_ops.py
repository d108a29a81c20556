"""tf.contrib.image's adjust_hsv_in_yiq and random_hsv_in_yiq: a hue rotation and
saturation/value scaling of RGB images done as one linear map in YIQ space,
M = YIQ^-1 . HSV(delta_h, scale_s, scale_v) . YIQ (TF's AdjustHsvInYiq kernel, float32,
no clipping), composed from matmul so it is also differentiable (TF's op is not)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from . import array_ops as _a
from . import math_ops as _m
from .image_adjust_ops import convert_image_dtype
from .random_ops import random_uniform

__all__ = ["adjust_hsv_in_yiq", "random_hsv_in_yiq"]

# RGB -> YIQ and back, the constants of TF's kernel
_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]], np.float32)
_YIQ_INVERSE = np.array([[1, 0.95617069, 0.62143257], [1, -0.2726886, -0.64681324], [1, -1.103744, 1.70062309]],
                        np.float32)


def _scalar(value: Any, label: str) -> _g.Tensor:
    t = _g.convert_to_tensor(value, dtype=_dt.float32, name=label)
    if t.shape.rank not in (None, 0):
        raise ValueError(f"{label} must be scalar: {t.shape}")
    return t


def _adjust(images: _g.Tensor, delta_h: _g.Tensor, scale_s: _g.Tensor, scale_v: _g.Tensor) -> _g.Tensor:
    """The RGB float32 images mapped by M (the kernel's q = M p on each pixel)."""
    if images.shape.rank is not None and images.shape.rank < 3:
        raise ValueError(f"input must be at least 3-D, got shape {images.shape}")
    channels = images.shape.dims[-1] if images.shape.rank is not None else None
    if channels is not None and channels != 3:
        raise ValueError(f"input must have 3 channels but instead has {channels} channels.")
    vsu = scale_v * scale_s * _m.cos(delta_h)
    vsw = scale_v * scale_s * _m.sin(delta_h)
    zero = _a.zeros_like(scale_v)
    hsv = _a.reshape(_a.stack([scale_v, zero, zero, zero, vsu, -vsw, zero, vsw, vsu]), [3, 3])
    matrix = _m.matmul(_m.matmul(_g.convert_to_tensor(_YIQ_INVERSE), hsv), _g.convert_to_tensor(_YIQ))
    pixels = _a.reshape(images, [-1, 3])
    return _a.reshape(_m.matmul(pixels, matrix, transpose_b=True), _a.shape(images))


def adjust_hsv_in_yiq(image: Any, delta_hue: Any = 0, scale_saturation: Any = 1, scale_value: Any = 1,
                      name: Optional[str] = None) -> _g.Tensor:
    """RGB image(s) [..., 3] with the hue rotated by delta_hue radians about the Y axis of YIQ
    space, the chrominance (I, Q) scaled by scale_saturation and all of Y, I, Q by
    scale_value; computed in float32 and converted back to the image's dtype."""
    g = _g.get_default_graph()
    with g.name_scope(name or "adjust_hsv_in_yiq"):
        x = _g.convert_to_tensor(image, name="image")
        flt = convert_image_dtype(x, _dt.float32)
        out = _adjust(flt, _scalar(delta_hue, "delta_h"), _scalar(scale_saturation, "scale_s"),
                      _scalar(scale_value, "scale_v"))
        return convert_image_dtype(out, x.dtype)


def random_hsv_in_yiq(image: Any, max_delta_hue: float = 0, lower_saturation: float = 1, upper_saturation: float = 1,
                      lower_value: float = 1, upper_value: float = 1, seed: Optional[int] = None) -> _g.Tensor:
    """adjust_hsv_in_yiq with delta_hue drawn from [-max_delta_hue, max_delta_hue], the
    saturation scale from [lower_saturation, upper_saturation] and the value scale from
    [lower_value, upper_value] (a bound pair that is equal draws nothing)."""
    if max_delta_hue < 0:
        raise ValueError("max_delta must be non-negative.")
    if lower_saturation < 0:
        raise ValueError("lower_saturation must be non-negative.")
    if lower_value < 0:
        raise ValueError("lower_value must be non-negative.")
    if lower_saturation > upper_saturation:
        raise ValueError("lower_saturation must be < upper_saturation.")
    if lower_value > upper_value:
        raise ValueError("lower_value must be < upper_value.")
    delta_hue: Any = 0 if max_delta_hue == 0 else random_uniform([], -max_delta_hue, max_delta_hue, seed=seed)
    scale_saturation: Any = lower_saturation if lower_saturation == upper_saturation else \
        random_uniform([], lower_saturation, upper_saturation, seed=seed)
    scale_value: Any = lower_value if lower_value == upper_value else \
        random_uniform([], lower_value, upper_value, seed=seed)
    return adjust_hsv_in_yiq(image, delta_hue, scale_saturation, scale_value)
