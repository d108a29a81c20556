"""`tf.autograph` as TF 1.15's tensorflow.compat.v1 has it: to_graph, to_code, set_verbosity,
trace and the `experimental` namespace (Feature, do_not_convert; set_loop_options as in later
TF 1.x compat namespaces)."""
from __future__ import annotations

import types

from collflow import autograph as _ag

__all__ = ["autograph"]

experimental = types.ModuleType("autograph.experimental", "Experimental AutoGraph options.")
experimental.Feature = _ag.Feature
experimental.do_not_convert = _ag.do_not_convert
experimental.set_loop_options = _ag.set_loop_options

autograph = types.ModuleType("autograph", "Conversion of Python control flow on tensors into graph code.")
autograph.to_graph = _ag.to_graph
autograph.to_code = _ag.to_code
autograph.set_verbosity = _ag.set_verbosity
autograph.trace = _ag.trace
autograph.experimental = experimental
