"""Kernels of the math ops, written once against `xp` (NumPy or CuPy).

Where the NumPy function already has the op's semantics the factory returns it directly,
so running the op costs one call.
"""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

from ..errors import InvalidArgumentError
from . import blas as _blas
from .registry import register_kernel, KernelContext


def _direct(op_type: str, fname: str) -> None:
    register_kernel(op_type)(lambda op, ctx: getattr(ctx.xp, fname))


for _t, _f in (("Add", "add"), ("Sub", "subtract"), ("Mul", "multiply"), ("Maximum", "maximum"),
               ("Minimum", "minimum"), ("Equal", "equal"), ("NotEqual", "not_equal"), ("Less", "less"),
               ("LessEqual", "less_equal"), ("Greater", "greater"), ("GreaterEqual", "greater_equal"),
               ("LogicalAnd", "logical_and"), ("LogicalOr", "logical_or"), ("LogicalNot", "logical_not"),
               ("Neg", "negative"), ("Exp", "exp"), ("Log", "log"), ("Log1p", "log1p"), ("Sqrt", "sqrt"),
               ("Square", "square"), ("Abs", "abs"), ("Sign", "sign"), ("Sin", "sin"), ("Cos", "cos"),
               ("BitwiseAnd", "bitwise_and"), ("BitwiseOr", "bitwise_or"), ("BitwiseXor", "bitwise_xor"),
               ("Invert", "invert")):
    _direct(_t, _f)


def _shift(name: str, fn_name: str) -> None:
    @register_kernel(name)
    def factory(op: Any, ctx: KernelContext) -> Any:
        # TF clamps the shift to [0, bits - 1] (NumPy gives 0 or -1 past the width and
        # shifts the other way for a negative count)
        xp, top = ctx.xp, op.outputs[0].dtype.np.itemsize * 8 - 1
        fn = getattr(xp, fn_name)
        return lambda x, y: fn(x, xp.clip(y, 0, top))


_shift("LeftShift", "left_shift")
_shift("RightShift", "right_shift")


def check_int_divisor(xp: Any, y: Any, op: Any) -> None:
    """TF1's CPU kernels refuse an integer division by zero (NumPy would give 0 and warn).  Not
    checked on the GPU, whose kernels do not check either: reading the flag would synchronise."""
    if xp is np and bool((y == 0).any()):
        raise InvalidArgumentError("Integer division by zero", op)


def _int_checked(name: str, fn_name: str) -> None:
    @register_kernel(name)
    def factory(op: Any, ctx: KernelContext) -> Any:
        fn = getattr(ctx.xp, fn_name)
        if not op.outputs[0].dtype.is_integer:
            return fn

        def run(x: Any, y: Any) -> Any:
            check_int_divisor(ctx.xp, y, op)
            return fn(x, y)
        return run


_int_checked("FloorMod", "mod")


@register_kernel("FloorDiv")
def _floor_div(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    if not op.outputs[0].dtype.is_integer:
        # TF's floating FloorDiv is floor(x / y): -0.5 // inf is -0 there (NumPy's floor_divide
        # follows Python's divmod and gives -1), and 1 // 0.1 is 10 (NumPy: 9)
        return lambda x, y: xp.floor(xp.true_divide(x, y))

    def run(x: Any, y: Any) -> Any:
        check_int_divisor(xp, y, op)
        return xp.floor_divide(x, y)
    return run


def _keep_dtype(op: Any, ctx: KernelContext, fn: Any) -> Any:
    """Wraps fn so integer inputs give the op's declared dtype (NumPy would promote)."""
    dt = op.outputs[0].dtype.np
    if op.outputs[0].dtype.is_floating:
        return fn

    def run(*args: Any) -> Any:
        return fn(*args).astype(dt, copy=False)
    return run


register_kernel("RealDiv")(lambda op, ctx: _keep_dtype(op, ctx, ctx.xp.true_divide))
register_kernel("Pow")(lambda op, ctx: ctx.xp.power)


@register_kernel("Rsqrt")
def _rsqrt(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def rsqrt(x: Any) -> Any:
        r = xp.sqrt(x)
        # a 0-d result is a NumPy scalar: 1 / r would be float64 under NumPy 1.x's promotion
        return xp.reciprocal(r, out=r) if getattr(r, "ndim", 0) else xp.reciprocal(r)
    return rsqrt


register_kernel("Reciprocal")(lambda op, ctx: ctx.xp.reciprocal)


@register_kernel("SquaredDifference")
def _sqdiff(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def sqdiff(x: Any, y: Any) -> Any:
        d = xp.subtract(x, y)
        return xp.multiply(d, d, out=d) if getattr(d, "ndim", 0) else d * d

    if op.outputs[0].dtype.is_complex:
        # TF's complex form: (x - y) * conj(x - y), i.e. |x - y|^2 with an exactly zero
        # imaginary part (a complex product may leave a rounding residue there)
        dt = op.outputs[0].dtype.np

        def sqdiff_complex(x: Any, y: Any) -> Any:
            d = xp.subtract(x, y)
            return xp.asarray(xp.square(d.real) + xp.square(d.imag)).astype(dt)
        return sqdiff_complex
    return sqdiff


@register_kernel("AddN")
def _add_n(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def add_n(x0: Any, x1: Any, *rest: Any) -> Any:
        out = xp.add(x0, x1)
        for r in rest:
            out += r
        return out
    return add_n


def wide_nt_product(a: Any, b: Any, out: Any = None) -> Any:
    """a @ b.T for a short, wide float32 result (2-D NumPy arrays, at most 128 rows, at least
    4x as many columns, 2^20 multiply-adds or more) computed as (b @ a.T).T: OpenBLAS's
    SkylakeX kernels run that product faster on one thread (a dense layer's input gradient,
    50 x 1024 by (3136 x 1024)^T: 2.58 -> 1.97 ms; 32 x 1024 by (1024 x 1024)^T 0.68 -> 0.37;
    128 x 4096 by (1024 x 4096)^T 6.11 -> 5.60; 16 x 512 by (512 x 512)^T 0.12 -> 0.07), its
    Haswell kernels at the same speed.  Not float64, which runs slower swapped (the first
    shape: 4.28 -> 7.26 ms).  The plain product a @ b swapped the same way gained or lost a
    few percent by shape, so it is left to NumPy.  The transpose back is omatcopy's.  Into
    `out` when given; None (nothing done) where it does not apply."""
    if (type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim != 2 or b.ndim != 2
            or a.dtype != np.float32 or b.dtype != np.float32):
        return None
    (m, k), n = a.shape, b.shape[0]
    if b.shape[1] != k or m > 128 or n < 4 * m or m * n * k < (1 << 20):
        return None
    ct = np.empty((n, m), dtype=a.dtype)
    if not _blas.gemm(b, False, a, True, ct, 1.0, 0.0):
        return None
    if out is None:
        out = np.empty((m, n), dtype=a.dtype)
    back = _blas.transposer(ct, out)
    if back is None:
        out[...] = ct.T
    else:
        back(0)
    return out


@register_kernel("MatMul")
def _matmul(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    mm = xp.matmul
    if not ta and not tb:
        return mm
    # transposed views: BLAS reads them with its transpose flag, no copy
    if ta and tb:
        return lambda a, b: mm(xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2))
    if ta:
        return lambda a, b: mm(xp.swapaxes(a, -1, -2), b)

    def nt(a: Any, b: Any) -> Any:
        c = wide_nt_product(a, b) if xp is np else None
        return mm(a, xp.swapaxes(b, -1, -2)) if c is None else c
    return nt


class ColumnSums:
    """Sums over the rows of a tall C-contiguous float32/float64 matrix [rows, cols] as one
    GEMV, ones @ x, into `out` if given; else (other dtypes, wide or short matrices, CuPy)
    NumPy's axis-0 sum.  NumPy's axis-0 sum of a matrix with few columns (a conv layer's
    bias gradient: 39200 x 32) walks it a short row at a time: 0.99 ms there, the GEMV
    0.19 ms.  One ones vector per row count, kept."""

    def __init__(self) -> None:
        self._ones: Dict[tuple, Any] = {}

    def __call__(self, x: Any, out: Any = None) -> Any:
        rows, cols = x.shape
        if (type(x) is not np.ndarray or x.dtype not in (np.float32, np.float64) or cols > 1024
                or rows < 4 * cols or not x.flags.c_contiguous):
            return np.sum(x, axis=0, out=out)
        key = (rows, x.dtype)
        ones = self._ones.get(key)
        if ones is None:
            ones = self._ones[key] = np.ones(rows, dtype=x.dtype)
        return np.matmul(ones, x, out=out)


def leading_axes(axis: Any, ndim: int) -> int:
    """How many leading axes `axis` (an int, a tuple, None) names when it names exactly the
    first k axes of an ndim array and leaves at least one; 0 otherwise."""
    if axis is None:
        return 0
    axes = sorted(a % ndim if ndim else a for a in ((axis,) if isinstance(axis, int) else axis))
    k = len(axes)
    return k if 0 < k < ndim and axes == list(range(k)) else 0


def _reduction(op: Any, ctx: KernelContext, fname: str) -> Any:
    xp = ctx.xp
    fn = getattr(xp, fname)
    axis = op.attrs["axis"]
    keep = op.attrs["keepdims"]
    dt = op.outputs[0].dtype.np
    float_out = op.outputs[0].dtype.is_floating
    if axis is not None and not isinstance(axis, int):
        axis = tuple(axis)

    if fname == "mean" and not float_out:
        return lambda x: fn(x, axis=axis, keepdims=keep).astype(dt)
    if fname in ("sum", "prod") and not float_out:
        return lambda x: fn(x, axis=axis, keepdims=keep, dtype=dt)

    if fname == "sum" and xp is np:
        colsum = ColumnSums()

        def sum_(x: Any) -> Any:
            k = leading_axes(axis, x.ndim)
            if not k or not x.size:  # an empty x cannot be viewed as (-1, columns)
                return fn(x, axis=axis, keepdims=keep)
            tail = x.shape[k:]
            r = colsum(x.reshape(-1, int(np.prod(tail))))
            return r.reshape(((1,) * k if keep else ()) + tail)
        return sum_

    if fname in ("max", "min"):
        # over nothing: the reduction's identity, as TF (the lowest value for max, the highest
        # for min: -inf/+inf, the integer limits) where NumPy refuses
        info = np.finfo(dt) if float_out else np.iinfo(dt) if np.dtype(dt).kind in "iu" else None
        ident = None if info is None else (-np.inf if float_out else info.min) if fname == "max" else \
            (np.inf if float_out else info.max)

        def extreme(x: Any) -> Any:
            if x.size or ident is None:
                return fn(x, axis=axis, keepdims=keep)
            shape = np.max(np.zeros(x.shape, np.int8), axis=axis, keepdims=keep, initial=0).shape
            return xp.full(shape, ident, dtype=dt)
        return extreme

    if fname == "mean" and float_out:
        def mean(x: Any) -> Any:
            if x.size:
                return fn(x, axis=axis, keepdims=keep)
            # over nothing: 0/0 = NaN silently, as TF (NumPy's mean warns "Mean of empty slice")
            return xp.true_divide(xp.sum(x, axis=axis, keepdims=keep), dt.type(0))
        return mean

    def reduce(x: Any) -> Any:
        return fn(x, axis=axis, keepdims=keep)
    return reduce


register_kernel("Sum")(lambda op, ctx: _reduction(op, ctx, "sum"))
register_kernel("Mean")(lambda op, ctx: _reduction(op, ctx, "mean"))
register_kernel("Max")(lambda op, ctx: _reduction(op, ctx, "max"))
register_kernel("Min")(lambda op, ctx: _reduction(op, ctx, "min"))
register_kernel("Prod")(lambda op, ctx: _reduction(op, ctx, "prod"))


def _arg(op: Any, ctx: KernelContext, fname: str) -> Any:
    xp = ctx.xp
    fn = getattr(xp, fname)
    axis = op.attrs["axis"]
    dt = op.attrs["output_type"].np
    if op.inputs[0].dtype.is_floating:
        # TF's reducer keeps the first strict maximum (minimum): NaN never wins, where NumPy's
        # argmax/argmin return the first NaN; so NaNs become the value that never wins
        worst = -np.inf if fname == "argmax" else np.inf

        def arg(x: Any) -> Any:
            if bool(xp.isnan(x).any()):
                x = xp.where(xp.isnan(x), worst, x)
            return fn(x, axis=axis).astype(dt, copy=False)
        return arg
    return lambda x: fn(x, axis=axis).astype(dt, copy=False)


register_kernel("ArgMax")(lambda op, ctx: _arg(op, ctx, "argmax"))
register_kernel("ArgMin")(lambda op, ctx: _arg(op, ctx, "argmin"))


@register_kernel("Cast")
def _cast(op: Any, ctx: KernelContext) -> Any:
    dt = op.attrs["DstT"].np
    xp = ctx.xp
    return lambda x: xp.asarray(x).astype(dt, copy=False)


@register_kernel("ClipByValue")
def _clip(op: Any, ctx: KernelContext) -> Any:
    xp = ctx.xp

    def clip(x: Any, lo: Any, hi: Any) -> Any:
        # TF1's clip_by_value is maximum(minimum(x, hi), lo): with lo > hi every element is lo
        # (np.clip gives hi); LSTMCell(cell_clip=-1) clips its cell to 1 that way
        return xp.maximum(xp.minimum(x, hi), lo)
    return clip


@register_kernel("SumToShapeOf")
def _sum_to_shape(op: Any, ctx: KernelContext) -> Any:
    def sum_to(g: Any, x: Any) -> Any:
        xs = x.shape
        gs = g.shape
        if gs == xs:
            return g
        lead = len(gs) - len(xs)
        if lead:
            g = g.sum(axis=tuple(range(lead)))
        ones = tuple(i for i, d in enumerate(xs) if d == 1 and g.shape[i] != 1)
        if ones:
            g = g.sum(axis=ones, keepdims=True)
        return g.reshape(xs)
    return sum_to
