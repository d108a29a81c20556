"""Matrix and tensor-contraction ops of TensorFlow 1.x: tf.einsum, tf.tensordot, tf.eye,
tf.diag / tf.diag_part, tf.matrix_diag / matrix_diag_part / matrix_set_diag, tf.meshgrid.

Einsum is one op for any number of operands (the equation normalized when the graph is built:
explicit output, `...` spelled out as letters); tensordot is an einsum.  The gradient of an
operand is again an einsum of the output gradient with the other operands, so it can be
differentiated again.  Kernels live in kernels/matrix_kernels.py.
"""
from __future__ import annotations

import string
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from .constant_op import constant
from .op_util import dense as _dense, make_op, single

__all__ = ["einsum", "tensordot", "eye", "diag", "diag_part", "matrix_diag", "matrix_diag_part",
           "matrix_set_diag", "matrix_transpose", "meshgrid", "qr"]

_LETTERS = string.ascii_letters

# -- einsum: parsing ---------------------------------------------------------------------------


def _parse(equation: str, ranks: Sequence[Optional[int]]) -> Tuple[List[str], str, str]:
    """(input labels, output labels, broadcast labels) of an einsum equation.

    Spaces are ignored; without '->' the output is the labels used once, sorted (NumPy's and
    TensorFlow's rule).  An ellipsis becomes fresh letters (right-aligned across operands, so
    they broadcast); that needs the ranks of the operands that have one.
    """
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise InvalidArgumentError(f"einsum: equation {equation!r} has more than one '->'")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(ranks):
        raise InvalidArgumentError(f"einsum: equation {equation!r} has {len(ins)} operands, "
                                   f"{len(ranks)} tensors were given")
    for part in ins + ([rhs] if arrow else []):
        bad = set(part.replace("...", "")) - set(_LETTERS)
        if bad or part.count("...") > 1:
            raise InvalidArgumentError(f"einsum: invalid subscripts {part!r} in {equation!r} (letters and "
                                       "at most one '...' per operand)")
    used = set(lhs.replace("...", "").replace(",", ""))
    fresh = [c for c in _LETTERS if c not in used]
    n_ell = 0
    for part, r in zip(ins, ranks):
        if "..." in part:
            if r is None:
                raise InvalidArgumentError(f"einsum: operand {part!r} has '...' but an unknown rank")
            n_ell = max(n_ell, r - (len(part) - 3))
    ell = "".join(fresh[:n_ell])
    if len(fresh) < n_ell:
        raise InvalidArgumentError(f"einsum: {equation!r} needs more than {len(_LETTERS)} labels")
    out_ins = []
    for part, r in zip(ins, ranks):
        if "..." in part:
            k = r - (len(part) - 3)
            part = part.replace("...", ell[n_ell - k:] if k else "")
        if r is not None and len(part) != r:
            raise InvalidArgumentError(f"einsum: subscripts {part!r} do not match an operand of rank {r} "
                                       f"in {equation!r}")
        out_ins.append(part)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts: Dict[str, int] = {}
        for c in "".join(out_ins):
            counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    if len(set(out)) != len(out):
        raise InvalidArgumentError(f"einsum: output subscripts {out!r} repeat a label in {equation!r}")
    missing = set(out) - set("".join(out_ins))
    if missing:
        raise InvalidArgumentError(f"einsum: output labels {sorted(missing)} appear in no input of {equation!r}")
    return out_ins, out, ell


def _einsum_spec(op: _g.Operation) -> list:
    ins, out = op.attrs["inputs"], op.attrs["output"]
    bcast = set(op.attrs["broadcast"])
    dt = op.inputs[0].dtype
    sizes: Dict[str, Optional[int]] = {}
    known_one: set = set()
    for t, labels in zip(op.inputs, ins):
        if t.dtype != dt:
            raise ValueError(f"einsum operands have different dtypes {dt.name} and {t.dtype.name}")
        if t.shape.rank is None:
            continue
        first: Dict[str, Optional[int]] = {}
        for c, d in zip(labels, t.shape.dims):
            if c in first and d is not None and first[c] is not None and first[c] != d:
                raise ValueError(f"einsum: label {c!r} repeats in {labels!r} with sizes {first[c]} and {d}")
            first.setdefault(c, d)
            if d == 1 and c in bcast:
                known_one.add(c)
                continue
            have = sizes.get(c)
            if have is not None and d is not None and have != d:
                raise ValueError(f"einsum: label {c!r} has size {have} in one operand and {d} in another "
                                 f"(shapes {[str(x.shape) for x in op.inputs]})")
            if d is not None or c not in sizes:
                sizes[c] = d
    dims = [sizes[c] if c in sizes else (1 if c in known_one else None) for c in out]
    if any(t.shape.rank is None for t in op.inputs):
        dims = [d if c not in bcast else None for c, d in zip(out, dims)]
    return [(dt, TensorShape(dims))]


register_op("Einsum", _einsum_spec, doc="Einstein summation; attrs: inputs/output labels, broadcast labels")


def _einsum_op(ins: Sequence[str], out: str, bcast: str, tensors: Sequence[_g.Tensor],
               name: Optional[str] = None) -> _g.Tensor:
    eq = ",".join(ins) + "->" + out
    return single("Einsum", list(tensors), {"equation": eq, "inputs": tuple(ins), "output": out,
                                            "broadcast": bcast}, name=name or "einsum")


def einsum(equation: str, *inputs: Any, **kwargs: Any) -> _g.Tensor:
    """Einstein summation over any number of operands: tf.einsum('ij,jk->ik', a, b).

    Letters label dimensions; a label in several operands multiplies along it, a label absent
    from the output is summed over.  '...' stands for leading dimensions that broadcast; without
    '->' the output is the labels used exactly once, in alphabetical order.  A label repeated
    within one operand takes its diagonal ('ii->i').  Operands share one dtype.
    """
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"einsum got unexpected keyword arguments {sorted(kwargs)}")
    if not inputs:
        raise InvalidArgumentError("einsum needs at least one operand")
    tensors = [_g.convert_to_tensor(x) for x in inputs]
    ins, out, bcast = _parse(equation, [t.shape.rank for t in tensors])
    return _einsum_op(ins, out, bcast, tensors, name)


@register_gradient("Einsum")
def _einsum_grad(op: _g.Operation, g: Any) -> list:
    g = g if isinstance(g, _g.Tensor) else _g.convert_to_tensor(g)
    ins, out, bcast = op.attrs["inputs"], op.attrs["output"], op.attrs["broadcast"]
    grads = []
    for k, (x, labels) in enumerate(zip(op.inputs, ins)):
        if not (x.dtype.is_floating or x.dtype.is_complex):
            grads.append(None)
            continue
        from .complex_ops import conj_if_complex     # complex: the other operands conjugated (TF's)
        others = [(conj_if_complex(t), s) for j, (t, s) in enumerate(zip(op.inputs, ins)) if j != k]
        elsewhere = set(out).union(*[set(s) for _, s in others])
        unique = "".join(dict.fromkeys(labels))
        terms = [(g, out)] + others
        if set(unique) - elsewhere:
            # labels summed within x alone: ones of x's shape give the gradient those dimensions
            terms.append((_a.ones_like(x), labels))
        gx = _einsum_op([s for _, s in terms], unique, bcast, [t for t, _ in terms])
        if len(unique) != len(labels):
            gx = _spread_diagonals(gx, unique, labels, x, bcast)
        grads.append(_m.sum_to_shape_of(gx, x))  # sums dimensions where x was broadcast
    return grads


def _spread_diagonals(gx: _g.Tensor, unique: str, labels: str, x: _g.Tensor, bcast: str) -> _g.Tensor:
    """gx (labels `unique`) placed on the diagonals of x's repeated labels, zeros elsewhere:
    each repeat of a label becomes a fresh one tied to the first by an identity matrix."""
    fresh = iter(c for c in _LETTERS if c not in labels and c not in bcast)
    target, eyes, seen = [], [], {}
    for pos, c in enumerate(labels):
        if c not in seen:
            seen[c] = pos
            target.append(c)
            continue
        f = next(fresh)
        target.append(f)
        d = x.shape.dims[pos] if x.shape.rank is not None else None
        n = d if d is not None else _a.gather(_a.shape(x), pos)
        eyes.append((eye(n, dtype=x.dtype), c + f))
    return _einsum_op([unique] + [s for _, s in eyes], "".join(target), bcast, [gx] + [t for t, _ in eyes])


# -- tensordot ---------------------------------------------------------------------------------


def _tensordot_axes(axes: Any, ra: int, rb: int) -> Tuple[List[int], List[int]]:
    if isinstance(axes, _g.Tensor):
        if axes.op.type != "Const":
            raise InvalidArgumentError("tensordot: axes must be known when the graph is built")
        axes = np.asarray(axes.op.attrs["value"]).tolist()
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(ra, rb):
            raise InvalidArgumentError(f"tensordot: axes={n} must be in [0, {min(ra, rb)}] for operands of "
                                       f"ranks {ra} and {rb}")
        return list(range(ra - n, ra)), list(range(n))
    axes = list(axes)
    if len(axes) != 2:
        raise InvalidArgumentError(f"tensordot: axes must be an int or a pair of axis lists, got {axes!r}")
    aa = [int(axes[0])] if isinstance(axes[0], (int, np.integer)) else [int(i) for i in axes[0]]
    bb = [int(axes[1])] if isinstance(axes[1], (int, np.integer)) else [int(i) for i in axes[1]]
    if len(aa) != len(bb):
        raise InvalidArgumentError(f"tensordot: {len(aa)} axes of a but {len(bb)} axes of b: {axes!r}")
    for lst, r, what in ((aa, ra, "a"), (bb, rb, "b")):
        for i, ax in enumerate(lst):
            if not -r <= ax < r:
                raise InvalidArgumentError(f"tensordot: axis {ax} is out of range for {what} of rank {r}")
            lst[i] = ax % r
    return aa, bb


def tensordot(a: Any, b: Any, axes: Any, name: Optional[str] = None) -> _g.Tensor:
    """Sums a * b over a's axes[0] paired with b's axes[1]; an int N pairs a's last N axes with
    b's first N.  The result has a's free axes, then b's (axes=0: the outer product)."""
    a = _g.convert_to_tensor(a)
    b = _g.convert_to_tensor(b, dtype=None if isinstance(b, _g.Tensor) else a.dtype, graph=a.graph)
    ra, rb = a.shape.rank, b.shape.rank
    if ra is None or rb is None:
        raise InvalidArgumentError(f"tensordot needs operands of known rank, got shapes {a.shape} and {b.shape}")
    aa, bb = _tensordot_axes(axes, ra, rb)
    if len(set(aa)) != len(aa) or len(set(bb)) != len(bb):
        raise InvalidArgumentError(f"tensordot: repeated axes in {axes!r}")
    la = _LETTERS[:ra]
    lb = list(_LETTERS[ra:ra + rb])
    for i, j in zip(aa, bb):
        lb[j] = la[i]
    lb_s = "".join(lb)
    out = "".join(c for i, c in enumerate(la) if i not in aa) + "".join(c for j, c in enumerate(lb) if j not in bb)
    return _einsum_op([la, lb_s], out, "", [a, b], name=name or "Tensordot")


# -- eye and diagonals -------------------------------------------------------------------------


def _eye_spec(op: _g.Operation) -> list:
    for t, what in zip(op.inputs, ("num_rows", "num_columns")):
        if t.dtype not in (_dt.int32, _dt.int64) or t.shape.rank not in (None, 0):
            raise ValueError(f"eye: {what} must be an int32/int64 scalar, got {t.dtype.name} of shape {t.shape}")
    dims = [_static_int(t) for t in op.inputs]
    return [(op.attrs["dtype"], TensorShape(list(op.attrs["batch_shape"]) + dims))]


register_op("Eye", _eye_spec, doc="identity matrices of run-time size (batch_shape static)")


def _static_int(v: Any) -> Optional[int]:
    """A Python int, or the value of a constant scalar tensor; None when only known at run time."""
    if isinstance(v, _g.Tensor):
        from .shape_eval import scalar_value  # shape(x)[0] of a known dim, arithmetic of such
        return scalar_value(v)
    return int(v)


def eye(num_rows: Any, num_columns: Any = None, batch_shape: Any = None, dtype: Any = _dt.float32,
        name: Optional[str] = None) -> _g.Tensor:
    """Identity matrices [*batch_shape, num_rows, num_columns] (num_columns defaults to num_rows);
    the sizes may be scalar int tensors, batch_shape is a static list."""
    dt = _dt.as_dtype(dtype)
    batch = tuple(int(d) for d in (batch_shape or ()))
    cols = num_rows if num_columns is None else num_columns
    r, c = _static_int(num_rows), _static_int(cols)
    for v, what in ((r, "num_rows"), (c, "num_columns")):
        if v is not None and v < 0:
            raise InvalidArgumentError(f"eye: {what} must be non-negative, got {v}")
    if any(d < 0 for d in batch):
        raise InvalidArgumentError(f"eye: batch_shape must be non-negative, got {list(batch)}")
    if r is not None and c is not None:
        value = np.broadcast_to(np.eye(r, c, dtype=dt.np), batch + (r, c))
        return constant(value, dtype=dt, name=name or "eye")
    g = next((v.graph for v in (num_rows, cols) if isinstance(v, _g.Tensor)), _g.get_default_graph())
    with g.as_default():
        sizes = [v if isinstance(v, _g.Tensor) else constant(int(v), dtype=_dt.int32) for v in (num_rows, cols)]
        return single("Eye", sizes, {"dtype": dt, "batch_shape": batch}, name=name or "eye")


def _diag_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.shape.rank == 0:
        raise ValueError("diag needs a diagonal of rank >= 1, got a scalar")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))]
    return [(x.dtype, TensorShape(list(x.shape.dims) * 2))]


def _diag_part_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    r = x.shape.rank
    if r is None:
        return [(x.dtype, TensorShape(None))]
    if r == 0 or r % 2:
        raise ValueError(f"diag_part needs an input of even rank >= 2, got shape {x.shape}")
    half = r // 2
    a, b = TensorShape(x.shape.dims[:half]), TensorShape(x.shape.dims[half:])
    if not a.is_compatible_with(b):
        raise ValueError(f"diag_part needs shape [d1..dk, d1..dk], got {x.shape}")
    return [(x.dtype, a.merge_with(b))]


def _matrix_diag_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.shape.rank == 0:
        raise ValueError("matrix_diag needs a diagonal of rank >= 1, got a scalar")
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))]
    return [(x.dtype, TensorShape(list(x.shape.dims) + [x.shape.dims[-1]]))]


def _matrix_diag_part_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    if x.shape.rank is None:
        return [(x.dtype, TensorShape(None))]
    if x.shape.rank < 2:
        raise ValueError(f"matrix_diag_part needs an input of rank >= 2, got shape {x.shape}")
    m, n = x.shape.dims[-2:]
    k = None if m is None or n is None else min(m, n)
    return [(x.dtype, TensorShape(list(x.shape.dims[:-2]) + [k]))]


def _matrix_set_diag_spec(op: _g.Operation) -> list:
    x, d = op.inputs
    if x.dtype != d.dtype:
        raise ValueError(f"matrix_set_diag: input and diagonal have different dtypes {x.dtype.name} and "
                         f"{d.dtype.name}")
    want = _matrix_diag_part_spec(op)[0][1]
    if not want.is_compatible_with(d.shape):
        raise ValueError(f"matrix_set_diag: diagonal of shape {d.shape} does not fit an input of shape {x.shape} "
                         f"(expected {want})")
    return [(x.dtype, x.shape)]


register_op("Diag", _diag_spec)
register_op("DiagPart", _diag_part_spec)
register_op("MatrixDiag", _matrix_diag_spec)
register_op("MatrixDiagPart", _matrix_diag_part_spec)
register_op("MatrixSetDiag", _matrix_set_diag_spec)
not_differentiable("Eye")


register_gradient("Diag")(lambda op, g: [diag_part(_dense(g))])
register_gradient("DiagPart")(lambda op, g: [diag(_dense(g))])
register_gradient("MatrixDiag")(lambda op, g: [matrix_diag_part(_dense(g))])


@register_gradient("MatrixDiagPart")
def _matrix_diag_part_grad(op: _g.Operation, g: Any) -> list:
    x = op.inputs[0]
    dims = x.shape.dims
    if dims is not None and dims[-1] is not None and dims[-1] == dims[-2]:
        return [matrix_diag(_dense(g))]
    return [matrix_set_diag(_a.zeros_like(x), _dense(g))]


@register_gradient("MatrixSetDiag")
def _matrix_set_diag_grad(op: _g.Operation, g: Any) -> list:
    g = _dense(g)
    return [matrix_set_diag(g, _a.zeros_like(op.inputs[1])), matrix_diag_part(g)]


def diag(diagonal: Any, name: Optional[str] = None) -> _g.Tensor:
    """The tensor of rank 2k with `diagonal` (rank k) on its diagonal:
    out[i1..ik, i1..ik] = diagonal[i1..ik], zeros elsewhere."""
    return single("Diag", [diagonal], name=name or "Diag")


def diag_part(input: Any, name: Optional[str] = None) -> _g.Tensor:  # noqa: A002 - TF name
    """The inverse of diag: out[i1..ik] = input[i1..ik, i1..ik] for input of shape [d1..dk, d1..dk]."""
    return single("DiagPart", [input], name=name or "DiagPart")


def _general(k: Any, *defaults: bool) -> bool:
    """Whether a call needs the band ops (matrix_band_diag_ops.py) rather than the k = 0 ones."""
    from .matrix_band_diag_ops import is_main_diagonal
    return not (is_main_diagonal(k) and all(defaults))


def _is_zero(v: Any) -> bool:
    return not isinstance(v, _g.Tensor) and np.ndim(v) == 0 and v == 0


def matrix_diag(diagonal: Any, name: Optional[str] = None, k: Any = 0, num_rows: Any = -1, num_cols: Any = -1,
                padding_value: Any = 0, align: str = "RIGHT_LEFT") -> _g.Tensor:
    """Batched diagonal matrices: [..., N] -> [..., N, N] with the last axis on the diagonal.

    k (an int or a pair k_low <= k_high), num_rows, num_cols, padding_value and align give
    TF's general form (a band of diagonals, see matrix_band_diag_ops.matrix_diag_v3)."""
    from . import matrix_band_diag_ops as _band
    _band.check_align(align)
    if _general(k, num_rows in (-1, None), num_cols in (-1, None), _is_zero(padding_value)):
        return _band.matrix_diag_v3(diagonal, k, num_rows, num_cols, padding_value, align, name=name)
    return single("MatrixDiag", [diagonal], name=name or "diag")


def matrix_diag_part(input: Any, name: Optional[str] = None, k: Any = 0,  # noqa: A002 - TF name
                     padding_value: Any = 0, align: str = "RIGHT_LEFT") -> _g.Tensor:
    """The main diagonals of a batch of matrices: [..., M, N] -> [..., min(M, N)]; k (an int or
    a pair), padding_value and align give TF's band form (matrix_band_diag_ops)."""
    from . import matrix_band_diag_ops as _band
    _band.check_align(align)
    if _general(k):   # the main diagonal alone is never padded: padding_value has no effect
        return _band.matrix_diag_part_v3(input, k, padding_value, align, name=name)
    return single("MatrixDiagPart", [input], name=name or "diag_part")


def matrix_set_diag(input: Any, diagonal: Any, name: Optional[str] = None, k: Any = 0,  # noqa: A002 - TF name
                    align: str = "RIGHT_LEFT") -> _g.Tensor:
    """`input` ([..., M, N]) with its main diagonals replaced by `diagonal` ([..., min(M, N)]);
    k (an int or a pair) and align give TF's band form (matrix_band_diag_ops)."""
    from . import matrix_band_diag_ops as _band
    _band.check_align(align)
    if _general(k):
        return _band.matrix_set_diag_v3(input, diagonal, k, align, name=name)
    x = _g.convert_to_tensor(input)
    d = _g.convert_to_tensor(diagonal, dtype=None if isinstance(diagonal, _g.Tensor) else x.dtype, graph=x.graph)
    return single("MatrixSetDiag", [x, d], name=name or "set_diag")


# -- meshgrid ----------------------------------------------------------------------------------


def meshgrid(*args: Any, **kwargs: Any) -> List[_g.Tensor]:
    """N-D coordinate grids from N 1-D tensors (flattened if not 1-D).

    indexing='xy' (default, Cartesian): with two inputs of sizes M and N the outputs have shape
    [N, M]; 'ij' (matrix): [M, N].  All inputs share one dtype.
    """
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid got unexpected keyword arguments {sorted(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise InvalidArgumentError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    if not args:
        return []
    xs = [_g.convert_to_tensor(x) for x in args]
    for x in xs[1:]:
        if x.dtype != xs[0].dtype:
            raise InvalidArgumentError(f"meshgrid inputs must share one dtype, got {xs[0].dtype.name} and "
                                       f"{x.dtype.name}")
    nd = len(xs)
    g = xs[0].graph
    with g.as_default(), g.name_scope(name or "meshgrid"):
        shaped = []
        for i, x in enumerate(xs):
            axis = i
            if indexing == "xy" and nd > 1 and i < 2:
                axis = 1 - i  # Cartesian: the first input varies along columns
            shaped.append(_a.reshape(x, [1] * axis + [-1] + [1] * (nd - axis - 1)))
        # every output broadcast to the full grid: one ones tensor of the grid's shape
        ones = _a.ones_like(shaped[0])
        for s in shaped[1:]:
            ones = ones * _a.ones_like(s)
        return [s * ones for s in shaped]


def _swap_last_spec(op: _g.Operation) -> list:
    a = op.inputs[0]
    d = a.shape.dims
    return [(a.dtype, TensorShape(None if d is None else d[:-2] + (d[-1], d[-2])))]


register_op("MatrixTranspose", _swap_last_spec, doc="the last two axes swapped (for inputs of unknown rank)")
register_gradient("MatrixTranspose")(lambda op, g: [matrix_transpose(g)])


def matrix_transpose(a: Any, name: Optional[str] = None, conjugate: bool = False) -> _g.Tensor:
    """Swaps the last two dimensions of a batch of matrices (tf.linalg.matrix_transpose); a
    rank unknown when the graph is built is read at run time (as TF).  `conjugate` is for
    complex types (nothing to conjugate in a real tensor)."""
    a = _g.convert_to_tensor(a)
    if conjugate and a.dtype.is_complex:
        from .complex_ops import conj
        a = conj(a)
    rank = a.shape.rank
    if rank is None:  # the last two axes swapped, whatever the rank (checked >= 2 at run time)
        return single("MatrixTranspose", [a], name=name or "matrix_transpose")
    if rank < 2:
        raise InvalidArgumentError(f"matrix_transpose: needs a tensor of known rank >= 2, got shape {a.shape}")
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return _a.transpose(a, perm, name=name or "matrix_transpose")


def _qr_spec(op: _g.Operation) -> list:
    a = op.inputs[0]
    if not (a.dtype.is_floating or a.dtype.is_complex):   # complex too, as TF's (q unitary)
        raise ValueError(f"qr needs a floating-point or complex matrix, got {a.dtype.name}")
    shp = a.shape
    if shp.rank is None:
        return [(a.dtype, TensorShape(None)), (a.dtype, TensorShape(None))]
    if shp.rank < 2:
        raise ValueError(f"qr needs a matrix (or a batch of them), got shape {shp}")
    *batch, m, n = shp.dims
    k = None if m is None or n is None else min(m, n)
    full = op.attrs["full_matrices"]
    return [(a.dtype, TensorShape(batch + [m, m if full else k])), (a.dtype, TensorShape(batch + [m if full else k, n]))]


register_op("Qr", _qr_spec)
not_differentiable("Qr")   # until qr_grad.py (imported after this module) registers TF's gradient


def qr(input: Any, full_matrices: bool = False, name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:  # noqa: A002
    """(q, r) with input = q @ r, q with orthonormal columns, r upper triangular (batches too)."""
    op = make_op("Qr", [_g.convert_to_tensor(input)], {"full_matrices": bool(full_matrices)}, name=name or "Qr")
    return op.outputs[0], op.outputs[1]

