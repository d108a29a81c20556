"""Summary ops (TensorFlow 1.x's tf.summary.scalar/histogram/image/audio/text/merge/merge_all).

Each op's value is a serialized `Summary` protocol buffer (bytes; a scalar string tensor),
exactly what TensorFlow 1.x returns, for `FileWriter.add_summary`.  Tags follow TF1's
summary scope: the name under the current name scope, made unique like an op name
("loss", "loss_1", "train/loss"); with `family`, "family/<scope>/family/name".  The ops
run on the host (their inputs are copied there from a GPU) and are not differentiable.
"""
from __future__ import annotations

import re
import struct
import zlib
from typing import Any, List, Optional, Sequence

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.registry import register_op, not_differentiable
from ..graph.shape import TensorShape
from ..kernels.device import to_host as _host
from ..kernels.registry import register_kernel, KernelContext
from ..platform import tf_logging
from ..runtime.placement import register_host_only
from . import proto

__all__ = ["scalar", "histogram", "image", "audio", "text", "merge", "merge_all"]

_OPS = ("ScalarSummary", "HistogramSummary", "ImageSummary", "AudioSummaryV2", "TextSummary", "MergeSummary")


# -- shape functions -------------------------------------------------------------------------------

def _numeric(op: _g.Operation, what: str) -> None:
    t = op.inputs[0]
    if not (t.dtype.is_floating or t.dtype.is_integer):
        raise ValueError(f"{what} needs a real numeric tensor, got {t.name} of dtype {t.dtype.name}")


def _scalar_spec(op: _g.Operation) -> list:
    _numeric(op, "tf.summary.scalar")
    if op.inputs[0].shape.rank not in (None, 0):
        raise ValueError(f"tf.summary.scalar needs a scalar, got {op.inputs[0].name} of shape {op.inputs[0].shape} "
                         "(reduce it first, e.g. with cf.reduce_mean)")
    return [(_dt.string, TensorShape(()))]


def _histogram_spec(op: _g.Operation) -> list:
    _numeric(op, "tf.summary.histogram")
    return [(_dt.string, TensorShape(()))]


def _image_spec(op: _g.Operation) -> list:
    t = op.inputs[0]
    if t.dtype not in (_dt.uint8, _dt.float16, _dt.float32, _dt.float64):
        raise ValueError(f"tf.summary.image needs uint8 or float images, got {t.name} of dtype {t.dtype.name}")
    dims = t.shape.dims
    if dims is not None:
        if len(dims) != 4:
            raise ValueError(f"tf.summary.image needs a 4-D tensor [batch, height, width, channels], "
                             f"got {t.name} of shape {t.shape}")
        if dims[3] is not None and dims[3] not in (1, 3, 4):
            raise ValueError(f"tf.summary.image needs 1, 3 or 4 channels, got {dims[3]} ({t.name}, shape {t.shape})")
    if int(op.attrs["max_images"]) < 1:
        raise ValueError(f"max_outputs must be >= 1, got {op.attrs['max_images']}")
    return [(_dt.string, TensorShape(()))]


def _audio_spec(op: _g.Operation) -> list:
    t = op.inputs[0]
    if not t.dtype.is_floating:
        raise ValueError(f"tf.summary.audio needs float audio, got {t.name} of dtype {t.dtype.name}")
    if t.shape.rank not in (None, 2, 3):
        raise ValueError(f"tf.summary.audio needs [batch, frames] or [batch, frames, channels], got {t.name} of "
                         f"shape {t.shape}")
    if op.inputs[1].shape.rank not in (None, 0):
        raise ValueError(f"tf.summary.audio: sample_rate must be a scalar, got shape {op.inputs[1].shape}")
    if int(op.attrs["max_outputs"]) < 1:
        raise ValueError(f"max_outputs must be >= 1, got {op.attrs['max_outputs']}")
    return [(_dt.string, TensorShape(()))]


def _text_spec(op: _g.Operation) -> list:
    t = op.inputs[0]
    if t.dtype != _dt.string:
        raise ValueError(f"Expected tensor {t.name} to have dtype string, got {t.dtype.name}")
    return [(_dt.string, TensorShape(()))]


def _merge_spec(op: _g.Operation) -> list:
    if not op.inputs:
        raise ValueError("merge needs at least one summary")
    bad = [t.name for t in op.inputs if t.dtype != _dt.string]
    if bad:
        raise ValueError(f"merge takes serialized summaries (string tensors); not strings: {', '.join(bad)}")
    return [(_dt.string, TensorShape(()))]


register_op("ScalarSummary", _scalar_spec, doc="a serialized Summary with one simple_value")
register_op("HistogramSummary", _histogram_spec, doc="a serialized Summary with one histogram")
register_op("ImageSummary", _image_spec, doc="a serialized Summary with PNG images")
register_op("AudioSummaryV2", _audio_spec, doc="a serialized Summary with WAV clips")
register_op("TextSummary", _text_spec, doc="a serialized Summary with a string tensor (text plugin)")
register_op("MergeSummary", _merge_spec, doc="the union of serialized Summaries")
not_differentiable(*_OPS)
register_host_only(*_OPS)


# -- kernels -----------------------------------------------------------------------------------------

def _serialized(summary: proto.Summary) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = summary.SerializeToString()
    return out


@register_kernel("ScalarSummary", "CPU")
def _scalar_kernel(op: Any, ctx: KernelContext) -> Any:
    tag = op.attrs["tag"]

    def run(x: Any) -> np.ndarray:
        a = _host(x)
        if a.shape != ():
            raise InvalidArgumentError(f"tf.summary.scalar {tag!r} needs a scalar, got a value of shape {a.shape}", op)
        return _serialized(proto.Summary(value=[proto.Summary.Value(tag=tag, simple_value=float(a))]))
    return run


def _default_bucket_limits() -> np.ndarray:
    """TensorFlow's histogram buckets: +-1e-12 growing by 10% up to 1e20, then +-DBL_MAX, and 0."""
    pos = []
    v = 1.0e-12
    while v < 1.0e20:
        pos.append(v)
        v *= 1.1
    pos.append(np.finfo(np.float64).max)
    neg = [-x for x in reversed(pos)]
    return np.array(neg + [0.0] + pos, dtype=np.float64)


_BUCKET_LIMITS = _default_bucket_limits()


def histogram_proto(values: np.ndarray) -> proto.HistogramProto:
    """TensorFlow's HistogramProto of `values` over the default buckets: bucket i counts the
    values in [limit[i-1], limit[i]); runs of empty buckets are collapsed into one entry."""
    v = np.asarray(values, dtype=np.float64).ravel()
    limits = _BUCKET_LIMITS
    counts = np.bincount(np.minimum(np.searchsorted(limits, v, side="right"), len(limits) - 1),
                         minlength=len(limits))
    h = proto.HistogramProto(num=float(v.size), sum=float(v.sum()), sum_squares=float(np.dot(v, v)))
    if v.size:
        h.min, h.max = float(v.min()), float(v.max())
    else:  # TensorFlow's empty histogram
        h.min, h.max = float(limits[-1]), float(-limits[-1])
    nz = np.flatnonzero(counts)
    i, n = 0, len(limits)
    for j in list(nz) + [n]:
        if j > i:  # the empty run [i, j) becomes one entry at its last limit
            h.bucket_limit.append(float(limits[j - 1]))
            h.bucket.append(0.0)
        if j < n:
            h.bucket_limit.append(float(limits[j]))
            h.bucket.append(float(counts[j]))
        i = j + 1
    return h


@register_kernel("HistogramSummary", "CPU")
def _histogram_kernel(op: Any, ctx: KernelContext) -> Any:
    tag = op.attrs["tag"]

    def run(x: Any) -> np.ndarray:
        a = _host(x).astype(np.float64, copy=False)
        if a.size and not np.all(np.isfinite(a)):
            what = "Nan" if np.isnan(a).any() else "Infinity"
            raise InvalidArgumentError(f"{what} in summary histogram for: {tag}", op)
        return _serialized(proto.Summary(value=[proto.Summary.Value(tag=tag, histo=histogram_proto(a))]))
    return run


def encode_png(img: np.ndarray) -> bytes:
    """A PNG of a uint8 [height, width, channels] image (1: gray, 3: RGB, 4: RGBA)."""
    h, w, c = img.shape
    color_type = {1: 0, 3: 2, 4: 6}[c]
    rows = np.concatenate([np.zeros((h, 1), np.uint8), np.ascontiguousarray(img, np.uint8).reshape(h, w * c)], axis=1)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


_BAD_COLOR = np.array([255, 0, 0, 255], dtype=np.uint8)


def to_uint8_image(img: np.ndarray) -> np.ndarray:
    """TensorFlow's ImageSummary conversion of one float image: scaled by 255/max when no
    value is negative, else by 127/max|value| around 128; pixels with a non-finite channel
    become the bad color (red)."""
    depth = img.shape[-1]
    flat = img.reshape(-1, depth).astype(np.float32)
    finite = np.all(np.isfinite(flat), axis=1)
    good = flat[finite]
    lo = float(good.min()) if good.size else np.inf
    hi = float(good.max()) if good.size else -np.inf
    if lo < 0:
        m = max(abs(lo), abs(hi))
        scale, offset = (0.0 if m < 1e-6 else 127.0 / m), 128.0
    else:
        scale, offset = (0.0 if hi < 1e-6 else 255.0 / hi), 0.0
    out = np.empty(flat.shape, dtype=np.uint8)
    with np.errstate(invalid="ignore"):
        out[finite] = (good * np.float32(scale) + np.float32(offset)).astype(np.uint8)
    out[~finite] = _BAD_COLOR[:depth]
    return out.reshape(img.shape)


@register_kernel("ImageSummary", "CPU")
def _image_kernel(op: Any, ctx: KernelContext) -> Any:
    tag, max_images = op.attrs["tag"], int(op.attrs["max_images"])

    def run(x: Any) -> np.ndarray:
        a = _host(x)
        if a.ndim != 4 or a.shape[3] not in (1, 3, 4):
            raise InvalidArgumentError(f"tf.summary.image {tag!r} needs [batch, height, width, 1|3|4 channels], "
                                       f"got shape {a.shape}", op)
        values = []
        for i in range(min(a.shape[0], max_images)):
            img = a[i] if a.dtype == np.uint8 else to_uint8_image(a[i])
            im = proto.Summary.Image(height=a.shape[1], width=a.shape[2], colorspace=a.shape[3],
                                     encoded_image_string=encode_png(img))
            t = f"{tag}/image" if max_images == 1 else f"{tag}/image/{i}"
            values.append(proto.Summary.Value(tag=t, image=im))
        return _serialized(proto.Summary(value=values))
    return run


@register_kernel("AudioSummaryV2", "CPU")
def _audio_kernel(op: Any, ctx: KernelContext) -> Any:
    from ..kernels.audio_kernels import encode_wav
    tag, max_outputs = op.attrs["tag"], int(op.attrs["max_outputs"])

    def run(x: Any, rate: Any) -> np.ndarray:
        a = np.asarray(_host(x), dtype=np.float32)
        if a.ndim == 2:  # [batch, frames]: one channel
            a = a[:, :, None]
        if a.ndim != 3:
            raise InvalidArgumentError(f"tf.summary.audio {tag!r} needs [batch, frames] or [batch, frames, "
                                       f"channels], got shape {a.shape}", op)
        r = float(np.asarray(_host(rate)))
        if not r > 0:
            raise InvalidArgumentError(f"tf.summary.audio {tag!r}: sample_rate must be > 0, got {r}", op)
        values = []
        for i in range(min(a.shape[0], max_outputs)):
            au = proto.Summary.Audio(sample_rate=r, num_channels=a.shape[2], length_frames=a.shape[1],
                                     encoded_audio_string=encode_wav(a[i], int(r)), content_type="audio/wav")
            t = f"{tag}/audio" if max_outputs == 1 else f"{tag}/audio/{i}"
            values.append(proto.Summary.Value(tag=t, audio=au))
        return _serialized(proto.Summary(value=values))
    return run


def _as_bytes(s: Any) -> bytes:
    return s.encode("utf-8") if isinstance(s, str) else bytes(s)


@register_kernel("TextSummary", "CPU")
def _text_kernel(op: Any, ctx: KernelContext) -> Any:
    tag = op.attrs["tag"]
    meta = proto.SummaryMetadata(plugin_data=proto.SummaryMetadata.PluginData(plugin_name="text"))

    def run(x: Any) -> np.ndarray:
        a = np.asarray(x, dtype=object)
        shape = proto.TensorShapeProto(dim=[proto.TensorShapeProto.Dim(size=int(d)) for d in a.shape])
        t = proto.TensorProto(dtype=proto.DT_STRING, tensor_shape=shape, string_val=[_as_bytes(s) for s in a.ravel()])
        return _serialized(proto.Summary(value=[proto.Summary.Value(tag=tag, metadata=meta, tensor=t)]))
    return run


@register_kernel("MergeSummary", "CPU")
def _merge_kernel(op: Any, ctx: KernelContext) -> Any:
    def run(*inputs: Any) -> np.ndarray:
        values: List[Any] = []
        seen = set()
        for x in inputs:
            for s in np.asarray(x, dtype=object).ravel():
                try:
                    summ = proto.Summary.FromString(_as_bytes(s))
                except (InvalidArgumentError, TypeError) as e:
                    raise InvalidArgumentError(f"merge: an input is not a serialized Summary ({e})", op) from None
                for v in summ.value:
                    if v.tag in seen:
                        raise InvalidArgumentError(f"Duplicate tag {v.tag} found in summary inputs", op)
                    seen.add(v.tag)
                    values.append(v)
        return _serialized(proto.Summary(value=values))
    return run


# -- the Python API ------------------------------------------------------------------------------------

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def _clean_tag(name: Optional[str]) -> Optional[str]:
    if name is None:
        return None
    new = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if new != name:
        tf_logging.info("Summary name %s is illegal; using %s instead.", name, new)
    return new


def _summary_op(op_type: str, name: str, tensor: Any, attrs: dict, family: Optional[str],
                collections: Optional[Sequence[str]], extra: Sequence[Any] = ()) -> _g.Tensor:
    """Builds a summary op named (and tagged) as TensorFlow 1.x's summary scope does."""
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"a summary needs a non-empty name, got {name!r}")
    t = _g.convert_to_tensor(tensor)
    g = t.graph
    name, family = _clean_tag(name), _clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    full = g.unique_name(base, mark_as_used=False)  # the scope TensorFlow would open
    tag = full if family is None else f"{family}/{full}"
    with g.as_default(), g.name_scope(None):
        out = g.create_op(op_type, [t, *extra], dict(attrs, tag=tag), name=full).outputs[0]
    for c in (GraphKeys.SUMMARIES,) if collections is None else collections:
        g.add_to_collection(c, out)
    return out


def scalar(name: str, tensor: Any, collections: Optional[Sequence[str]] = None,
           family: Optional[str] = None) -> _g.Tensor:
    """A serialized Summary holding the scalar `tensor` (any real dtype) under tag `name`."""
    return _summary_op("ScalarSummary", name, tensor, {}, family, collections)


def histogram(name: str, values: Any, collections: Optional[Sequence[str]] = None,
              family: Optional[str] = None) -> _g.Tensor:
    """A serialized Summary with the histogram of `values` (any shape; NaN/Inf is an error at run time)."""
    return _summary_op("HistogramSummary", name, values, {}, family, collections)


def image(name: str, tensor: Any, max_outputs: int = 3, collections: Optional[Sequence[str]] = None,
          family: Optional[str] = None) -> _g.Tensor:
    """A serialized Summary with up to `max_outputs` PNG images of `tensor` [batch, h, w, 1|3|4]
    (uint8 as is; floats rescaled per image as TensorFlow does).  Tags: "<tag>/image/<i>",
    or "<tag>/image" when max_outputs is 1."""
    return _summary_op("ImageSummary", name, tensor, {"max_images": int(max_outputs)}, family, collections)


def audio(name: str, tensor: Any, sample_rate: Any, max_outputs: int = 3, collections: Optional[Sequence[str]] = None,
          family: Optional[str] = None) -> _g.Tensor:
    """A serialized Summary with up to `max_outputs` WAV clips (16-bit PCM) of float `tensor`
    [batch, frames, channels] or [batch, frames] in [-1, 1] at `sample_rate` Hz.  Tags:
    "<tag>/audio/<i>", or "<tag>/audio" when max_outputs is 1 (TF1's)."""
    from ..graph.ops import math_ops as _m
    rate = _m.cast(_g.convert_to_tensor(sample_rate), _dt.float32)
    return _summary_op("AudioSummaryV2", name, tensor, {"max_outputs": int(max_outputs)}, family, collections,
                       extra=[rate])


def text(name: str, tensor: Any, collections: Optional[Sequence[str]] = None) -> _g.Tensor:
    """A serialized Summary with the string `tensor` for TensorBoard's text plugin."""
    return _summary_op("TextSummary", name, tensor, {}, None, collections)


def merge(inputs: Sequence[Any], collections: Optional[Sequence[str]] = None,
          name: Optional[str] = None) -> _g.Tensor:
    """One serialized Summary with the values of all `inputs` (duplicate tags are an error at run time)."""
    ts = [_g.convert_to_tensor(x) for x in inputs]
    if not ts:
        raise InvalidArgumentError("tf.summary.merge needs at least one summary")
    g = ts[0].graph
    out = g.create_op("MergeSummary", ts, {}, name=name or "Merge/MergeSummary").outputs[0]
    for c in collections or ():
        g.add_to_collection(c, out)
    return out


def merge_all(key: str = GraphKeys.SUMMARIES, scope: Optional[str] = None,
              name: Optional[str] = None) -> Optional[_g.Tensor]:
    """merge() of every summary in collection `key` of the default graph, or None if it is empty."""
    found = _g.get_collection(key, scope)
    if not found:
        return None
    return merge(found, name=name)
