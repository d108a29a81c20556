"""TF 1.x's tf.contrib.layers feature columns (the pre-tf.feature_column API): the column
classes and their constructors.  layers_feature_columns.py has the functions over them.

Each column is a namedtuple with TF's class name and fields, so its sort `key` (TF orders
columns by it, which fixes the concatenation order of input_from_feature_columns and thus
the meaning of the first layer's weights) is TF's string.  A column transforms its raw
feature with insert_transformed_feature(columns_to_tensors), caching the result under the
column itself, as TF's _Transformer does.
"""
from __future__ import annotations

import collections
import math
from typing import Any, Dict, Optional, Sequence

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.initializers import TruncatedNormal, Zeros
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.parsing_ops import FixedLenFeature, VarLenFeature
from ..graph.sparse_tensor import SparseTensor, SparseTensorValue
from ..nn.feature_column.columns import _to_sparse_input_and_drop_ignore_values, bucketize

__all__ = ["real_valued_column", "sparse_column_with_keys", "sparse_column_with_hash_bucket",
           "sparse_column_with_integerized_feature", "sparse_column_with_vocabulary_file", "weighted_sparse_column",
           "embedding_column", "shared_embedding_columns", "one_hot_column", "bucketized_column", "crossed_column",
           "create_feature_spec_for_parsing"]

_COMBINERS = ("mean", "sqrtn", "sum")

# what a column hands the linear and embedding lookups: ids, optional weights, vocabulary size,
# the table's initializer and the combiner (TF's _LinearEmbeddingLookupArguments)
LookupArgs = collections.namedtuple("LookupArgs", ["input_tensor", "weight_tensor", "vocab_size", "initializer",
                                                   "combiner"])


def _tf_repr(v: Any) -> str:
    """repr as TF 1.x writes it (dtypes as tf.<name>), for the columns' sort keys."""
    if isinstance(v, _dt.DType):
        return f"tf.{v.name}"
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        inner = ", ".join(_tf_repr(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(_tf_repr(x) for x in v) + "]"
    return repr(v)


class _FeatureColumn:
    """A contrib column: name, parse config, sort key and its transformation."""
    _fields: tuple

    def __repr__(self) -> str:
        vals = ", ".join(f"{k}={_tf_repr(getattr(self, k))}" for k in self._fields)
        return f"{type(self).__name__}({vals})"

    __str__ = __repr__

    @property
    def key(self) -> str:
        """The string TF sorts columns by."""
        return repr(self)

    def _key_without(self, skip: Sequence[str]) -> str:
        # TF formats each kept field with str(): strings unquoted, dtypes as <dtype: 'x'>
        def s(v: Any) -> str:
            if isinstance(v, _dt.DType):
                return f"<dtype: '{v.name}'>"
            return v if isinstance(v, str) else _tf_repr(v)
        vals = ", ".join(f"{k}={s(getattr(self, k))}" for k in self._fields if k not in skip)
        return f"{type(self).__name__}({vals})"

    def insert_transformed_feature(self, columns_to_tensors: Dict[Any, Any]) -> None:
        raise NotImplementedError(f"Transform is not implemented for {self}.")

    def _to_dnn_input_layer(self, input_tensor: Any, weight_collections: Any = None, trainable: bool = True,
                            output_rank: int = 2) -> _g.Tensor:
        raise ValueError("Calling an abstract method.")

    def _deep_embedding_lookup_arguments(self, input_tensor: Any) -> Any:
        raise NotImplementedError(f"No deep embedding lookup arguments for column {self}.")

    def _wide_embedding_lookup_arguments(self, input_tensor: Any) -> LookupArgs:
        raise NotImplementedError(f"No wide embedding lookup arguments for column {self}.")

    def _to_dense_tensor(self, input_tensor: Any) -> _g.Tensor:
        raise NotImplementedError(f"No dense tensor representation for column {self}.")

    def _checkpoint_path(self) -> Any:
        return None


def _raw(columns_to_tensors: Dict[Any, Any], name: str) -> Any:
    if name not in columns_to_tensors:
        raise ValueError(f"Feature {name} is not in features dictionary.")
    t = columns_to_tensors[name]
    if isinstance(t, SparseTensorValue):
        return SparseTensor.from_value(t)
    return t if isinstance(t, SparseTensor) else _g.convert_to_tensor(t)


def reshape_real_valued(t: _g.Tensor, output_rank: int, column_name: Optional[str] = None) -> _g.Tensor:
    """A dense tensor as rank output_rank: one more dimension added, or the inner ones flattened."""
    rank = t.shape.rank
    if rank is not None:
        if output_rank > rank + 1:
            raise ValueError(f"Error while processing column {column_name}. Rank of input Tensor ({rank}) should be "
                             f"the same as output_rank ({output_rank}).")
        if output_rank == rank + 1:
            return _a.expand_dims(t, -1, name="expand_dims")
        if output_rank == rank:
            return t
    shape = _a.shape(t)
    lead = [shape[i] for i in range(output_rank - 1)]
    out = _a.reshape(t, _a.stack(lead + [_g.convert_to_tensor(-1)]))
    dims = t.shape.as_list() if rank is not None else None
    if dims is not None and all(d is not None for d in dims[output_rank - 1:]):
        n = 1
        for d in dims[output_rank - 1:]:
            n *= d
        out.set_shape(dims[:output_rank - 1] + [n])
    return out


# -- sparse (categorical) columns ---------------------------------------------------------------

_SparseIdLookupConfig = collections.namedtuple(
    "_SparseIdLookupConfig", ["vocabulary_file", "keys", "num_oov_buckets", "vocab_size", "default_value"])


class _SparseColumn(_FeatureColumn, collections.namedtuple(
        "_SparseColumn", ["column_name", "is_integerized", "bucket_size", "lookup_config", "combiner", "dtype"])):
    """A categorical feature as a [batch, k] SparseTensor of int64 ids in [0, length)."""

    def __new__(cls, column_name: str, is_integerized: bool = False, bucket_size: Optional[int] = None,
                lookup_config: Any = None, combiner: str = "sum", dtype: Any = _dt.string) -> "_SparseColumn":
        dtype = _dt.as_dtype(dtype)
        if is_integerized and bucket_size is None:
            raise ValueError(f"bucket_size must be set if is_integerized is True. column_name: {column_name}")
        if is_integerized and not dtype.is_integer:
            raise ValueError(f"dtype must be an integer if is_integerized is True. dtype: {dtype}, "
                             f"column_name: {column_name}.")
        if dtype != _dt.string and not dtype.is_integer:
            raise ValueError(f"dtype must be string or integer. dtype: {dtype}, column_name: {column_name}")
        if bucket_size is None and lookup_config is None:
            raise ValueError(f"one of bucket_size or lookup_config must be set. column_name: {column_name}")
        if bucket_size is not None and lookup_config:
            raise ValueError(f"one and only one of bucket_size or lookup_config must be set. "
                             f"column_name: {column_name}")
        if bucket_size is not None and bucket_size < 1:
            raise ValueError(f"bucket_size must be at least 1. bucket_size: {bucket_size}, column_name: {column_name}")
        if combiner not in _COMBINERS:
            raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r} "
                             f"(column_name: {column_name})")
        return super().__new__(cls, column_name, is_integerized, bucket_size, lookup_config, combiner, dtype)

    @property
    def name(self) -> str:
        return self.column_name

    @property
    def length(self) -> int:
        """The number of ids: the bucket count, or the vocabulary plus its oov buckets."""
        if self.bucket_size is not None:
            return self.bucket_size
        return self.lookup_config.vocab_size + self.lookup_config.num_oov_buckets

    @property
    def config(self) -> Dict[str, Any]:
        return {self.column_name: VarLenFeature(self.dtype)}

    def id_tensor(self, input_tensor: Any) -> SparseTensor:
        return input_tensor

    def weight_tensor(self, input_tensor: Any) -> Optional[SparseTensor]:
        return None

    def _to_dnn_input_layer(self, input_tensor: Any, weight_collections: Any = None, trainable: bool = True,
                            output_rank: int = 2) -> _g.Tensor:
        raise ValueError(f"SparseColumn is not supported in DNN. Please use embedding_column or one_hot_column. "
                         f"column: {self}")

    def _wide_embedding_lookup_arguments(self, input_tensor: Any) -> LookupArgs:
        return LookupArgs(self.id_tensor(input_tensor), self.weight_tensor(input_tensor), self.length, Zeros(),
                          self.combiner)

    def _input_sparse(self, columns_to_tensors: Dict[Any, Any]) -> SparseTensor:
        """The raw feature as a SparseTensor; a dense one made [batch, k] and its "" (strings)
        or -1 (integers) entries dropped, as TF."""
        t = _raw(columns_to_tensors, self.name)
        if isinstance(t, SparseTensor):
            return t
        t = reshape_real_valued(t, 2, self.name)
        return _to_sparse_input_and_drop_ignore_values(t, "" if t.dtype == _dt.string else -1)

    def is_compatible(self, other: "_SparseColumn") -> bool:
        if self.lookup_config and other.lookup_config:
            return self.lookup_config == other.lookup_config
        return self.length == other.length and (self.dtype == other.dtype or
                                                (self.dtype.is_integer and other.dtype.is_integer))


class _SparseColumnIntegerized(_SparseColumn):
    """See sparse_column_with_integerized_feature."""

    def insert_transformed_feature(self, columns_to_tensors: Dict[Any, Any]) -> None:
        sp = self._input_sparse(columns_to_tensors)
        ids = _m.mod(sp.values, _m.cast(self.bucket_size, sp.values.dtype), name="mod")
        columns_to_tensors[self] = SparseTensor(sp.indices, _m.cast(ids, _dt.int64), sp.dense_shape)


class _SparseColumnHashed(_SparseColumn):
    """See sparse_column_with_hash_bucket."""

    def insert_transformed_feature(self, columns_to_tensors: Dict[Any, Any]) -> None:
        from ..graph.ops.string_more_ops import as_string, string_to_hash_bucket_fast
        sp = self._input_sparse(columns_to_tensors)
        values = as_string(sp.values) if sp.dtype.is_integer else sp.values
        if values.dtype != _dt.string:
            raise ValueError(f"Column {self.name} hashes strings or integers, got {sp.dtype}.")
        ids = string_to_hash_bucket_fast(values, self.bucket_size, name="lookup")
        columns_to_tensors[self] = SparseTensor(sp.indices, ids, sp.dense_shape)


def _lookup_ops() -> Any:
    from ..graph.ops import lookup_ops
    return lookup_ops


def _check_key_dtype(col: _SparseColumn, sp: SparseTensor) -> SparseTensor:
    if (sp.dtype == _dt.string) != (col.dtype == _dt.string):
        raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. column_name: {col.name}, "
                         f"column dtype: {col.dtype}, tensor dtype: {sp.dtype}")
    return sp


class _SparseColumnKeys(_SparseColumn):
    """See sparse_column_with_keys."""

    def insert_transformed_feature(self, columns_to_tensors: Dict[Any, Any]) -> None:
        sp = _check_key_dtype(self, self._input_sparse(columns_to_tensors))
        key_dtype = _dt.string
        if sp.dtype.is_integer:
            sp, key_dtype = SparseTensor(sp.indices, _m.cast(sp.values, _dt.int64), sp.dense_shape), _dt.int64
        table = _lookup_ops().index_table_from_tensor(
            vocabulary_list=tuple(self.lookup_config.keys), default_value=self.lookup_config.default_value,
            dtype=key_dtype, name="lookup")
        columns_to_tensors[self] = table.lookup(sp)


class _SparseColumnVocabulary(_SparseColumn):
    """See sparse_column_with_vocabulary_file."""

    def insert_transformed_feature(self, columns_to_tensors: Dict[Any, Any]) -> None:
        from ..graph.ops.string_more_ops import as_string
        sp = _check_key_dtype(self, self._input_sparse(columns_to_tensors))
        if sp.dtype.is_integer:  # TF looks integer keys up as their decimal strings
            sp = SparseTensor(sp.indices, as_string(sp.values), sp.dense_shape)
        cfg = self.lookup_config
        table = _lookup_ops().index_table_from_file(
            vocabulary_file=cfg.vocabulary_file, num_oov_buckets=cfg.num_oov_buckets, vocab_size=cfg.vocab_size,
            default_value=cfg.default_value, name=self.name + "_lookup")
        columns_to_tensors[self] = table.lookup(sp)


def sparse_column_with_integerized_feature(column_name: str, bucket_size: int, combiner: str = "sum",
                                           dtype: Any = _dt.int64) -> _SparseColumnIntegerized:
    """Integer features used as ids themselves (modulo bucket_size)."""
    return _SparseColumnIntegerized(column_name, is_integerized=True, bucket_size=bucket_size, combiner=combiner,
                                    dtype=dtype)


def sparse_column_with_hash_bucket(column_name: str, hash_bucket_size: int, combiner: str = "sum",
                                   dtype: Any = _dt.string) -> _SparseColumnHashed:
    """Ids by hashing: string_to_hash_bucket_fast of each value (integers as decimal strings)."""
    return _SparseColumnHashed(column_name, bucket_size=hash_bucket_size, combiner=combiner, dtype=dtype)


def sparse_column_with_keys(column_name: str, keys: Sequence[Any], default_value: int = -1, combiner: str = "sum",
                            dtype: Any = _dt.string) -> _SparseColumnKeys:
    """Ids from an in-memory vocabulary: a value's position in `keys`, else default_value."""
    keys = tuple(keys)
    if not keys:
        raise ValueError(f"keys must not be empty. column_name: {column_name}")
    return _SparseColumnKeys(column_name, lookup_config=_SparseIdLookupConfig(None, keys, 0, len(keys), default_value),
                             combiner=combiner, dtype=dtype)


def sparse_column_with_vocabulary_file(column_name: str, vocabulary_file: str, num_oov_buckets: int = 0,
                                       vocab_size: Optional[int] = None, default_value: int = -1,
                                       combiner: str = "sum", dtype: Any = _dt.string) -> _SparseColumnVocabulary:
    """Ids from a vocabulary file (line numbers); vocab_size is required, as in TF."""
    if vocab_size is None:
        raise ValueError(f"vocab_size should be defined. column_name: {column_name}")
    cfg = _SparseIdLookupConfig(vocabulary_file, None, num_oov_buckets, vocab_size, default_value)
    return _SparseColumnVocabulary(column_name, lookup_config=cfg, combiner=combiner, dtype=dtype)


class _WeightedSparseColumn(_FeatureColumn, collections.namedtuple(
        "_WeightedSparseColumn", ["sparse_id_column", "weight_column_name", "dtype"])):
    """A sparse column's ids, each weighted by the value at the same place of another feature."""

    @property
    def name(self) -> str:
        return f"{self.sparse_id_column.name}_weighted_by_{self.weight_column_name}"

    @property
    def length(self) -> int:
        return self.sparse_id_column.length

    @property
    def config(self) -> Dict[str, Any]:
        cfg = dict(get_feature_config(self.sparse_id_column))
        cfg[self.weight_column_name] = VarLenFeature(self.dtype)
        return cfg

    def insert_transformed_feature(self, columns_to_tensors: Dict[Any, Any]) -> None:
        if self.sparse_id_column not in columns_to_tensors:
            self.sparse_id_column.insert_transformed_feature(columns_to_tensors)
        w = _raw(columns_to_tensors, self.weight_column_name)
        if not isinstance(w, SparseTensor):
            w = _to_sparse_input_and_drop_ignore_values(w)  # its zeros are missing entries, as TF
        if not w.dtype.is_floating:
            w = SparseTensor(w.indices, _m.cast(w.values, _dt.float32), w.dense_shape)
        columns_to_tensors[self] = (columns_to_tensors[self.sparse_id_column], w)

    def id_tensor(self, input_tensor: Any) -> SparseTensor:
        return input_tensor[0]

    def weight_tensor(self, input_tensor: Any) -> SparseTensor:
        return input_tensor[1]

    def _to_dnn_input_layer(self, input_tensor: Any, weight_collections: Any = None, trainable: bool = True,
                            output_rank: int = 2) -> _g.Tensor:
        raise ValueError(f"WeightedSparseColumn is not supported in DNN. Please use embedding_column or "
                         f"one_hot_column. column: {self}")

    def _wide_embedding_lookup_arguments(self, input_tensor: Any) -> LookupArgs:
        return LookupArgs(self.id_tensor(input_tensor), self.weight_tensor(input_tensor), self.length, Zeros(),
                          self.sparse_id_column.combiner)


def weighted_sparse_column(sparse_id_column: _SparseColumn, weight_column_name: str,
                           dtype: Any = _dt.float32) -> _WeightedSparseColumn:
    """A sparse column whose ids carry the weights of feature weight_column_name."""
    dtype = _dt.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype is not convertible to float. Given {dtype}")
    if not isinstance(sparse_id_column, _SparseColumn):
        raise TypeError(f"sparse_id_column must be a _SparseColumn, got {sparse_id_column!r}")
    return _WeightedSparseColumn(sparse_id_column, weight_column_name, dtype)


_ID_COLUMNS = (_SparseColumn, _WeightedSparseColumn)


def _check_id_column(c: Any, what: str) -> None:
    if not isinstance(c, _ID_COLUMNS + (_CrossedColumn,)):
        raise TypeError(f"{what} takes a sparse column (sparse_column_with_*, weighted_sparse_column or "
                        f"crossed_column), got {c!r}")


# -- dense columns over sparse ones -------------------------------------------------------------

class _OneHotColumn(_FeatureColumn, collections.namedtuple("_OneHotColumn", ["sparse_id_column"])):
    """A sparse column as multi-hot rows for a DNN: each id's count (or summed weight)."""

    @property
    def name(self) -> str:
        return f"{self.sparse_id_column.name}_one_hot"

    @property
    def length(self) -> int:
        return self.sparse_id_column.length

    @property
    def config(self) -> Dict[str, Any]:
        return get_feature_config(self.sparse_id_column)

    def insert_transformed_feature(self, columns_to_tensors: Dict[Any, Any]) -> None:
        if self.sparse_id_column not in columns_to_tensors:
            self.sparse_id_column.insert_transformed_feature(columns_to_tensors)
        columns_to_tensors[self] = columns_to_tensors[self.sparse_id_column]

    def _to_dnn_input_layer(self, input_tensor: Any, weight_collections: Any = None, trainable: bool = True,
                            output_rank: int = 2) -> _g.Tensor:
        from ..graph.ops import segment_ops as _seg
        from ..graph.ops.sparse_ops import sparse_tensor_to_dense
        ids = self.sparse_id_column.id_tensor(input_tensor)
        weights = self.sparse_id_column.weight_tensor(input_tensor)
        depth = self.length
        if weights is not None:
            # each id's weight summed into its row's slot
            idx = _m.cast(ids.values, _dt.int64)
            ok = _m.logical_and(_m.greater_equal(idx, 0), _m.less(idx, depth))
            rows = ids.indices[:, 0]
            batch = _m.cast(ids.dense_shape[0], _dt.int64)
            seg = _a.where(ok, rows * depth + idx, -_a.ones_like(idx))
            flat = _seg.unsorted_segment_sum(_m.cast(weights.values, _dt.float32), seg, batch * depth)
            return _a.reshape(flat, _a.stack([batch, _g.convert_to_tensor(depth, dtype=_dt.int64)]))
        dense = sparse_tensor_to_dense(ids, default_value=-1)
        return _m.reduce_sum(_a.one_hot(dense, depth, on_value=1.0, off_value=0.0), axis=[output_rank - 1])


def one_hot_column(sparse_id_column: Any) -> _OneHotColumn:
    """A sparse column's ids as multi-hot [batch, length] rows (its combiner is ignored)."""
    _check_id_column(sparse_id_column, "one_hot_column")
    return _OneHotColumn(sparse_id_column)


DeepArgs = collections.namedtuple("DeepArgs", ["input_tensor", "weight_tensor", "vocab_size", "initializer",
                                               "combiner", "dimension", "shared_embedding_name", "max_norm",
                                               "trainable"])


class _EmbeddingColumn(_FeatureColumn, collections.namedtuple(
        "_EmbeddingColumn", ["sparse_id_column", "dimension", "combiner", "initializer", "ckpt_to_load_from",
                             "tensor_name_in_ckpt", "shared_embedding_name", "shared_vocab_size", "max_norm",
                             "trainable"])):
    """A sparse column's ids as the combination of their learned `dimension`-float embeddings."""

    @property
    def name(self) -> str:
        suffix = "_embedding" if self.shared_embedding_name is None else "_shared_embedding"
        return self.sparse_id_column.name + suffix

    @property
    def length(self) -> int:
        return self.sparse_id_column.length if self.shared_vocab_size is None else self.shared_vocab_size

    @property
    def config(self) -> Dict[str, Any]:
        return get_feature_config(self.sparse_id_column)

    @property
    def key(self) -> str:
        return self._key_without(["initializer"])

    def insert_transformed_feature(self, columns_to_tensors: Dict[Any, Any]) -> None:
        if self.sparse_id_column not in columns_to_tensors:
            self.sparse_id_column.insert_transformed_feature(columns_to_tensors)
        columns_to_tensors[self] = columns_to_tensors[self.sparse_id_column]

    def _deep_embedding_lookup_arguments(self, input_tensor: Any) -> DeepArgs:
        c = self.sparse_id_column
        return DeepArgs(c.id_tensor(input_tensor), c.weight_tensor(input_tensor), self.length, self.initializer,
                        self.combiner, self.dimension, self.shared_embedding_name, self.max_norm, self.trainable)

    def _checkpoint_path(self) -> Any:
        return None if self.ckpt_to_load_from is None else (self.ckpt_to_load_from, self.tensor_name_in_ckpt)

    def _wide_embedding_lookup_arguments(self, input_tensor: Any) -> LookupArgs:
        raise ValueError(f"Column {self} is not supported in linear models. Please use sparse_column.")


def embedding_column(sparse_id_column: Any, dimension: int, combiner: str = "mean", initializer: Any = None,
                     ckpt_to_load_from: Optional[str] = None, tensor_name_in_ckpt: Optional[str] = None,
                     max_norm: Optional[float] = None, trainable: bool = True) -> _EmbeddingColumn:
    """A sparse column embedded in `dimension` floats for a DNN; the table's default
    initializer is truncated normal of stddev 1/sqrt(number of ids), TF 1.15's."""
    _check_id_column(sparse_id_column, "embedding_column")
    if not isinstance(dimension, int) or dimension < 1:
        raise ValueError(f"dimension must be a positive integer, got {dimension!r}. "
                         f"column_name: {sparse_id_column.name}")
    if combiner not in _COMBINERS:
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    if initializer is not None and not callable(initializer):
        raise ValueError(f"initializer must be callable if specified. Embedding of column_name: "
                         f"{sparse_id_column.name}")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or none of them.")
    if initializer is None:
        initializer = TruncatedNormal(mean=0.0, stddev=1 / math.sqrt(sparse_id_column.length))
    return _EmbeddingColumn(sparse_id_column, dimension, combiner, initializer, ckpt_to_load_from,
                            tensor_name_in_ckpt, None, None, max_norm, trainable)


def shared_embedding_columns(sparse_id_columns: Sequence[Any], dimension: int, combiner: str = "mean",
                             shared_embedding_name: Optional[str] = None, initializer: Any = None,
                             ckpt_to_load_from: Optional[str] = None, tensor_name_in_ckpt: Optional[str] = None,
                             max_norm: Optional[float] = None, trainable: bool = True) -> Any:
    """Embedding columns of compatible sparse columns sharing one table, named
    shared_embedding_name (default: the first three sorted column names joined by "_",
    "_plus_<n>_others" for more, then "_shared_embedding")."""
    if isinstance(sparse_id_columns, (str, bytes)) or not isinstance(sparse_id_columns, (list, tuple)):
        raise TypeError(f"sparse_id_columns must be a non-string sequence (ex: list or tuple) instead of type "
                        f"{type(sparse_id_columns)}.")
    if len(sparse_id_columns) < 1:
        raise ValueError("The input sparse_id_columns should have at least one element.")
    for c in sparse_id_columns:
        if not isinstance(c, _SparseColumn):
            raise TypeError(f"Elements of sparse_id_columns must be _SparseColumn, but {c} is not.")
    first = embedding_column(sparse_id_columns[0], dimension, combiner, initializer, ckpt_to_load_from,
                             tensor_name_in_ckpt, max_norm, trainable)
    if len(sparse_id_columns) == 1:
        return [first._replace(shared_embedding_name=shared_embedding_name)]
    if not all(c.is_compatible(sparse_id_columns[0]) for c in sparse_id_columns[1:]):
        raise ValueError("The input sparse id columns are not compatible.")
    if not shared_embedding_name:
        names = [c.name for c in sorted(sparse_id_columns)]
        shared_embedding_name = "_".join(names[:3])
        if len(names) > 3:
            shared_embedding_name += f"_plus_{len(names) - 3}_others"
        shared_embedding_name += "_shared_embedding"
    size = sparse_id_columns[0].length
    return tuple(first._replace(sparse_id_column=c, shared_embedding_name=shared_embedding_name, shared_vocab_size=size)
                 for c in sparse_id_columns)


# -- real-valued, bucketized and crossed --------------------------------------------------------

class _RealValuedColumn(_FeatureColumn, collections.namedtuple(
        "_RealValuedColumn", ["column_name", "dimension", "default_value", "dtype", "normalizer"])):
    """A dense numeric feature of `dimension` values per example (float32 after normalizer)."""

    @property
    def name(self) -> str:
        return self.column_name

    @property
    def config(self) -> Dict[str, Any]:
        dv = None if self.default_value is None else list(self.default_value)
        return {self.column_name: FixedLenFeature([self.dimension], self.dtype, dv)}

    @property
    def key(self) -> str:
        return self._key_without(["normalizer"])

    @property
    def normalizer_fn(self) -> Any:
        return self.normalizer

    def insert_transformed_feature(self, columns_to_tensors: Dict[Any, Any]) -> None:
        t = _raw(columns_to_tensors, self.name)
        if self.normalizer is not None:
            t = self.normalizer(t)
        if isinstance(t, SparseTensor):
            columns_to_tensors[self] = SparseTensor(t.indices, _m.cast(t.values, _dt.float32), t.dense_shape)
        else:
            columns_to_tensors[self] = _m.cast(t, _dt.float32)

    def _to_dense_tensor(self, input_tensor: Any) -> _g.Tensor:
        if isinstance(input_tensor, SparseTensor):
            from ..graph.ops.sparse_ops import sparse_tensor_to_dense
            dv = self.default_value[0] if self.default_value is not None else 0
            return sparse_tensor_to_dense(input_tensor, default_value=float(dv))
        return input_tensor

    def _to_dnn_input_layer(self, input_tensor: Any, weight_collections: Any = None, trainable: bool = True,
                            output_rank: int = 2) -> _g.Tensor:
        t = self._to_dense_tensor(input_tensor)
        if t.dtype != _dt.float32:
            t = _m.cast(t, _dt.float32)
        return reshape_real_valued(t, output_rank, self.name)


def real_valued_column(column_name: str, dimension: int = 1, default_value: Any = None,
                       dtype: Any = _dt.float32, normalizer: Any = None) -> _RealValuedColumn:
    """A dense numeric feature of `dimension` values per example."""
    dtype = _dt.as_dtype(dtype)
    if dimension is None:  # TF 1.15 moved variable-length features to _real_valued_var_len_column
        raise TypeError(f"dimension must be an integer. Use the _real_valued_var_len_column for variable length "
                        f"features. dimension: {dimension}, column_name: {column_name}")
    if isinstance(dimension, bool) or not isinstance(dimension, int):
        raise TypeError(f"dimension must be an integer. dimension: {dimension}, column_name: {column_name}")
    if dimension < 1:
        raise ValueError(f"dimension must be greater than 0. dimension: {dimension}, column_name: {column_name}")
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype}, column_name: {column_name}")
    if normalizer is not None and not callable(normalizer):
        raise TypeError(f"normalizer must be a callable. Given: {normalizer}")
    if default_value is None:
        return _RealValuedColumn(column_name, dimension, None, dtype, normalizer)
    n = dimension
    bad = TypeError(f"default_value must be compatible with dtype. default_value: {default_value}, dtype: {dtype}, "
                    f"column_name: {column_name}")
    if isinstance(default_value, bool):
        raise bad
    if isinstance(default_value, int):
        v = default_value if dtype.is_integer else float(default_value)
        return _RealValuedColumn(column_name, dimension, (v,) * n, dtype, normalizer)
    if isinstance(default_value, float):
        if not dtype.is_floating:
            raise bad
        return _RealValuedColumn(column_name, dimension, (default_value,) * n, dtype, normalizer)
    if isinstance(default_value, (list, tuple)):
        if len(default_value) != dimension:
            raise ValueError(f"The length of default_value must be equal to dimension. default_value: "
                             f"{default_value}, dimension: {dimension}, column_name: {column_name}")
        vals = list(default_value)
        if all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
            vals = vals if dtype.is_integer else [float(v) for v in vals]
            return _RealValuedColumn(column_name, dimension, tuple(vals), dtype, normalizer)
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals) and dtype.is_floating:
            return _RealValuedColumn(column_name, dimension, tuple(float(v) for v in vals), dtype, normalizer)
    raise bad


class _BucketizedColumn(_FeatureColumn, collections.namedtuple("_BucketizedColumn",
                                                               ["source_column", "boundaries"])):
    """A real-valued column's values as bucket ids: one-hot rows in a DNN, ids in a linear model."""

    @property
    def name(self) -> str:
        return f"{self.source_column.name}_bucketized"

    @property
    def length(self) -> int:
        return len(self.boundaries) + 1

    @property
    def config(self) -> Dict[str, Any]:
        return self.source_column.config

    def insert_transformed_feature(self, columns_to_tensors: Dict[Any, Any]) -> None:
        if self.source_column not in columns_to_tensors:
            self.source_column.insert_transformed_feature(columns_to_tensors)
        src = columns_to_tensors[self.source_column]
        if isinstance(src, SparseTensor):
            raise ValueError(f"Column {self.name} needs a dense source, got a SparseTensor.")
        columns_to_tensors[self] = bucketize(src, list(self.boundaries), name="bucketize")

    def _to_dnn_input_layer(self, input_tensor: Any, weight_collections: Any = None, trainable: bool = True,
                            output_rank: int = 2) -> _g.Tensor:
        if output_rank != 2:
            raise ValueError("BucketizedColumn currently only supports output_rank=2")
        hot = _a.one_hot(_m.cast(input_tensor, _dt.int64), self.length, 1.0, 0.0, name="one_hot")
        return _a.reshape(hot, [-1, self.length * self.source_column.dimension], name="reshape")

    def to_sparse_tensor(self, input_tensor: _g.Tensor) -> SparseTensor:
        """The bucket ids as a [batch, dimension] SparseTensor, dimension j's ids offset by
        j * length so each dimension has its own."""
        dim = self.source_column.dimension
        t = _a.reshape(input_tensor, [-1, dim])
        indices = _a.where(_a.ones_like(t, dtype=_dt.bool_))  # every (example, dimension), row-major
        ids = _a.reshape(t, [-1]) + self.length * _m.cast(indices[:, 1], t.dtype)
        return SparseTensor(indices, _m.cast(ids, _dt.int64), _a.shape(t, out_type=_dt.int64))

    def _wide_embedding_lookup_arguments(self, input_tensor: Any) -> LookupArgs:
        return LookupArgs(self.to_sparse_tensor(input_tensor), None, self.length * self.source_column.dimension,
                          Zeros(), "sum")


def bucketized_column(source_column: _RealValuedColumn, boundaries: Sequence[float]) -> _BucketizedColumn:
    """Buckets (-inf, b0), [b0, b1), ..., [bn, inf) of a real-valued column's values; repeated
    boundaries are merged, unsorted ones are an error."""
    if not isinstance(source_column, _RealValuedColumn):
        raise TypeError(f"source_column must be an instance of _RealValuedColumn. source_column: {source_column}")
    if source_column.dimension is None:
        raise ValueError(f"source_column must have a defined dimension. source_column: {source_column}")
    if not isinstance(boundaries, (list, tuple)) or not boundaries:
        raise ValueError(f"boundaries must be a non-empty list or tuple. boundaries: {boundaries}")
    clean = []
    for a, b in zip(boundaries[:-1], boundaries[1:]):
        if a > b:
            raise ValueError(f"boundaries must be a sorted list. boundaries: {boundaries}")
        if a < b:
            clean.append(a)
    clean.append(boundaries[-1])
    return _BucketizedColumn(source_column, tuple(clean))


class _CrossedColumn(_FeatureColumn, collections.namedtuple(
        "_CrossedColumn", ["columns", "hash_bucket_size", "hash_key", "combiner", "ckpt_to_load_from",
                           "tensor_name_in_ckpt"])):
    """The hashed crosses of sparse, bucketized and crossed columns, for linear models (or
    an embedding_column in a DNN)."""

    @property
    def name(self) -> str:
        return "_X_".join(sorted(c.name for c in self.columns))

    @property
    def length(self) -> int:
        return self.hash_bucket_size

    @property
    def config(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for c in self.columns:
            out.update(get_feature_config(c))
        return out

    def id_tensor(self, input_tensor: Any) -> SparseTensor:
        return input_tensor

    def weight_tensor(self, input_tensor: Any) -> None:
        return None

    def insert_transformed_feature(self, columns_to_tensors: Dict[Any, Any]) -> None:
        from ..graph.ops.sparse_cross_ops import sparse_cross_hashed
        tensors = []
        for c in _leaves(self):
            if isinstance(c, _SparseColumn):
                tensors.append(_raw(columns_to_tensors, c.name))  # the raw values are crossed, as TF
                continue
            if c not in columns_to_tensors:
                c.insert_transformed_feature(columns_to_tensors)
            t = columns_to_tensors[c]
            tensors.append(c.to_sparse_tensor(t) if isinstance(c, _BucketizedColumn) else t)
        columns_to_tensors[self] = sparse_cross_hashed(tensors, num_buckets=self.hash_bucket_size,
                                                       hash_key=self.hash_key, name="cross")

    def _to_dnn_input_layer(self, input_tensor: Any, weight_collections: Any = None, trainable: bool = True,
                            output_rank: int = 2) -> _g.Tensor:
        raise ValueError(f"CrossedColumn is not supported in DNN. Please use embedding_column. column: {self}")

    def _checkpoint_path(self) -> Any:
        return None if self.ckpt_to_load_from is None else (self.ckpt_to_load_from, self.tensor_name_in_ckpt)

    def _wide_embedding_lookup_arguments(self, input_tensor: Any) -> LookupArgs:
        return LookupArgs(input_tensor, None, self.length, Zeros(), self.combiner)


def _leaves(cross: _CrossedColumn) -> list:
    out = []
    for c in cross.columns:
        out.extend(_leaves(c) if isinstance(c, _CrossedColumn) else [c])
    return out


def crossed_column(columns: Sequence[Any], hash_bucket_size: int, combiner: str = "sum",
                   ckpt_to_load_from: Optional[str] = None, tensor_name_in_ckpt: Optional[str] = None,
                   hash_key: Optional[int] = None) -> _CrossedColumn:
    """Crosses of sparse (their raw values), bucketized and crossed columns, hashed into
    hash_bucket_size ids."""
    columns = list(columns)
    for c in columns:
        if not isinstance(c, (_SparseColumn, _CrossedColumn, _BucketizedColumn)):
            raise TypeError(f"columns must be a set of _SparseColumn, _CrossedColumn, or _BucketizedColumn "
                            f"instances. (column {c} is a {type(c).__name__})")
    if len(columns) < 2:
        raise ValueError(f"columns must contain at least 2 elements. columns: {columns}")
    if not isinstance(hash_bucket_size, int) or hash_bucket_size < 2:
        raise ValueError(f"hash_bucket_size must be at least 2. hash_bucket_size: {hash_bucket_size}")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or none of them.")
    if combiner not in _COMBINERS:
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    return _CrossedColumn(tuple(sorted(columns, key=lambda c: c.name)), hash_bucket_size, hash_key, combiner,
                          ckpt_to_load_from, tensor_name_in_ckpt)


# -- parse specs --------------------------------------------------------------------------------

def get_feature_config(column: Any) -> Dict[str, Any]:
    """The parsing config (FixedLenFeature/VarLenFeature) of a column's raw input."""
    if not isinstance(column, _FeatureColumn):
        raise TypeError(f"feature_columns should only contain instances of _FeatureColumn. Given column is {column}")
    return column.config


def create_feature_spec_for_parsing(feature_columns: Any) -> Dict[str, Any]:
    """The tf.parse_example spec of the columns' raw features ({key: FixedLenFeature or
    VarLenFeature}); a dict of columns counts its values."""
    if isinstance(feature_columns, dict):
        feature_columns = feature_columns.values()
    out: Dict[str, Any] = {}
    for c in feature_columns:
        out.update(get_feature_config(c))
    return out
