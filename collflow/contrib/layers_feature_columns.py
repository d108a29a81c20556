"""tf.contrib.layers' feature-column functions (TF 1.0-1.4 programs; still in TF 1.15):

    age = real_valued_column("age")
    dept = sparse_column_with_keys("dept", ["math", "art"])
    net = input_from_feature_columns(features, [age, embedding_column(dept, 8)])
    # variables: input_from_feature_columns/dept_embedding/weights
    logits, col_to_vars, bias = weighted_sum_from_feature_columns(features, [dept, bucketized_column(age, [30])], 1)
    # weighted_sum_from_feature_columns/dept/weights, .../age_bucketized/weights, .../bias_weight

Columns are taken in the order of their TF sort key (column class, then configuration), and
variables are named and scoped as TF 1.15's contrib names them, so TF 1.x checkpoints restore.
The column classes are in feature_columns_base.py.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.initializers import Zeros
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.nn_ops import bias_add
from ..graph.ops.sparse_ops import safe_embedding_lookup_sparse
from ..graph.sparse_tensor import SparseTensor, SparseTensorValue
from ..graph.variable_scope import variable_scope
from .feature_columns_base import (_FeatureColumn, _RealValuedColumn, bucketized_column, create_feature_spec_for_parsing, crossed_column,
                                   embedding_column, one_hot_column, real_valued_column, reshape_real_valued,
                                   shared_embedding_columns,
                                   sparse_column_with_hash_bucket, sparse_column_with_integerized_feature,
                                   sparse_column_with_keys, sparse_column_with_vocabulary_file,
                                   weighted_sparse_column)
from .framework import model_variable

# the hash_key contrib's crosses take to match tf.feature_column's (FingerprintCat64) hashing
SPARSE_FEATURE_CROSS_DEFAULT_HASH_KEY = 0xDECAFCAFFE

__all__ = ["real_valued_column", "sparse_column_with_keys", "sparse_column_with_hash_bucket",
           "sparse_column_with_integerized_feature", "sparse_column_with_vocabulary_file", "weighted_sparse_column",
           "embedding_column", "shared_embedding_columns", "one_hot_column", "bucketized_column", "crossed_column",
           "create_feature_spec_for_parsing", "input_from_feature_columns", "weighted_sum_from_feature_columns",
           "joint_weighted_sum_from_feature_columns", "parse_feature_columns_from_examples", "transform_features",
           "infer_real_valued_columns", "check_feature_columns",
           "SPARSE_FEATURE_CROSS_DEFAULT_HASH_KEY"]


def check_feature_columns(feature_columns: Any) -> None:
    """Columns must be an iterable of contrib columns with no two of the same sort key."""
    if isinstance(feature_columns, dict):
        raise ValueError("Expected feature_columns to be iterable, found dict.")
    seen = set()
    for c in feature_columns:
        if not isinstance(c, _FeatureColumn):
            raise TypeError(f"feature_columns must hold tf.contrib.layers feature columns (real_valued_column, "
                            f"sparse_column_with_*, ...), got {c!r}")
        if c.key in seen:
            raise ValueError(f"Duplicate feature column key found for column: {c.name}. This usually means that the "
                             f"column is almost identical to another column, and one must be discarded.")
        seen.add(c.key)


def _ordered(feature_columns: Any) -> List[_FeatureColumn]:
    if isinstance(feature_columns, dict):
        raise ValueError("Expected feature_columns to be iterable, found dict.")
    if isinstance(feature_columns, _FeatureColumn):
        feature_columns = [feature_columns]
    cols = list(feature_columns)
    check_feature_columns(cols)
    return sorted(set(cols), key=lambda c: c.key)


def _transform(columns_to_tensors: Dict[Any, Any], column: _FeatureColumn) -> Any:
    """The column's transformed tensor, made once and cached in columns_to_tensors."""
    if column in columns_to_tensors:
        return columns_to_tensors[column]
    column.insert_transformed_feature(columns_to_tensors)
    if column not in columns_to_tensors:
        raise ValueError(f"Column {column.name} is not supported.")
    return columns_to_tensors[column]


def _graph_values(columns_to_tensors: Dict[Any, Any]) -> List[Any]:
    out = []
    for v in columns_to_tensors.values():
        if isinstance(v, SparseTensor):
            out.append(v.values)
        elif isinstance(v, _g.Tensor):
            out.append(v)
    return out


def _with_global(weight_collections: Any) -> Any:
    if weight_collections:
        return list(dict.fromkeys(list(weight_collections) + [GraphKeys.GLOBAL_VARIABLES]))
    return weight_collections


def _restore(path: Any, variables: List[Any]) -> None:
    if path is None:
        return
    from ..train.checkpoint_utils import init_from_checkpoint
    ckpt, tensor_name = path
    init_from_checkpoint(ckpt, {tensor_name: variables[0] if len(variables) == 1 else variables})


def _embeddings(column: Any, args: Any, weight_collections: Any, trainable: bool) -> _g.Tensor:
    """The embedding table `weights` [vocab, dimension] in the current scope (a shared one
    named after its shared_embedding_name), and the ids' combined embeddings."""
    shape = [args.vocab_size, args.dimension]
    if args.shared_embedding_name is not None:
        # one table for all the columns sharing the name, found through a graph collection
        coll = "SHARED_EMBEDDING_COLLECTION_" + args.shared_embedding_name.upper()
        shared = _g.get_collection(coll)
        if len(shared) > 1:
            raise ValueError(f"Collection {coll} can only contain one (partitioned) variable.")
        if shared:
            table = shared[0]
            if table.shape.as_list() != shape:
                raise ValueError(f"The embedding variable with name {args.shared_embedding_name} already exists, but "
                                 f"its shape does not match required embedding shape here. Please make sure to use "
                                 f"different shared_embedding_name for different shared embeddings.")
        else:
            table = model_variable(args.shared_embedding_name, shape=shape, dtype=_dt.float32,
                                   initializer=args.initializer, trainable=trainable and args.trainable,
                                   collections=weight_collections)
            _g.add_to_collection(coll, table)
    else:
        table = model_variable("weights", shape=shape, dtype=_dt.float32, initializer=args.initializer,
                               trainable=trainable and args.trainable, collections=weight_collections)
    _restore(column._checkpoint_path(), [table])
    return safe_embedding_lookup_sparse(table, _ids_2d(args.input_tensor), sparse_weights=_opt_2d(args.weight_tensor),
                                        combiner=args.combiner, name=column.name + "weights",
                                        max_norm=args.max_norm)


def _ids_2d(sp: SparseTensor) -> SparseTensor:
    """[batch, ...] sparse ids as [batch, k] (TF's _inner_flatten)."""
    if sp.shape.rank == 2:
        return sp
    from ..graph.ops.sparse_more_ops import sparse_reshape
    return sparse_reshape(sp, _a.stack([sp.dense_shape[0], _g.convert_to_tensor(-1, dtype=_dt.int64)]))


def _opt_2d(sp: Optional[SparseTensor]) -> Optional[SparseTensor]:
    return None if sp is None else _ids_2d(sp)


def input_from_feature_columns(columns_to_tensors: Dict[Any, Any], feature_columns: Sequence[Any],
                               weight_collections: Any = None, trainable: bool = True, scope: Any = None,
                               cols_to_outs: Optional[Dict[Any, Any]] = None) -> _g.Tensor:
    """A DNN's input layer: every column's dense output ([batch, n]: real-valued values,
    one-hot rows, embeddings) concatenated in TF's column order.  Embedding tables are
    <scope>/<column name>/weights, scope "input_from_feature_columns" by default.  A sparse,
    weighted or crossed column must be wrapped in embedding_column or one_hot_column."""
    columns_to_tensors = dict(columns_to_tensors)
    cols = _ordered(feature_columns)
    weight_collections = _with_global(weight_collections)
    values = _graph_values(columns_to_tensors)
    with variable_scope(scope, default_name="input_from_feature_columns", values=values):
        outputs = []
        for column in cols:
            with variable_scope(None, default_name=column.name, values=values):
                transformed = _transform(columns_to_tensors, column)
                try:
                    args = column._deep_embedding_lookup_arguments(transformed)
                    out = _embeddings(column, args, weight_collections, trainable)
                except NotImplementedError as ee:
                    try:
                        out = column._to_dnn_input_layer(transformed, weight_collections, trainable, output_rank=2)
                    except ValueError as e:
                        raise ValueError(f"Error creating input layer for column: {column.name}.\n{e}, {ee}") from e
            outputs.append(out)
            if cols_to_outs is not None:
                cols_to_outs[column] = out
        return _a.concat(outputs, 1)


def _wide_lookup(column: Any, args: Any, num_outputs: int, trainable: bool, weight_collections: Any,
                 values: List[Any]) -> Tuple[List[Any], _g.Tensor]:
    with variable_scope(None, default_name=column.name, values=values):
        w = model_variable("weights", shape=[args.vocab_size, num_outputs], dtype=_dt.float32,
                           initializer=args.initializer, trainable=trainable, collections=weight_collections)
        pred = safe_embedding_lookup_sparse(w, _ids_2d(args.input_tensor), sparse_weights=_opt_2d(args.weight_tensor),
                                            combiner=args.combiner, name=column.name + "_weights")
        return [w], pred


def weighted_sum_from_feature_columns(columns_to_tensors: Dict[Any, Any], feature_columns: Sequence[Any],
                                      num_outputs: int, weight_collections: Any = None, trainable: bool = True,
                                      scope: Any = None) -> Tuple[_g.Tensor, Dict[Any, List[Any]], Any]:
    """A linear model: (sum over columns of their weighted ids or values, plus a bias
    [num_outputs]) -> (predictions [batch, num_outputs], {column: [its variable]}, bias).
    Variables, zero-initialized: <scope>/<column name>/weights for sparse, bucketized and
    crossed columns (looked up by id, combined by the column's combiner), .../<column>/weight
    for real-valued ones (a matmul), and <scope>/bias_weight."""
    columns_to_tensors = dict(columns_to_tensors)
    cols = _ordered(feature_columns)
    values = _graph_values(columns_to_tensors)
    with variable_scope(scope, default_name="weighted_sum_from_feature_columns", values=values):
        outputs = []
        column_to_variable: Dict[Any, List[Any]] = {}
        for column in cols:
            transformed = _transform(columns_to_tensors, column)
            try:
                try:
                    args = column._wide_embedding_lookup_arguments(transformed)
                    variable, pred = _wide_lookup(column, args, num_outputs, trainable, weight_collections, values)
                except NotImplementedError:
                    with variable_scope(None, default_name=column.name, values=values):
                        t = reshape_real_valued(column._to_dense_tensor(transformed), 2, column.name)
                        t = _m.cast(t, _dt.float32) if t.dtype != _dt.float32 else t
                        n = t.shape.dims[1] if t.shape.rank == 2 else None
                        if n is None:
                            raise ValueError(f"the number of values per example of column {column.name} must be "
                                             f"known statically")
                        variable = [model_variable("weight", shape=[n, num_outputs], initializer=Zeros(),
                                                   trainable=trainable, collections=weight_collections)]
                        pred = _m.matmul(t, variable[0], name="matmul")
            except ValueError as ee:
                raise ValueError(f"Error creating weighted sum for column: {column.name}.\n{ee}") from ee
            outputs.append(_a.reshape(pred, [-1, num_outputs]))
            column_to_variable[column] = variable
            _restore(column._checkpoint_path(), variable)
        no_bias = outputs[0] if len(outputs) == 1 else _m.add_n(outputs)
        bias = model_variable("bias_weight", shape=[num_outputs], initializer=Zeros(), trainable=trainable,
                              collections=_with_global(weight_collections))
        return bias_add(no_bias, bias), column_to_variable, bias


def joint_weighted_sum_from_feature_columns(columns_to_tensors: Dict[Any, Any], feature_columns: Sequence[Any],
                                            num_outputs: int, weight_collections: Any = None, trainable: bool = True,
                                            scope: Any = None) -> Tuple[_g.Tensor, List[Any], Any]:
    """weighted_sum_from_feature_columns with one weight table for all the (sparse,
    unweighted, "sum"-combined) columns: their ids offset one after another into
    <scope>/linear_weights/weights; returns (predictions, [weights], bias)."""
    columns_to_tensors = dict(columns_to_tensors)
    cols = _ordered(feature_columns)
    values = _graph_values(columns_to_tensors)
    with variable_scope(scope, default_name="joint_weighted_sum_from_feature_columns", values=values):
        args = []
        for column in cols:
            transformed = _transform(columns_to_tensors, column)
            try:
                args.append(column._wide_embedding_lookup_arguments(transformed))
            except NotImplementedError:
                raise NotImplementedError("Real-valued columns are not supported. Use weighted_sum_from_feature_columns "
                                          "instead, or bucketize these columns.") from None
        if not args:
            raise ValueError("At least one column must be in the model.")
        offset, parts = 0, []
        for a in args:
            if a.weight_tensor is not None:
                raise ValueError("Joint sums for weighted sparse columns are not supported. Please use "
                                 "weighted_sum_from_feature_columns instead.")
            if a.combiner != "sum":
                raise ValueError("Combiners other than sum are not supported for joint sums. Please use "
                                 "weighted_sum_from_feature_columns instead.")
            t = _ids_2d(a.input_tensor)
            parts.append(SparseTensor(t.indices, _m.cast(t.values, _dt.int64) + offset, t.dense_shape))
            offset += a.vocab_size
        from ..graph.ops.sparse_more_ops import sparse_concat
        ids = parts[0] if len(parts) == 1 else sparse_concat(1, parts, expand_nonconcat_dim=True)
        with variable_scope(None, default_name="linear_weights", values=values):
            w = model_variable("weights", shape=[offset, num_outputs], dtype=_dt.float32, initializer=Zeros(),
                               trainable=trainable, collections=weight_collections)
            no_bias = safe_embedding_lookup_sparse(w, ids, combiner="sum", name="_weights")
        bias = model_variable("bias_weight", shape=[num_outputs], initializer=Zeros(), trainable=trainable,
                              collections=_with_global(weight_collections))
        return bias_add(no_bias, bias), [w], bias


def parse_feature_columns_from_examples(serialized: Any, feature_columns: Sequence[Any], name: Optional[str] = None,
                                        example_names: Any = None) -> Dict[Any, Any]:
    """tf.parse_example with the columns' spec, then every column's transformation: a dict
    of the raw features by key and the transformed ones by column."""
    from ..graph.ops.parsing_ops import parse_example
    cols = _ordered(feature_columns)
    out = dict(parse_example(serialized, create_feature_spec_for_parsing(cols), name=name,
                             example_names=example_names))
    for c in cols:
        _transform(out, c)
    return out


def transform_features(features: Dict[Any, Any], feature_columns: Sequence[Any]) -> Dict[Any, Any]:
    """{column: its transformed tensor} for the given columns."""
    cols = _ordered(feature_columns)
    out = dict(features)
    for c in cols:
        _transform(out, c)
    return {c: out[c] for c in cols}


def _infer_one(name: str, value: Any) -> _RealValuedColumn:
    if isinstance(value, (SparseTensor, SparseTensorValue)):
        raise ValueError(f"SparseTensor is not supported for auto detection. Please define corresponding "
                         f"FeatureColumn for tensor {name} {value}.")
    t = value if isinstance(value, _g.Tensor) else _g.convert_to_tensor(value)
    if not (t.dtype.is_integer or t.dtype.is_floating):
        raise ValueError(f"Non integer or non floating types are not supported for auto detection. Please define "
                         f"corresponding FeatureColumn for tensor {name} {t}.")
    shape = t.shape.as_list() if t.shape.rank is not None else []
    dimension = 1
    for d in shape[1:]:
        if d is None:
            raise ValueError(f"infer_real_valued_columns needs static inner dimensions, got {shape} for {name!r}")
        dimension *= d
    return real_valued_column(name, dimension=dimension, dtype=t.dtype)


def infer_real_valued_columns(features: Any) -> List[_RealValuedColumn]:
    """Real-valued columns for a tensor or array (named '') or a dict of them: the dimension
    is the product of the inner dimensions, the dtype the tensor's."""
    if not isinstance(features, dict):
        return [_infer_one("", features)]
    return [_infer_one(k, v) for k, v in features.items()]
