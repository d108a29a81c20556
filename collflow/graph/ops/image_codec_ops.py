"""TF1's image codecs: tf.image.decode_jpeg / decode_png / decode_gif / decode_bmp /
decode_image, encode_jpeg / encode_png, is_jpeg and extract_jpeg_shape (also under tf.io).
Host kernels in kernels/image_codec_kernels.py (the codecs themselves: kernels/png_codec.py,
jpeg_codec.py, gif_bmp_codec.py).

The contents are a scalar string holding the file's bytes (as tf.read_file gives them).  As
TF's, decode_jpeg, decode_png and decode_gif look at the data's signature and decode a JPEG,
PNG or (single-frame, for the first two) GIF whichever of them was asked for; decode_bmp
reads BMP only.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .op_util import single

__all__ = ["decode_jpeg", "decode_png", "decode_gif", "decode_bmp", "decode_image", "encode_jpeg", "encode_png",
           "is_jpeg", "extract_jpeg_shape"]


def _contents(x: Any, what: str) -> _g.Tensor:
    t = _g.convert_to_tensor(x, dtype=_dt.string) if not isinstance(x, _g.Tensor) else x
    if t.dtype != _dt.string:
        raise TypeError(f"{what}: contents must be a string tensor, got {t.dtype.name}")
    if t.shape.rank not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {t.shape.rank} for '{what}' (contents {t.shape})")
    return t


def _hw(op: _g.Operation, channels: Optional[int]) -> TensorShape:
    return TensorShape([None, None, channels or None])


register_op("DecodeJpeg", lambda op: [(_dt.uint8, _hw(op, op.attrs["channels"]))], host_only=True,
            doc="a JPEG (or PNG, single-frame GIF) decoded to [height, width, channels] uint8")
register_op("DecodePng", lambda op: [(op.attrs["dtype"], _hw(op, op.attrs["channels"]))], host_only=True,
            doc="a PNG (or JPEG, single-frame GIF) decoded to [height, width, channels] uint8/uint16")
register_op("DecodeGif", lambda op: [(_dt.uint8, TensorShape([None, None, None, 3]))], host_only=True,
            doc="a GIF's frames [frames, height, width, 3] uint8")
register_op("DecodeBmp", lambda op: [(_dt.uint8, _hw(op, op.attrs["channels"]))], host_only=True,
            doc="a BMP decoded to [height, width, channels] uint8")
register_op("DecodeImage", lambda op: [(op.attrs["dtype"], TensorShape(None) if op.attrs["expand_animations"]
                                        else _hw(op, op.attrs["channels"]))], host_only=True,
            doc="a JPEG, PNG, GIF or BMP decoded by its signature")
register_op("EncodeJpeg", lambda op: [(_dt.string, TensorShape([]))], host_only=True, doc="a JPEG of an image")
register_op("EncodeJpegVariableQuality", lambda op: [(_dt.string, TensorShape([]))], host_only=True,
            doc="a JPEG of an image at a quality read when the op runs")
register_op("EncodePng", lambda op: [(_dt.string, TensorShape([]))], host_only=True, doc="a PNG of an image")
register_op("IsJpeg", lambda op: [(_dt.bool_, TensorShape([]))], host_only=True, doc="whether the data is a JPEG")
register_op("ExtractJpegShape", lambda op: [(op.attrs["output_type"], TensorShape([3]))], host_only=True,
            doc="a JPEG's [height, width, channels] from its header")
not_differentiable("DecodeJpeg", "DecodePng", "DecodeGif", "DecodeBmp", "DecodeImage", "EncodeJpeg",
                   "EncodeJpegVariableQuality", "EncodePng",
                   "IsJpeg", "ExtractJpegShape")


def _channels(channels: Any, allowed: tuple, what: str) -> int:
    c = 0 if channels is None else int(channels)
    if c not in allowed:
        raise ValueError(f"{what}: channels must be one of {list(allowed)}, got {channels}")
    return c


def decode_jpeg(contents: Any, channels: int = 0, ratio: int = 1, fancy_upscaling: bool = True,
                try_recover_truncated: bool = False, acceptable_fraction: float = 1, dct_method: str = "",
                name: Optional[str] = None) -> _g.Tensor:
    """A JPEG as [height, width, channels] uint8: channels 0 (the JPEG's own), 1 (gray) or 3
    (RGB).  dct_method '' or 'INTEGER_FAST' (TF's default) and 'INTEGER_ACCURATE' give TF's
    (libjpeg-turbo's) pixels exactly; fancy_upscaling=False replicates the chroma samples.
    try_recover_truncated decodes what a truncated file holds (the rest gray).  ratio 2, 4
    or 8 downscales while decoding with libjpeg's reduced IDCTs (TF's pixels too)."""
    c = _channels(channels, (0, 1, 3, 4), "decode_jpeg")
    if int(ratio) not in (1, 2, 4, 8):
        raise ValueError(f"decode_jpeg: ratio must be 1, 2, 4, or 8, got {ratio}")
    if dct_method not in ("", "INTEGER_FAST", "INTEGER_ACCURATE"):
        raise ValueError(f"decode_jpeg: dct_method must be one of '', 'INTEGER_FAST', 'INTEGER_ACCURATE', "
                         f"got {dct_method!r}")
    return single("DecodeJpeg", [_contents(contents, "decode_jpeg")],
                  {"channels": c, "ratio": int(ratio), "fancy_upscaling": bool(fancy_upscaling),
                   "try_recover_truncated": bool(try_recover_truncated),
                   "acceptable_fraction": float(acceptable_fraction), "dct_method": str(dct_method)},
                  name=name or "DecodeJpeg")


def decode_png(contents: Any, channels: int = 0, dtype: Any = _dt.uint8, name: Optional[str] = None) -> _g.Tensor:
    """A PNG as [height, width, channels] of uint8 or uint16: channels 0 (the PNG's own, after
    palette and tRNS expansion), 1 (gray), 3 (RGB) or 4 (RGBA)."""
    dt = _dt.as_dtype(dtype)
    if dt not in (_dt.uint8, _dt.uint16):
        raise TypeError(f"decode_png: dtype must be uint8 or uint16, got {dt.name}")
    return single("DecodePng", [_contents(contents, "decode_png")],
                  {"channels": _channels(channels, (0, 1, 3, 4), "decode_png"), "dtype": dt},
                  name=name or "DecodePng")


def decode_gif(contents: Any, name: Optional[str] = None) -> _g.Tensor:
    """A GIF's frames as [frames, height, width, 3] uint8 (TF's compositing of the frames)."""
    return single("DecodeGif", [_contents(contents, "decode_gif")], {}, name=name or "DecodeGif")


def decode_bmp(contents: Any, channels: int = 0, name: Optional[str] = None) -> _g.Tensor:
    """An uncompressed 24/32-bit (or 8-bit gray) BMP as [height, width, channels] uint8:
    channels 0, 3 or 4."""
    return single("DecodeBmp", [_contents(contents, "decode_bmp")],
                  {"channels": _channels(channels, (0, 3, 4), "decode_bmp")}, name=name or "DecodeBmp")


def decode_image(contents: Any, channels: Optional[int] = None, dtype: Any = _dt.uint8, name: Optional[str] = None,
                 expand_animations: bool = True) -> _g.Tensor:
    """A JPEG, PNG, GIF or BMP, by its signature, as [height, width, channels] (a GIF as
    [frames, height, width, 3] unless expand_animations=False, which keeps its first frame),
    converted to dtype as convert_image_dtype (uint8, uint16, or a float type in [0, 1])."""
    if channels not in (None, 0, 1, 3, 4):
        raise ValueError("channels must be in (None, 0, 1, 3, 4)")
    dt = _dt.as_dtype(dtype)
    if dt not in (_dt.uint8, _dt.uint16, _dt.float16, _dt.float32, _dt.float64):
        raise TypeError(f"decode_image: dtype must be uint8, uint16 or a float type, got {dt.name}")
    return single("DecodeImage", [_contents(contents, "decode_image")],
                  {"channels": int(channels or 0), "dtype": dt, "expand_animations": bool(expand_animations)},
                  name=name or "decode_image")


def encode_jpeg(image: Any, format: str = "", quality: int = 95, progressive: bool = False,  # noqa: A002
                optimize_size: bool = False, chroma_downsampling: bool = True, density_unit: str = "in",
                x_density: int = 300, y_density: int = 300, xmp_metadata: str = "",
                name: Optional[str] = None) -> _g.Tensor:
    """A baseline JPEG of a [height, width, 1 or 3] uint8 image (format '' by the channels,
    'grayscale' or 'rgb'; chroma_downsampling gives 4:2:0, else 4:4:4).  progressive and
    optimize_size are accepted and give a baseline file with the standard tables."""
    x = _g.convert_to_tensor(image, dtype=_dt.uint8) if not isinstance(image, _g.Tensor) else image
    if x.dtype != _dt.uint8:
        raise TypeError(f"encode_jpeg: image must be uint8, got {x.dtype.name}")
    if x.shape.rank not in (None, 3):
        raise ValueError(f"encode_jpeg: image must be 3-dimensional, got shape {x.shape}")
    if format not in ("", "grayscale", "rgb"):
        raise ValueError(f"encode_jpeg: format must be '', 'grayscale' or 'rgb', got {format!r}")
    if density_unit not in ("in", "cm"):
        raise ValueError(f"encode_jpeg: density_unit must be 'in' or 'cm', got {density_unit!r}")
    if not 0 <= int(quality) <= 100:
        raise ValueError(f"encode_jpeg: quality must be in [0,100], got {quality}")
    return single("EncodeJpeg", [x], {"format": format, "quality": int(quality), "progressive": bool(progressive),
                                      "optimize_size": bool(optimize_size),
                                      "chroma_downsampling": bool(chroma_downsampling), "density_unit": density_unit,
                                      "x_density": int(x_density), "y_density": int(y_density),
                                      "xmp_metadata": str(xmp_metadata)}, name=name or "EncodeJpeg")


def encode_jpeg_variable_quality(images: Any, quality: Any, name: Optional[str] = None) -> _g.Tensor:
    """encode_jpeg with its defaults at a quality given as an int32 scalar tensor (TF's
    EncodeJpegVariableQuality): a quality outside [0, 100] is InvalidArgumentError at run time."""
    x = _g.convert_to_tensor(images, dtype=_dt.uint8) if not isinstance(images, _g.Tensor) else images
    if x.dtype != _dt.uint8:
        raise TypeError(f"encode_jpeg: image must be uint8, got {x.dtype.name}")
    if x.shape.rank not in (None, 3):
        raise ValueError(f"encode_jpeg: image must be 3-dimensional, got shape {x.shape}")
    q = _g.convert_to_tensor(quality, dtype=_dt.int32)
    return single("EncodeJpegVariableQuality", [x, q], {}, name=name or "EncodeJpegVariableQuality")


def encode_png(image: Any, compression: int = -1, name: Optional[str] = None) -> _g.Tensor:
    """A PNG of a [height, width, 1-4 channels] uint8 or uint16 image (compression -1: zlib's
    default, 0-9)."""
    x = _g.convert_to_tensor(image) if not isinstance(image, _g.Tensor) else image
    if x.dtype not in (_dt.uint8, _dt.uint16):
        raise TypeError(f"encode_png: image must be uint8 or uint16, got {x.dtype.name}")
    if x.shape.rank not in (None, 3):
        raise ValueError(f"encode_png: image must be 3-dimensional, got shape {x.shape}")
    if not -1 <= int(compression) <= 9:
        raise ValueError(f"encode_png: compression should be in [-1,9], got {compression}")
    return single("EncodePng", [x], {"compression": int(compression)}, name=name or "EncodePng")


def is_jpeg(contents: Any, name: Optional[str] = None) -> _g.Tensor:
    """Whether the data starts as a JPEG does (TF's test of its first three bytes)."""
    return single("IsJpeg", [_contents(contents, "is_jpeg")], {}, name=name or "is_jpeg")


def extract_jpeg_shape(contents: Any, output_type: Any = _dt.int32, name: Optional[str] = None) -> _g.Tensor:
    """A JPEG's [height, width, channels] from its header, without decoding it."""
    dt = _dt.as_dtype(output_type)
    if dt not in (_dt.int32, _dt.int64):
        raise TypeError(f"extract_jpeg_shape: output_type must be int32 or int64, got {dt.name}")
    return single("ExtractJpegShape", [_contents(contents, "extract_jpeg_shape")], {"output_type": dt},
                  name=name or "ExtractJpegShape")

