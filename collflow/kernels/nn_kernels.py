"""Kernels of the nn ops, written once against `xp` (NumPy or CuPy).

Activations and their gradients work in place on the one fresh array they return.
conv2d is im2col + GEMM: the input windows are a strided *view* (as_strided, no copy, no
Python loop over pixels) that one reshape packs into the column matrix; the input
gradient is a GEMM followed by col2im, a loop over the kh*kw window offsets (each a
strided add over all pixels at once).  Both run over cache-sized batch chunks, which also
bounds the scratch memory of a large convolution.  Pools loop over window offsets likewise.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from ..errors import InvalidArgumentError
from ..graph.ops.nn_ops import conv_output_size
from .host_cache import block_bytes
from .math_kernels import ColumnSums
from .random_kernels import stream_for, static_shape
from .registry import register_kernel, KernelContext

# -- activations ----------------------------------------------------------------------


@register_kernel("Relu")
def _relu(op: Any, ctx: KernelContext) -> Any:
    mx = ctx.xp.maximum
    zero = op.outputs[0].dtype.np.type(0)
    return lambda x: mx(x, zero)


@register_kernel("ReluGrad")
def _relu_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def relu_grad(g: Any, y: Any) -> Any:
        # g where the output was positive: one bool temporary, one pass
        return xp.multiply(g, y > 0)
    return relu_grad


@register_kernel("LeakyRelu")
def _leaky_relu(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    alpha = op.attrs["alpha"]
    pick = xp.maximum if alpha <= 1 else xp.minimum

    def leaky_relu(x: Any) -> Any:
        # out= arrays throughout: on a 0-d input a ufunc returns a NumPy scalar, which out= refuses
        r = xp.multiply(x, x.dtype.type(alpha), out=xp.empty_like(x))
        return pick(r, x, out=r)
    return leaky_relu


@register_kernel("LeakyReluGrad")
def _leaky_relu_grad(op: Any, ctx: KernelContext) -> Any:
    alpha = op.attrs["alpha"]

    def leaky_relu_grad(g: Any, x: Any) -> Any:
        # g * (1 where x > 0 else alpha), as arithmetic (a masked where is far slower in NumPy)
        dt = g.dtype.type
        r = (x > 0).astype(g.dtype)
        r *= dt(1 - alpha)
        r += dt(alpha)
        r *= g
        return r
    return leaky_relu_grad


def sigmoid_into(xp: Any, x: Any, out: Any) -> Any:
    """out = sigmoid(x) (out may be x) as 0.5 * tanh(x / 2) + 0.5: no overflow for any x, four
    passes in place, absolute error within an ulp of 1.  The fused RNN cells use it for their
    gates, where only the absolute error matters; the Sigmoid op uses ``sigmoid_accurate``,
    since log(sigmoid(x)) needs every bit of a tiny result."""
    half = x.dtype.type(0.5)
    xp.multiply(x, half, out=out)
    xp.tanh(out, out=out)
    out *= half
    out += half
    return out


def sigmoid_accurate(xp: Any, x: Any) -> Any:
    """sigmoid(x) to a couple of ulps relative for every x, as TensorFlow's kernel is: with
    t = exp(-|x|) (never overflows), 1 / (1 + t) where x >= 0 and t / (1 + t) where x < 0, so
    sigmoid(-17) is 4.14e-8 and sigmoid(-40) is 4.2e-18, not 0, in float32 (complex x: the
    tanh form, which has no sign to split on)."""
    if x.dtype.kind == "c":
        return sigmoid_into(xp, x, xp.empty_like(x))
    t = xp.abs(x, out=xp.empty_like(x))  # explicit outputs: a 0-d x stays an array
    xp.negative(t, out=t)
    xp.exp(t, out=t)
    out = xp.add(t, t.dtype.type(1), out=xp.empty_like(t))
    xp.divide(t.dtype.type(1), out, out=out)
    neg = x < 0
    xp.multiply(t, out, out=t)
    xp.copyto(out, t, where=neg)
    return out


@register_kernel("Sigmoid")
def _sigmoid(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    return lambda x: sigmoid_accurate(xp, xp.asarray(x))


@register_kernel("SigmoidGrad")
def _sigmoid_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def sigmoid_grad(y: Any, dy: Any) -> Any:
        r = xp.subtract(y.dtype.type(1), y, out=xp.empty_like(y))
        r *= y
        r *= dy
        return r
    return sigmoid_grad


register_kernel("Tanh")(lambda op, ctx: ctx.xp.tanh)


@register_kernel("TanhGrad")
def _tanh_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def tanh_grad(y: Any, dy: Any) -> Any:
        r = xp.multiply(y, y, out=xp.empty_like(y))
        xp.subtract(y.dtype.type(1), r, out=r)
        r *= dy
        return r
    return tanh_grad


# -- softmax and cross entropy ---------------------------------------------------------------


@register_kernel("Softmax")
def _softmax(op: Any, ctx: KernelContext) -> Any:
    xp, axis = ctx.xp, op.attrs["axis"]

    def softmax(x: Any) -> Any:
        r = xp.subtract(x, x.max(axis=axis, keepdims=True))
        xp.exp(r, out=r)
        r /= r.sum(axis=axis, keepdims=True)
        return r
    return softmax


@register_kernel("LogSoftmax")
def _log_softmax(op: Any, ctx: KernelContext) -> Any:
    xp, axis = ctx.xp, op.attrs["axis"]

    def log_softmax(x: Any) -> Any:
        r = xp.subtract(x, x.max(axis=axis, keepdims=True))
        s = xp.exp(r).sum(axis=axis, keepdims=True)
        r -= xp.log(s, out=s)
        return r
    return log_softmax


def _check_labels(xp: Any, labels: Any, n_classes: int, op: Any) -> None:
    if labels.size == 0:
        return
    # one reduction: viewed unsigned, a negative label is huge, so max() catches both ends
    if int(labels.view(_UNSIGNED[labels.dtype.itemsize]).max()) < n_classes:
        return
    bad_mask = (labels < 0) | (labels >= n_classes)
    at = int(xp.argmax(bad_mask.reshape(-1)))
    bad = int(labels.reshape(-1)[at])
    pos = [int(i) for i in np.unravel_index(at, labels.shape)]
    raise InvalidArgumentError(
        f"label {bad} (at labels{pos}) is out of range: labels must be in [0, {n_classes}) "
        f"for logits with {n_classes} classes", op)


_UNSIGNED = {4: np.uint32, 8: np.uint64}
# up to this many classes the kernel works on the transposed (classes, batch) copy, so the
# per-example max and sum reduce along the outer axis (vectorised) instead of short rows
_FEW_CLASSES = 128


@register_kernel("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    aranges: Dict[int, Any] = {}

    def arange(n: int) -> Any:
        r = aranges.get(n)
        if r is None:
            r = aranges[n] = xp.arange(n, dtype=np.intp)
        return r

    def sparse_xent(logits: Any, labels: Any) -> Tuple[Any, Any]:
        c = logits.shape[-1]
        _check_labels(xp, labels, c, op)
        z = logits.reshape(-1, c)
        y = labels.reshape(-1)
        n = z.shape[0]
        if c <= _FEW_CLASSES:
            bp = z.T.copy()  # (classes, batch): the one fresh array, becomes the backprop
            axis = 0
            flat = y.astype(np.intp) * n + arange(n)
        else:
            bp = z.copy()
            axis = 1
            flat = arange(n) * c + y
        bp -= bp.max(axis=axis, keepdims=True)
        picked = xp.take(bp, flat)  # shifted logit of each label
        xp.exp(bp, out=bp)
        s = bp.sum(axis=axis, keepdims=True)
        bp /= s
        bp.reshape(-1)[flat] -= 1
        # loss = log(sum(exp(z - max))) - (z[label] - max)
        loss = xp.log(s.reshape(-1))
        loss -= picked
        if axis == 0:
            bp = bp.T  # a transposed view: no copy back
        return loss.reshape(labels.shape), bp.reshape(logits.shape)
    return sparse_xent


@register_kernel("SoftmaxCrossEntropyWithLogits")
def _xent(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def xent(logits: Any, labels: Any) -> Tuple[Any, Any]:
        shifted = xp.subtract(logits, logits.max(axis=-1, keepdims=True))
        bp = xp.exp(shifted)
        s = bp.sum(axis=-1, keepdims=True)
        log_s = xp.log(s)
        # loss = sum(labels * (log_s - shifted)); shifted becomes -log_softmax in place
        xp.subtract(log_s, shifted, out=shifted)
        shifted *= labels
        loss = shifted.sum(axis=-1)
        # backprop = softmax - labels, as TF1's kernel returns it whatever the labels sum to (the
        # exact d loss / d logits is softmax * sum(labels) - labels: the same for distributions)
        bp /= s
        bp -= labels
        return loss, bp
    return xent


# -- convolution ---------------------------------------------------------------------------


class _Geometry:
    """Output size and padding of a conv/pool for one input size (cached per shape)."""

    __slots__ = ("oh", "ow", "pt", "pb", "pl", "pr")

    def __init__(self, h: int, w: int, kh: int, kw: int, strides: Tuple[int, int], dil: Tuple[int, int],
                 padding: str, op: Any):
        try:
            self.oh, self.pt, self.pb = conv_output_size(h, kh, strides[0], dil[0], padding)
            self.ow, self.pl, self.pr = conv_output_size(w, kw, strides[1], dil[1], padding)
        except ValueError as e:
            raise InvalidArgumentError(f"{op.type}: input of height {h} and width {w}: {e}", op) from None

    @property
    def padded(self) -> bool:
        return bool(self.pt or self.pb or self.pl or self.pr)


def _geometry_cache(op: Any) -> Any:
    """get(h, w, kh, kw) -> the op's _Geometry for that input and window size, cached."""
    cache: Dict[tuple, _Geometry] = {}
    strides = op.attrs["strides"]
    dil = op.attrs.get("dilations", (1, 1))
    padding = op.attrs["padding"]

    def get(h: int, w: int, fkh: int, fkw: int) -> _Geometry:
        key = (h, w, fkh, fkw)
        geo = cache.get(key)
        if geo is None:
            geo = _Geometry(h, w, fkh, fkw, strides, dil, padding, op)
            cache[key] = geo
        return geo
    return get


def _pad(xp: Any, x: Any, geo: _Geometry, fill: float = 0) -> Any:
    """x with spatial padding (x itself when there is none)."""
    if not geo.padded:
        return x
    n, h, w, c = x.shape
    out = xp.full((n, h + geo.pt + geo.pb, w + geo.pl + geo.pr, c), fill, dtype=x.dtype)
    out[:, geo.pt:geo.pt + h, geo.pl:geo.pl + w, :] = x
    return out


def _windows(xp: Any, xpad: Any, oh: int, ow: int, kh: int, kw: int, strides: Tuple[int, int],
             dil: Tuple[int, int]) -> Any:
    """A read-only strided view (N, OH, OW, KH, KW, C) of every window; no copy."""
    n, _, _, c = xpad.shape
    sn, sh, sw, sc = xpad.strides
    return xp.lib.stride_tricks.as_strided(
        xpad, shape=(n, oh, ow, kh, kw, c),
        strides=(sn, sh * strides[0], sw * strides[1], sh * dil[0], sw * dil[1], sc))


def _window_gemm(xp: Any, win: Any, w2: Any) -> Any:
    """(N * OH * OW, cols): every window (N, OH, OW, KH, KW, C) times w2 (KH * KW * C, cols),
    a cache-sized batch range at a time (the reshape packs a range's windows into columns:
    the only copy)."""
    n, oh, ow, kh, kw, c = win.shape
    m = oh * ow
    out = xp.empty((n * m, w2.shape[1]), dtype=win.dtype)
    for a, b in _chunks(xp, n, m * kh * kw * c * win.itemsize):
        xp.matmul(win[a:b].reshape((b - a) * m, kh * kw * c), w2, out=out[a * m:b * m])
    return out


def _offset(geo: _Geometry, i: int, j: int, strides: Tuple[int, int], dil: Tuple[int, int]) -> Tuple[slice, slice]:
    """The rows and columns of the padded input that window offset (i, j) touches."""
    r0, c0 = i * dil[0], j * dil[1]
    return (slice(r0, r0 + strides[0] * (geo.oh - 1) + 1, strides[0]),
            slice(c0, c0 + strides[1] * (geo.ow - 1) + 1, strides[1]))


def _chunks(xp: Any, n: int, per_image: int) -> list:
    """Batch ranges whose column matrices stay near a cache-sized (CPU) or bounded (GPU) buffer.

    Blocking keeps each im2col/col2im chunk hot in cache between its copy and its GEMM,
    and bounds the extra memory of a large convolution to one chunk.
    """
    target = _CHUNK_BYTES_CPU if xp is np else _CHUNK_BYTES_GPU
    b = max(1, min(n, target // max(per_image, 1)))
    return [(i, min(i + b, n)) for i in range(0, n, b)] or [(0, 0)]


# four times the L2 (kernels/host_cache.py says why): 4 MiB on a 1 MiB-L2 host
_CHUNK_BYTES_CPU = block_bytes()
_CHUNK_BYTES_GPU = 256 << 20


def _check_channels(x_c: int, w_c: int, op: Any, x_shape: Any, w_shape: Any) -> None:
    if x_c != w_c:
        raise InvalidArgumentError(f"{op.type}: input has {x_c} channels (shape {tuple(x_shape)}) but the filter "
                                   f"expects {w_c} (shape {tuple(w_shape)})", op)


@register_kernel("Conv2D")
def _conv2d(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    strides, dil = op.attrs["strides"], op.attrs["dilations"]
    geometry = _geometry_cache(op)

    def conv2d(x: Any, w: Any) -> Any:
        n, h, wd, c = x.shape
        kh, kw, ci, co = w.shape
        _check_channels(c, ci, op, x.shape, w.shape)
        geo = geometry(h, wd, kh, kw)
        win = _windows(xp, _pad(xp, x, geo), geo.oh, geo.ow, kh, kw, strides, dil)
        return _window_gemm(xp, win, w.reshape(kh * kw * ci, co)).reshape(n, geo.oh, geo.ow, co)
    return conv2d


def _sizes_tuple(sizes: Any) -> Tuple[int, ...]:
    return tuple(int(d) for d in (sizes.tolist() if hasattr(sizes, "tolist") else sizes))


def _hint_hwc(op: Any) -> Optional[Tuple[int, ...]]:
    """(H, W, C) of the input when the graph knows them statically (batch may vary)."""
    hint = op.attrs.get("shape_hint")
    if hint is None or hint.rank != 4 or any(d is None for d in hint.dims[1:]):
        return None
    return tuple(hint.dims[1:])


def input_dims(op: Any) -> Any:
    """dims(sizes, dy) -> (n, h, w, c), the input shape of an op whose first input gives it
    (the backprop-input ops, AvgPoolGrad): from the graph when it knows them (the batch from
    dy), else from the sizes tensor."""
    fixed = static_shape(op.inputs[0])
    hwc = _hint_hwc(op)

    def dims(sizes: Any, dy: Any) -> Tuple[int, ...]:
        if fixed is not None:
            return tuple(fixed)
        if hwc is not None:
            return (dy.shape[0],) + hwc
        return _sizes_tuple(sizes)
    return dims


def filter_dims(op: Any) -> Any:
    """dims(sizes) -> the filter shape of a backprop-filter op (its `filter_sizes`)."""
    fixed = static_shape(op.inputs[1])
    hint = op.attrs.get("shape_hint")
    hint_full = tuple(hint.dims) if hint is not None and hint.is_fully_defined() else None
    return lambda sizes: tuple(fixed or hint_full or _sizes_tuple(sizes))


def _full_correlation(xp: Any, dy: Any, w: Any, geo: _Geometry, h: int, wd: int) -> Optional[Any]:
    """The input gradient of a stride-1, undilated convolution, as a convolution itself: dy
    padded by (k - 1 - the forward's pad) on each side, correlated with the filter turned by
    180 degrees and its channels swapped (VALID); None where the forward padding exceeds k - 1.  One im2col GEMM like the forward pass,
    instead of a GEMM into columns and one strided add per window offset (col2im): the MNIST
    tutorial's second layer, 18.1 -> 13.4 ms, one thread."""
    n, oh, ow, co = dy.shape
    kh, kw, ci, _ = w.shape
    pt, pb, pl, pr = kh - 1 - geo.pt, kh - 1 - geo.pb, kw - 1 - geo.pl, kw - 1 - geo.pr
    if min(pt, pb, pl, pr) < 0:  # padded by more than the window: the col2im road
        return None
    dyp = xp.zeros((n, oh + pt + pb, ow + pl + pr, co), dtype=dy.dtype)
    dyp[:, pt:pt + oh, pl:pl + ow, :] = dy
    wf = xp.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2)).reshape(kh * kw * co, ci)
    win = _windows(xp, dyp, h, wd, kh, kw, (1, 1), (1, 1))
    return _window_gemm(xp, win, wf).reshape(n, h, wd, ci)


@register_kernel("Conv2DBackpropInput")
def _conv2d_bp_input(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    strides, dil = op.attrs["strides"], op.attrs["dilations"]
    geometry = _geometry_cache(op)
    in_dims = input_dims(op)

    def conv2d_backprop_input(sizes: Any, w: Any, dy: Any) -> Any:
        n, h, wd, c = in_dims(sizes, dy)
        kh, kw, ci, co = w.shape
        _check_channels(c, ci, op, (n, h, wd, c), w.shape)
        geo = geometry(h, wd, kh, kw)
        if tuple(dy.shape) != (n, geo.oh, geo.ow, co):
            raise InvalidArgumentError(f"{op.type}: out_backprop has shape {tuple(dy.shape)}, expected "
                                       f"{(n, geo.oh, geo.ow, co)} for input {(n, h, wd, c)} and filter "
                                       f"{tuple(w.shape)}", op)
        wt = w.reshape(kh * kw * ci, co).T
        if kh == 1 and kw == 1 and strides == (1, 1) and not geo.padded:
            return xp.matmul(dy.reshape(-1, co), wt).reshape(n, h, wd, c)
        if tuple(strides) == (1, 1) and tuple(dil) == (1, 1):
            dx = _full_correlation(xp, dy, w, geo, h, wd)
            if dx is not None:
                return dx
        m = geo.oh * geo.ow
        dx = xp.zeros((n, h + geo.pt + geo.pb, wd + geo.pl + geo.pr, c), dtype=dy.dtype)
        offsets = [_offset(geo, i, j, strides, dil) for i in range(kh) for j in range(kw)]
        for a, b in _chunks(xp, n, m * kh * kw * c * dy.itemsize):
            dcols = xp.matmul(dy[a:b].reshape((b - a) * m, co), wt).reshape(b - a, geo.oh, geo.ow, kh * kw, c)
            d = dx[a:b]
            # col2im: one strided add per window offset, over the chunk's pixels at once
            for k, (rs, cs) in enumerate(offsets):
                d[:, rs, cs, :] += dcols[:, :, :, k, :]
        if geo.padded:
            dx = dx[:, geo.pt:geo.pt + h, geo.pl:geo.pl + wd, :]
        return dx
    return conv2d_backprop_input


@register_kernel("Conv2DBackpropFilter")
def _conv2d_bp_filter(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    strides, dil = op.attrs["strides"], op.attrs["dilations"]
    geometry = _geometry_cache(op)
    f_dims = filter_dims(op)

    def conv2d_backprop_filter(x: Any, sizes: Any, dy: Any) -> Any:
        kh, kw, ci, co = f_dims(sizes)
        n, h, wd, c = x.shape
        _check_channels(c, ci, op, x.shape, (kh, kw, ci, co))
        geo = geometry(h, wd, kh, kw)
        if tuple(dy.shape) != (n, geo.oh, geo.ow, co):
            raise InvalidArgumentError(f"{op.type}: out_backprop has shape {tuple(dy.shape)}, expected "
                                       f"{(n, geo.oh, geo.ow, co)} for input {tuple(x.shape)} and filter "
                                       f"{(kh, kw, ci, co)}", op)
        win = _windows(xp, _pad(xp, x, geo), geo.oh, geo.ow, kh, kw, strides, dil)
        m = geo.oh * geo.ow
        dw = None
        for a, b in _chunks(xp, n, m * kh * kw * c * x.itemsize):
            part = xp.matmul(win[a:b].reshape((b - a) * m, kh * kw * c).T, dy[a:b].reshape((b - a) * m, co))
            if dw is None:
                dw = part
            else:
                dw += part
        return dw.reshape(kh, kw, ci, co)
    return conv2d_backprop_filter


# -- pooling ---------------------------------------------------------------------------------

_UNIT = (1, 1)


def _pool_setup(op: Any) -> Tuple[int, int, Tuple[int, int], Any]:
    kh, kw = op.attrs["ksize"]
    return kh, kw, op.attrs["strides"], _geometry_cache(op)


@register_kernel("MaxPool")
def _max_pool(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    kh, kw, strides, geometry = _pool_setup(op)

    def max_pool(x: Any) -> Any:
        geo = geometry(x.shape[1], x.shape[2], kh, kw)
        xpad = _pad(xp, x, geo, -np.inf)
        out = None
        for i in range(kh):
            for j in range(kw):
                rs, cs = _offset(geo, i, j, strides, _UNIT)
                v = xpad[:, rs, cs, :]
                if out is None:
                    out = v.copy()
                else:
                    xp.fmax(out, v, out=out)  # NaN loses to any number, as in TF's kernel
        if out.dtype.kind == "f":  # TF starts each window at the lowest float: NaN or -inf -> lowest
            xp.fmax(out, np.finfo(out.dtype).min, out=out)
        return out
    return max_pool


def _finite(xp: Any, g: Any) -> bool:
    """Whether a NumPy product may route g (every value finite: one sum says so)."""
    return xp is np and bool(np.isfinite(np.add.reduce(g, axis=None,
                                                       dtype=np.float32 if g.dtype.itemsize < 4 else None)))


def _routed(xp: Any, hit: Any, g: Any, finite: bool) -> Any:
    """g where `hit`, exactly 0 elsewhere (g broadcast against hit): where TF's pooling
    gradients put a window's gradient.  A product g * hit would do, but leaves inf * 0 = NaN
    in the cells a non-finite gradient is not routed to; NumPy's product is used when every
    gradient is finite (`_finite`, checked once per kernel call), a select otherwise (3-10x
    slower in NumPy)."""
    if finite:
        return np.multiply(g, hit)
    return xp.where(hit, g, g.dtype.type(0))


def _max_pool_grad_tiled(xp: Any, x: Any, y: Any, g: Any, kh: int, kw: int) -> Any:
    """MaxPoolGrad where the windows tile the input (stride = window, no padding): x seen as
    (N, OH, KH, OW, KW, C) without a copy.  One comparison with the pooled output marks every
    maximum; where a window has several (ties: ReLU's zeros, flat image regions), all but the
    first (row-major, as TF) are cleared, one window offset at a time; one pass routes the
    gradient.  The clearing is skipped when every window has exactly one maximum (NumPy: as
    many hits as windows and no NaN window, which has none).  MNIST tutorial's 2x2 pool: 5.2 -> 3.7 -> 1.9 ms."""
    n, h, w, c = x.shape
    oh, ow = h // kh, w // kw
    eq = x.reshape(n, oh, kh, ow, kw, c) == y.reshape(n, oh, 1, ow, 1, c)
    # one hit a window for every window: no ties (a NaN window has none, hence its check)
    if kh * kw > 1 and (xp is not np or np.count_nonzero(eq) != y.size or np.isnan(np.add.reduce(y, axis=None))):
        seen = None
        for i in range(kh):
            for j in range(kw):
                hit = eq[:, :, i, :, j, :]
                if seen is None:
                    seen = hit.copy()
                    continue
                xp.greater(hit, seen, out=hit)  # hit and not seen (bools)
                if i < kh - 1 or j < kw - 1:
                    seen |= hit
    return _routed(xp, eq, g.reshape(n, oh, 1, ow, 1, c), _finite(xp, g)).reshape(n, h, w, c)


def _first_max_hits(xp: Any, xpad: Any, y: Any, geo: "_Geometry", kh: int, kw: int, strides: Any) -> Any:
    """Per window offset (row-major): its rows and columns in the padded input and where it is
    the first maximum of its window, the one cell MaxPoolGrad routes a gradient to (as TF)."""
    todo = xp.ones(y.shape, dtype=bool)
    for i in range(kh):
        for j in range(kw):
            rs, cs = _offset(geo, i, j, strides, _UNIT)
            hit = xpad[:, rs, cs, :] == y
            hit &= todo
            xp.greater(todo, hit, out=todo)  # todo and not hit
            yield rs, cs, hit


def tf_window_argmax(xp: Any, xpad: Any, geo: "_Geometry", kh: int, kw: int, strides: Any,
                     shape: Tuple[int, ...]) -> Tuple[Any, Any]:
    """TF's argmax of every pooling window (MaxPoolWithArgmax's, and MaxPoolGrad's where NaN
    or nothing above -inf is present): the window's first real (unpadded) cell, replaced by
    each later cell strictly greater than the one held, so a NaN held first keeps it and a
    later NaN is never taken.  The padding's value is never read (a mask of the real cells
    excludes it).  Returns (the held values, each one's row-major window offset), of `shape`
    [n, oh, ow, c]."""
    h, w = xpad.shape[1] - geo.pt - geo.pb, xpad.shape[2] - geo.pl - geo.pr
    real = _pad(xp, xp.ones((1, h, w, 1), dtype=bool), geo, False)
    cur = xp.zeros(shape, dtype=xpad.dtype)
    held = xp.zeros(shape, dtype=bool)
    arg = xp.full(shape, -1, dtype=np.int32)
    for k in range(kh * kw):
        rs, cs = _offset(geo, k // kw, k % kw, strides, _UNIT)
        v, r = xpad[:, rs, cs, :], real[:, rs, cs, :]
        take = xp.greater(v, cur)
        take |= ~held
        take &= r
        xp.copyto(cur, v, where=take)
        xp.copyto(arg, k, where=take)
        held |= r
    return cur, arg


def _tf_argmax_hits(xp: Any, xpad: Any, y: Any, geo: "_Geometry", kh: int, kw: int, strides: Any) -> Any:
    """As _first_max_hits, by TF's own rule where that differs (NaN or nothing above -inf in a
    window; tf_window_argmax)."""
    _, arg = tf_window_argmax(xp, xpad, geo, kh, kw, strides, y.shape)
    for k in range(kh * kw):
        rs, cs = _offset(geo, k // kw, k % kw, strides, _UNIT)
        yield rs, cs, arg == k


def _needs_tf_argmax(xp: Any, x: Any, y: Any) -> bool:
    """Whether a window may start with a NaN or hold nothing above -inf (its pooled value is
    then the lowest float), where routing by equality with y differs from TF's."""
    if x.dtype.kind != "f" or x.size == 0:
        return False
    # one min over x (NaN propagates through it; 4x faster than a sum in NumPy) finds a NaN, or
    # a -inf, only then is y read for a window pooled to the lowest float
    low = np.finfo(x.dtype).min
    m = xp.min(x)
    return bool(xp.isnan(m)) or (bool(m <= low) and bool(xp.min(y) <= low))


@register_kernel("MaxPoolGrad")
def _max_pool_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    kh, kw, strides, geometry = _pool_setup(op)

    def max_pool_grad(x: Any, y: Any, g: Any, exact: Optional[bool] = None) -> Any:
        n, h, w, c = x.shape
        geo = geometry(h, w, kh, kw)
        exact = _needs_tf_argmax(xp, x, y) if exact is None else exact
        if not exact and tuple(strides) == (kh, kw) and not geo.padded and geo.oh * kh == h and geo.ow * kw == w:
            return _max_pool_grad_tiled(xp, x, y, g, kh, kw)
        xpad = _pad(xp, x, geo, -np.inf)
        dx = xp.zeros(xpad.shape, dtype=g.dtype)
        finite = _finite(xp, g)
        # each output's gradient goes to the first maximum of its window (row-major), as TF
        hits = (_tf_argmax_hits(xp, xpad, y, geo, kh, kw, strides) if exact
                else _first_max_hits(xp, xpad, y, geo, kh, kw, strides))
        for rs, cs, hit in hits:
            dx[:, rs, cs, :] += _routed(xp, hit, g, finite)
        if geo.padded:
            dx = dx[:, geo.pt:geo.pt + h, geo.pl:geo.pl + w, :]
        return dx
    return max_pool_grad


@register_kernel("MaxPoolGradGrad")
def _max_pool_grad_grad(op: Any, ctx: KernelContext) -> Any:
    """MaxPoolGrad's gradient with respect to its `grad` input (MaxPoolGrad is linear in it): each
    output cell takes gg at the first maximum of its window, the cell MaxPoolGrad routes to."""
    xp = ctx.xp
    kh, kw, strides, geometry = _pool_setup(op)

    def max_pool_grad_grad(x: Any, y: Any, gg: Any) -> Any:
        n, h, w, c = x.shape
        geo = geometry(h, w, kh, kw)
        xpad = _pad(xp, x, geo, -np.inf)
        ggpad = _pad(xp, gg, geo, 0)
        finite = _finite(xp, gg)  # (the padding is zeros)
        out = xp.zeros(y.shape, dtype=gg.dtype)
        for rs, cs, hit in _first_max_hits(xp, xpad, y, geo, kh, kw, strides):
            out += _routed(xp, hit, ggpad[:, rs, cs, :], finite)
        return out
    return max_pool_grad_grad


def _avg_counts(xp: Any, geo: _Geometry, h: int, w: int, kh: int, kw: int, strides: Tuple[int, int],
                dtype: Any) -> Any:
    """Per output cell, how many real (unpadded) inputs its window covers: (OH, OW, 1)."""
    def along(size: int, k: int, s: int, out: int, pad: int) -> np.ndarray:
        start = np.arange(out) * s - pad
        return np.minimum(start + k, size) - np.maximum(start, 0)
    ch = along(h, kh, strides[0], geo.oh, geo.pt)
    cw = along(w, kw, strides[1], geo.ow, geo.pl)
    return xp.asarray(np.multiply.outer(ch, cw)[:, :, None].astype(dtype))


@register_kernel("AvgPool")
def _avg_pool(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    kh, kw, strides, geometry = _pool_setup(op)
    counts: Dict[tuple, Any] = {}

    def avg_pool(x: Any) -> Any:
        n, h, w, c = x.shape
        geo = geometry(h, w, kh, kw)
        xpad = _pad(xp, x, geo, 0)
        out = None
        for i in range(kh):
            for j in range(kw):
                rs, cs = _offset(geo, i, j, strides, _UNIT)
                v = xpad[:, rs, cs, :]
                if out is None:
                    out = v.copy()
                else:
                    out += v
        if geo.padded:
            key = (h, w, x.dtype)
            cnt = counts.get(key)
            if cnt is None:
                cnt = counts[key] = _avg_counts(xp, geo, h, w, kh, kw, strides, x.dtype)
            out /= cnt
        else:
            out /= x.dtype.type(kh * kw)
        return out
    return avg_pool


@register_kernel("AvgPoolGrad")
def _avg_pool_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    kh, kw, strides, geometry = _pool_setup(op)
    in_dims = input_dims(op)
    counts: Dict[tuple, Any] = {}

    def avg_pool_grad(sizes: Any, g: Any) -> Any:
        n, h, w, c = in_dims(sizes, g)
        geo = geometry(h, w, kh, kw)
        if g.shape != (n, geo.oh, geo.ow, c):
            raise InvalidArgumentError(f"{op.type}: grad has shape {tuple(g.shape)}, expected "
                                       f"{(n, geo.oh, geo.ow, c)} for input {(n, h, w, c)}", op)
        if geo.padded:
            key = (h, w, g.dtype)
            cnt = counts.get(key)
            if cnt is None:
                cnt = counts[key] = _avg_counts(xp, geo, h, w, kh, kw, strides, g.dtype)
            gs = g / cnt
        else:
            gs = g / g.dtype.type(kh * kw)
        dx = xp.zeros((n, h + geo.pt + geo.pb, w + geo.pl + geo.pr, c), dtype=g.dtype)
        for i in range(kh):
            for j in range(kw):
                rs, cs = _offset(geo, i, j, strides, _UNIT)
                dx[:, rs, cs, :] += gs
        if geo.padded:
            dx = dx[:, geo.pt:geo.pt + h, geo.pl:geo.pl + w, :]
        return dx
    return avg_pool_grad


# -- bias, losses, dropout -----------------------------------------------------------------


@register_kernel("BiasAdd")
def _bias_add(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def bias_add(x: Any, b: Any) -> Any:
        if x.shape[-1] != b.shape[0]:
            raise InvalidArgumentError(f"bias of shape {tuple(b.shape)} does not match the last dimension of "
                                       f"value of shape {tuple(x.shape)}", op)
        return xp.add(x, b)
    return bias_add


@register_kernel("BiasAddGrad")
def _bias_add_grad(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    colsum = ColumnSums() if xp is np else None

    def bias_add_grad(g: Any) -> Any:
        if not g.size:  # nothing to add (and no (-1, 0) view of an empty g)
            return xp.zeros(g.shape[-1:], g.dtype)
        g2 = g.reshape(-1, g.shape[-1])
        return colsum(g2) if colsum is not None else g2.sum(axis=0)
    return bias_add_grad


@register_kernel("L2Loss")
def _l2_loss(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    dt = op.outputs[0].dtype.np

    chunk = 1 << 16

    def l2_loss(x: Any) -> Any:
        f = x.reshape(-1)
        # BLAS dots: no squared temporary.  One float32 dot over millions of elements loses the
        # fourth digit (OpenBLAS accumulates in lanes: 1.4e-4 relative on a 26M-weight layer,
        # AlexNet's fc6); dots of 64K summed in double are as accurate as TF's tree reduction
        if f.size <= chunk or xp is not np:
            return xp.asarray(xp.dot(f, f) * 0.5, dtype=dt)
        total = sum(float(xp.dot(f[i:i + chunk], f[i:i + chunk])) for i in range(0, f.size, chunk))
        return xp.asarray(total * 0.5, dtype=dt)
    return l2_loss


@register_kernel("DropoutMask")
def _dropout_mask(op: Any, ctx: KernelContext) -> Any:
    st = stream_for(op, ctx)
    xp = ctx.xp
    dt = op.outputs[0].dtype.np
    ns = op.attrs["noise_shape"]
    kp_t = op.inputs[1]
    kp_const = float(np.asarray(kp_t.op.attrs["value"]).reshape(-1)[0]) if kp_t.op.type == "Const" else None

    def dropout_mask(x: Any, keep_prob: Any) -> Any:
        kp = kp_const if kp_const is not None else float(keep_prob.reshape(-1)[0])
        if not 0 < kp <= 1:
            raise InvalidArgumentError(f"dropout keep_prob must be in (0, 1], got {kp}", op)
        shp = x.shape if ns is None else tuple(x.shape[i] if d is None else d for i, d in enumerate(ns))
        # floor(u + keep) is 1 with probability keep, else 0 (as TF); then scale by 1 / keep
        u = st.uniform(shp, dt)
        u += dt.type(kp)
        xp.floor(u, out=u)
        u *= dt.type(1.0 / kp)
        return u
    return dropout_mask
