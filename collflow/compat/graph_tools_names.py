"""TF1's graph tooling names that `collflow.compat.v1` gathers: `tf.import_graph_def`,
`tf.graph_util` (freezing: convert_variables_to_constants, extract_sub_graph,
remove_training_nodes, ...), `tf.make_tensor_proto` / `tf.make_ndarray`, `tf.profiler`
(parameter and FLOP counts) and the absl-style additions to `tf.app.flags`.

`__all__` lists the top-level names v1 takes from this module.
"""
from __future__ import annotations

from collflow.compat.namespaces import _Namespace
from collflow.summary.tensor_util import TensorProto, make_ndarray, make_tensor_proto
from collflow.train import graph_util as _gu
from collflow.train.graph_def_io import import_graph_def

__all__ = ["import_graph_def", "graph_util", "make_tensor_proto", "make_ndarray", "TensorProto"]

graph_util = _Namespace("graph_util", "tf.graph_util: freezing and trimming GraphDefs.", {
    "convert_variables_to_constants": _gu.convert_variables_to_constants,
    "extract_sub_graph": _gu.extract_sub_graph, "remove_training_nodes": _gu.remove_training_nodes,
    "tensor_shape_from_node_def_name": _gu.tensor_shape_from_node_def_name,
    "must_run_on_cpu": _gu.must_run_on_cpu, "import_graph_def": import_graph_def})

from collflow.profile import tfprof as _tfprof  # noqa: E402

profiler = _Namespace("profiler", "tf.profiler: parameter and FLOP counts of a graph (tfprof's model analysis).", {
    "profile": _tfprof.profile, "advise": _tfprof.advise, "write_op_log": _tfprof.write_op_log,
    "Profiler": _tfprof.Profiler, "ProfileOptionBuilder": _tfprof.ProfileOptionBuilder,
    "GraphNodeProto": _tfprof.GraphNodeProto, "MultiGraphNodeProto": _tfprof.MultiGraphNodeProto,
    "AdviceProto": _tfprof.AdviceProto, "OpLogProto": _tfprof.OpLogProto})
__all__.append("profiler")
