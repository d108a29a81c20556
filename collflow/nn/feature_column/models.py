"""What consumes feature columns in TF1: input_layer (the dense columns' outputs side by side),
linear_model (a weighted sum per column plus a bias) and make_parse_example_spec (the
parse_example specs of the columns' raw features).  Columns are taken in name order and the
variables are named as TF 1.15 names them, so checkpoints line up."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from ... import dtypes as _dt
from ...graph import graph as _g
from ...graph.graph import GraphKeys
from ...graph.initializers import Zeros
from ...graph.ops import array_ops as _a
from ...graph.ops import math_ops as _m
from ...graph.ops.nn_ops import bias_add
from ...graph.ops.sparse_more_ops import sparse_reshape
from ...graph.ops.sparse_ops import safe_embedding_lookup_sparse
from ...graph.sparse_tensor import SparseTensor
from ...graph.variable_scope import get_variable, get_variable_scope, variable_scope
from .columns import _CategoricalColumn, _DenseColumn, _FeatureColumn, _LazyBuilder

__all__ = ["input_layer", "linear_model", "make_parse_example_spec"]


def _normalize(feature_columns: Any) -> List[_FeatureColumn]:
    """The columns as a list (one column alone allowed); empty lists and repeated names are errors."""
    if isinstance(feature_columns, _FeatureColumn):
        feature_columns = [feature_columns]
    if isinstance(feature_columns, dict):
        raise ValueError("Expected feature_columns to be iterable, found dict.")
    cols = list(feature_columns)
    if not cols:
        raise ValueError("feature_columns must not be empty.")
    seen: Dict[str, Any] = {}
    for c in cols:
        if not isinstance(c, _FeatureColumn):
            raise ValueError(f"Items of feature_columns must be a _FeatureColumn. Given (type {type(c)}): {c}.")
        if c.name in seen:
            raise ValueError(f"Duplicate feature column name found for columns: {seen[c.name]} and {c}. "
                             f"This is not allowed.")
        seen[c.name] = c
    return cols


def _collections(weight_collections: Any) -> List[str]:
    out = list(weight_collections or [])
    for k in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES):
        if k not in out:
            out.append(k)
    return out


def _flatten(t: _g.Tensor, num_elements: int) -> _g.Tensor:
    """[batch, ...] as [batch, num_elements]."""
    out = _a.reshape(t, _a.stack([_a.shape(t)[0], num_elements]))
    out.set_shape([t.shape.dims[0] if t.shape.rank else None, num_elements])
    return out


def input_layer(features: Dict[str, Any], feature_columns: Sequence[_DenseColumn], weight_collections: Any = None,
                trainable: bool = True, cols_to_vars: Optional[Dict[Any, Any]] = None,
                cols_to_output_tensors: Optional[Dict[Any, Any]] = None) -> _g.Tensor:
    """The dense columns' outputs, each flattened to [batch, n], concatenated in name order
    ([batch, sum of n]); their variables under input_layer/<column scope>/."""
    cols = _normalize(feature_columns)
    for c in cols:
        if not isinstance(c, _DenseColumn):
            raise ValueError(f"Items of feature_columns must be a _DenseColumn. You can wrap a categorical column "
                             f"with an embedding_column or indicator_column. Given: {c}")
    colls = _collections(weight_collections)
    with variable_scope(None, default_name="input_layer", values=list(features.values())):
        builder = _LazyBuilder(features)
        outputs = []
        for c in sorted(cols, key=lambda x: x.name):
            with variable_scope(None, default_name=c._var_scope_name):
                t = c._get_dense_tensor(builder, weight_collections=colls, trainable=trainable)
                out = _flatten(t, c._variable_shape.num_elements())
                outputs.append(out)
                if cols_to_vars is not None:
                    cols_to_vars[c] = _g.get_collection(GraphKeys.GLOBAL_VARIABLES,
                                                        scope=get_variable_scope().name + "/")
                if cols_to_output_tensors is not None:
                    cols_to_output_tensors[c] = out
        _check_batch_sizes(outputs, sorted(cols, key=lambda x: x.name))
        return _a.concat(outputs, 1)


def _check_batch_sizes(tensors: List[_g.Tensor], cols: List[_FeatureColumn]) -> None:
    """The columns' static batch sizes must agree, as TF checks."""
    first = None
    for t, c in zip(tensors, cols):
        b = t.shape.dims[0] if t.shape.rank else None
        if b is None:
            continue
        if first is None:
            first = (b, c)
        elif b != first[0]:
            raise ValueError(f"Batch size (first dimension) of each feature must be same. Batch size of columns "
                             f"({first[1].name}, {c.name}): ({first[0]}, {b})")


def _unique_layer_name(name: str) -> str:
    # TF names each linear_model's column layers as Keras does: unique within the graph
    # (the second model's "a" is "a_1"), and the variable scope carries that name
    g = _g.get_default_graph()
    counts = g.__dict__.setdefault("_feature_column_layer_names", {})
    n = counts.get(name, 0)
    counts[name] = n + 1
    return name if n == 0 else f"{name}_{n}"


def _weighted_sum(column: _FeatureColumn, builder: _LazyBuilder, units: int, sparse_combiner: str,
                  colls: List[str], trainable: bool) -> _g.Tensor:
    """One column's contribution [batch, units], with its `weights` variable."""
    if isinstance(column, _CategoricalColumn):
        w = get_variable("weights", shape=(column._num_buckets, units), dtype=_dt.float32, initializer=Zeros(),
                         trainable=trainable, collections=colls)
        pair = column._get_sparse_tensors(builder, weight_collections=colls, trainable=trainable)
        ids, weights = _as_2d(pair.id_tensor), pair.weight_tensor
        if weights is not None:
            weights = _as_2d(weights)
        return safe_embedding_lookup_sparse(w, ids, sparse_weights=weights, combiner=sparse_combiner,
                                            name="weighted_sum")
    n = column._variable_shape.num_elements()
    w = get_variable("weights", shape=(n, units), dtype=_dt.float32, initializer=Zeros(), trainable=trainable,
                     collections=colls)
    t = column._get_dense_tensor(builder, weight_collections=colls, trainable=trainable)
    return _m.matmul(_flatten(t, n), w, name="weighted_sum")


def _as_2d(sp: SparseTensor) -> SparseTensor:
    """[batch, ...] sparse ids as [batch, k], as TF reshapes them before the lookup."""
    if sp.shape.rank == 2:
        return sp
    return sparse_reshape(sp, _a.stack([sp.dense_shape[0], _g.convert_to_tensor(-1, dtype=_dt.int64)]))


def linear_model(features: Dict[str, Any], feature_columns: Sequence[_FeatureColumn], units: int = 1,
                 sparse_combiner: str = "sum", weight_collections: Any = None, trainable: bool = True,
                 cols_to_vars: Optional[Dict[Any, Any]] = None) -> _g.Tensor:
    """sum over columns (name order) of column x weights, plus a bias: [batch, units].  A
    categorical column's weights are looked up by id and combined by sparse_combiner; a dense
    column's multiply its flattened output.  Variables: linear_model/<column>/weights and
    linear_model/bias_weights, zero-initialized."""
    cols = _normalize(feature_columns)
    for c in cols:
        if not isinstance(c, (_DenseColumn, _CategoricalColumn)):
            raise ValueError(f"Items of feature_columns must be either a _DenseColumn or _CategoricalColumn. "
                             f"Given: {c}")
    if sparse_combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"sparse_combiner must be one of 'mean', 'sqrtn' or 'sum', got {sparse_combiner!r}")
    colls = _collections(weight_collections)
    ordered = sorted(cols, key=lambda x: x.name)
    with variable_scope(None, default_name="linear_model", values=list(features.values())) as vs:
        builder = _LazyBuilder(features)
        sums = []
        for c in ordered:
            layer = _unique_layer_name(c._var_scope_name)  # a shared embedding's: its collection's name
            with variable_scope(layer):
                sums.append(_weighted_sum(c, builder, units, sparse_combiner, colls, trainable))
            if cols_to_vars is not None:
                cols_to_vars[c] = _g.get_collection(GraphKeys.GLOBAL_VARIABLES, scope=vs.name + "/" + layer + "/")
        _check_batch_sizes(sums, ordered)
        bias = get_variable("bias_weights", shape=[units], dtype=_dt.float32, initializer=Zeros(),
                            trainable=trainable, collections=colls)
        if cols_to_vars is not None:
            cols_to_vars["bias"] = [bias]
        no_bias = sums[0] if len(sums) == 1 else _m.add_n(sums, name="weighted_sum_no_bias")
        return bias_add(no_bias, bias, name="weighted_sum")


def make_parse_example_spec(feature_columns: Sequence[_FeatureColumn]) -> Dict[str, Any]:
    """The parse_example specs of the columns' raw features, merged ({key: FixedLenFeature or
    VarLenFeature}); one key with two different specs is an error."""
    out: Dict[str, Any] = {}
    for c in feature_columns:
        if not isinstance(c, _FeatureColumn):
            raise ValueError(f"All feature_columns must be _FeatureColumn instances. Given: {c}")
        for k, v in c._parse_example_spec.items():
            if k in out and out[k] != v:
                raise ValueError(f"feature_columns contain different parse_spec for key {k}. "
                                 f"Given {v} and {out[k]}")
        out.update(c._parse_example_spec)
    return out
