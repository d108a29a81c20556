"""TensorFlow 1.x's namespace: `import collflow.compat.v1 as tf`.

A program written for `tensorflow.compat.v1` (or TF 1.x's `import tensorflow as tf`) runs
with that one line changed.  Every name of `collflow` is here under its TensorFlow name, plus
TF1's aliases and the v2-behaviour switches (collflow always builds graphs, so
`disable_v2_behavior` and `disable_eager_execution` have nothing to do).  Names collflow
adds later appear here too (looked up in `collflow` on first use).
"""
from __future__ import annotations

from typing import Any, List

import collflow as _cf
from collflow import *  # noqa: F401,F403
from collflow import (comm, errors, initializers, layers, nn, train, bool, Variable,  # noqa: F401,A004
                      global_variables, global_variables_initializer, local_variables_initializer)


def _self() -> Any:
    import sys
    return sys.modules[__name__]


def disable_v2_behavior() -> None:
    """Nothing to switch: collflow is TensorFlow 1.x's graph mode."""


def disable_eager_execution() -> None:
    """Nothing to switch: collflow always builds graphs."""


def enable_v2_behavior() -> None:
    raise NotImplementedError("collflow implements TensorFlow 1.x's graph mode only (no v2 behaviour)")


def enable_eager_execution(*args: Any, **kwargs: Any) -> None:
    raise NotImplementedError("collflow builds dataflow graphs: there is no eager execution")


def executing_eagerly() -> bool:
    return False


def executing_eagerly_outside_functions() -> bool:
    return False


def resource_variables_enabled() -> bool:
    """True: every collflow variable is a resource variable (consistent reads)."""
    return True


def enable_resource_variables() -> None:
    """Nothing to switch: collflow's variables are resource variables."""


def disable_resource_variables() -> None:
    """collflow has no reference variables; its resource variables stay (a warning says so)."""
    _cf.logging.warning("disable_resource_variables: collflow's variables are always resource variables")


def control_flow_v2_enabled() -> bool:
    """False: collflow's loops and conds are TF1's (frames, Enter/Exit, Switch/Merge)."""
    return False


def disable_control_flow_v2() -> None:
    """Nothing to switch: collflow's control flow is TF1's."""


def enable_control_flow_v2() -> None:
    """collflow's control flow stays TF1's (the same values and gradients); a warning says so."""
    _cf.logging.warning("enable_control_flow_v2: collflow runs TensorFlow 1.x's control flow; loops and conds "
                        "give the same values and gradients")


NoGradient = _cf.NotDifferentiable  # TF1's alias
# TF1's top-level protocol messages
from collflow.train.meta_graph import MetaGraphDef  # noqa: E402,F401
from collflow.train.signature_def import TensorInfo  # noqa: E402,F401
from collflow.summary.proto import SummaryMetadata  # noqa: E402,F401
from collflow.train.module import Module  # noqa: E402,F401  (tf.Module)


# TF1 has the initializers at the top level too (tf.random_uniform_initializer, ...)
from collflow.graph.initializers import (constant_initializer, glorot_normal_initializer,  # noqa: E402,F401
                                         glorot_uniform_initializer, ones_initializer, orthogonal_initializer,
                                         random_normal_initializer, random_uniform_initializer,
                                         truncated_normal_initializer, variance_scaling_initializer,
                                         zeros_initializer, uniform_unit_scaling_initializer)

from collflow.graph.ops.scan_ops import cumprod, cumsum  # noqa: E402,F401
from collflow.compat.namespaces import bitwise, debugging, io, linalg, lookup, math, random, sparse, strings  # noqa: E402,F401,A004
from collflow.compat.namespaces import python_io  # noqa: E402,F401
from collflow.compat import resource_loader  # noqa: E402,F401  (tf.resource_loader)
from collflow.compat.namespaces import audio  # noqa: E402,F401
from collflow.compat.namespaces import spectral, signal  # noqa: E402,F401
from collflow.compat.namespaces import ragged  # noqa: E402,F401  (tf.ragged; tf.RaggedTensor is top level)
from collflow.compat.nest_compat import nest, compat  # noqa: E402,F401  (tf.nest, tf.compat)
import collflow.contrib.framework as _contrib_framework  # noqa: E402
from collflow.compat.namespaces import _Namespace as _NestNamespace  # noqa: E402
# tf.contrib.keras (TF 1.2-1.3's home of tf.keras) and tf.contrib.util (the TensorProto helpers)
import collflow.contrib as _contrib  # noqa: E402
import types as _types  # noqa: E402
def _contrib_getattr(name: str) -> Any:
    if name == "keras":  # loaded when first asked for, as tf.keras is
        return _cf.keras
    raise AttributeError(f"collflow.contrib has no attribute {name!r}: tf.contrib.{name} is not implemented in "
                         "collflow (see docs/tf1_compat.md for what is supported)")


_contrib.__getattr__ = _contrib_getattr
from collflow.summary.tensor_util import make_ndarray as _make_ndarray, make_tensor_proto as _make_proto  # noqa: E402
from collflow.graph.ops.misc_more_ops import get_static_value as _static_value  # noqa: E402
_contrib.util = _types.SimpleNamespace(constant_value=_static_value, make_tensor_proto=_make_proto,
                                       make_ndarray=_make_ndarray)
_contrib.util.__doc__ = "tf.contrib.util: constant_value, make_tensor_proto, make_ndarray."
# tf.contrib.framework.nest: TF 1.x's nest module (tf.nest's functions, is_sequence its old name)
_contrib_framework.nest = _NestNamespace("nest", "tf.contrib.framework.nest: tf.nest plus is_sequence.", dict(
    {n: getattr(nest, n) for n in ("flatten", "pack_sequence_as", "map_structure", "assert_same_structure",
                                   "is_nested")}, is_sequence=nest.is_nested))
from collflow.compat.namespaces_more import (test, sets, dtypes, initializers, get_logger,  # noqa: E402,F401
                                             convert_to_tensor_or_indexed_slices, convert_to_tensor_or_sparse_tensor,
                                             add_check_numerics_ops, assert_same_float_dtype, assert_proper_iterable)
from collflow.compat.queues_io_names import *  # noqa: E402,F401,F403  (tf.queue, tf.manip, tf.PriorityQueue, tf.bitcast, ...)
from collflow.compat.graph_tools_names import *  # noqa: E402,F401,F403  (tf.import_graph_def, tf.graph_util, tf.profiler, ...)
from collflow.compat.core_ops_names import *  # noqa: E402,F401,F403  (tf.scatter_mul/..., tf.quantization, tf.version, tf.fingerprint, ...)
from collflow.compat.tf115_more_names import *  # noqa: E402,F401,F403  (tf.get_session_handle, tf.sysconfig, tf.load_op_library, ...)
from collflow.compat.distribute_names import distribute  # noqa: E402,F401  (tf.distribute)
from collflow.train.loss_scale import mixed_precision  # noqa: E402,F401  (tf.mixed_precision: loss scaling)
from collflow.compat.autograph_names import *  # noqa: E402,F401,F403  (tf.autograph)
from collflow.compat.function_names import *  # noqa: E402,F401,F403  (tf.function, tf.wrap_function)
from collflow.compat.quant_names import *  # noqa: E402,F401,F403  (the quantized dtypes and ops)
from collflow.compat.misc115_names import *  # noqa: E402,F401,F403  (JPEG crop/quality, assert_equal_graph_def, ...)

log_sigmoid = math.log_sigmoid   # TF1 has it at the top level too
logical_xor = math.logical_xor

initialize_all_variables = global_variables_initializer   # TF1's deprecated names
initialize_local_variables = local_variables_initializer
initialize_variables = _cf.variables_initializer
initialize_all_tables = _cf.tables_initializer
all_variables = global_variables

# the TensorFlow API collflow implements (collflow's own version: collflow.__version__); TF1
# programs print it or compare it with "1.x"
VERSION = __version__ = "1.15.0"
GIT_VERSION = f"collflow-{_cf.__version__}"


def __getattr__(name: str) -> Any:
    if name == "compat":  # tf.compat.v1.compat.v1 chains, as in TensorFlow
        import types
        return types.SimpleNamespace(v1=_self())
    # anything collflow defines (including what its modules add after this one was imported)
    try:
        return getattr(_cf, name)
    except AttributeError:
        raise AttributeError(
            f"collflow.compat.v1 has no attribute {name!r}: TensorFlow 1.x's tf.{name} is not implemented in "
            "collflow (see docs/tf1_compat.md for what is supported)") from None


def __dir__() -> List[str]:
    from ..platform.public_dir import public_names
    return public_names(set(globals()) | set(dir(_cf)), {**vars(_cf), **globals()})


# dir() of the API modules shows their public names only, as TF 1.x's did
from ..platform.public_dir import install_below as _install_below  # noqa: E402
_install_below(_cf)
