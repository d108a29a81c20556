"""tf.graph_util (TF1's tf.compat.v1.graph_util): freezing a trained graph into constants and
trimming GraphDefs before import_graph_def.

All functions work on collflow's GraphDef (graph_def_io.py): the structure is the NodeDef
fields, the attributes one "_collflow" attr per node.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.shape import TensorShape
from .graph_def_io import GraphDef, NodeDef, import_graph_def, node_data, set_node_data, split_input
from .meta_graph_codec import decode, encode, encode_shape

__all__ = ["convert_variables_to_constants", "extract_sub_graph", "remove_training_nodes",
           "tensor_shape_from_node_def_name", "must_run_on_cpu", "import_graph_def"]

log = logging.getLogger("collflow.train")

# the op types that hold a variable (collflow's, and TF's names should a GraphDef carry them)
_VARIABLE_OPS = {"VarHandle", "VarHandleOp", "Variable", "VariableV2", "AutoReloadVariable"}
_READ_OPS = {"ReadVariable", "ReadVariableOp"}


def _copy(node: Any) -> Any:
    return NodeDef.FromString(node.SerializeToString())


def _node_name(s: str) -> str:
    return split_input(s)[0]


def _check_graph_def(graph_def: Any) -> None:
    if not isinstance(graph_def, GraphDef):
        raise TypeError("graph_def must be a graph_pb2.GraphDef proto.")


def extract_sub_graph(graph_def: Any, dest_nodes: Iterable[str]) -> Any:
    """The GraphDef of the nodes `dest_nodes` need (their inputs and control inputs, transitively),
    in graph_def's order (tf.graph_util.extract_sub_graph)."""
    _check_graph_def(graph_def)
    if isinstance(dest_nodes, str):
        raise TypeError("dest_nodes must be an iterable of strings.")
    dest = list(dest_nodes)
    by_name = {n.name: n for n in graph_def.node}
    for d in dest:
        assert d in by_name, f"{d} is not in graph"
    keep: Set[str] = set()
    todo = list(dest)
    while todo:
        n = todo.pop()
        if n in keep:
            continue
        keep.add(n)
        todo.extend(_node_name(i) for i in by_name[n].input if _node_name(i) in by_name)
    return GraphDef(node=[_copy(n) for n in graph_def.node if n.name in keep])


def remove_training_nodes(input_graph: Any, protected_nodes: Optional[Sequence[str]] = None) -> Any:
    """input_graph for inference, as tf.graph_util.remove_training_nodes: CheckNumerics nodes
    are dropped (and so are the inputs that named them), then Identity and StopGradient nodes
    are spliced out (consumers read the node's first input), except `protected_nodes`, a node
    with control inputs and a node that is another's control input."""
    _check_graph_def(input_graph)
    protected = set(protected_nodes or [])
    removed = {n.name for n in input_graph.node if n.op == "CheckNumerics" and n.name not in protected}
    kept = []
    for n in input_graph.node:
        if n.name in removed:
            continue
        m = _copy(n)
        m.input = [i for i in n.input if i.lstrip("^") not in removed]
        kept.append(m)
    controlled = {i[1:] for n in kept for i in n.input if i.startswith("^")}
    has_control = {n.name for n in kept if any(i.startswith("^") for i in n.input)}
    splice: Dict[str, str] = {n.name: n.input[0] for n in kept
                              if n.op in ("Identity", "StopGradient") and n.name not in protected
                              and n.name not in has_control and n.name not in controlled and n.input}
    out = []
    for n in kept:
        if n.name in splice:
            continue
        ins = []
        for full in n.input:
            seen = set()
            while full.lstrip("^") in splice and full.lstrip("^") not in seen:
                seen.add(full.lstrip("^"))
                full = splice[full.lstrip("^")]
            ins.append(full)
        n.input = ins
        out.append(n)
    return GraphDef(node=out)


def _const_node(name: str, value: np.ndarray, device: str, controls: List[str]) -> Any:
    node = NodeDef(name=name, op="Const", input=controls, device=device)
    dt = _dt.as_dtype(value.dtype) if value.dtype.kind not in "OSU" else _dt.string
    set_node_data(node, {"op": "Const", "attrs": {"value": encode(value), "dtype": encode(dt)},
                         "outputs": [[dt.name, encode_shape(TensorShape(value.shape))]]})
    return node


def _value_tensor(g: _g.Graph, handle_name: str) -> _g.Tensor:
    """A tensor of session graph `g` reading the variable whose handle op is `handle_name`."""
    op = g.get_operation_by_name(handle_name)
    for c in op.outputs[0].consumers():
        if c.type in _READ_OPS and c._ctx is None:
            return c.outputs[0]
    with g.as_default(), g.name_scope(None), g.control_dependencies(None):
        return g.create_op("ReadVariable", [op.outputs[0]], name=handle_name + "/freeze_read").outputs[0]


def convert_variables_to_constants(sess: Any, input_graph_def: Any, output_node_names: Sequence[str],
                                   variable_names_whitelist: Optional[Iterable[str]] = None,
                                   variable_names_blacklist: Optional[Iterable[str]] = None) -> Any:
    """The GraphDef of what `output_node_names` need, each variable replaced by a Const of its
    value in `sess` and each read of it by an Identity (TF1's freeze).  whitelist: only these
    variables; blacklist: not these (by the variable op's name)."""
    _check_graph_def(input_graph_def)
    sub = extract_sub_graph(input_graph_def, output_node_names)
    white = None if variable_names_whitelist is None else set(variable_names_whitelist)
    black = set(variable_names_blacklist or [])
    to_freeze = [n for n in sub.node if n.op in _VARIABLE_OPS and (white is None or n.name in white)
                 and n.name not in black]
    values: Dict[str, np.ndarray] = {}
    if to_freeze:
        tensors = [_value_tensor(sess.graph, n.name) for n in to_freeze]
        for n, v in zip(to_freeze, sess.run(tensors)):
            v = np.asarray(v)  # a string variable's value is bytes when fetched: collflow's str in a Const
            values[n.name] = _dt.string_array(v) if v.dtype == object else v
    out = []
    for n in sub.node:
        if n.name in values:
            out.append(_const_node(n.name, values[n.name], n.device, [i for i in n.input if i.startswith("^")]))
            continue
        m = _copy(n)
        handles = [_node_name(i) for i in n.input if not i.startswith("^") and _node_name(i) in values]
        if handles:
            if n.op in _READ_OPS:
                data = node_data(n) or {}
                data.update({"op": "Identity", "attrs": {}})
                m.op = "Identity"
                set_node_data(m, data)
            else:
                raise ValueError(f"Cannot freeze variable {handles[0]!r}: node {n.name!r} ({n.op}) uses its handle "
                                 "other than by reading it; only reads (ReadVariable) can be turned into constants")
        out.append(m)
    log.info("Froze %d variables.", len(values))
    log.info("Converted %d variables to const ops.", len(values))
    return GraphDef(node=out)


def tensor_shape_from_node_def_name(graph: _g.Graph, input_name: str) -> TensorShape:
    """The static shape of tensor `input_name` ("op" meaning "op:0") of `graph`."""
    name = input_name if ":" in input_name else input_name + ":0"
    return graph.get_tensor_by_name(name).get_shape()


def must_run_on_cpu(node: Any, pin_variables_on_cpu: bool = False) -> bool:
    """Whether TF would pin `node` (a NodeDef or an Operation) to the CPU: a variable when
    pin_variables_on_cpu, an int32 or string Const, an int32 DynamicStitch or Cast from int32."""
    if isinstance(node, _g.Operation):
        op_type, attrs = node.type, dict(node.attrs)
        ins = [t.dtype for t in node.inputs]
        outs = [t.dtype for t in node.outputs]
    else:
        op_type = node.op
        data = node_data(node) or {}
        attrs = {k: decode(v, lambda n: None) for k, v in data.get("attrs", {}).items() if not isinstance(v, dict)
                 or "$tensor" not in v}
        outs = [_dt.as_dtype(d) for d, _ in data.get("outputs", [])]
        ins = []
    if pin_variables_on_cpu and op_type in _VARIABLE_OPS:
        return True
    if op_type == "Const":
        dt = _dt.as_dtype(attrs.get("dtype", outs[0] if outs else _dt.float32))
        return dt in (_dt.string, _dt.int32)
    if op_type in ("DynamicStitch", "ParallelDynamicStitch"):
        return bool(outs) and outs[0] == _dt.int32
    if op_type == "Cast":
        src = attrs.get("SrcT") or (ins[0] if ins else None)
        return src is not None and _dt.as_dtype(src) == _dt.int32
    return False
