"""More of TF's JPEG helpers in tf.image: decode_and_crop_jpeg (also tf.io's),
adjust_jpeg_quality and random_jpeg_quality, and tf.image.transpose (TF's name of
transpose_image).  Composed from the codec ops of image_codec_ops.py and plain graph ops, so
they run wherever those do.

decode_and_crop_jpeg decodes the whole file and then crops: its pixels are TF's decode_jpeg
followed by the crop.  TF's DecodeAndCropJpeg asks libjpeg for the window alone, which for a
JPEG with subsampled chroma (4:2:0, 4:2:2) upsamples the chroma at the window's edges
differently, so pixels near those edges can differ from TF's there (gray and 4:4:4 files agree).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a
from . import math_ops as _m
from .check_ops import Assert
from .constant_op import identity
from .image_adjust_ops import convert_image_dtype
from .image_codec_ops import decode_jpeg, encode_jpeg, encode_jpeg_variable_quality
from .image_more_ops import transpose_image
from .misc_more_ops import get_static_value
from .random_ops import random_uniform
from .slicing_ops import slice as _slice

__all__ = ["decode_and_crop_jpeg", "adjust_jpeg_quality", "random_jpeg_quality", "transpose"]

_CROP_FAILED = "jpeg::Uncompress failed. Invalid JPEG data or crop window."


def _crop_window(crop_window: Any) -> _g.Tensor:
    if isinstance(crop_window, _g.Tensor):
        w = crop_window
    else:
        arr = np.asarray(crop_window)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"Expected int32 passed to parameter 'crop_window' of op 'DecodeAndCropJpeg', got "
                            f"{crop_window!r} of type '{type(crop_window).__name__}' instead.")
        w = _g.convert_to_tensor(arr.astype(np.int32), name="crop_window")
    if w.dtype != _dt.int32:
        raise TypeError(f"decode_and_crop_jpeg: crop_window must be int32, got {w.dtype.name}")
    if w.shape.rank not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {w.shape.rank} for 'DecodeAndCropJpeg' "
                         f"(crop_window {w.shape})")
    return w


def _const_window(crop_window: Any) -> Any:
    """The window's four values when the graph knows them (for the static shape), else None."""
    v = get_static_value(crop_window) if isinstance(crop_window, _g.Tensor) else np.asarray(crop_window)
    if v is None or np.shape(v) != (4,) or min(int(v[2]), int(v[3])) <= 0:
        return None
    return [int(d) for d in v]


def decode_and_crop_jpeg(contents: Any, crop_window: Any, channels: int = 0, ratio: int = 1,
                         fancy_upscaling: bool = True, try_recover_truncated: bool = False,
                         acceptable_fraction: float = 1, dct_method: str = "",
                         name: Optional[str] = None) -> _g.Tensor:
    """The window crop_window = [y, x, height, width] of a JPEG (after the `ratio` downscale,
    as TF), as [height, width, channels] uint8.  A window that is not inside the image, or
    has a zero or negative size, is TF's InvalidArgumentError at run time."""
    with _g.name_scope(name or "DecodeAndCropJpeg"):
        img = decode_jpeg(contents, channels=channels, ratio=ratio, fancy_upscaling=fancy_upscaling,
                          try_recover_truncated=try_recover_truncated, acceptable_fraction=acceptable_fraction,
                          dct_method=dct_method)
        w = _crop_window(crop_window)
        n_ok = Assert(_m.equal(_a.size(w), 4), ["crop_size must have four elements", _a.shape(w)], name="check_size")
        with _g.control_dependencies([n_ok]):
            # a 4-vector whatever was fed, so the window check below can index it
            w4 = _a.reshape(_a.concat([w, _a.zeros([4], _dt.int32)], 0)[:4], [4])
        y, x, h, wd = w4[0], w4[1], w4[2], w4[3]
        hw = _a.shape(img)
        zero = _g.convert_to_tensor(0, dtype=_dt.int32)
        conds = [_m.greater_equal(y, zero), _m.greater_equal(x, zero), _m.greater(h, zero), _m.greater(wd, zero),
                 _m.less_equal(y + h, hw[0]), _m.less_equal(x + wd, hw[1])]
        ok = conds[0]
        for c in conds[1:]:
            ok = _m.logical_and(ok, c)
        check = Assert(ok, [_CROP_FAILED, "crop window:", w4, "image shape:", hw], name="check_window")
        with _g.control_dependencies([check]):
            begin = _a.stack([y, x, zero])
            size = _a.stack([h, wd, _g.convert_to_tensor(-1, dtype=_dt.int32)])
            out = _slice(img, begin, size)
        static = _const_window(crop_window)
        out.set_shape([static[2] if static is not None else None, static[3] if static is not None else None,
                       channels or None])
        return identity(out, name="cropped")


def _quality(jpeg_quality: Any) -> Any:
    """A Python int quality, or an int32 scalar tensor (TF's checks of either)."""
    if isinstance(jpeg_quality, _g.Tensor):
        if jpeg_quality.dtype != _dt.int32:
            raise TypeError(f"adjust_jpeg_quality: jpeg_quality must be int32, got {jpeg_quality.dtype.name}")
        if jpeg_quality.shape.rank not in (None, 0):
            raise ValueError(f"Shape must be rank 0 but is rank {jpeg_quality.shape.rank} for "
                             "'EncodeJpegVariableQuality' (jpeg_quality)")
        return jpeg_quality
    if isinstance(jpeg_quality, (bool, np.bool_)) or not isinstance(jpeg_quality, (int, np.integer)):
        raise TypeError(f"Expected int32, but got {jpeg_quality!r} of type '{type(jpeg_quality).__name__}'.")
    return int(jpeg_quality)


def _encode_at(image: _g.Tensor, quality: Any) -> _g.Tensor:
    """encode_jpeg at `quality`: a Python int (checked when the graph is built), or an int32
    tensor read when the op runs (TF's EncodeJpegVariableQuality, one op whatever the quality)."""
    if not isinstance(quality, _g.Tensor):
        if not 0 <= quality <= 100:
            # TF's EncodeJpegVariableQuality fails at run time; the kernel of a constant
            # quality would too, so say it when the graph is built instead
            raise InvalidArgumentError(f"quality must be in [0,100], got {quality}")
        return encode_jpeg(image, quality=quality)
    return encode_jpeg_variable_quality(image, quality)


def adjust_jpeg_quality(image: Any, jpeg_quality: Any, dct_method: str = "", name: Optional[str] = None) -> _g.Tensor:
    """The image encoded as a JPEG of quality jpeg_quality (0..100) and decoded again: as TF,
    converted to uint8 (saturating) first and back to its dtype after.  collflow's encoder
    writes other bytes than libjpeg's, so the pixels are close to TF's, not equal."""
    return _adjust(image, _quality(jpeg_quality), dct_method, name or "adjust_jpeg_quality")


def _adjust(image: Any, q: Any, dct_method: str, name: str) -> _g.Tensor:
    with _g.name_scope(name):
        image = _g.convert_to_tensor(image, name="image")
        channels = image.shape.as_list()[-1] if image.shape.rank else None
        orig = image.dtype
        u8 = convert_image_dtype(image, _dt.uint8, saturate=True)
        data = _encode_at(u8, q)
        # a channel count decode_jpeg refuses is left to the encoder's run-time error, as TF
        dec = decode_jpeg(data, channels=channels if channels in (1, 3) else 0, dct_method=dct_method)
        return convert_image_dtype(dec, orig, saturate=True)


def random_jpeg_quality(image: Any, min_jpeg_quality: int, max_jpeg_quality: int,
                        seed: Optional[int] = None) -> _g.Tensor:
    """adjust_jpeg_quality at a quality drawn uniformly from [min_jpeg_quality, max_jpeg_quality)."""
    if (min_jpeg_quality < 0 or max_jpeg_quality < 0 or min_jpeg_quality > 100
            or max_jpeg_quality > 100):
        raise ValueError("jpeg encoding range must be between 0 and 100.")
    if min_jpeg_quality >= max_jpeg_quality:
        raise ValueError("`min_jpeg_quality` must be less than `max_jpeg_quality`.")
    q = random_uniform([], min_jpeg_quality, max_jpeg_quality, seed=seed, dtype=_dt.int32)
    return _adjust(image, q, "", "adjust_jpeg_quality")


def transpose(image: Any, name: Optional[str] = None) -> _g.Tensor:
    """Height and width swapped, of an image [h, w, c] or a batch [n, h, w, c]."""
    with _g.name_scope(name or "transpose"):
        return transpose_image(image)
