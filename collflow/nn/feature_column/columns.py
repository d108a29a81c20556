"""TF1's feature columns, the base classes and the categorical columns: what turns a dict of
raw features (dense tensors or SparseTensors) into the tensors a model consumes.

A column transforms its raw feature once per _LazyBuilder (the cache input_layer and
linear_model share across columns), as TF 1.15's feature_column.py does: a categorical column
yields a [batch, k] SparseTensor of int64 ids (IdWeightPair), a dense column a [batch, ...]
float tensor.  Names, parse specs and bucket counts are TF's, so checkpoints and
make_parse_example_spec line up.
"""
from __future__ import annotations

import collections
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from ... import dtypes as _dt
from ...graph import graph as _g
from ...graph.ops import array_ops as _a
from ...graph.ops import math_ops as _m
from ...graph.ops.constant_op import identity
from ...graph.ops.index_ops import gather_nd
from ...graph.ops.parsing_ops import FixedLenFeature, VarLenFeature
from ...graph.shape import TensorShape
from ...graph.sparse_tensor import SparseTensor, SparseTensorValue

__all__ = ["numeric_column", "bucketized_column", "categorical_column_with_identity",
           "categorical_column_with_vocabulary_list", "categorical_column_with_vocabulary_file",
           "categorical_column_with_hash_bucket", "crossed_column", "weighted_categorical_column"]


class _FeatureColumn:
    """A column: its name, its parse spec, and how it transforms its raw input."""

    @property
    def name(self) -> str:
        raise NotImplementedError

    @property
    def _var_scope_name(self) -> str:
        return self.name

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        raise NotImplementedError

    def _transform_feature(self, inputs: "_LazyBuilder") -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__.lstrip('_')}(name={self.name!r})"


class _DenseColumn(_FeatureColumn):
    """A column with a dense [batch, *_variable_shape] float output."""

    @property
    def _variable_shape(self) -> TensorShape:
        raise NotImplementedError

    def _get_dense_tensor(self, inputs: "_LazyBuilder", weight_collections: Any = None,
                          trainable: Optional[bool] = None) -> _g.Tensor:
        raise NotImplementedError


IdWeightPair = collections.namedtuple("IdWeightPair", ["id_tensor", "weight_tensor"])


class _CategoricalColumn(_FeatureColumn):
    """A column whose output is ids in [0, _num_buckets), as a [batch, k] SparseTensor."""
    IdWeightPair = IdWeightPair

    @property
    def _num_buckets(self) -> int:
        raise NotImplementedError

    def _get_sparse_tensors(self, inputs: "_LazyBuilder", weight_collections: Any = None,
                            trainable: Optional[bool] = None) -> IdWeightPair:
        return IdWeightPair(inputs.get(self), None)


def _as_tensor_or_sparse(x: Any) -> Any:
    if isinstance(x, SparseTensorValue):
        return SparseTensor.from_value(x)
    return x if isinstance(x, SparseTensor) else _g.convert_to_tensor(x)


class _LazyBuilder:
    """The features dict and each column's transformed output, computed once on first use."""

    def __init__(self, features: Dict[Any, Any]) -> None:
        self._features = dict(features)
        self._cache: Dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        if key in self._cache:
            return self._cache[key]
        if isinstance(key, str):
            if key not in self._features:
                raise ValueError(f"Feature {key} is not in features dictionary.")
            out = self._raw(key)
        elif isinstance(key, _FeatureColumn):
            out = key._transform_feature(self)
            if out is None:
                raise ValueError(f"Column {key.name} is not supported.")
        else:
            raise TypeError(f"key must be a string or a _FeatureColumn, got {key!r}")
        self._cache[key] = out
        return out

    def _raw(self, key: str) -> Any:
        """The raw feature; a rank-1 one made [batch, 1], as TF (rank 0 is an error)."""
        t = _as_tensor_or_sparse(self._features[key])
        rank = t.shape.rank
        if rank == 0:
            raise ValueError(f"Feature (key: {key}) cannot have rank 0. Given: {t}")
        if rank != 1:
            return t
        if isinstance(t, SparseTensor):
            from ...graph.ops.sparse_more_ops import sparse_reshape
            return sparse_reshape(t, _a.stack([_m.cast(t.dense_shape[0], _dt.int64),
                                               _g.convert_to_tensor(1, dtype=_dt.int64)]))
        return _a.expand_dims(t, -1)


def _to_sparse_input_and_drop_ignore_values(x: Any, ignore_value: Any = None) -> SparseTensor:
    """A SparseTensor as it is; a dense tensor as the SparseTensor of its entries other than
    ignore_value ("" for strings, -1 for integers, 0 otherwise by default), as TF."""
    t = _as_tensor_or_sparse(x)
    if isinstance(t, SparseTensor):
        return t
    with _g.name_scope("to_sparse_input"):
        if ignore_value is None:
            ignore_value = "" if t.dtype == _dt.string else -1 if t.dtype.is_integer else 0
        ignore = _g.convert_to_tensor(ignore_value, dtype=t.dtype, name="ignore_value")
        indices = _a.where(_m.not_equal(t, ignore), name="indices")
        return SparseTensor(indices, gather_nd(t, indices, name="values"),
                            _a.shape(t, out_type=_dt.int64, name="dense_shape"))


def _is_string_or_int(dt: Any) -> bool:
    return dt == _dt.string or dt.is_integer


# -- numeric and bucketized ---------------------------------------------------------------

class _NumericColumn(_DenseColumn, collections.namedtuple(
        "_NumericColumn", ["key", "shape", "default_value", "dtype", "normalizer_fn"])):
    """A dense float feature of `shape` per example."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        return {self.key: FixedLenFeature(self.shape, self.dtype, self.default_value)}

    def _transform_feature(self, inputs: _LazyBuilder) -> _g.Tensor:
        t = inputs.get(self.key)
        if isinstance(t, SparseTensor):
            raise ValueError(f"The corresponding Tensor of numerical column must be a Tensor. SparseTensor is "
                             f"not supported. key: {self.key}")
        if self.normalizer_fn is not None:
            t = self.normalizer_fn(t)
        return _m.cast(t, _dt.float32)

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape(self.shape)

    def _get_dense_tensor(self, inputs: _LazyBuilder, weight_collections: Any = None,
                          trainable: Optional[bool] = None) -> _g.Tensor:
        return inputs.get(self)


def _check_shape(shape: Any, key: str) -> Tuple[int, ...]:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for d in shape:
        if not isinstance(d, (int, np.integer)) or d < 1:
            raise ValueError(f"shape dimensions must be greater than 0. shape: {shape}, key: {key}")
    return tuple(int(d) for d in shape)


def _check_default_value(shape: Tuple[int, ...], default_value: Any, dtype: Any, key: str) -> Any:
    """default_value as TF keeps it: None, or a nested tuple of `shape` (a scalar repeated)."""
    if default_value is None:
        return None
    if isinstance(default_value, (int, float, np.integer, np.floating)):
        out: Any = default_value
        for d in reversed(shape):
            out = (out,) * d
        return out
    arr = np.asarray(default_value)
    if arr.shape != shape or not (arr.dtype.kind in "iuf" or arr.dtype == bool):
        raise ValueError(f"The shape of default_value must be equal to given shape. default_value: "
                         f"{default_value}, shape: {shape}, key: {key}")

    def nest(a: Any) -> Any:
        return tuple(nest(x) for x in a) if isinstance(a, (list, tuple)) else a
    return nest(default_value)


def numeric_column(key: str, shape: Any = (1,), default_value: Any = None, dtype: Any = _dt.float32,
                   normalizer_fn: Any = None) -> _NumericColumn:
    """A dense numeric feature of `shape` per example (cast to float32 after normalizer_fn)."""
    shape = _check_shape(shape, key)
    dtype = _dt.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype}, key: {key}")
    default_value = _check_default_value(shape, default_value, dtype, key)
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    return _NumericColumn(key, shape, default_value, dtype, normalizer_fn)


def bucketize(x: Any, boundaries: Sequence[float], name: Optional[str] = None) -> _g.Tensor:
    """The int32 bucket of each value: i with boundaries[i-1] <= v < boundaries[i] (NaN in the
    last bucket, as TF's upper_bound puts it)."""
    x = _g.convert_to_tensor(x)
    with _g.name_scope(name or "Bucketize"):
        b = _g.convert_to_tensor(np.asarray(boundaries, dtype=x.dtype.as_numpy_dtype).reshape(-1))
        above = _m.logical_not(_m.less(_a.expand_dims(x, -1), b))
        return _m.reduce_sum(_m.cast(above, _dt.int32), -1)


class _BucketizedColumn(_DenseColumn, _CategoricalColumn, collections.namedtuple(
        "_BucketizedColumn", ["source_column", "boundaries"])):
    """A numeric column's values as bucket ids (categorical) or one-hot rows (dense)."""

    @property
    def name(self) -> str:
        return f"{self.source_column.name}_bucketized"

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        return self.source_column._parse_example_spec

    def _transform_feature(self, inputs: _LazyBuilder) -> _g.Tensor:
        return bucketize(inputs.get(self.source_column), self.boundaries)

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape(tuple(self.source_column.shape) + (len(self.boundaries) + 1,))

    def _get_dense_tensor(self, inputs: _LazyBuilder, weight_collections: Any = None,
                          trainable: Optional[bool] = None) -> _g.Tensor:
        return _a.one_hot(_m.cast(inputs.get(self), _dt.int64), len(self.boundaries) + 1, on_value=1.0,
                          off_value=0.0)

    @property
    def _num_buckets(self) -> int:
        return (len(self.boundaries) + 1) * self.source_column.shape[0]

    def _get_sparse_tensors(self, inputs: _LazyBuilder, weight_collections: Any = None,
                            trainable: Optional[bool] = None) -> IdWeightPair:
        t = inputs.get(self)
        dim = self.source_column.shape[0]
        t = _a.reshape(t, _a.stack([_a.shape(t)[0], dim]))
        # every (example, dimension) has one id, in row-major order
        indices = _a.where(_a.ones_like(t, dtype=_dt.bool_))
        # the ids of dimension j are offset by j * buckets so every dimension has its own
        ids = _a.reshape(t, [-1]) + (len(self.boundaries) + 1) * _m.cast(indices[:, 1], _dt.int32)
        shape = _a.shape(t, out_type=_dt.int64)
        return IdWeightPair(SparseTensor(indices, ids, shape), None)


def bucketized_column(source_column: _NumericColumn, boundaries: Sequence[float]) -> _BucketizedColumn:
    """Buckets of a 1-D numeric column's values at the sorted `boundaries`."""
    if not isinstance(source_column, _NumericColumn):
        raise ValueError(f"source_column must be a column generated with numeric_column(). Given: {source_column}")
    if len(source_column.shape) > 1:
        raise ValueError(f"source_column must be one-dimensional column. Given: {source_column}")
    if not boundaries or not isinstance(boundaries, (list, tuple)):
        raise ValueError("boundaries must be a sorted list.")
    for lo, hi in zip(boundaries[:-1], boundaries[1:]):
        if lo >= hi:
            raise ValueError("boundaries must be a sorted list.")
    return _BucketizedColumn(source_column, tuple(boundaries))


# -- categorical ----------------------------------------------------------------------------

class _IdentityCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "_IdentityCategoricalColumn", ["key", "num_buckets", "default_value"])):
    """Integer ids used as they are."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        return {self.key: VarLenFeature(_dt.int64)}

    @property
    def _num_buckets(self) -> int:
        return self.num_buckets

    def _transform_feature(self, inputs: _LazyBuilder) -> SparseTensor:
        sp = _to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        if not sp.dtype.is_integer:
            raise ValueError(f"Invalid input, not integer. key: {self.key} dtype: {sp.dtype}")
        values = _m.cast(sp.values, _dt.int64, name="values")
        n = _g.convert_to_tensor(self.num_buckets, dtype=_dt.int64, name="num_buckets")
        zero = _g.convert_to_tensor(0, dtype=_dt.int64, name="zero")
        if self.default_value is None:
            # out-of-range ids are an error when there is no default
            from ...graph.ops.check_more_ops import assert_greater_equal
            from ...graph.ops.check_ops import assert_less
            checks = (assert_less(values, n, data=(values, n), name="assert_less_than_num_buckets"),
                      assert_greater_equal(values, zero, data=(values,), name="assert_greater_or_equal_0"))
            with _g.control_dependencies(checks):
                values = identity(values)
        else:
            bad = _m.logical_or(_m.less(values, zero), _m.greater_equal(values, n))
            values = _a.where(bad, _a.fill(_a.shape(values), _g.convert_to_tensor(self.default_value, _dt.int64)),
                              values)
        return SparseTensor(sp.indices, values, sp.dense_shape)


def categorical_column_with_identity(key: str, num_buckets: int,
                                     default_value: Optional[int] = None) -> _IdentityCategoricalColumn:
    """Integer inputs in [0, num_buckets) as ids; others become default_value (or an error)."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets {num_buckets} < 1, column_name {key}")
    if default_value is not None and (default_value < 0 or default_value >= num_buckets):
        raise ValueError(f"default_value {default_value} not in range [0, {num_buckets}), column_name {key}")
    return _IdentityCategoricalColumn(key, int(num_buckets), default_value)


class _HashedCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "_HashedCategoricalColumn", ["key", "hash_bucket_size", "dtype"])):
    """Strings (or ints, written in decimal) hashed into hash_bucket_size ids."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        return {self.key: VarLenFeature(self.dtype)}

    @property
    def _num_buckets(self) -> int:
        return self.hash_bucket_size

    def _transform_feature(self, inputs: _LazyBuilder) -> SparseTensor:
        from ...graph.ops.string_more_ops import as_string, string_to_hash_bucket_fast
        sp = _to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        if not _is_string_or_int(sp.dtype):
            raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: {self.key}, "
                             f"column dtype: {self.dtype}, tensor dtype: {sp.dtype}")
        if self.dtype.is_integer != sp.dtype.is_integer:
            raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: {self.key}, "
                             f"column dtype: {self.dtype}, tensor dtype: {sp.dtype}")
        values = sp.values if self.dtype == _dt.string else as_string(sp.values)
        ids = string_to_hash_bucket_fast(values, self.hash_bucket_size, name="lookup")
        return SparseTensor(sp.indices, ids, sp.dense_shape)


def categorical_column_with_hash_bucket(key: str, hash_bucket_size: int,
                                        dtype: Any = _dt.string) -> _HashedCategoricalColumn:
    """Ids by hashing: string_to_hash_bucket_fast of each value (ints as decimal strings)."""
    if hash_bucket_size is None:
        raise ValueError(f"hash_bucket_size must be set. key: {key}")
    if hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be at least 1. hash_bucket_size: {hash_bucket_size}, key: {key}")
    dtype = _dt.as_dtype(dtype)
    if not _is_string_or_int(dtype):
        raise ValueError(f"dtype must be string or integer. dtype: {dtype}, column_name: {key}")
    return _HashedCategoricalColumn(key, int(hash_bucket_size), dtype)


def _lookup_ops() -> Any:
    # the lookup tables live with the graph ops (contrib.lookup re-exports them)
    from ...graph.ops import lookup_ops
    return lookup_ops


class _VocabularyListCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "_VocabularyListCategoricalColumn", ["key", "vocabulary_list", "dtype", "default_value",
                                             "num_oov_buckets"])):
    """Values looked up in an in-memory vocabulary: the id is the position in the list."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        return {self.key: VarLenFeature(self.dtype)}

    @property
    def _num_buckets(self) -> int:
        return len(self.vocabulary_list) + self.num_oov_buckets

    def _transform_feature(self, inputs: _LazyBuilder) -> SparseTensor:
        sp = _to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        sp, key_dtype = _lookup_keys(sp, self.dtype, self.key)
        table = _lookup_ops().index_table_from_tensor(
            vocabulary_list=tuple(self.vocabulary_list), num_oov_buckets=self.num_oov_buckets,
            default_value=self.default_value, dtype=key_dtype, name=f"{self.key}_lookup")
        return table.lookup(sp)


def _lookup_keys(sp: SparseTensor, dtype: Any, key: str) -> Tuple[SparseTensor, Any]:
    """The sparse input checked against the column's dtype; integer keys as int64, as TF."""
    if dtype.is_integer != sp.dtype.is_integer:
        raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: {key}, "
                         f"column dtype: {dtype}, tensor dtype: {sp.dtype}")
    if not _is_string_or_int(sp.dtype):
        raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: {key}")
    if sp.dtype.is_integer:
        return SparseTensor(sp.indices, _m.cast(sp.values, _dt.int64), sp.dense_shape), _dt.int64
    return sp, dtype


def categorical_column_with_vocabulary_list(key: str, vocabulary_list: Sequence[Any], dtype: Any = None,
                                            default_value: int = -1,
                                            num_oov_buckets: int = 0) -> _VocabularyListCategoricalColumn:
    """Ids from an in-memory vocabulary; others hash into num_oov_buckets after it, or get
    default_value (-1: dropped by the embedding and linear lookups)."""
    if vocabulary_list is None or len(vocabulary_list) < 1:
        raise ValueError(f"vocabulary_list {vocabulary_list} must be non-empty, column_name: {key}")
    if len(set(vocabulary_list)) != len(vocabulary_list):
        raise ValueError(f"Duplicate keys in vocabulary_list {vocabulary_list}, column_name: {key}")
    vocab_dtype = _dt.string if isinstance(vocabulary_list[0], (str, bytes)) else _dt.int64
    if not all(isinstance(v, (str, bytes)) == (vocab_dtype == _dt.string) for v in vocabulary_list):
        raise ValueError(f"vocabulary_list mixes types, column_name: {key}")
    if num_oov_buckets:
        if default_value != -1:
            raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
        if num_oov_buckets < 0:
            raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")
    if dtype is not None:
        dtype = _dt.as_dtype(dtype)
        if vocab_dtype.is_integer != dtype.is_integer:
            raise ValueError(f"dtype {dtype} and vocabulary dtype {vocab_dtype} do not match, column_name: {key}")
    else:
        dtype = vocab_dtype
    if not _is_string_or_int(dtype):
        raise ValueError(f"dtype must be string or integer. dtype: {dtype}, column_name: {key}")
    vocab = tuple(v.decode() if isinstance(v, bytes) else v for v in vocabulary_list)
    return _VocabularyListCategoricalColumn(key, vocab, dtype, default_value, int(num_oov_buckets))


class _VocabularyFileCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "_VocabularyFileCategoricalColumn", ["key", "vocabulary_file", "vocabulary_size", "num_oov_buckets",
                                             "dtype", "default_value"])):
    """Values looked up in a vocabulary file, one entry a line: the id is the line number."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        return {self.key: VarLenFeature(self.dtype)}

    @property
    def _num_buckets(self) -> int:
        return self.vocabulary_size + self.num_oov_buckets

    def _transform_feature(self, inputs: _LazyBuilder) -> SparseTensor:
        sp = _to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        sp, key_dtype = _lookup_keys(sp, self.dtype, self.key)
        table = _lookup_ops().index_table_from_file(
            vocabulary_file=self.vocabulary_file, num_oov_buckets=self.num_oov_buckets,
            vocab_size=self.vocabulary_size, default_value=self.default_value, key_dtype=key_dtype,
            name=f"{self.key}_lookup")
        return table.lookup(sp)


def categorical_column_with_vocabulary_file(key: str, vocabulary_file: str, vocabulary_size: Optional[int] = None,
                                            num_oov_buckets: int = 0, default_value: Optional[int] = None,
                                            dtype: Any = _dt.string) -> _VocabularyFileCategoricalColumn:
    """Ids from a vocabulary file (its first vocabulary_size lines; all of them when None)."""
    if not vocabulary_file:
        raise ValueError(f"Missing vocabulary_file in {key}.")
    if vocabulary_size is None:
        from ...platform import gfile
        if not gfile.Exists(vocabulary_file):
            raise ValueError(f"vocabulary_file in {key} does not exist.")
        with gfile.GFile(vocabulary_file, "r") as f:
            vocabulary_size = sum(1 for _ in f)
    if vocabulary_size < 1:
        raise ValueError(f"Invalid vocabulary_size in {key}.")
    if num_oov_buckets:
        if default_value is not None:
            raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
        if num_oov_buckets < 0:
            raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")
    dtype = _dt.as_dtype(dtype)
    if not _is_string_or_int(dtype):
        raise ValueError(f"dtype must be string or integer. dtype: {dtype}, column_name: {key}")
    return _VocabularyFileCategoricalColumn(key, vocabulary_file, int(vocabulary_size), int(num_oov_buckets),
                                            dtype, -1 if default_value is None else default_value)


class _WeightedCategoricalColumn(_CategoricalColumn, collections.namedtuple(
        "_WeightedCategoricalColumn", ["categorical_column", "weight_feature_key", "dtype"])):
    """A categorical column's ids, each with the weight at the same place of another feature."""

    @property
    def name(self) -> str:
        return f"{self.categorical_column.name}_weighted_by_{self.weight_feature_key}"

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        spec = dict(self.categorical_column._parse_example_spec)
        if self.weight_feature_key in spec:
            raise ValueError(f"Parse config {spec[self.weight_feature_key]} already exists for "
                             f"{self.weight_feature_key}.")
        spec[self.weight_feature_key] = VarLenFeature(self.dtype)
        return spec

    @property
    def _num_buckets(self) -> int:
        return self.categorical_column._num_buckets

    def _transform_feature(self, inputs: _LazyBuilder) -> Tuple[SparseTensor, SparseTensor]:
        w = inputs.get(self.weight_feature_key)
        if w is None:
            raise ValueError(f"Missing weights {self.weight_feature_key}.")
        if self.dtype != w.dtype:
            raise ValueError(f"Bad dtype, expected {self.dtype}, but got {w.dtype}.")
        if not isinstance(w, SparseTensor):
            # a dense weight tensor: its zeros are the missing entries
            w = _to_sparse_input_and_drop_ignore_values(w, ignore_value=0.0)
        if not w.dtype.is_floating:
            w = SparseTensor(w.indices, _m.cast(w.values, _dt.float32), w.dense_shape)
        return inputs.get(self.categorical_column), w

    def _get_sparse_tensors(self, inputs: _LazyBuilder, weight_collections: Any = None,
                            trainable: Optional[bool] = None) -> IdWeightPair:
        ids, w = inputs.get(self)
        return IdWeightPair(ids, w)


def weighted_categorical_column(categorical_column: _CategoricalColumn, weight_feature_key: str,
                                dtype: Any = _dt.float32) -> _WeightedCategoricalColumn:
    """A categorical column whose ids carry the weights of feature weight_feature_key."""
    dtype = _dt.as_dtype(dtype)
    if dtype is None or not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype {dtype} is not convertible to float.")
    return _WeightedCategoricalColumn(categorical_column, weight_feature_key, dtype)


class _CrossedColumn(_CategoricalColumn, collections.namedtuple(
        "_CrossedColumn", ["keys", "hash_bucket_size", "hash_key"])):
    """The hashed crosses of several categorical features (TF's sparse_cross_hashed ids)."""

    @property
    def name(self) -> str:
        # a nested crossed column contributes its leaf keys, and all of them are sorted together
        names = [k if isinstance(k, str) else k.name for k in _leaf_keys(self)]
        return "_X_".join(sorted(names))

    @property
    def _parse_example_spec(self) -> Dict[str, Any]:
        spec: Dict[str, Any] = {}
        for k in self.keys:
            if isinstance(k, _FeatureColumn):
                spec.update(k._parse_example_spec)
            else:
                spec[k] = VarLenFeature(_dt.string)
        return spec

    @property
    def _num_buckets(self) -> int:
        return self.hash_bucket_size

    def _transform_feature(self, inputs: _LazyBuilder) -> SparseTensor:
        from ...graph.ops.sparse_cross_ops import sparse_cross_hashed
        tensors = []
        for k in _leaf_keys(self):
            if isinstance(k, str):
                tensors.append(inputs.get(k))
            else:
                pair = k._get_sparse_tensors(inputs)
                if pair.weight_tensor is not None:
                    raise ValueError(f"crossed_column does not support weight_tensor, but the given column "
                                     f"populates weight_tensor. Given column: {k.name}")
                tensors.append(pair.id_tensor)
        return sparse_cross_hashed(tensors, num_buckets=self.hash_bucket_size, hash_key=self.hash_key)


def _leaf_keys(col: _CrossedColumn) -> list:
    # a crossed column among the keys is flattened into its own keys, as TF
    out = []
    for k in col.keys:
        out.extend(_leaf_keys(k) if isinstance(k, _CrossedColumn) else [k])
    return out


def crossed_column(keys: Sequence[Any], hash_bucket_size: int, hash_key: Optional[int] = None) -> _CrossedColumn:
    """The crosses of feature keys (raw string features) and categorical columns, hashed into
    hash_bucket_size ids exactly as TF's sparse_cross_hashed."""
    if not hash_bucket_size or hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be > 1. hash_bucket_size: {hash_bucket_size}")
    if not keys or len(keys) < 2:
        raise ValueError(f"keys must be a list with length > 1. Given: {keys}")
    for k in keys:
        if not isinstance(k, (str, _CategoricalColumn)):
            raise ValueError(f"Unsupported key type. All keys must be either string, or categorical column "
                             f"except _HashedCategoricalColumn. Given: {k}")
        if isinstance(k, _HashedCategoricalColumn):
            raise ValueError("categorical_column_with_hash_bucket is not supported for crossing. Hashing before "
                             "crossing will increase probability of collision. Instead, use the feature name as a "
                             f"string. Given: {k}")
    return _CrossedColumn(tuple(keys), int(hash_bucket_size), hash_key)
