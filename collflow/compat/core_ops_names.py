"""TF1's core ops that `collflow.compat.v1` takes from collflow's newer op modules: the
variable scatters tf.scatter_mul/div/min/max, tf.tensor_scatter_nd_min/max, tf.timestamp,
tf.fingerprint, tf.guarantee_const, tf.to_complex64/128, tf.grad_pass_through,
tf.recompute_grad, tf.vectorized_map, tf.op_scope, tf.register_tensor_conversion_function,
tf.CriticalSection, the tf.quantization namespace (and TF1's top-level fake_quant_* names),
and tf.version with TF's build constants at the top level.

`__all__` lists the top-level names v1 takes from this module.
"""
from __future__ import annotations

import collflow as _cf
from collflow.compat import namespaces as _ns
from collflow.graph.core_functions import (grad_pass_through, op_scope, recompute_grad,
                                           register_tensor_conversion_function, vectorized_map)
from collflow.graph.ops.critical_section_ops import CriticalSection
from collflow.graph.ops.core_misc_ops import fingerprint, guarantee_const, timestamp, to_complex64, to_complex128
from collflow.graph.ops.quant_ops import (fake_quant_with_min_max_args, fake_quant_with_min_max_args_gradient,
                                          fake_quant_with_min_max_vars, fake_quant_with_min_max_vars_gradient,
                                          fake_quant_with_min_max_vars_per_channel,
                                          fake_quant_with_min_max_vars_per_channel_gradient, quantize_and_dequantize,
                                          quantize_and_dequantize_v2)
from collflow.graph.ops.scatter_more_ops import (scatter_div, scatter_max, scatter_min, scatter_mul,
                                                 tensor_scatter_nd_max, tensor_scatter_nd_min)

_FAKE_QUANT = ["fake_quant_with_min_max_args", "fake_quant_with_min_max_args_gradient", "fake_quant_with_min_max_vars",
               "fake_quant_with_min_max_vars_gradient", "fake_quant_with_min_max_vars_per_channel",
               "fake_quant_with_min_max_vars_per_channel_gradient"]

quantization = _ns._Namespace("quantization", "tf.quantization: fake quantization and quantize_and_dequantize "
                              "(collflow has no quantized dtypes: no quantize/dequantize/quantized_concat).",
                              {n: globals()[n] for n in
                               _FAKE_QUANT + ["quantize_and_dequantize", "quantize_and_dequantize_v2"]})

# TF's version constants: the API version collflow implements is TF 1.15 (tf.VERSION); the
# graph-def versions are TF 1.15's; the build facts describe no C++ build (collflow has none)
VERSION = "1.15.0"
GIT_VERSION = f"collflow-{_cf.__version__}"
COMPILER_VERSION = "collflow (pure Python)"
GRAPH_DEF_VERSION = 134
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0
CXX11_ABI_FLAG = 0
CXX_VERSION = 0
MONOLITHIC_BUILD = 0
version = _ns._Namespace("version", "tf.version: the version constants.", {
    "VERSION": VERSION, "GIT_VERSION": GIT_VERSION, "COMPILER_VERSION": COMPILER_VERSION,
    "GRAPH_DEF_VERSION": GRAPH_DEF_VERSION, "GRAPH_DEF_VERSION_MIN_CONSUMER": GRAPH_DEF_VERSION_MIN_CONSUMER,
    "GRAPH_DEF_VERSION_MIN_PRODUCER": GRAPH_DEF_VERSION_MIN_PRODUCER})

__all__ = ["scatter_mul", "scatter_div", "scatter_min", "scatter_max", "tensor_scatter_nd_min",
           "tensor_scatter_nd_max", "timestamp", "fingerprint", "guarantee_const", "to_complex64", "to_complex128",
           "grad_pass_through", "recompute_grad", "vectorized_map", "op_scope", "register_tensor_conversion_function",
           "CriticalSection", "quantization", "version", "COMPILER_VERSION", "GRAPH_DEF_VERSION",
           "GRAPH_DEF_VERSION_MIN_CONSUMER",
           "GRAPH_DEF_VERSION_MIN_PRODUCER", "CXX11_ABI_FLAG", "CXX_VERSION", "MONOLITHIC_BUILD"] + _FAKE_QUANT
