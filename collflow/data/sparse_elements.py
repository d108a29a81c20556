"""SparseTensor components of dataset elements (TF1's tf.data carries them as it carries dense
ones: `dataset.map(lambda s: tf.parse_example(s, spec))` with VarLenFeatures, batches of
`parse_single_example` results, a SparseTensor from `get_next`).

A sparse component is one leaf of the element structure, specified by a SparseTensorSpec (the
dense shape and the values' dtype, what TF1's output_shapes and output_types report) and held
in an element as a SparseTensorValue.  Where it crosses into a graph (the private graph of a
dataset function, the outputs of IteratorGetNext) it becomes three tensors: indices [n, rank]
int64, values [n], dense_shape [rank] int64.
"""
from __future__ import annotations

from typing import Any, List, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.ops.constant_op import placeholder
from ..graph.shape import TensorShape
from ..graph.sparse_tensor import SparseTensor, SparseTensorValue
from ..graph.type_spec import SparseTensorSpec  # noqa: F401  (its home: tf.SparseTensorSpec)

__all__ = ["SparseTensorSpec", "SparseTensor", "SparseTensorValue", "is_sparse", "sparse_parts_specs", "graph_arg",
           "output_spec", "expand", "regroup",
           "batch_sparse", "check_sparse"]


def is_sparse(spec: Any) -> bool:
    return isinstance(spec, SparseTensorSpec)


def sparse_parts_specs(spec: SparseTensorSpec) -> List[Tuple[_dt.DType, TensorShape]]:
    """(dtype, shape) of indices, values and dense_shape of a sparse component."""
    rank = spec.shape.rank
    return [(_dt.int64, TensorShape([None, rank])), (spec.dtype, TensorShape([None])),
            (_dt.int64, TensorShape([rank]))]


def graph_arg(spec: Any, name: str) -> Tuple[Any, List[_g.Tensor]]:
    """(what a dataset function receives for this component, the placeholders it is fed by)."""
    if not is_sparse(spec):
        p = placeholder(spec.dtype, spec.shape, name=name)
        return p, [p]
    parts = [placeholder(d, s, name=f"{name}_{k}")
             for (d, s), k in zip(sparse_parts_specs(spec), ("indices", "values", "dense_shape"))]
    st = SparseTensor(*parts)
    return st, parts


def output_spec(t: Any) -> Tuple[Any, List[_g.Tensor]]:
    """(the spec, the tensors to fetch) of one output of a dataset function."""
    if isinstance(t, SparseTensor):
        return SparseTensorSpec(t.get_shape(), t.values.dtype), [t.indices, t.values, t.dense_shape]
    return None, [t]


def expand(specs: Sequence[Any], element: Sequence[Any]) -> List[Any]:
    """An element's components as the arrays fed to a graph (a sparse one as its three parts)."""
    out: List[Any] = []
    for s, v in zip(specs, element):
        if is_sparse(s):
            out.extend((v.indices, v.values, v.dense_shape))
        else:
            out.append(v)
    return out


def regroup(specs: Sequence[Any], flat: Sequence[Any]) -> List[Any]:
    """The inverse of expand: fetched arrays back into components (SparseTensorValues)."""
    out: List[Any] = []
    i = 0
    for s in specs:
        if is_sparse(s):
            out.append(SparseTensorValue(np.asarray(flat[i], np.int64), flat[i + 1], np.asarray(flat[i + 2], np.int64)))
            i += 3
        else:
            out.append(flat[i])
            i += 1
    return out


def check_sparse(v: Any, spec: SparseTensorSpec, where: str, k: int, op: Any = None) -> List[np.ndarray]:
    """A sparse component's three arrays, checked against its spec."""
    if not isinstance(v, SparseTensorValue):
        raise InvalidArgumentError(f"{where}: component {k} of an element should be a SparseTensor, got "
                                   f"{type(v).__name__}", op)
    shape = np.asarray(v.dense_shape, dtype=np.int64)
    if not spec.shape.matches_value(tuple(int(d) for d in shape)):
        raise InvalidArgumentError(f"{where}: component {k} of an element is a SparseTensor of dense shape "
                                   f"{shape.tolist()}, expected {spec.shape}", op)
    values = np.asarray(v.values, dtype=spec.dtype.np)
    return [np.asarray(v.indices, dtype=np.int64).reshape(-1, shape.size), values, shape]


def batch_sparse(parts: Sequence[SparseTensorValue], k: int) -> SparseTensorValue:
    """SparseTensors stacked along a new first dimension (TF's batching of sparse components:
    the dense shape is the batch size and each dimension's largest size)."""
    ranks = {len(np.asarray(p.dense_shape)) for p in parts}
    if len(ranks) != 1:
        raise InvalidArgumentError(f"Cannot batch SparseTensors of different ranks in component {k}: "
                                   f"{sorted(ranks)}")
    shape = np.max(np.stack([np.asarray(p.dense_shape, np.int64) for p in parts]), axis=0)
    rank = len(shape)
    rows = [np.hstack([np.full((len(p.values), 1), i, np.int64),
                       np.asarray(p.indices, np.int64).reshape(len(p.values), rank)]) for i, p in enumerate(parts)]
    indices = np.concatenate(rows) if rows else np.zeros((0, len(shape) + 1), np.int64)
    values = np.concatenate([np.asarray(p.values) for p in parts])
    return SparseTensorValue(indices, values, np.concatenate([[len(parts)], shape]).astype(np.int64))
