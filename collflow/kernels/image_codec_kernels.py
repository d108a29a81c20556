"""Kernels of graph/ops/image_codec_ops.py, on the host: the codecs of png_codec.py,
jpeg_codec.py, jpeg_encoder.py and gif_bmp_codec.py behind TF's image ops."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from ..errors import CollflowError, InvalidArgumentError
from . import gif_bmp_codec as _gb
from . import jpeg_codec as _jpeg
from . import jpeg_encoder as _jpeg_encoder
from . import png_codec as _png
from .registry import KernelContext, register_kernel


def _bytes(x: Any) -> bytes:
    return _dt.string_bytes(np.asarray(x, dtype=object).item())


_text = _dt.bytes_text


def _format(data: bytes) -> str:
    if _jpeg.is_jpeg(data):
        return "jpeg"
    if _png.is_png(data):
        return "png"
    if _gb.is_gif(data):
        return "gif"
    if _gb.is_bmp(data):
        return "bmp"
    return ""


def _unknown(data: bytes, what: str) -> InvalidArgumentError:
    head = " ".join(f"0x{b:02x}" for b in data[:4])
    return InvalidArgumentError(f"Unknown image file format. One of JPEG, PNG, GIF, BMP required "
                                f"({what} got data starting with {head or 'nothing'})")


def _guard(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Runs fn, giving the codecs' errors the op (and any other failure on bad data a clear
    InvalidArgumentError)."""
    def run(*args: Any) -> Any:
        try:
            return fn(*args)
        except CollflowError as e:
            if e.op is None:
                raise type(e)(e.message, op) from None
            raise
        except (ValueError, IndexError, KeyError, OverflowError) as e:
            raise InvalidArgumentError(f"{op.type}: invalid image data ({e})", op) from None
    return run


def _first_frame_gif(data: bytes, what: str) -> np.ndarray:
    frames = _gb.decode_gif(data)
    if frames.shape[0] != 1:
        raise InvalidArgumentError(f"Got {frames.shape[0]} frames, but animated gifs can only be decoded by "
                                   f"tf.io.decode_gif or tf.io.decode_image ({what})")
    return frames[0]


def _gray_rgb(img: np.ndarray, channels: int, what: str) -> np.ndarray:
    """A 3-channel image to 1 channel (the JPEG/GIF luma weights) or 4 (opaque alpha)."""
    if channels in (0, 3):
        return img
    if channels == 4:
        return np.concatenate([img, np.full(img.shape[:2] + (1,), 255, np.uint8)], axis=2)
    v = img.astype(np.int64)
    return ((19595 * v[..., 0] + 38470 * v[..., 1] + 7471 * v[..., 2] + 32768) >> 16).astype(np.uint8)[..., None]


def _decode_jpeg_data(data: bytes, channels: int, attrs: Any) -> np.ndarray:
    if channels == 4:
        raise InvalidArgumentError("JPEG does not support 4 channels")
    return _jpeg.decode(data, channels, fancy_upscaling=attrs.get("fancy_upscaling", True), ratio=attrs.get("ratio", 1),
                        try_recover_truncated=attrs.get("try_recover_truncated", False),
                        acceptable_fraction=attrs.get("acceptable_fraction", 1.0),
                        dct_method=attrs.get("dct_method", ""))


def _decode_3d(data: bytes, channels: int, sixteen: bool, attrs: Any, what: str) -> np.ndarray:
    """decode_jpeg / decode_png: whichever of JPEG, PNG, single-frame GIF the data is."""
    if not data:
        raise InvalidArgumentError("Input is empty.")
    fmt = _format(data)
    if fmt == "png":
        return _png.decode(data, channels, sixteen)
    if fmt == "jpeg":
        img = _decode_jpeg_data(data, channels, attrs)
    elif fmt == "gif":
        img = _gray_rgb(_first_frame_gif(data, what), channels, what)
    else:
        raise InvalidArgumentError(f"Expected image (JPEG, PNG, or GIF), got unknown format starting with "
                                   f"{data[:16]!r} ({what})")
    return img.astype(np.uint16) * 257 if sixteen else img


@register_kernel("DecodeJpeg")
def _decode_jpeg(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    return _guard(op, lambda x: _decode_3d(_bytes(x), a["channels"], False, a, "decode_jpeg"))


@register_kernel("DecodePng")
def _decode_png(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    sixteen = a["dtype"].name == "uint16"
    return _guard(op, lambda x: _decode_3d(_bytes(x), a["channels"], sixteen, {}, "decode_png"))


def _gif_frames(data: bytes) -> np.ndarray:
    if not data:
        raise InvalidArgumentError("Input is empty.")
    fmt = _format(data)
    if fmt == "gif":
        return _gb.decode_gif(data)
    if fmt == "png":
        return _png.decode(data, 3)[None]
    if fmt == "jpeg":
        return _jpeg.decode(data, 3)[None]
    raise InvalidArgumentError(f"Expected image (JPEG, PNG, or GIF), got unknown format starting with "
                               f"{data[:16]!r} (decode_gif)")


@register_kernel("DecodeGif")
def _decode_gif(op: Any, ctx: KernelContext) -> Any:
    return _guard(op, lambda x: _gif_frames(_bytes(x)))


def _bmp(data: bytes, channels: int) -> np.ndarray:
    fmt = _format(data)
    if fmt and fmt != "bmp":
        raise InvalidArgumentError(f"Trying to decode {fmt.upper()} format using DecodeBmp op. Use "
                                   f"`decode_{fmt}` or `decode_image` instead.")
    if data[:2] != b"BM" and len(data) >= 2:
        raise InvalidArgumentError("Invalid BMP data (no 'BM' signature)")
    return _gb.decode_bmp(data, channels)


@register_kernel("DecodeBmp")
def _decode_bmp(op: Any, ctx: KernelContext) -> Any:
    ch = op.attrs["channels"]
    return _guard(op, lambda x: _bmp(_bytes(x), ch))


def _convert(img: np.ndarray, dt: Any) -> np.ndarray:
    """convert_image_dtype from uint8/uint16 to uint8, uint16 or a float type (TF's scaling)."""
    name = dt.name
    if name == img.dtype.name:
        return img
    if name == "uint16":
        return img.astype(np.uint16) * 257
    if name == "uint8":
        return (img >> 8).astype(np.uint8)
    f = np.dtype(dt.np)
    return img.astype(f) * f.type(1.0 / np.iinfo(img.dtype).max)


def _decode_image(data: bytes, channels: int, dt: Any, expand: bool) -> np.ndarray:
    if not data:
        raise InvalidArgumentError("Input is empty.")
    fmt = _format(data)
    if fmt == "jpeg":
        if channels == 4:
            raise InvalidArgumentError("Channels must be in (None, 0, 1, 3) when decoding JPEG images")
        img = _decode_jpeg_data(data, channels, {})
    elif fmt == "png":
        img = _png.decode(data, channels, dt.name != "uint8")
    elif fmt == "gif":
        if channels not in (0, 3):
            raise InvalidArgumentError("Channels must be in (None, 0, 3) when decoding GIF images")
        img = _gb.decode_gif(data)
        if not expand:
            img = img[0]
    elif fmt == "bmp":
        if channels == 1:
            raise InvalidArgumentError("Channels must be in (None, 0, 3, 4) when decoding BMP images")
        img = _gb.decode_bmp(data, channels)
    else:
        raise _unknown(data, "decode_image")
    return _convert(img, dt)


@register_kernel("DecodeImage")
def _decode_image_k(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    return _guard(op, lambda x: _decode_image(_bytes(x), a["channels"], a["dtype"], a["expand_animations"]))


def _encode_jpeg(img: Any, a: Any) -> Any:
    x = np.asarray(img)
    if x.ndim != 3:
        raise InvalidArgumentError(f"image must be 3-dimensional, got shape {list(x.shape)}")
    c = x.shape[2]
    fmt = a["format"]
    if fmt == "" and c not in (1, 3):
        raise InvalidArgumentError(f"image must have 1 or 3 channels, got {list(x.shape)}")
    want_c = {"": c, "grayscale": 1, "rgb": 3}[fmt]
    if want_c != c:
        raise InvalidArgumentError(f"format {fmt!r} needs {want_c} channels, got {c}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise InvalidArgumentError(f"Invalid image size {x.shape[0]}x{x.shape[1]}")
    b = _jpeg_encoder.encode(x.astype(np.uint8), quality=a["quality"], chroma=(2, 2) if a["chroma_downsampling"] else (1, 1),
                     density_unit=1 if a["density_unit"] == "in" else 2, x_density=a["x_density"],
                     y_density=a["y_density"], xmp_metadata=a["xmp_metadata"].encode("utf-8", "surrogateescape"))
    return np.array(_text(b), dtype=object)


@register_kernel("EncodeJpeg")
def _encode_jpeg_k(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    return _guard(op, lambda x: _encode_jpeg(x, a))


_JPEG_DEFAULTS = {"format": "", "progressive": False, "optimize_size": False, "chroma_downsampling": True,
                  "density_unit": "in", "x_density": 300, "y_density": 300, "xmp_metadata": ""}


@register_kernel("EncodeJpegVariableQuality")
def _encode_jpeg_variable_quality_k(op: Any, ctx: KernelContext) -> Any:
    def run(x: Any, q: Any) -> Any:
        quality = int(np.asarray(q))
        if not 0 <= quality <= 100:
            raise InvalidArgumentError(f"quality must be in [0,100], got {quality}")
        return _encode_jpeg(x, dict(_JPEG_DEFAULTS, quality=quality))
    return _guard(op, run)


@register_kernel("EncodePng")
def _encode_png_k(op: Any, ctx: KernelContext) -> Any:
    level = op.attrs["compression"]
    return _guard(op, lambda x: np.array(_text(_png.encode(np.asarray(x), level)), dtype=object))


@register_kernel("IsJpeg")
def _is_jpeg(op: Any, ctx: KernelContext) -> Any:
    return lambda x: np.array(_jpeg.is_jpeg(_bytes(x)))


def _jpeg_shape(data: bytes, dt: Any) -> np.ndarray:
    if not _jpeg.is_jpeg(data):
        raise InvalidArgumentError(f"Invalid JPEG data, size {len(data)}")
    fr = _jpeg.parse(data, shape_only=True)[0]
    return np.array([fr.height, fr.width, len(fr.comps)], dtype=dt.np)


@register_kernel("ExtractJpegShape")
def _extract_jpeg_shape(op: Any, ctx: KernelContext) -> Any:
    dt = op.attrs["output_type"]
    return _guard(op, lambda x: _jpeg_shape(_bytes(x), dt))
