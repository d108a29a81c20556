"""TF 1.15's tf.math / tf.nn additions: tf.math.cumulative_logsumexp, polyval, segment_prod,
unsorted_segment_prod (with TF's gradients), zero_fraction, nextafter; tf.nn.collapse_repeated,
ctc_unique_labels.  Kernels in kernels/math_nn_more_kernels.py.

cumulative_logsumexp and polyval are composites of existing ops (their gradients follow);
the products' gradient is TF's: with z the number of zeros in a segment, d prod / d x_i is
prod / x_i (z = 0), the product of the other elements (x_i the one zero), 0 (z > 1).
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from . import array_ops as _a
from . import math_ops as _m
from . import math_extra_ops as _mx
from .constant_op import constant, stop_gradient
from .op_util import dense as _dense, make_op, single
from .scan_ops import cumsum as _cumsum
from .segment_ops import _gather_drop_negatives, _segment_spec, _unsorted_spec, segment_sum, unsorted_segment_sum
from .nn_composites import zero_fraction  # noqa: F401  (tf.math.zero_fraction is tf.nn's)
from .candidate_sampling_ops import _sampler, _sampler_spec

__all__ = ["cumulative_logsumexp", "polyval", "segment_prod", "unsorted_segment_prod", "zero_fraction",
           "nextafter", "collapse_repeated", "ctc_unique_labels", "learned_unigram_candidate_sampler"]

register_op("SegmentProd", _segment_spec)
register_op("UnsortedSegmentProd", _unsorted_spec)


def _nextafter_spec(op: _g.Operation) -> list:
    x, y = op.inputs
    if x.dtype != y.dtype or x.dtype not in (_dt.float32, _dt.float64):
        raise TypeError(f"nextafter needs two float32 or float64 tensors of one dtype, got {x.dtype.name}, "
                        f"{y.dtype.name}")
    return [(x.dtype, _broadcast(x.shape, y.shape))]


def _broadcast(a: TensorShape, b: TensorShape) -> TensorShape:
    if a.rank is None or b.rank is None:
        return TensorShape(None)
    n = max(a.rank, b.rank)
    da = [1] * (n - a.rank) + list(a.dims)
    db = [1] * (n - b.rank) + list(b.dims)
    out: List[Any] = []
    for p, q in zip(da, db):
        if p == 1:
            out.append(q)
        elif q == 1 or q == p:
            out.append(p)
        elif p is None or q is None:
            out.append(p if q is None else q)
        else:
            raise ValueError(f"Incompatible shapes for broadcasting: {a} and {b}")
    return TensorShape(out)


register_op("NextAfter", _nextafter_spec)


@register_gradient("NextAfter")
def _nextafter_grad(op: _g.Operation, grad: _g.Tensor) -> list:
    """TF's: the incoming gradient to x1 (summed to its shape), 0 * grad to x2 (so a NaN
    gradient stays NaN there, as TF's)."""
    x1, x2 = op.inputs
    grad = _dense(grad)
    return [_m.sum_to_shape_of(grad, x1), _m.sum_to_shape_of(grad * 0.0, x2)]


def _collapse_spec(op: _g.Operation) -> list:
    lab = op.inputs[0]
    b = lab.shape.dims[0] if lab.shape.rank == 2 else None
    return [(lab.dtype, TensorShape([b, None])), (op.inputs[1].dtype, TensorShape([b]))]


def _unique_labels_spec(op: _g.Operation) -> list:
    lab = op.inputs[0]
    if lab.shape.rank not in (None, 2):
        raise ValueError(f"labels must be a [batch, max_label_length] matrix, got shape {lab.shape}")
    return [(lab.dtype, lab.shape), (lab.dtype, lab.shape)]


register_op("LearnedUnigramCandidateSampler", _sampler_spec, stateful=True, host_only=True)
not_differentiable("LearnedUnigramCandidateSampler")
register_op("CollapseRepeated", _collapse_spec, host_only=True)
register_op("CtcUniqueLabels", _unique_labels_spec, host_only=True)
not_differentiable("CollapseRepeated", "CtcUniqueLabels")


# -- gradients ------------------------------------------------------------------------------------


def _prod_grad(op: _g.Operation, grad: _g.Tensor, sorted_ids: bool) -> List[Optional[_g.Tensor]]:
    data, ids = op.inputs[0], op.inputs[1]
    g = _dense(grad)
    one = _a.ones_like(data)
    is_zero = _m.equal(data, _m.cast(0, data.dtype))
    zeros_i = _m.cast(is_zero, _dt.int32)
    non_zero = _a.where_v2(is_zero, one, data)
    if sorted_ids:
        num_zeros = segment_sum(zeros_i, ids)
        non_zero_prod = segment_prod(non_zero, ids)
        gather = lambda t: _a.gather(t, ids)       # noqa: E731
        keep = None
    else:
        num = op.inputs[2]
        num_zeros = unsorted_segment_sum(zeros_i, ids, num)
        non_zero_prod = unsorted_segment_prod(non_zero, ids, num)
        keep = _gather_drop_negatives(op.outputs[0], ids, data)[1]
        gather = lambda t: _gather_drop_negatives(t, ids, data)[0]   # noqa: E731
    g = _a.where_v2(_m.greater(num_zeros, 1), _a.zeros_like(g), g)
    partial = _a.where_v2(is_zero, gather(non_zero_prod), gather(op.outputs[0]) / non_zero)
    out = gather(g) * partial
    if keep is not None:
        out = _a.where_v2(keep, out, _a.zeros_like(out))
    return [out] + [None] * (len(op.inputs) - 1)


register_gradient("SegmentProd")(lambda op, g: _prod_grad(op, g, True))
register_gradient("UnsortedSegmentProd")(lambda op, g: _prod_grad(op, g, False))


# -- constructors ---------------------------------------------------------------------------------


def segment_prod(data: Any, segment_ids: Any, name: Optional[str] = None) -> _g.Tensor:
    """Products of the rows of data per segment (sorted 1-D ids; an empty segment gives 1)."""
    d = _g.convert_to_tensor(data)
    with d.graph.as_default():
        ids = _g.convert_to_tensor(segment_ids)
        return single("SegmentProd", [d, ids], name=name or "SegmentProd")


def unsorted_segment_prod(data: Any, segment_ids: Any, num_segments: Any, name: Optional[str] = None) -> _g.Tensor:
    """Products per segment for ids in any order (a prefix of data's shape; negative ids dropped;
    an empty segment gives 1)."""
    d = _g.convert_to_tensor(data)
    with d.graph.as_default():
        ids = _g.convert_to_tensor(segment_ids)
        num = num_segments if isinstance(num_segments, _g.Tensor) else constant(int(num_segments), dtype=ids.dtype,
                                                                                name="num_segments")
        return single("UnsortedSegmentProd", [d, ids, num], name=name or "UnsortedSegmentProd")


def cumulative_logsumexp(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
                         name: Optional[str] = None) -> _g.Tensor:
    """log(cumsum(exp(x))) along `axis`, computed stably (shifted by the axis' maximum; an
    exclusive first element is -inf, as TF)."""
    xt = _g.convert_to_tensor(x)
    with xt.graph.as_default(), xt.graph.name_scope(name or "CumulativeLogsumexp"):
        if not xt.dtype.is_floating:
            raise TypeError(f"cumulative_logsumexp needs a floating-point tensor, got {xt.dtype.name}")
        mx = stop_gradient(_m.reduce_max(xt, axis=axis, keepdims=True))
        # an all -inf (or inf) lane would give nan from inf - inf: shift it by 0 instead
        mx = _a.where_v2(_mx.is_finite(mx), mx, _a.zeros_like(mx))
        s = _cumsum(_m.exp(xt - mx), axis=axis, exclusive=exclusive, reverse=reverse)
        return _m.log(s) + mx


def polyval(coeffs: Sequence[Any], x: Any, name: Optional[str] = None) -> _g.Tensor:
    """coeffs[0] x^(n-1) + ... + coeffs[n-1] by Horner's rule (zeros_like(x) for no coeffs)."""
    if isinstance(coeffs, _g.Tensor) or not isinstance(coeffs, (list, tuple)):
        raise ValueError("Argument coeffs must be list type found {}.".format(type(coeffs)))
    xt = _g.convert_to_tensor(x)
    with xt.graph.as_default(), xt.graph.name_scope(name or "polyval"):
        if not coeffs:
            return _a.zeros_like(xt)
        p = _g.convert_to_tensor(coeffs[0], dtype=xt.dtype)
        for c in coeffs[1:]:
            p = _g.convert_to_tensor(c, dtype=xt.dtype) + p * xt
        return p


def nextafter(x1: Any, x2: Any, name: Optional[str] = None) -> _g.Tensor:
    """The next representable value after x1 in the direction of x2 (float32/float64)."""
    a = _g.convert_to_tensor(x1)
    with a.graph.as_default():
        b = _g.convert_to_tensor(x2, dtype=a.dtype)
        return single("NextAfter", [a, b], name=name or "NextAfter")


def collapse_repeated(labels: Any, seq_length: Any, name: Optional[str] = None) -> Any:
    """Merges runs of equal labels within each row's seq_length: (collapsed labels padded with
    0 to the longest collapsed row, the new lengths)."""
    lab = _g.convert_to_tensor(labels)
    with lab.graph.as_default(), lab.graph.name_scope(name or "collapse_repeated_labels"):
        sl = _g.convert_to_tensor(seq_length)
        op = make_op("CollapseRepeated", [lab, sl])
        return op.outputs[0], op.outputs[1]


def ctc_unique_labels(labels: Any, name: Optional[str] = None) -> Any:
    """(unique labels of each row in order of appearance padded with 0, each label's index in
    them) for tf.nn.ctc_loss_v2's unique= argument."""
    lab = _g.convert_to_tensor(labels)
    with lab.graph.as_default(), lab.graph.name_scope(name or "ctc_unique_labels"):
        op = make_op("CtcUniqueLabels", [lab])
        return op.outputs[0], op.outputs[1]


def learned_unigram_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                                      range_max: int, seed: Optional[int] = None,
                                      name: Optional[str] = None) -> Any:
    """Samples classes by the counts of the true classes seen so far in this Session (each
    class starts at count 1; a run samples first, then counts its true classes), as TF's.
    Returns as uniform_candidate_sampler."""
    return _sampler("LearnedUnigramCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed,
                    name or "LearnedUnigramCandidateSampler")
