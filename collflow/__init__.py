"""collflow: synchronous large-scale training on a TensorFlow-1.x-style dataflow graph.

Every MPI rank holds the same graph and runs it with its own executor on NumPy (CPU) or
CuPy (GPU) kernels; gradients are combined by all-reduce.  See README.md and DESIGN.md.
"""
__version__ = "0.1.0"

from .dtypes import *  # noqa: F401,F403
from .dtypes import DType, as_dtype  # noqa: F401
from .errors import *  # noqa: F401,F403
from . import errors  # noqa: F401
from .graph.graph import (Graph, Operation, Tensor, GraphKeys, get_default_graph,  # noqa: F401
                          reset_default_graph, name_scope, device, control_dependencies, init_scope,
                          convert_to_tensor, add_to_collection, get_collection, get_collection_ref,
                          add_to_collections, is_tensor)
from .graph.shape import TensorShape, Dimension, dimension_value, dimension_at_index  # noqa: F401
from .graph.device_spec import DeviceSpec  # noqa: F401,E402  (tf.DeviceSpec)
from .graph.ops.constant_op import *  # noqa: F401,F403
from .graph.ops.state_ops import *  # noqa: F401,F403
from .graph.ops.math_ops import *  # noqa: F401,F403
from .graph.ops.array_ops import *  # noqa: F401,F403
from .graph.ops.random_ops import *  # noqa: F401,F403
from .graph.ops.data_flow_ops import *  # noqa: F401,F403
from .graph.ops.debug_ops import delay  # noqa: F401
from .graph.indexed_slices import IndexedSlices, IndexedSlicesValue  # noqa: F401
from .graph.sparse_tensor import SparseTensor, SparseTensorValue  # noqa: F401
from .graph import math_grad as _math_grad, array_grad as _array_grad  # noqa: F401
from .graph.gradients import gradients, AggregationMethod, UnconnectedGradients  # noqa: F401
from .graph.gradient_tape import GradientTape  # noqa: F401,E402  (tf.GradientTape, graph mode)
from .graph.type_spec import (TypeSpec, TensorSpec, SparseTensorSpec, RaggedTensorSpec,  # noqa: F401,E402
                              type_spec_from_value)
from .graph.custom_gradient import custom_gradient, RegisterGradient, NotDifferentiable, no_gradient  # noqa: F401
from .graph.control_flow import cond, while_loop  # noqa: F401
from .graph.functional_ops import scan, map_fn, foldl, foldr  # noqa: F401
from .graph.ops.reverse_ops import reverse, reverse_v2, reverse_sequence  # noqa: F401
from .graph.variables import *  # noqa: F401,F403
from .graph.variables import Variable  # noqa: F401
from .graph.variable_scope import (VariableScope, variable_scope, get_variable_scope,  # noqa: F401
                                   AUTO_REUSE, variable_op_scope, no_regularizer, get_local_variable,
                                   fixed_size_partitioner, min_max_variable_partitioner,
                                   variable_axis_size_partitioner)
from . import kernels as _kernels  # noqa: F401  (registers kernels)
from .runtime.session import Session, InteractiveSession, get_default_session  # noqa: F401
from .runtime.executor import CancellationToken  # noqa: F401
from .runtime.tracing import RunOptions, RunMetadata, Timeline  # noqa: F401
from .runtime.config import ConfigProto, GPUOptions, GraphOptions, OptimizerOptions  # noqa: F401
from .runtime import device_config as config  # noqa: F401,E402  (tf.config: devices, threads)
from . import comm, nn, train, layers, initializers  # noqa: F401,E402
from .nn import space_to_depth, depth_to_space  # noqa: F401,E402  (TF1 has them at the top level too)
from . import summary  # noqa: F401,E402
from .summary import Summary, SessionLog, Event, HistogramProto  # noqa: F401,E402  (tf.Summary, ...)
from .summary.proto import GraphDef, NodeDef  # noqa: F401,E402  (tf.GraphDef: attributes in collflow's encoding)
from .platform import tf_logging as logging, flags, app, gfile  # noqa: F401,E402  (tf.logging, tf.flags, tf.app, tf.gfile)
from .graph.ops.nn_ops import sigmoid, tanh  # noqa: F401,E402
from .graph.ops.misc_ops import to_float, to_double, to_int32, to_int64  # noqa: F401,E402
from .graph.ops.clip_ops import *  # noqa: F401,F403,E402  (tf.norm, tf.global_norm, tf.clip_by_*)
from .graph.ops.case_ops import case, switch_case  # noqa: F401,E402
from .graph.ops.script_ops import py_func, py_function, numpy_function  # noqa: F401,E402
from .nn import losses  # noqa: F401,E402  (tf.losses)
from .nn import metrics  # noqa: F401,E402  (tf.metrics)
from .nn import feature_column  # noqa: F401,E402  (tf.feature_column)
from .nn import distributions  # noqa: F401,E402  (tf.distributions)
from .graph.tensor_array import TensorArray  # noqa: F401,E402
from . import contrib  # noqa: F401,E402  (tf.contrib.rnn, .opt, .layers)
from . import estimator  # noqa: F401,E402  (tf.estimator)
from . import keras  # noqa: F401,E402  (tf.keras, graph mode)
from . import saved_model  # noqa: F401,E402  (tf.saved_model: collflow's own files)
from .train.sharded import get_variable, ShardedVariable  # noqa: F401,E402  (TensorFlow has them at the top level too)
from .graph.ops.math_extra_ops import *  # noqa: F401,F403,E402  (tf.div, tf.floor, tf.erf, tf.linspace, ...)
from .graph.ops.matrix_ops import *  # noqa: F401,F403,E402  (tf.einsum, tf.tensordot, tf.eye, tf.diag, ...)
from .graph.ops.index_ops import *  # noqa: F401,F403,E402  (tf.gather_nd, tf.scatter_nd, tf.boolean_mask, ...)
from .graph.ops.partition_ops import *  # noqa: F401,F403,E402  (tf.unique, tf.dynamic_partition, tf.dynamic_stitch)
from .graph.ops.math_more_ops import *  # noqa: F401,F403,E402  (tf.expm1, tf.atan, ..., tf.div_no_nan)
from .graph.ops.image_adjust_ops import random_crop  # noqa: F401,E402  (tf.random_crop)
from .graph.ops.segment_ops import *  # noqa: F401,F403,E402  (tf.segment_*, tf.unsorted_segment_*)
from .graph.ops.check_ops import *  # noqa: F401,F403,E402  (tf.Assert, tf.assert_*, tf.check_numerics)
from .graph.ops.logging_ops import Print  # noqa: F401,E402  (tf.Print; tf.print is last, below)
from .graph.ops.categorical_ops import multinomial  # noqa: F401,E402
from .graph.ops.string_ops import *  # noqa: F401,F403,E402  (tf.decode_csv, tf.string_to_number, tf.sequence_mask)
from .graph.ops.rearrange_ops import *  # noqa: F401,F403,E402  (tf.sort, tf.argsort, tf.roll, tf.repeat)
from .graph.ops.sparse_ops import (sparse_placeholder, sparse_tensor_to_dense, sparse_reduce_sum,  # noqa: F401,E402
                                   sparse_tensor_dense_matmul, sparse_add, sparse_reorder, sparse_retain)
from .graph.ops.sparse_more_ops import (sparse_concat, sparse_reshape, sparse_slice,  # noqa: F401,E402
                                        sparse_fill_empty_rows, sparse_transpose, edit_distance)
from .graph.ops.sparse_extra_ops import (sparse_segment_sum, sparse_segment_mean,  # noqa: F401,E402
                                         sparse_segment_sqrt_n, sparse_softmax, sparse_reduce_max,
                                         sparse_reduce_max_sparse, sparse_reduce_sum_sparse, sparse_maximum,
                                         sparse_minimum, sparse_split, sparse_to_indicator, sparse_merge,
                                         sparse_reset_shape, sparse_mask)
from .graph.ops.sparse_misc_ops import sparse_matmul  # noqa: F401,E402
from .graph.ops.sparse_accumulator_ops import SparseConditionalAccumulator  # noqa: F401,E402
from .graph.ops.sparse_accumulator_ops import (ConditionalAccumulator,  # noqa: F401,E402
                                              ConditionalAccumulatorBase)
from .graph.ops.sparse_serialize_ops import (serialize_sparse, serialize_many_sparse,  # noqa: F401,E402
                                             deserialize_many_sparse)
from .graph.template import make_template  # noqa: F401,E402
from .graph.ops.parsing_ops import *  # noqa: F401,F403,E402  (tf.parse_example, tf.FixedLenFeature, ...)
from .graph.ops.eig_ops import self_adjoint_eig, self_adjoint_eigvals, matrix_solve_ls  # noqa: F401,E402
from .graph.ops.svd_ops import svd  # noqa: F401,E402
from .graph.ops.linalg_more_ops import matrix_square_root  # noqa: F401,E402
from .graph.ops import special_fn_ops as _special_fn_ops  # noqa: F401,E402  (tf.math.special's ops)
from .graph.ops.text_ops import (string_join, reduce_join, substr, regex_replace, string_strip,  # noqa: F401,E402
                                 string_split)
from .graph.ops.unicode_ops import string_split  # noqa: F401,E402,F811  (also result_type="RaggedTensor")
from .graph.ops.ragged_tensor import RaggedTensor  # noqa: F401,E402  (tf.RaggedTensor; tf.ragged in compat)
from .graph.ops.file_ops import matching_files, read_file, write_file  # noqa: F401,E402
from .graph.ops.reader_ops import *  # noqa: F401,F403,E402  (tf.TFRecordReader, ..., tf.decode_raw)
from .graph.ops.misc_more_ops import *  # noqa: F401,F403,E402  (tf.cross, tf.hessians, tf.histogram_fixed_width, ...)
from .graph.ops.check_more_ops import *  # noqa: F401,F403,E402  (tf.assert_greater, ..., tf.ensure_shape)
from .graph.ops.nan_safe_ops import (mul_no_nan, multiply_no_nan, reciprocal_no_nan, xdivy,  # noqa: F401,E402
                                     xlog1py, is_non_decreasing, is_strictly_increasing, reduce_euclidean_norm,
                                     unsorted_segment_sqrt_n, accumulate_n, arg_max, arg_min, floor_div)
from .graph.ops.string_more_ops import (as_string, encode_base64, decode_base64,  # noqa: F401,E402
                                        string_to_hash_bucket_strong, string_to_hash_bucket_fast,
                                        string_to_hash_bucket)
from .graph.ops.block_ops import *  # noqa: F401,F403,E402  (space_to_batch_nd, batch_to_space_nd, extract_image_patches)
from .graph.ops.special_ops import lgamma, digamma, erfc, lbeta  # noqa: F401,E402
from .graph.ops.special_more_ops import igamma, igammac, betainc, zeta, polygamma, random_gamma  # noqa: F401,E402
from .graph.ops.math_nn_more_ops import segment_prod, unsorted_segment_prod  # noqa: F401,E402
from .graph.ops.stateless_random_ops import random_poisson  # noqa: F401,E402
from .graph.ops.scatter_nd_ops import *  # noqa: F401,F403,E402  (tensor_scatter_nd_*, scatter_nd_*, unravel_index, ...)
from .graph.ops.tally_ops import (confusion_matrix, bincount, invert_permutation, saturate_cast,  # noqa: F401,E402
                                  shape_n, where_v2, parallel_stack)
from .graph.ops.linalg_ops import (matrix_inverse, matrix_determinant, cholesky, matrix_solve,  # noqa: F401,E402
                                  matrix_triangular_solve, matrix_band_part, cholesky_solve, trace)
from . import image  # noqa: F401,E402  (tf.image)
from .data import pipeline as _pipeline  # noqa: E402

# TensorFlow's tf.train names for the input-pipeline threads (data sits below train in the layering)
for _n in ("Coordinator", "QueueRunner", "start_queue_runners", "add_queue_runner"):
    if hasattr(_pipeline, _n):
        setattr(train, _n, getattr(_pipeline, _n))
from .data import supervisor as _supervisor  # noqa: E402  (tf.train.Supervisor, SessionManager, LooperThread)
for _n in _supervisor.__all__:
    setattr(train, _n, getattr(_supervisor, _n))
from .data import input_producers as _producers  # noqa: E402  (tf.train.batch, shuffle_batch, ...)
for _n in _producers.__all__:
    setattr(train, _n, getattr(_producers, _n))
from .graph.ops.file_ops import match_filenames_once as _match_filenames_once  # noqa: E402
train.match_filenames_once = _match_filenames_once
from .graph.ops.state_ops import count_up_to  # noqa: F401,E402  (tf.count_up_to)
from .graph.ops.fft_ops import fft, ifft, fft2d, ifft2d, fft3d, ifft3d  # noqa: F401,E402  (TF1's tf.fft, ...)
from .graph.ops.complex_ops import real, imag, conj, angle  # noqa: F401,E402  (tf.real, tf.conj, ...)

bool = bool_  # noqa: A001  (tf.bool; defined last so nothing in this module sees it)
from .graph.ops.misc_ops import range  # noqa: A001,E402  (tf.range; last, as bool)
from .graph.ops.case_ops import tuple  # noqa: A001,E402  (tf.tuple; last, as bool)
from .graph.ops.math_extra_ops import round  # noqa: A001,E402  (tf.round; last, as bool)
from .graph.ops.logging_ops import print  # noqa: A001,E402  (tf.print; last, as bool)
from .graph.ops.complex_ops import complex  # noqa: A001,E402  (tf.complex; last, as bool)


def __getattr__(name: str) -> object:
    """`cf.profile` (the scaling model, collflow/profile/) is imported on first use: 34 ms that
    a training job does not need."""
    if name == "profile":
        import importlib
        return importlib.import_module(".profile", __name__)
    raise AttributeError(f"module 'collflow' has no attribute {name!r}")
