"""More of tf.image, as TF 1.15 defines them: contrast (adjust_contrast, random_contrast, as
the CIFAR-10 tutorial distorts its inputs), hue and saturation through HSV (Inception's
distort_color), grayscale conversion, the bounding-box crops and
pads, central_crop, rot90 / transpose_image and resize_image_with_pad.  Composed from
existing ops (their gradients come with them).  Images are [height, width, channels] or a
batch [n, height, width, channels]; an integer image is converted to float and back where
TF does so."""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a
from . import math_ops as _m
from .constant_op import constant, identity
from .image_adjust_ops import _image, convert_image_dtype, float_and_back as _float_and_back
from .random_ops import random_uniform
from .reverse_ops import reverse

__all__ = ["adjust_contrast", "random_contrast", "rgb_to_grayscale", "grayscale_to_rgb", "central_crop",
           "crop_to_bounding_box", "pad_to_bounding_box", "rot90", "transpose_image", "resize_image_with_pad",
           "rgb_to_hsv", "hsv_to_rgb", "adjust_hue", "random_hue", "adjust_saturation", "random_saturation"]


def adjust_contrast(images: Any, contrast_factor: Any) -> _g.Tensor:
    """(x - mean) * contrast_factor + mean, the mean per image and channel over its pixels."""
    x = _image(images, "adjust_contrast")

    def contrast(f: _g.Tensor) -> _g.Tensor:
        r = f.shape.rank
        mean = _m.reduce_mean(f, [r - 3, r - 2], keepdims=True)
        return (f - mean) * _m.cast(contrast_factor, f.dtype) + mean
    with x.graph.as_default(), x.graph.name_scope("adjust_contrast"):
        return _float_and_back(x, contrast)


def random_contrast(image: Any, lower: float, upper: float, seed: Optional[int] = None) -> _g.Tensor:
    """adjust_contrast by a factor drawn uniformly from [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    x = _image(image, "random_contrast")
    with x.graph.as_default():
        return adjust_contrast(x, random_uniform([], lower, upper, seed=seed))


_GRAY = (0.2989, 0.5870, 0.1140)  # TF's luma weights


def rgb_to_grayscale(images: Any, name: Optional[str] = None) -> _g.Tensor:
    """[..., 3] RGB -> [..., 1] luma (0.2989 R + 0.5870 G + 0.1140 B)."""
    x = _g.convert_to_tensor(images)
    if x.shape.rank is not None and x.shape.dims[-1] not in (None, 3):
        raise InvalidArgumentError(f"rgb_to_grayscale needs 3 channels last, got shape {x.shape}")
    with x.graph.as_default(), x.graph.name_scope(name or "rgb_to_grayscale"):
        f = convert_image_dtype(x, _dt.float32)
        gray = _m.reduce_sum(f * constant(np.array(_GRAY, np.float32)), -1, keepdims=True)
        return convert_image_dtype(gray, x.dtype)


def grayscale_to_rgb(images: Any, name: Optional[str] = None) -> _g.Tensor:
    """[..., 1] -> [..., 3], the channel repeated."""
    x = _g.convert_to_tensor(images)
    if x.shape.rank is not None and x.shape.dims[-1] not in (None, 1):
        raise InvalidArgumentError(f"grayscale_to_rgb needs 1 channel last, got shape {x.shape}")
    with x.graph.as_default(), x.graph.name_scope(name or "grayscale_to_rgb"):
        return _a.concat([x, x, x], -1)


def _hw(x: _g.Tensor, what: str) -> Tuple[int, int]:
    r = x.shape.rank
    h, w = x.shape.dims[r - 3], x.shape.dims[r - 2]
    if h is None or w is None:
        raise InvalidArgumentError(f"{what} needs the image's height and width when the graph is built, got "
                                   f"shape {x.shape}")
    return int(h), int(w)


def crop_to_bounding_box(image: Any, offset_height: int, offset_width: int, target_height: int,
                         target_width: int) -> _g.Tensor:
    """The target_height x target_width window whose top-left corner is (offset_height,
    offset_width)."""
    x = _image(image, "crop_to_bounding_box")
    h, w = _hw(x, "crop_to_bounding_box")
    oh, ow, th, tw = int(offset_height), int(offset_width), int(target_height), int(target_width)
    if oh < 0 or ow < 0:
        raise ValueError("offset_height and offset_width must be >= 0.")
    if th <= 0 or tw <= 0:
        raise ValueError("target_height and target_width must be > 0.")
    if h < oh + th:
        raise ValueError("height must be >= target + offset.")
    if w < ow + tw:
        raise ValueError("width must be >= target + offset.")
    key = [slice(None)] * x.shape.rank
    key[-3], key[-2] = slice(oh, oh + th), slice(ow, ow + tw)
    return x[tuple(key)]


def pad_to_bounding_box(image: Any, offset_height: int, offset_width: int, target_height: int,
                        target_width: int) -> _g.Tensor:
    """The image placed at (offset_height, offset_width) in a zero image of target_height x
    target_width."""
    x = _image(image, "pad_to_bounding_box")
    h, w = _hw(x, "pad_to_bounding_box")
    oh, ow, th, tw = int(offset_height), int(offset_width), int(target_height), int(target_width)
    after_h, after_w = th - oh - h, tw - ow - w
    if oh < 0 or ow < 0:
        raise ValueError("offset_height and offset_width must be >= 0")
    if after_h < 0:
        raise ValueError("height must be <= target - offset")
    if after_w < 0:
        raise ValueError("width must be <= target - offset")
    pads = [[0, 0]] * x.shape.rank
    pads[-3], pads[-2] = [oh, after_h], [ow, after_w]
    return _a.pad(x, pads)


def central_crop(image: Any, central_fraction: float) -> _g.Tensor:
    """The central central_fraction (0, 1] of the image's height and width; the border
    removed on each side is int((size - size * central_fraction) / 2), as TF 1.15."""
    x = _image(image, "central_crop")
    if central_fraction <= 0.0 or central_fraction > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    if central_fraction == 1.0:
        return x
    h, w = _hw(x, "central_crop")
    top = int((float(h) - float(h) * central_fraction) / 2)
    left = int((float(w) - float(w) * central_fraction) / 2)
    key = [slice(None)] * x.shape.rank
    key[-3], key[-2] = slice(top, h - top), slice(left, w - left)
    return x[tuple(key)]


def transpose_image(image: Any) -> _g.Tensor:
    """Height and width swapped."""
    x = _image(image, "transpose_image")
    perm = [1, 0, 2] if x.shape.rank == 3 else [0, 2, 1, 3]
    return _a.transpose(x, perm)


def rot90(image: Any, k: int = 1, name: Optional[str] = None) -> _g.Tensor:
    """The image rotated counter-clockwise by k * 90 degrees (k known when the graph is built)."""
    x = _image(image, "rot90")
    if isinstance(k, _g.Tensor):
        from .array_util import _const_value
        c = _const_value(k)
        if c is None:
            raise InvalidArgumentError("rot90: k must be known when the graph is built (a Python int or a constant)")
        k = int(c)
    k = int(k) % 4
    r = x.shape.rank
    with x.graph.as_default(), x.graph.name_scope(name or "rot90"):
        if k == 0:
            return identity(x)
        if k == 1:
            return reverse(transpose_image(x), [r - 3])
        if k == 2:
            return reverse(x, [r - 3, r - 2])
        return transpose_image(reverse(x, [r - 3]))


def resize_image_with_pad(image: Any, target_height: int, target_width: int, method: Any = 0,
                          align_corners: bool = False) -> _g.Tensor:
    """Resized to fit target_height x target_width keeping its aspect ratio, then zero-padded
    to that size, centered (TF 1.15's arithmetic: sizes floored, padding floored)."""
    from .image_ops import resize_images
    x = _image(image, "resize_image_with_pad")
    h, w = _hw(x, "resize_image_with_pad")
    th, tw = int(target_height), int(target_width)
    if th <= 0 or tw <= 0:
        raise ValueError("target_height and target_width must be > 0")
    ratio = max(w / tw, h / th)
    rh, rw = h / ratio, w / ratio
    ph, pw = max(0, int(np.floor((th - rh) / 2))), max(0, int(np.floor((tw - rw) / 2)))
    with x.graph.as_default():
        resized = resize_images(x, [int(np.floor(rh)), int(np.floor(rw))], method, align_corners)
        return pad_to_bounding_box(resized, ph, pw, th, tw)


# -- HSV: hue and saturation (TF's formulas, float32 arithmetic) ------------------------------------


def _channels(x: _g.Tensor, what: str) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    if x.shape.rank is not None and x.shape.dims[-1] not in (None, 3):
        raise InvalidArgumentError(f"{what} needs 3 channels last, got shape {x.shape}")
    return x[..., 0], x[..., 1], x[..., 2]


def _hsv(r: _g.Tensor, g: _g.Tensor, b: _g.Tensor) -> Tuple[_g.Tensor, _g.Tensor, _g.Tensor]:
    """(h in [0, 1), s, v) of each pixel.  Divisions are guarded where they would be by 0, so
    no NaN reaches a value or a gradient."""
    zero, one = constant(0, dtype=r.dtype), constant(1, dtype=r.dtype)
    v = _m.maximum(_m.maximum(r, g), b)
    rng = v - _m.minimum(_m.minimum(r, g), b)
    s = _a.where_v2(v > zero, rng / _a.where_v2(v > zero, v, one), zero)
    norm = one / (6.0 * _a.where_v2(rng > zero, rng, one))
    h = _a.where_v2(_m.equal(r, v), norm * (g - b),
                    _a.where_v2(_m.equal(g, v), norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0))
    h = _a.where_v2(rng > zero, h, zero)
    return _a.where_v2(h < zero, h + one, h), s, v


def _rgb(h: _g.Tensor, s: _g.Tensor, v: _g.Tensor) -> _g.Tensor:
    """[..., 3] RGB of HSV pixels (h in [0, 1]): TF's six sectors."""
    zero = constant(0, dtype=h.dtype)
    c = s * v
    m = v - c
    dh = h * 6.0
    sector = _m.floordiv(dh, 1.0)
    x = c * (1.0 - _m.abs(_m.mod(dh, 2.0) - 1.0))
    picks = {0: (c, x, zero), 1: (x, c, zero), 2: (zero, c, x), 3: (zero, x, c), 4: (x, zero, c), 5: (c, zero, x)}
    out = []
    for ch in range(3):
        val: Any = zero
        for k in range(5, -1, -1):
            val = _a.where_v2(_m.equal(sector, float(k)), picks[k][ch], val)
        out.append(val + m)
    return _a.stack(out, axis=-1)


def _rgb_op(h: _g.Tensor, s: _g.Tensor, v: _g.Tensor) -> _g.Tensor:
    """TF's HSVToRGB op: each channel a clipped tent of h * 6 (the sectors' formula inside
    [0, 1], red again at h = 1)."""
    dh = h * 6.0

    def tent(t: _g.Tensor) -> _g.Tensor:
        return _m.clip_by_value(t, 0.0, 1.0)
    dr = tent(_m.abs(dh - 3.0) - 1.0)
    dg = tent(2.0 - _m.abs(dh - 2.0))
    db = tent(2.0 - _m.abs(dh - 4.0))
    one_s = 1.0 - s
    return _a.stack([(one_s + s * d) * v for d in (dr, dg, db)], axis=-1)


def rgb_to_hsv(images: Any, name: Optional[str] = None) -> _g.Tensor:
    """[..., 3] RGB in [0, 1] -> [..., 3] (hue in [0, 1), saturation, value)."""
    x = _g.convert_to_tensor(images)
    with x.graph.as_default(), x.graph.name_scope(name or "rgb_to_hsv"):
        return _a.stack(list(_hsv(*_channels(x, "rgb_to_hsv"))), axis=-1)


def hsv_to_rgb(images: Any, name: Optional[str] = None) -> _g.Tensor:
    """[..., 3] HSV (hue in [0, 1]) -> [..., 3] RGB."""
    x = _g.convert_to_tensor(images)
    with x.graph.as_default(), x.graph.name_scope(name or "hsv_to_rgb"):
        return _rgb_op(*_channels(x, "hsv_to_rgb"))


def adjust_hue(image: Any, delta: Any, name: Optional[str] = None) -> _g.Tensor:
    """The hue turned by delta (in [-1, 1], a full turn being 1), in HSV, as TF's AdjustHue."""
    x = _g.convert_to_tensor(image)

    def turn(f: _g.Tensor) -> _g.Tensor:
        h, s, v = _hsv(*_channels(f, "adjust_hue"))
        h = _m.mod(h + _m.cast(delta, f.dtype), 1.0)   # floor-mod: already in [0, 1)
        return _rgb(h, s, v)
    with x.graph.as_default(), x.graph.name_scope(name or "adjust_hue"):
        return _float_and_back(x, turn)


def random_hue(image: Any, max_delta: float, seed: Optional[int] = None) -> _g.Tensor:
    """adjust_hue by a delta drawn uniformly from [-max_delta, max_delta], max_delta <= 0.5."""
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    x = _g.convert_to_tensor(image)
    with x.graph.as_default():
        return adjust_hue(x, random_uniform([], -max_delta, max_delta, seed=seed))


def adjust_saturation(image: Any, saturation_factor: Any, name: Optional[str] = None) -> _g.Tensor:
    """The saturation scaled by saturation_factor (clipped to [0, 1]), in HSV."""
    x = _g.convert_to_tensor(image)

    def scale(f: _g.Tensor) -> _g.Tensor:
        h, s, v = _hsv(*_channels(f, "adjust_saturation"))
        s = _m.clip_by_value(s * _m.cast(saturation_factor, f.dtype), 0.0, 1.0)
        return _rgb(h, s, v)
    with x.graph.as_default(), x.graph.name_scope(name or "adjust_saturation"):
        return _float_and_back(x, scale)


def random_saturation(image: Any, lower: float, upper: float, seed: Optional[int] = None) -> _g.Tensor:
    """adjust_saturation by a factor drawn uniformly from [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    x = _g.convert_to_tensor(image)
    with x.graph.as_default():
        return adjust_saturation(x, random_uniform([], lower, upper, seed=seed))
