"""tf.image's flips, crops, padding, standardization and the random augmentations TF1 input
pipelines use (CIFAR-style: random_crop, random_flip_left_right, per_image_standardization).
Built from existing ops, so their gradients come with them.  Images are [height, width,
channels] or a batch [n, height, width, channels]; the random ones draw from collflow's streams
(seeded like every random op), not TensorFlow's."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a
from . import math_ops as _m
from .random_ops import random_uniform
from .reverse_ops import reverse

__all__ = ["flip_left_right", "flip_up_down", "random_flip_left_right", "random_flip_up_down",
           "per_image_standardization", "random_crop", "resize_image_with_crop_or_pad", "random_brightness",
           "adjust_brightness", "convert_image_dtype"]


def _image(image: Any, what: str) -> _g.Tensor:
    x = _g.convert_to_tensor(image)
    if x.shape.rank not in (3, 4):
        raise InvalidArgumentError(f"{what}: expected an image [h, w, c] or a batch [n, h, w, c], got shape {x.shape}")
    return x


def flip_left_right(image: Any) -> _g.Tensor:
    """The image mirrored along its width."""
    x = _image(image, "flip_left_right")
    return reverse(x, [x.shape.rank - 2])


def flip_up_down(image: Any) -> _g.Tensor:
    """The image mirrored along its height."""
    x = _image(image, "flip_up_down")
    return reverse(x, [x.shape.rank - 3])


def _random_flip(x: _g.Tensor, axis: int, seed: Optional[int], what: str) -> _g.Tensor:
    # one coin per image (per batch entry for a batch), as TF1
    if x.shape.rank == 3:
        flip = _m.less(random_uniform([], seed=seed, name=what), 0.5)
    else:
        coins = random_uniform(_a.stack([_a.shape(x)[0]]), seed=seed, name=what)
        flip = _a.reshape(_m.less(coins, 0.5), [-1, 1, 1, 1])
    return _a.where(flip, reverse(x, [axis]), x)


def random_flip_left_right(image: Any, seed: Optional[int] = None) -> _g.Tensor:
    """The image mirrored along its width with probability 1/2 (each image of a batch alone)."""
    x = _image(image, "random_flip_left_right")
    return _random_flip(x, x.shape.rank - 2, seed, "random_flip_left_right")


def random_flip_up_down(image: Any, seed: Optional[int] = None) -> _g.Tensor:
    """The image mirrored along its height with probability 1/2 (each image of a batch alone)."""
    x = _image(image, "random_flip_up_down")
    return _random_flip(x, x.shape.rank - 3, seed, "random_flip_up_down")


def per_image_standardization(image: Any) -> _g.Tensor:
    """(x - mean) / max(stddev, 1 / sqrt(N)) over each image's N values, as float32 (TF1's)."""
    x = _image(image, "per_image_standardization")
    if x.dtype != _dt.float32:
        x = _m.cast(x, _dt.float32)
    axes = [x.shape.rank - 3, x.shape.rank - 2, x.shape.rank - 1]
    mean = _m.reduce_mean(x, axes, keepdims=True)
    var = _m.reduce_mean(_m.square(x - mean), axes, keepdims=True)
    n = _m.cast(_a.size(x) if x.shape.rank == 3 else _a.size(x) // _a.shape(x)[0], _dt.float32)
    adjusted = _m.maximum(_m.sqrt(var), _m.rsqrt(n))
    return (x - mean) / adjusted


def random_crop(value: Any, size: Any, seed: Optional[int] = None, name: Optional[str] = None) -> _g.Tensor:
    """A slice of `size` (one entry per dimension of value) at a uniformly random offset."""
    x = _g.convert_to_tensor(value)
    g = x.graph
    with g.as_default(), g.name_scope(name or "random_crop"):
        size_t = _g.convert_to_tensor(size, dtype=_dt.int32) if not isinstance(size, _g.Tensor) else size
        limit = _a.shape(x) - size_t + 1
        offset = _m.cast(random_uniform(_a.shape(size_t), 0, 1.0, seed=seed) * _m.cast(limit, _dt.float32),
                         _dt.int32)
        offset = _m.minimum(offset, limit - 1)
        out = _a.slice(x, offset, size_t)
        if not isinstance(size, _g.Tensor):
            out.set_shape([int(s) for s in np.ravel(size)])  # a constant size: the static shape too
        return out


def resize_image_with_crop_or_pad(image: Any, target_height: int, target_width: int) -> _g.Tensor:
    """Centrally crops or zero-pads the image to target_height x target_width (TF1's rule: the
    crop offset and the padding before are (difference) // 2).  Needs a known height and width."""
    x = _image(image, "resize_image_with_crop_or_pad")
    r = x.shape.rank
    h, w = x.shape.dims[r - 3], x.shape.dims[r - 2]
    if h is None or w is None:
        raise InvalidArgumentError("resize_image_with_crop_or_pad needs the image's height and width at graph build")
    th, tw = int(target_height), int(target_width)
    oh, ow = max((h - th) // 2, 0), max((w - tw) // 2, 0)
    key = [slice(None)] * r
    key[r - 3], key[r - 2] = slice(oh, oh + min(th, h)), slice(ow, ow + min(tw, w))
    y = x[tuple(key)]
    ph, pw = max((th - h) // 2, 0), max((tw - w) // 2, 0)
    ch, cw = min(th, h), min(tw, w)
    pads = [[0, 0]] * r
    pads[r - 3], pads[r - 2] = [ph, th - ch - ph], [pw, tw - cw - pw]
    return _a.pad(y, pads) if any(p != [0, 0] for p in pads) else y


def float_and_back(image: Any, fn: Any) -> _g.Tensor:
    """fn on the image as float32 (an integer image converted, the result converted back with
    saturation, as TF1's adjustments), or on a float image as is."""
    x = _g.convert_to_tensor(image)
    if x.dtype.is_floating:
        return fn(x)
    return convert_image_dtype(fn(convert_image_dtype(x, _dt.float32)), x.dtype, saturate=True)


def adjust_brightness(image: Any, delta: Any) -> _g.Tensor:
    """image + delta (in float; an integer image is converted and back, as TF1)."""
    return float_and_back(image, lambda f: f + _m.cast(delta, f.dtype))


def random_brightness(image: Any, max_delta: float, seed: Optional[int] = None) -> _g.Tensor:
    """adjust_brightness by a delta drawn uniformly from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, random_uniform([], -max_delta, max_delta, seed=seed))


def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """Converts between image dtypes, scaling by the value range: integers span [0, MAX],
    floats [0, 1] (uint8 200 -> float 200/255)."""
    x = _g.convert_to_tensor(image)
    to = _dt.as_dtype(dtype)
    if x.dtype == to:
        return x
    if x.dtype.is_integer and to.is_floating:
        return _m.cast(x, to) * (1.0 / float(np.iinfo(x.dtype.np).max))
    if x.dtype.is_floating and to.is_integer:
        scaled = x * (float(np.iinfo(to.np).max) + 0.5)
        if saturate:
            scaled = _m.clip_by_value(scaled, 0.0, float(np.iinfo(to.np).max))
        return _m.cast(scaled, to)
    if x.dtype.is_floating and to.is_floating:
        return _m.cast(x, to)
    # integer to integer: scale by the ratio of the ranges
    src, dst = np.iinfo(x.dtype.np).max, np.iinfo(to.np).max
    if dst >= src:
        return _m.cast(x, to) * _m.cast((dst + 1) // (src + 1), to)
    return _m.cast(x // ((src + 1) // (dst + 1)), to)
