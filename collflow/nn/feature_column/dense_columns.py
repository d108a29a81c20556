"""TF1's dense columns over categorical ones: indicator_column (multi-hot rows),
embedding_column and shared_embedding_columns (combined embeddings of the ids, with their
variables named as TF's: <scope>/<column>_embedding/embedding_weights)."""
from __future__ import annotations

import collections
import math
from typing import Any, Dict, List, Optional, Sequence

from ... import dtypes as _dt
from ...graph import graph as _g
from ...graph.initializers import TruncatedNormal
from ...graph.ops import array_ops as _a
from ...graph.ops import math_ops as _m
from ...graph.ops import segment_ops as _seg
from ...graph.ops.sparse_ops import safe_embedding_lookup_sparse, sparse_tensor_to_dense
from ...graph.shape import TensorShape
from ...graph.variable_scope import get_variable
from .columns import _CategoricalColumn, _DenseColumn, _LazyBuilder, _WeightedCategoricalColumn

__all__ = ["indicator_column", "embedding_column", "shared_embedding_columns"]


def _not_sequence(col: Any) -> None:
    from .sequence_columns import refuse_sequence  # below this module: imported when first used
    refuse_sequence(col)


def _sequence_dense(col: Any, inputs: _LazyBuilder, weight_collections: Any, trainable: Optional[bool]) -> Any:
    from .sequence_columns import sequence_dense_tensor
    return sequence_dense_tensor(col, inputs, weight_collections=weight_collections, trainable=trainable)


class _IndicatorColumn(_DenseColumn, collections.namedtuple("_IndicatorColumn", ["categorical_column"])):
    """A categorical column as multi-hot rows: the count (or summed weight) of each id."""

    @property
    def name(self) -> str:
        return f"{self.categorical_column.name}_indicator"

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        return self.categorical_column._parse_example_spec

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape([1, self.categorical_column._num_buckets])

    def _transform_feature(self, inputs: _LazyBuilder) -> _g.Tensor:
        pair = self.categorical_column._get_sparse_tensors(inputs)
        ids, weights = pair.id_tensor, pair.weight_tensor
        depth = self.categorical_column._num_buckets
        if weights is not None:
            # each id's weight summed into its row's slot (ids outside [0, depth) dropped)
            idx = _m.cast(ids.values, _dt.int64)
            ok = _m.logical_and(_m.greater_equal(idx, 0), _m.less(idx, depth))
            rows = _m.cast(ids.indices[:, 0], _dt.int64)
            batch = _m.cast(ids.dense_shape[0], _dt.int64)
            seg = _a.where(ok, rows * depth + idx, -_a.ones_like(idx))
            flat = _seg.unsorted_segment_sum(weights.values, seg, batch * depth)
            return _a.reshape(flat, _a.stack([batch, _m.cast(depth, _dt.int64)]))
        dense = sparse_tensor_to_dense(ids, default_value=-1)  # -1: no slot in the one-hot rows
        return _m.reduce_sum(_a.one_hot(dense, depth, on_value=1.0, off_value=0.0), axis=[-2])

    def _get_dense_tensor(self, inputs: _LazyBuilder, weight_collections: Any = None,
                          trainable: Optional[bool] = None) -> _g.Tensor:
        _not_sequence(self)
        return inputs.get(self)

    def _get_sequence_dense_tensor(self, inputs: _LazyBuilder, weight_collections: Any = None,
                                   trainable: Optional[bool] = None) -> Any:
        """(dense [batch, T, ...], lengths [batch]) over a sequence categorical column."""
        return _sequence_dense(self, inputs, weight_collections, trainable)


def indicator_column(categorical_column: _CategoricalColumn) -> _IndicatorColumn:
    """A categorical column's ids as a multi-hot [batch, num_buckets] float tensor."""
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError(f"categorical_column must be a categorical column, got {categorical_column}")
    return _IndicatorColumn(categorical_column)


def _check_embedding_args(dimension: int, combiner: str, initializer: Any, ckpt_to_load_from: Any,
                          tensor_name_in_ckpt: Any) -> Any:
    if dimension is None or dimension < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or none of them.")
    if initializer is not None and not callable(initializer):
        raise ValueError(f"initializer must be callable if specified. Embedding of column_name: {initializer}")
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    # TF's default: truncated normal with stddev 1/sqrt(dimension)
    return initializer if initializer is not None else TruncatedNormal(mean=0.0, stddev=1 / math.sqrt(dimension))


def _lookup(col: Any, inputs: _LazyBuilder, weights: Any) -> _g.Tensor:
    pair = col.categorical_column._get_sparse_tensors(inputs)
    if col.ckpt_to_load_from is not None:
        from ...train.checkpoint_utils import init_from_checkpoint
        init_from_checkpoint(col.ckpt_to_load_from, {col.tensor_name_in_ckpt: weights})
    return safe_embedding_lookup_sparse(weights, pair.id_tensor, sparse_weights=pair.weight_tensor,
                                        combiner=col.combiner, name=f"{col.name}_weights", max_norm=col.max_norm)


class _EmbeddingColumn(_DenseColumn, collections.namedtuple(
        "_EmbeddingColumn", ["categorical_column", "dimension", "combiner", "layer_creator", "ckpt_to_load_from",
                             "tensor_name_in_ckpt", "max_norm", "trainable", "initializer"])):
    """A categorical column's ids as the combination of their learned embeddings."""

    @property
    def name(self) -> str:
        return f"{self.categorical_column.name}_embedding"

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        return self.categorical_column._parse_example_spec

    def _transform_feature(self, inputs: _LazyBuilder) -> Any:
        return inputs.get(self.categorical_column)

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape([self.dimension])

    def _get_sequence_dense_tensor(self, inputs: _LazyBuilder, weight_collections: Any = None,
                                   trainable: Optional[bool] = None) -> Any:
        """(dense [batch, T, dimension], lengths [batch]) over a sequence categorical column."""
        return _sequence_dense(self, inputs, weight_collections, trainable)

    def _get_dense_tensor(self, inputs: _LazyBuilder, weight_collections: Any = None,
                          trainable: Optional[bool] = None) -> _g.Tensor:
        _not_sequence(self)
        shape = (self.categorical_column._num_buckets, self.dimension)
        weights = get_variable("embedding_weights", shape=shape, dtype=_dt.float32, initializer=self.initializer,
                               trainable=self.trainable and (trainable is None or trainable),
                               collections=weight_collections)
        return _lookup(self, inputs, weights)


def embedding_column(categorical_column: _CategoricalColumn, dimension: int, combiner: str = "mean",
                     initializer: Any = None, ckpt_to_load_from: Optional[str] = None,
                     tensor_name_in_ckpt: Optional[str] = None, max_norm: Optional[float] = None,
                     trainable: bool = True) -> _EmbeddingColumn:
    """A categorical column's ids embedded in `dimension` floats and combined per example."""
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError(f"categorical_column must be a categorical column, got {categorical_column}")
    init = _check_embedding_args(dimension, combiner, initializer, ckpt_to_load_from, tensor_name_in_ckpt)
    return _EmbeddingColumn(categorical_column, int(dimension), combiner, None, ckpt_to_load_from,
                            tensor_name_in_ckpt, max_norm, trainable, init)


class _SharedEmbeddingColumn(_DenseColumn, collections.namedtuple(
        "_SharedEmbeddingColumn", ["categorical_column", "dimension", "combiner", "initializer",
                                   "shared_embedding_collection_name", "ckpt_to_load_from", "tensor_name_in_ckpt",
                                   "max_norm", "trainable"])):
    """An embedding column whose table is shared with others (one variable, found through the
    graph collection shared_embedding_collection_name)."""

    @property
    def name(self) -> str:
        return f"{self.categorical_column.name}_shared_embedding"

    @property
    def _var_scope_name(self) -> str:
        return self.shared_embedding_collection_name

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        return self.categorical_column._parse_example_spec

    def _transform_feature(self, inputs: _LazyBuilder) -> Any:
        return inputs.get(self.categorical_column)

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape([self.dimension])

    def _get_sequence_dense_tensor(self, inputs: _LazyBuilder, weight_collections: Any = None,
                                   trainable: Optional[bool] = None) -> Any:
        """(dense [batch, T, dimension], lengths [batch]) over a sequence categorical column."""
        return _sequence_dense(self, inputs, weight_collections, trainable)

    def _get_dense_tensor(self, inputs: _LazyBuilder, weight_collections: Any = None,
                          trainable: Optional[bool] = None) -> _g.Tensor:
        _not_sequence(self)
        shape = (self.categorical_column._num_buckets, self.dimension)
        shared = _g.get_collection(self.shared_embedding_collection_name)
        if shared:
            if len(shared) > 1:
                raise ValueError(f"Collection {self.shared_embedding_collection_name} can only contain one "
                                 f"variable. Suggested fix A: Choose a unique name for this collection. "
                                 f"Suggested fix B: Do not add any variables to this collection.")
            weights = shared[0]
            if tuple(weights.shape.as_list()) != shape:
                raise ValueError(f"Shared embedding collection {self.shared_embedding_collection_name} contains "
                                 f"variable {weights.name} of unexpected shape {weights.shape}. Expected shape "
                                 f"is {shape}.")
        else:
            weights = get_variable("embedding_weights", shape=shape, dtype=_dt.float32,
                                   initializer=self.initializer,
                                   trainable=self.trainable and (trainable is None or trainable),
                                   collections=weight_collections)
            _g.add_to_collection(self.shared_embedding_collection_name, weights)
        return _lookup(self, inputs, weights)


def shared_embedding_columns(categorical_columns: Sequence[_CategoricalColumn], dimension: int,
                             combiner: str = "mean", initializer: Any = None,
                             shared_embedding_collection_name: Optional[str] = None,
                             ckpt_to_load_from: Optional[str] = None, tensor_name_in_ckpt: Optional[str] = None,
                             max_norm: Optional[float] = None, trainable: bool = True) -> List[_SharedEmbeddingColumn]:
    """Embedding columns of categorical columns with the same number of buckets, sharing one
    embedding table (named after the sorted columns unless a collection name is given)."""
    init = _check_embedding_args(dimension, combiner, initializer, ckpt_to_load_from, tensor_name_in_ckpt)
    cols = list(categorical_columns)
    if not cols:
        raise ValueError("categorical_columns must not be empty.")
    ordered = sorted(cols, key=lambda c: c.name)

    def base(c: Any) -> Any:  # a weighted column counts as the column it weights
        return c.categorical_column if isinstance(c, _WeightedCategoricalColumn) else c
    for c in ordered:
        if not isinstance(c, _CategoricalColumn):
            raise ValueError(f"All categorical_columns must be subclasses of _CategoricalColumn. Given: {c}")
        if not isinstance(base(c), type(base(ordered[0]))):
            raise ValueError(f"To use shared_embedding_column, all categorical_columns must have the same type, "
                             f"or be weighted_categorical_column of the same type. Given column: {ordered[0]} of "
                             f"type: {type(ordered[0]).__name__} does not match given column: {c} of type: "
                             f"{type(c).__name__}")
        if c._num_buckets != ordered[0]._num_buckets:
            raise ValueError(f"To use shared_embedding_column, all categorical_columns must have the same number "
                             f"of buckets. Given column: {ordered[0]} with buckets: {ordered[0]._num_buckets}, "
                             f"column: {c} with buckets: {c._num_buckets}")
    name = shared_embedding_collection_name or "_".join(c.name for c in ordered) + "_shared_embedding"
    return [_SharedEmbeddingColumn(c, int(dimension), combiner, init, name, ckpt_to_load_from, tensor_name_in_ckpt,
                                   max_norm, trainable) for c in cols]
