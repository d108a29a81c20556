"""TF's sequence feature columns (TF 1.15's tf.contrib.feature_column, TF 2.x's
tf.compat.v1.feature_column.sequence_*): columns over SparseTensors of [batch, time] (or
[batch, time, k]) whose dense outputs keep the time axis, and sequence_input_layer, which
concatenates them into the [batch, T, D] input of an RNN together with each example's length.

A sequence categorical column yields [batch, T, k] ids, so that embedding_column and
indicator_column over it give one dense vector per step ([batch, T, dimension] /
[batch, T, num_buckets]); the length of an example is its largest time index + 1 (for a numeric
column of shape s over a [batch, n] input, ceil of that over num_elements(s)).  Those two
columns' _get_sequence_dense_tensor (dense_columns.py) is sequence_dense_tensor here, and
their _get_dense_tensor refuses a sequence column with TF's message (refuse_sequence), so
input_layer says what to use instead.
"""
from __future__ import annotations

import collections
from typing import Any, Dict, Optional, Sequence, Tuple

from ... import dtypes as _dt
from ...graph import graph as _g
from ...graph.ops import array_ops as _a
from ...graph.ops import math_ops as _m
from ...graph.ops.constant_op import identity
from ...graph.ops.parsing_ops import VarLenFeature
from ...graph.ops.segment_ops import segment_max
from ...graph.ops.sparse_more_ops import sparse_reshape
from ...graph.ops.sparse_ops import sparse_tensor_to_dense
from ...graph.shape import TensorShape
from ...graph.sparse_tensor import SparseTensor
from ...graph.variable_scope import variable_scope
from . import columns as _c
from .dense_columns import _EmbeddingColumn, _IndicatorColumn, _SharedEmbeddingColumn

__all__ = ["sequence_categorical_column_with_identity", "sequence_categorical_column_with_hash_bucket",
           "sequence_categorical_column_with_vocabulary_file", "sequence_categorical_column_with_vocabulary_list",
           "sequence_numeric_column", "sequence_input_layer", "concatenate_context_input"]

TensorSequenceLengthPair = collections.namedtuple("TensorSequenceLengthPair", ["dense_tensor", "sequence_length"])


class _SequenceDenseColumn(_c._FeatureColumn):
    """A column with a dense [batch, T, *_variable_shape] output and per-example lengths."""
    TensorSequenceLengthPair = TensorSequenceLengthPair

    @property
    def _variable_shape(self) -> TensorShape:
        raise NotImplementedError

    def _get_sequence_dense_tensor(self, inputs: _c._LazyBuilder, weight_collections: Any = None,
                                   trainable: Optional[bool] = None) -> TensorSequenceLengthPair:
        raise NotImplementedError


def sequence_length_from_sparse_tensor(sp: SparseTensor, num_elements: int = 1) -> _g.Tensor:
    """[batch] int64: per row, its largest index along dimension 1 plus one, divided by
    num_elements and rounded up (a row without entries: 0), as TF's rule."""
    with _g.name_scope("sequence_length"):
        rows = sp.indices[:, 0]
        steps = sp.indices[:, 1] + 1
        # rows are in order in a SparseTensor, so the sorted segment max applies; a row with
        # no entries in between gets 0, the missing last rows are padded with 0 below
        length = segment_max(steps, rows)
        if num_elements != 1:
            # TF computes ceil(length / num_elements); for non-negative ints that is this
            n = _g.convert_to_tensor(int(num_elements), dtype=_dt.int64)
            length = _m.floordiv(length + n - 1, n)
        pad = _m.cast(sp.dense_shape[0], _dt.int32) - _a.shape(length)[0]
        return _a.concat([length, _a.zeros(_a.expand_dims(pad, 0), dtype=_dt.int64)], 0)


# -- categorical ----------------------------------------------------------------------------

class _SequenceCategoricalColumn(_c._CategoricalColumn, collections.namedtuple(
        "_SequenceCategoricalColumn", ["categorical_column"])):
    """A categorical column over sequences: its ids as [batch, T, k], so that an embedding or
    indicator over it is combined per step, not per example."""

    @property
    def name(self) -> str:
        return self.categorical_column.name

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        return self.categorical_column._parse_example_spec

    def _transform_feature(self, inputs: _c._LazyBuilder) -> Any:
        return self.categorical_column._transform_feature(inputs)

    @property
    def _num_buckets(self) -> int:
        return self.categorical_column._num_buckets

    def _get_sparse_tensors(self, inputs: _c._LazyBuilder, weight_collections: Any = None,
                            trainable: Optional[bool] = None) -> _c.IdWeightPair:
        pair = self.categorical_column._get_sparse_tensors(inputs)
        ids, weights = pair.id_tensor, pair.weight_tensor
        rank = ids.shape.rank
        if rank == 3:
            return _c.IdWeightPair(ids, weights)
        shape = ids.dense_shape
        # [batch, T] ids get a third dimension of 1; [batch, T, d1, ...] fold d1... into one
        last = (_g.convert_to_tensor(1, dtype=_dt.int64) if rank == 2
                else _m.reduce_prod(shape[2:]))
        target = _a.stack([shape[0], shape[1], last])
        ids = sparse_reshape(ids, target)
        if weights is not None:
            weights = sparse_reshape(weights, target)
        return _c.IdWeightPair(ids, weights)


class _FlatSequenceIds(_c._CategoricalColumn, collections.namedtuple("_FlatSequenceIds", ["sequence_column"])):
    """A sequence column's [batch, T, k] ids as [batch * T, k]: what an embedding column looks
    up (one combined row per step), as TF's safe_embedding_lookup_sparse folds rank > 2 ids.
    Same name and buckets as the sequence column, so variables and op names are unchanged."""

    @property
    def name(self) -> str:
        return self.sequence_column.name

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        return self.sequence_column._parse_example_spec

    @property
    def _num_buckets(self) -> int:
        return self.sequence_column._num_buckets

    def _get_sparse_tensors(self, inputs: _c._LazyBuilder, weight_collections: Any = None,
                            trainable: Optional[bool] = None) -> _c.IdWeightPair:
        pair = self.sequence_column._get_sparse_tensors(inputs)
        shape = pair.id_tensor.dense_shape
        target = _a.stack([shape[0] * shape[1], shape[2]])
        weights = pair.weight_tensor
        return _c.IdWeightPair(sparse_reshape(pair.id_tensor, target),
                               None if weights is None else sparse_reshape(weights, target))


def sequence_categorical_column_with_identity(key: str, num_buckets: int,
                                              default_value: Optional[int] = None) -> _SequenceCategoricalColumn:
    """Sequences of integer ids in [0, num_buckets) (see categorical_column_with_identity)."""
    return _SequenceCategoricalColumn(_c.categorical_column_with_identity(key, num_buckets, default_value))


def sequence_categorical_column_with_hash_bucket(key: str, hash_bucket_size: int,
                                                 dtype: Any = _dt.string) -> _SequenceCategoricalColumn:
    """Sequences of hashed ids (see categorical_column_with_hash_bucket)."""
    return _SequenceCategoricalColumn(_c.categorical_column_with_hash_bucket(key, hash_bucket_size, dtype))


def sequence_categorical_column_with_vocabulary_file(key: str, vocabulary_file: str,
                                                     vocabulary_size: Optional[int] = None, num_oov_buckets: int = 0,
                                                     default_value: Optional[int] = None,
                                                     dtype: Any = _dt.string) -> _SequenceCategoricalColumn:
    """Sequences of ids from a vocabulary file (see categorical_column_with_vocabulary_file)."""
    return _SequenceCategoricalColumn(_c.categorical_column_with_vocabulary_file(
        key, vocabulary_file, vocabulary_size, num_oov_buckets, default_value, dtype))


def sequence_categorical_column_with_vocabulary_list(key: str, vocabulary_list: Sequence[Any], dtype: Any = None,
                                                     default_value: int = -1,
                                                     num_oov_buckets: int = 0) -> _SequenceCategoricalColumn:
    """Sequences of ids from an in-memory vocabulary (see categorical_column_with_vocabulary_list)."""
    return _SequenceCategoricalColumn(_c.categorical_column_with_vocabulary_list(
        key, vocabulary_list, dtype, default_value, num_oov_buckets))


# -- numeric --------------------------------------------------------------------------------

class _SequenceNumericColumn(_SequenceDenseColumn, collections.namedtuple(
        "_SequenceNumericColumn", ["key", "shape", "default_value", "dtype", "normalizer_fn"])):
    """Sequences of numeric values of `shape` per step, from a SparseTensor; missing values
    are default_value."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        return {self.key: VarLenFeature(self.dtype)}

    def _transform_feature(self, inputs: _c._LazyBuilder) -> Any:
        # as TF, normalizer_fn sees the SparseTensor itself (before the padding)
        t = inputs.get(self.key)
        return self.normalizer_fn(t) if self.normalizer_fn is not None else t

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape(self.shape)

    def _get_sequence_dense_tensor(self, inputs: _c._LazyBuilder, weight_collections: Any = None,
                                   trainable: Optional[bool] = None) -> TensorSequenceLengthPair:
        sp = inputs.get(self)
        if not isinstance(sp, SparseTensor):
            raise ValueError(f"The input of sequence_numeric_column must be a SparseTensor of [batch, time] (or "
                             f"[batch, time, k]) values. key: {self.key}, given: {sp}")
        dense = sparse_tensor_to_dense(sp, default_value=self.default_value)
        # the values of a row fill `shape` one step after the other: [batch, T, *shape]
        target = _a.stack([_a.shape(dense)[0], -1] + [int(d) for d in self.shape])
        out = _a.reshape(dense, target)
        out.set_shape([None, None] + list(self.shape))
        # a [batch, n] input holds num_elements values a step; in a [batch, T, k] one the
        # grouping is along the third dimension and dimension 1 is already the step
        n = self._variable_shape.num_elements() if sp.shape.rank == 2 else 1
        return TensorSequenceLengthPair(out, sequence_length_from_sparse_tensor(sp, num_elements=n))


def sequence_numeric_column(key: str, shape: Any = (1,), default_value: float = 0., dtype: Any = _dt.float32,
                            normalizer_fn: Any = None) -> _SequenceNumericColumn:
    """Sequences of numeric values, `shape` of them a step; default_value pads the missing
    ones; normalizer_fn is applied to the input SparseTensor."""
    shape = _c._check_shape(shape, key)
    dtype = _dt.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype}, key: {key}")
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    return _SequenceNumericColumn(key, shape, default_value, dtype, normalizer_fn)


# -- embedding and indicator columns over sequence columns ----------------------------------

def _what(col: Any) -> str:
    return "indicator_column" if isinstance(col, _IndicatorColumn) else "embedding_column"


def refuse_sequence(col: Any) -> None:
    """TF's ValueError for an embedding/indicator column over a sequence column given to
    input_layer (dense_columns.py calls it from _get_dense_tensor)."""
    if isinstance(col.categorical_column, _SequenceCategoricalColumn):
        raise ValueError(f"In {_what(col)}: {col.name}. categorical_column must not be of type "
                         f"_SequenceCategoricalColumn. Suggested fix A: If you wish to use input_layer, use a "
                         f"non-sequence categorical_column_with_*. Suggested fix B: If you wish to create "
                         f"sequence input, use sequence_input_layer instead of input_layer. Given (type "
                         f"{type(col.categorical_column)}): {col.categorical_column}")


def _require_sequence(col: Any) -> _SequenceCategoricalColumn:
    seq = col.categorical_column
    if not isinstance(seq, _SequenceCategoricalColumn):
        raise ValueError(f"In {_what(col)}: {col.name}. categorical_column must be of type "
                         f"_SequenceCategoricalColumn to use sequence_input_layer. Suggested fix: Use one of "
                         f"sequence_categorical_column_with_*. Given (type {type(seq)}): {seq}")
    return seq


def _embedding_sequence_dense_tensor(self: Any, inputs: _c._LazyBuilder, weight_collections: Any = None,
                                     trainable: Optional[bool] = None) -> TensorSequenceLengthPair:
    """[batch, T, dimension]: each step's ids embedded and combined; the same variable as the
    column over non-sequence ids would make."""
    seq = _require_sequence(self)
    ids = seq._get_sparse_tensors(inputs).id_tensor
    flat = self._replace(categorical_column=_FlatSequenceIds(seq))
    emb = flat._get_dense_tensor(inputs, weight_collections=weight_collections, trainable=trainable)
    out = _a.reshape(emb, _a.stack([ids.dense_shape[0], ids.dense_shape[1], self.dimension]))
    out.set_shape([None, None, self.dimension])
    return TensorSequenceLengthPair(out, sequence_length_from_sparse_tensor(ids))


def _indicator_sequence_dense_tensor(self: Any, inputs: _c._LazyBuilder, weight_collections: Any = None,
                                     trainable: Optional[bool] = None) -> TensorSequenceLengthPair:
    """[batch, T, num_buckets]: each step's multi-hot row (the [batch, T, k] ids one-hot and
    summed over k by the indicator's own transform)."""
    seq = _require_sequence(self)
    ids = seq._get_sparse_tensors(inputs).id_tensor
    return TensorSequenceLengthPair(inputs.get(self), sequence_length_from_sparse_tensor(ids))


def sequence_dense_tensor(col: Any, inputs: _c._LazyBuilder, weight_collections: Any = None,
                          trainable: Optional[bool] = None) -> TensorSequenceLengthPair:
    """The _get_sequence_dense_tensor of embedding, shared-embedding and indicator columns
    (dense_columns.py's methods call it): TF's _SequenceDenseColumn behaviour."""
    fn = _indicator_sequence_dense_tensor if isinstance(col, _IndicatorColumn) else _embedding_sequence_dense_tensor
    return fn(col, inputs, weight_collections=weight_collections, trainable=trainable)


_SEQUENCE_DENSE = (_SequenceDenseColumn, _EmbeddingColumn, _SharedEmbeddingColumn, _IndicatorColumn)


# -- the layer ------------------------------------------------------------------------------

def _all_equal(tensors: Sequence[_g.Tensor]) -> _g.Tensor:
    """The first tensor, after run-time checks that the others equal it."""
    from ...graph.ops.check_ops import assert_equal
    with _g.name_scope("assert_all_equal"):
        if len(tensors) == 1:
            return tensors[0]
        checks = [assert_equal(tensors[0], t) for t in tensors[1:]]
        with _g.control_dependencies(checks):
            return identity(tensors[0])


def sequence_input_layer(features: Dict[str, Any], feature_columns: Sequence[Any], weight_collections: Any = None,
                         trainable: bool = True) -> Tuple[_g.Tensor, _g.Tensor]:
    """(input_layer [batch, T, D], sequence_length [batch]): the sequence columns' outputs, each
    flattened to [batch, T, n], concatenated in name order; all columns must give the same
    lengths (checked at run time).  Variables under sequence_input_layer/<column scope>/."""
    from .models import _check_batch_sizes, _normalize
    cols = _normalize(feature_columns)
    for c in cols:
        if not isinstance(c, _SEQUENCE_DENSE):
            raise ValueError(f"All feature_columns must be of type _SequenceDenseColumn. You can wrap a "
                             f"sequence_categorical_column with an embedding_column or indicator_column. Given "
                             f"(type {type(c)}): {c}")
    ordered = sorted(cols, key=lambda x: x.name)
    with variable_scope(None, default_name="sequence_input_layer", values=list(features.values())):
        builder = _c._LazyBuilder(features)
        outputs, lengths = [], []
        for c in ordered:
            with variable_scope(None, default_name=c._var_scope_name):
                dense, length = c._get_sequence_dense_tensor(builder, weight_collections=weight_collections,
                                                              trainable=trainable)
                n = c._variable_shape.num_elements()
                shape = _a.shape(dense)
                out = _a.reshape(dense, _a.stack([shape[0], shape[1], n]))
                out.set_shape([dense.shape.dims[0] if dense.shape.rank else None, None, n])
                outputs.append(out)
                lengths.append(length)
        _check_batch_sizes(outputs, ordered)
        _check_batch_sizes(lengths, ordered)
        return _a.concat(outputs, -1), _all_equal(lengths)


def concatenate_context_input(context_input: Any, sequence_input: Any) -> _g.Tensor:
    """[batch, T, d0 + d1]: context_input [batch, d1] repeated at every step of sequence_input
    [batch, T, d0] and appended to it (both float32)."""
    from ...graph.ops.check_more_ops import assert_type
    from ...graph.ops.check_ops import assert_rank
    seq = _g.convert_to_tensor(sequence_input)
    ctx = _g.convert_to_tensor(context_input)
    checks = [assert_rank(seq, 3, message="sequence_input must have rank 3", data=[_a.shape(seq)]),
              assert_type(seq, _dt.float32, message=f"sequence_input must have dtype float32; got {seq.dtype}."),
              assert_rank(ctx, 2, message="context_input must have rank 2", data=[_a.shape(ctx)]),
              assert_type(ctx, _dt.float32, message=f"context_input must have dtype float32; got {ctx.dtype}.")]
    with _g.control_dependencies(checks):
        steps = _a.shape(seq)[1]
        tiled = _a.tile(_a.expand_dims(ctx, 1), _a.stack([1, steps, 1]))
    return _a.concat([seq, tiled], 2)
