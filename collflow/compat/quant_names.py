"""TF1's quantized dtypes and the ops on them: the top-level tf.qint8 ... tf.qint32,
tf.quantize, tf.quantize_v2, tf.dequantize, tf.quantized_concat; the same ops added to the
tf.quantization namespace (built in core_ops_names.py) and tf.nn.quantized_conv2d /
quantized_avg_pool / quantized_max_pool / quantized_relu_x added to collflow.nn.  (tf.dtypes
takes the dtypes and QUANTIZED_DTYPES from collflow.dtypes.__all__.)

`__all__` lists the top-level names v1 takes from this module.
"""
from __future__ import annotations

import collflow.nn as _nn
from collflow import dtypes as _dt
from collflow.compat import core_ops_names as _core
from collflow.graph.ops import quantized_ops as _q
from collflow.graph.ops.quantized_ops import dequantize, quantize, quantize_v2, quantized_concat

qint8, quint8, qint16, quint16, qint32 = _dt.qint8, _dt.quint8, _dt.qint16, _dt.quint16, _dt.qint32

__all__ = ["qint8", "quint8", "qint16", "quint16", "qint32", "quantize", "quantize_v2", "dequantize",
           "quantized_concat"]

# the namespaces other modules build: their quantized members are set here, at import
for _name in ("quantize", "dequantize", "quantized_concat"):
    setattr(_core.quantization, _name, getattr(_q, _name))
for _name in ("quantized_conv2d", "quantized_avg_pool", "quantized_max_pool", "quantized_relu_x"):
    setattr(_nn, _name, getattr(_q, _name))
_core.quantization.__doc__ = ("tf.quantization: fake quantization, quantize_and_dequantize, and quantize / "
                               "dequantize / quantized_concat on the quantized dtypes.")
