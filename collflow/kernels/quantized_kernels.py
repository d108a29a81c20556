"""Kernels of graph/ops/quantized_ops.py: QuantizeV2, Dequantize, QuantizedConcat,
QuantizedConv2D, QuantizedAvgPool, QuantizedMaxPool and QuantizedReluX, on NumPy.

They follow TF's CPU kernels step by step in float32 (the ranges' nudging, the scale factors,
each rounding), so the integers they produce are TF's.  Two C++ details matter: std::min /
std::max keep their first argument when a comparison is false (NaN), and a float cast to a
32-bit integer out of range gives INT_MIN (x86's cvttss2si), which TF's kernels do for the
top of a qint32 range.  TF's threads also flush subnormal floats to zero (FTZ/DAZ), which
`ftz` applies after each float32 step that can make one.  The dtype combinations are those TF's CPU kernels are registered for.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence, Tuple

import numpy as np

from ..errors import InvalidArgumentError, UnimplementedError
from ..graph.ops.nn_ops import conv_output_size
from .device import to_host
from .registry import KernelContext, register_kernel

_F = np.float32
_F32_MAX = _F(np.finfo(np.float32).max)


def _limits(storage: np.dtype) -> Tuple[int, int]:
    info = np.iinfo(storage)
    return int(info.min), int(info.max)


_TINY = np.finfo(np.float32).tiny


def ftz(x: Any) -> Any:
    """float32 with subnormals flushed to (signed) zero: TF's CPU threads run with FTZ/DAZ set."""
    a = np.asarray(x, dtype=_F)
    with np.errstate(invalid="ignore"):
        out = np.where(np.abs(a) < _TINY, np.copysign(_F(0), a), a).astype(_F)
    return out if out.ndim else _F(out[()])


def _cmin(a: Any, b: Any) -> Any:
    """std::min(a, b): b only when b < a."""
    return b if b < a else a


def _cmax(a: Any, b: Any) -> Any:
    """std::max(a, b): b only when a < b."""
    return b if a < b else a


def round_away(x: Any) -> np.ndarray:
    """Round half away from zero (std::round / Eigen's round), exactly, in float32."""
    x = np.asarray(x, dtype=np.float64)  # float32 values and +-0.5 are exact in float64
    with np.errstate(invalid="ignore"):
        return np.trunc(x + np.copysign(0.5, x)).astype(_F)


def to_int32(x: Any) -> np.ndarray:
    """A float cast to int32 as TF's x86 kernels do: truncation, INT_MIN when out of range or NaN."""
    x = np.asarray(x, dtype=_F)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(x) & (x >= _F(-2147483648.0)) & (x < _F(2147483648.0))
        return np.where(ok, np.trunc(np.where(ok, x, 0)), -2147483648).astype(np.int32)


def _to_storage(x: Any, storage: np.dtype) -> np.ndarray:
    """Through int32 to the storage type (the low bits, as the C++ casts keep them)."""
    return to_int32(x).astype(storage)


def _fclamp(x: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
    """Eigen's x.cwiseMin(hi).cwiseMax(lo)."""
    return np.maximum(np.minimum(x, _F(hi)), _F(lo)).astype(_F)


# -- FloatToQuantized / QuantizedToFloat (TF's quantization_utils.h) ----------------------------

def float_to_quantized_struct(range_min: Any, range_max: Any, storage: np.dtype) -> Tuple[Any, Any]:
    """(range_scale, range_min_scaled) of TF's FloatToQuantizedStruct, float32."""
    bits = np.dtype(storage).itemsize * 8
    mn, mx = _F(range_min), _F(range_max)
    scale = _F(0.0) if mn == mx else ftz(((1 << bits) - 1.0) / float(ftz(mx - mn)))
    return scale, round_away(ftz(mn * scale))[()]


def quantize_min_first(x: np.ndarray, range_min: Any, range_max: Any, storage: np.dtype) -> np.ndarray:
    """QUANTIZE_WITH_EIGEN: round(x * scale) - (round(min * scale) - lowest), clamped."""
    lo, hi = _limits(storage)
    scale, min_scaled = float_to_quantized_struct(range_min, range_max, storage)
    with np.errstate(all="ignore"):
        v = ftz(round_away(ftz(x * scale)) - _F(min_scaled - _F(lo)))
    v = _fclamp(v, max(_F(lo), _F(-2.147483648e9)), min(_F(hi), _F(2.147483520e9)))
    return _to_storage(v, storage)


def dequantize_min_first(q: np.ndarray, range_min: Any, range_max: Any) -> np.ndarray:
    """DEQUANTIZE_WITH_EIGEN: (min_rounded - lowest * scale) + q * scale, float32."""
    lo, _ = _limits(q.dtype)
    bits = q.dtype.itemsize * 8
    mn, mx = _F(range_min), _F(range_max)
    scale = ftz(float(ftz(mx - mn)) / ((1 << bits) - 1.0))
    with np.errstate(all="ignore"):
        rounded = mn if mn == mx else ftz(round_away(ftz(mn / scale))[()] * scale)
        base = ftz(rounded - ftz(_F(lo) * scale))
        return ftz(base + ftz(q.astype(_F) * scale))


def float_to_quantized(value: float, range_min: Any, range_max: Any, storage: np.dtype) -> int:
    """TF's FloatToQuantized<T> (double arithmetic, C's round, clamped to T)."""
    lo, hi = _limits(storage)
    if _F(range_min) == _F(range_max):
        return lo
    bits = np.dtype(storage).itemsize * 8
    steps = float(1 << bits)
    rng = float(_F(_F(range_max) - _F(range_min))) * (steps / (steps - 1.0))
    scale = steps / rng
    q = int(round_half_away_f64(float(_F(value)) * scale) - round_half_away_f64(float(_F(range_min)) * scale)) + lo
    return min(max(q, lo), hi)


def round_half_away_f64(v: float) -> float:
    return float(np.trunc(v + np.copysign(0.5, v))) if np.isfinite(v) else v


def unclamped_offset(range_min: Any, range_max: Any, storage: np.dtype) -> int:
    """FloatToQuantizedUnclamped<T>(0.0f, min, max) as an int32: the level that stands for 0."""
    lo, _ = _limits(storage)
    if _F(range_min) == _F(range_max):
        return lo
    bits = np.dtype(storage).itemsize * 8
    steps = float(1 << bits)
    rng = float(_F(_F(range_max) - _F(range_min))) * (steps / (steps - 1.0))
    v = -round_half_away_f64(float(_F(range_min)) * (steps / rng)) + lo
    return int(np.int64(v).astype(np.int32))


# -- QuantizeV2 ------------------------------------------------------------------------------

def _adjusted_range(in_min: Any, in_max: Any, ensure_minimum_range: Any) -> Tuple[Any, Any]:
    """The range QuantizeV2 uses: 0 included, and at least ensure_minimum_range * max(1, |ends|) wide."""
    in_min, in_max = ftz(in_min), ftz(in_max)
    mn = _cmin(_F(0.0), in_min)
    eps = ftz(_cmax(_F(1.0), _cmax(_F(abs(in_min)), _F(abs(in_max)))) * ftz(ensure_minimum_range))
    mx = _cmax(_F(0.0), _cmax(in_max, ftz(mn + eps)))
    return mn, mx


def _quantize_slice(x: np.ndarray, in_min: Any, in_max: Any, storage: np.dtype, a: dict, op: Any) -> Tuple:
    if _F(in_max) < _F(in_min):
        raise InvalidArgumentError("input_max_range must be larger than input_min_range.", op)
    mn, mx = _adjusted_range(in_min, in_max, a["ensure_minimum_range"])
    lo, hi = _limits(storage)
    with np.errstate(all="ignore"):
        if a["mode"] == "MIN_FIRST":
            return quantize_min_first(x, mn, mx, storage), mn, mx
        if a["mode"] == "MIN_COMBINED":
            scale = _F((float(hi) - float(lo)) / float(_F(mx - mn)))
            shifted = ftz(ftz(_fclamp(x, mn, mx) - mn) * scale)
            if lo < 0:
                half = _F((float(hi) - float(lo) + 1) / 2.0)
                return _to_storage(round_away((shifted - half).astype(_F)), storage), mn, mx
            return _to_storage((shifted + _F(0.5)).astype(_F), storage), mn, mx
        # SCALED: symmetric around 0, the scale the tighter of the two ends allows
        min_out = lo + (1 if a["narrow_range"] else 0)
        from_min = ftz(_F(min_out) / mn) if _F(min_out) * mn > 0 else _F32_MAX
        from_max = ftz(_F(hi) / mx) if _F(hi) * mx > 0 else _F32_MAX
        scale = _cmin(from_min, from_max)
        mn, mx = ftz(_F(min_out) / scale), ftz(_F(hi) / scale)
        v = ftz(_fclamp(x, mn, mx) * scale)
        v = np.rint(v).astype(_F) if a["round_mode"] == "HALF_TO_EVEN" else round_away(v)
        return _to_storage(v, storage), mn, mx


def _slices(op: Any, x: np.ndarray, mn: np.ndarray, mx: np.ndarray, what: str) -> int:
    """The number of ranges along the op's axis (1: one range for the whole tensor), checked."""
    axis = op.attrs["axis"]
    if axis >= x.ndim:
        raise InvalidArgumentError(f"Axis must be less than input dimension({x.ndim}), got {axis}", op)
    n = x.shape[axis] if axis > -1 else 1
    for t, nm in ((mn, "min"), (mx, "max")):
        if (n > 1 and t.size != n) or t.size < 1:
            raise InvalidArgumentError(f"input_{nm}_range must have as many elements as input on the {what} axis "
                                       f"({axis}), got {t.size}, expected {n}", op)
    if n > 1 and op.attrs["mode"] == "MIN_FIRST":
        raise UnimplementedError(f"MIN_FIRST mode is not implemented for {what.capitalize()} with axis != -1.", op)
    return n


def _per_slice(op: Any, x: np.ndarray, mn: np.ndarray, mx: np.ndarray, out: np.ndarray, n: int,
               fn: Callable) -> Tuple[np.ndarray, np.ndarray]:
    """fn(slice, min, max) -> (values, out_min, out_max) over each slice along the axis."""
    if n == 1:
        v, a, b = fn(x, mn.reshape(-1)[0], mx.reshape(-1)[0])
        out[...] = v
        return np.asarray(a, _F).reshape(mn.shape if op.attrs["axis"] > -1 else ()), \
            np.asarray(b, _F).reshape(mx.shape if op.attrs["axis"] > -1 else ())
    axis = op.attrs["axis"]
    omn, omx = np.empty(n, _F), np.empty(n, _F)
    for i in range(n):
        idx = (slice(None),) * axis + (i,)
        out[idx], omn[i], omx[i] = fn(x[idx], mn[i], mx[i])
    return omn, omx


@register_kernel("QuantizeV2")
def _quantize(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    storage = a["T"].np
    if a["round_mode"] == "HALF_TO_EVEN" and a["mode"] != "SCALED":
        raise InvalidArgumentError(f"Round mode 'HALF_TO_EVEN' only supported for mode 'SCALED', but mode is "
                                   f"'{a['mode']}'.", op)
    xp = ctx.xp

    def run(x: Any, mn: Any, mx: Any) -> Any:
        x, mn, mx = (np.asarray(to_host(t)) for t in (x, mn, mx))
        n = _slices(op, x, mn, mx, "quantize")
        out = np.empty(x.shape, storage)
        omn, omx = _per_slice(op, ftz(x), ftz(mn), ftz(mx), out, n,
                              lambda s, lo, hi: _quantize_slice(s, lo, hi, storage, a, op))
        return xp.asarray(out), xp.asarray(omn), xp.asarray(omx)
    return run


# -- Dequantize ------------------------------------------------------------------------------

def _dequantize_slice(q: np.ndarray, mn: Any, mx: Any, a: dict, whole: bool) -> np.ndarray:
    lo, hi = _limits(q.dtype)
    mn, mx = _F(mn), _F(mx)
    with np.errstate(all="ignore"):
        if a["mode"] == "MIN_FIRST":
            return dequantize_min_first(q, mn, mx)
        if a["mode"] == "MIN_COMBINED":
            scale = ftz(ftz(mx - mn) / _F(_F(hi) - _F(lo)))
            half = _F(0.0) if lo == 0 else _F((_F(hi) - _F(lo) + _F(1)) / _F(2))
            return ftz(ftz((q.astype(_F) + half).astype(_F) * scale) + mn)
        min_out = lo + (1 if a["narrow_range"] else 0)
        scale = ftz(mx / _F(hi)) if lo == 0 else _cmax(ftz(mn / _F(min_out)), ftz(mx / _F(hi)))
        v = q.astype(_F)
        if whole and q.dtype == np.int32:  # TF's whole-tensor path casts through int: 2^31 -> INT_MIN
            v = to_int32(v).astype(_F)
        return ftz(v * scale)


@register_kernel("Dequantize")
def _dequantize(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    xp = ctx.xp

    def run(q: Any, mn: Any, mx: Any) -> Any:
        q, mn, mx = (np.asarray(to_host(t)) for t in (q, mn, mx))
        n = _slices(op, q, mn, mx, "dequantize")
        out = np.empty(q.shape, _F)
        _per_slice(op, q, ftz(mn), ftz(mx), out, n, lambda s, lo, hi: (_dequantize_slice(s, lo, hi, a, n == 1), 0, 0))
        return xp.asarray(out)
    return run


# -- QuantizedConcat ---------------------------------------------------------------------------

def _no_kernel(op: Any, attrs: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"No OpKernel was registered to support Op '{op.type}' used by {{{{node {op.name}}}}} "
                                f"with these attrs: [{attrs}]", op)


@register_kernel("QuantizedConcat")
def _concat(op: Any, ctx: KernelContext) -> Any:
    t = op.attrs["T"]
    n = op.attrs["N"]
    if t.name not in ("quint8", "qint32"):
        raise _no_kernel(op, f"N={n}, T={t.name}")
    xp = ctx.xp

    def run(dim: Any, *rest: Any) -> Any:
        dim = int(np.asarray(to_host(dim)).reshape(()))  # TF needs a scalar (legacy shape [1] too)
        vals = [np.asarray(to_host(v)) for v in rest[:n]]
        mins = [_F(np.asarray(to_host(v)).reshape(-1)[0]) for v in rest[n:2 * n]]
        maxs = [_F(np.asarray(to_host(v)).reshape(-1)[0]) for v in rest[2 * n:]]
        rank = vals[0].ndim
        if not (0 <= dim < rank or (rank == 0 and dim == 0)):
            raise InvalidArgumentError(f"ConcatOp : Expected concatenating dimensions in the range [0, {rank}), "
                                       f"but got {dim}", op)
        for i, v in enumerate(vals):
            if v.ndim != rank or any(v.shape[j] != vals[0].shape[j] for j in range(rank) if j != dim):
                raise InvalidArgumentError(f"ConcatOp : Dimensions of inputs should match: shape[0] = "
                                           f"{list(vals[0].shape)} vs. shape[{i}] = {list(v.shape)}", op)
        omn, omx = _F(0.0), -_F32_MAX  # TF's output range always reaches down to 0
        for a, b in zip(mins, maxs):
            omn, omx = _cmin(omn, a), _cmax(omx, b)
        if t.name == "qint32":  # signed: a range symmetric around 0
            big = _cmax(_F(abs(omn)), _F(abs(omx)))
            omn, omx = _F(-big), big
        parts = []
        for v, a, b in zip(vals, mins, maxs):
            if a == omn and b == omx:
                parts.append(v)
            else:
                parts.append(quantize_min_first(dequantize_min_first(v, a, b), omn, omx, v.dtype))
        out = np.concatenate([p.reshape(p.shape or (1,)) for p in parts], axis=dim)
        return xp.asarray(out), xp.asarray(_F(omn)), xp.asarray(_F(omx))
    return run


# -- QuantizedConv2D ---------------------------------------------------------------------------

def _scalar(v: Any, op: Any, what: str) -> Any:
    a = np.asarray(to_host(v))
    if a.size != 1:
        raise InvalidArgumentError(f"{what} must be a scalar, got shape {list(a.shape)}", op)
    return _F(a.reshape(-1)[0])


def range_for_multiplication(min_a: Any, max_a: Any, min_b: Any, max_b: Any) -> Tuple[Any, Any]:
    """TF's QuantizationRangeForMultiplication<quint8, quint8, qint32> (float32)."""
    la = _F(_F(_F(max_a) - _F(min_a)) / _F(255))
    lb = _F(_F(_F(max_b) - _F(min_b)) / _F(255))
    c = _F(la * lb)
    return _F(c * _F(-2147483648.0)), _F(c * _F(2147483647.0))


def _c_div2(v: int) -> int:
    return int(v / 2) if v >= 0 else -((-v) // 2)  # C's division: toward zero


@register_kernel("QuantizedConv2D")
def _conv2d(op: Any, ctx: KernelContext) -> Any:
    a = op.attrs
    if (a["Tinput"].name, a["Tfilter"].name, a["out_type"].name) != ("quint8", "quint8", "qint32"):
        raise _no_kernel(op, f"Tinput={a['Tinput'].name}, Tfilter={a['Tfilter'].name}, "
                             f"out_type={a['out_type'].name}")
    s, d = a["strides"], a["dilations"]
    if s[1] != s[2]:
        raise InvalidArgumentError("Current implementation only supports equal length strides in the row and "
                                   "column dimensions.", op)
    if s[0] != 1 or s[3] != 1:
        raise InvalidArgumentError("Current implementation does not yet support strides in the batch and depth "
                                   "dimensions.", op)
    if list(d) != [1, 1, 1, 1]:
        raise InvalidArgumentError("Current implementation only supports dilated rate as 1 in the row and column "
                                   "dimensions.", op)
    stride, padding = s[1], a["padding"]
    xp = ctx.xp

    def run(x: Any, w: Any, mni: Any, mxi: Any, mnf: Any, mxf: Any) -> Any:
        x, w = np.asarray(to_host(x)), np.asarray(to_host(w))
        if x.ndim != 4 or w.ndim != 4:
            raise InvalidArgumentError(f"input and filter must be 4-dimensional, got {list(x.shape)} and "
                                       f"{list(w.shape)}", op)
        if x.shape[3] != w.shape[2]:
            raise InvalidArgumentError(f"input and filter must have the same depth: {x.shape[3]} vs {w.shape[2]}", op)
        rng = [_scalar(v, op, nm) for v, nm in ((mni, "min_input"), (mxi, "max_input"), (mnf, "min_filter"),
                                                 (mxf, "max_filter"))]
        off_in = unclamped_offset(rng[0], rng[1], np.dtype(np.uint8))
        off_f = unclamped_offset(rng[2], rng[3], np.dtype(np.uint8))
        out = conv_levels(x, w, off_in, off_f, stride, padding)
        lo, hi = range_for_multiplication(*rng)
        return xp.asarray(out), xp.asarray(lo), xp.asarray(hi)
    return run


def conv_levels(x: np.ndarray, w: np.ndarray, off_in: int, off_f: int, stride: int, padding: str) -> np.ndarray:
    """sum((x - off_in) * (w - off_f)) over each window, int32 (wrapping), as TF's kernel;
    TF places its first window ((out - 1) * stride + k - in (+ 1 for VALID)) / 2 (C division)
    before the image (a negative margin starts it inside)."""
    n, h, wd, _ = x.shape
    fh, fw, _, co = w.shape
    try:
        oh = conv_output_size(h, fh, stride, 1, padding)[0]
        ow = conv_output_size(wd, fw, stride, 1, padding)[0]
    except ValueError as e:
        raise InvalidArgumentError(str(e)) from None
    extra = 1 if padding == "VALID" else 0  # TF's kernel rounds VALID's (never positive) margin up
    top = _c_div2((oh - 1) * stride + fh - h + extra)
    left = _c_div2((ow - 1) * stride + fw - wd + extra)
    # out-of-image samples: 0 in the reference kernel (a negative offset), else the im2col
    # buffer's fill of off_in as a byte
    pad = 0 if off_in <= 255 else (off_in & 255) - off_in
    pb_h, pb_w = max(0, top), max(0, left)
    pa_h = max(0, (oh - 1) * stride - top + fh - h)
    pa_w = max(0, (ow - 1) * stride - left + fw - wd)
    xc = np.pad(x.astype(np.int64) - off_in, ((0, 0), (pb_h, pa_h), (pb_w, pa_w), (0, 0)), constant_values=pad)
    wc = w.astype(np.int64) - off_f
    acc = np.zeros((n, oh, ow, co), np.int64)
    for fy in range(fh):
        y0 = fy - top + pb_h
        for fx in range(fw):
            x0 = fx - left + pb_w
            patch = xc[:, y0:y0 + (oh - 1) * stride + 1:stride, x0:x0 + (ow - 1) * stride + 1:stride, :]
            acc += np.einsum("nhwc,co->nhwo", patch, wc[fy, fx])
    return acc.astype(np.int32)  # int32 accumulators wrap


# -- QuantizedAvgPool / QuantizedMaxPool ---------------------------------------------------------

def _pool_check(op: Any, x: np.ndarray) -> Tuple[Sequence[int], Sequence[int]]:
    k, s = op.attrs["ksize"], op.attrs["strides"]
    if k[0] != 1 or s[0] != 1:
        raise UnimplementedError("Pooling is not yet supported on the batch dimension.", op)
    if k[3] != 1 or s[3] != 1:
        raise UnimplementedError("Non-spatial pooling is not yet supported.", op)
    if x.ndim != 4:
        raise InvalidArgumentError("tensor_in must be 4-dimensional", op)
    return k, s


def _windows(x: np.ndarray, k: Sequence[int], s: Sequence[int], padding: str, fill: int) -> Tuple[Any, Any]:
    """(values, in-image mask) of every window: [n, oh, ow, c, kh*kw] each (TF's SAME padding)."""
    n, h, w, c = x.shape
    try:
        oh, ph0, ph1 = conv_output_size(h, k[1], s[1], 1, padding)
        ow, pw0, pw1 = conv_output_size(w, k[2], s[2], 1, padding)
    except ValueError as e:
        raise InvalidArgumentError(str(e)) from None
    xp_ = np.pad(x.astype(np.int64), ((0, 0), (ph0, ph1), (pw0, pw1), (0, 0)), constant_values=fill)
    mask = np.pad(np.ones((h, w), bool), ((ph0, ph1), (pw0, pw1)))
    vals, ins = [], []
    for dy in range(k[1]):
        for dx in range(k[2]):
            sl = (slice(dy, dy + (oh - 1) * s[1] + 1, s[1]), slice(dx, dx + (ow - 1) * s[2] + 1, s[2]))
            vals.append(xp_[(slice(None),) + sl])
            ins.append(mask[sl])
    return np.stack(vals, -1), np.stack(ins, -1)[None, :, :, None, :]


def _pool_kernel(op: Any, ctx: KernelContext, reduce: Callable) -> Any:
    t = op.attrs["T"]
    if t.name not in ("quint8", "qint8"):
        raise _no_kernel(op, f"T={t.name}")
    xp = ctx.xp

    def run(x: Any, mn: Any, mx: Any) -> Any:
        x = np.asarray(to_host(x))
        k, s = _pool_check(op, x)
        lo_r, hi_r = _scalar(mn, op, "min_input"), _scalar(mx, op, "max_input")
        out = reduce(x, k, s).astype(x.dtype)
        return xp.asarray(out), xp.asarray(lo_r), xp.asarray(hi_r)
    return run


@register_kernel("QuantizedAvgPool")
def _avg_pool(op: Any, ctx: KernelContext) -> Any:
    def avg(x: np.ndarray, k: Sequence[int], s: Sequence[int]) -> np.ndarray:
        vals, ins = _windows(x, k, s, op.attrs["padding"], 0)
        total = vals.sum(-1)
        count = np.broadcast_to(ins.sum(-1), total.shape)
        q = np.rint(total / count)  # TF's (oneDNN) kernel: the mean rounded half to even
        lo, hi = _limits(x.dtype)
        return np.clip(q, lo, hi)
    return _pool_kernel(op, ctx, avg)


@register_kernel("QuantizedMaxPool")
def _max_pool(op: Any, ctx: KernelContext) -> Any:
    def mx(x: np.ndarray, k: Sequence[int], s: Sequence[int]) -> np.ndarray:
        vals, ins = _windows(x, k, s, op.attrs["padding"], 0)
        return np.where(np.broadcast_to(ins, vals.shape), vals, np.iinfo(np.int64).min).max(-1)
    return _pool_kernel(op, ctx, mx)


# -- QuantizedReluX ----------------------------------------------------------------------------

@register_kernel("QuantizedReluX")
def _relu_x(op: Any, ctx: KernelContext) -> Any:
    # TF 1.15's CPU kernels: quint8 -> quint8 and qint32 -> qint32
    tin, tout = op.attrs["Tinput"], op.attrs["out_type"]
    if tin != tout or tin.name not in ("quint8", "qint32"):
        raise _no_kernel(op, f"Tinput={tin.name}, out_type={tout.name}")
    xp = ctx.xp

    def run(x: Any, max_value: Any, mn: Any, mx: Any) -> Any:
        x = np.asarray(to_host(x))
        mv, lo_r, hi_r = (_scalar(v, op, nm) for v, nm in ((max_value, "max_value"), (mn, "min_features"),
                                                            (mx, "max_features")))
        zero = float_to_quantized(0.0, lo_r, hi_r, x.dtype)
        top = float_to_quantized(mv, lo_r, hi_r, x.dtype)
        out = np.minimum(np.maximum(x.astype(np.int64), zero), top).astype(x.dtype)
        return xp.asarray(out), xp.asarray(lo_r), xp.asarray(hi_r)
    return run
