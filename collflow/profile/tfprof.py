"""tf.profiler (TF1's tfprof model analysis): parameter and FLOP counts of a graph.

profile(graph, cmd="scope", options=ProfileOptionBuilder.trainable_variables_parameter())
returns a GraphNodeProto-like tree whose root ("_TFProfRoot") has total_parameters and
total_float_ops, as TensorFlow's.  Parameters: the elements of each trainable variable.  FLOPs:
TensorFlow's registered per-op statistics on static shapes (MatMul 2*K per output element,
Conv2D 2*kh*kw*cin per output element, elementwise ops one per element, Softmax five, ...); an
op whose shapes are not fully known counts nothing (TF skips it the same way).  Time and memory
need a traced run (run_meta), which collflow's profile does not read: those fields stay 0.
"""
from __future__ import annotations

import copy
import json
import logging
import os
import re
import sys
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from ..graph import graph as _g

__all__ = ["ProfileOptionBuilder", "GraphNodeProto", "MultiGraphNodeProto", "AdviceProto", "OpLogProto",
           "profile", "advise", "write_op_log", "Profiler", "op_flops"]

log = logging.getLogger("collflow.profile")


# -- options ---------------------------------------------------------------------------------------

class ProfileOptionBuilder:
    """tf.profiler.ProfileOptionBuilder: the options dict profile() takes, built step by step."""

    @staticmethod
    def trainable_variables_parameter() -> Dict[str, Any]:
        return {"max_depth": 10000, "min_bytes": 0, "min_micros": 0, "min_params": 0, "min_float_ops": 0,
                "min_occurrence": 0, "order_by": "name", "account_type_regexes": ["_trainable_variables"],
                "start_name_regexes": [".*"], "trim_name_regexes": [], "show_name_regexes": [".*"],
                "hide_name_regexes": [], "account_displayed_op_only": True, "select": ["params"], "step": -1,
                "output": "stdout"}

    @staticmethod
    def float_operation() -> Dict[str, Any]:
        return {"max_depth": 10000, "min_bytes": 0, "min_micros": 0, "min_params": 0, "min_float_ops": 1,
                "min_occurrence": 0, "order_by": "float_ops", "account_type_regexes": [".*"],
                "start_name_regexes": [".*"], "trim_name_regexes": [], "show_name_regexes": [".*"],
                "hide_name_regexes": [], "account_displayed_op_only": True, "select": ["float_ops"], "step": -1,
                "output": "stdout"}

    @staticmethod
    def time_and_memory(min_micros: int = 1, min_bytes: int = 1, min_accelerator_micros: int = 0,
                        min_cpu_micros: int = 0, min_peak_bytes: int = 0, min_residual_bytes: int = 0,
                        min_output_bytes: int = 0) -> Dict[str, Any]:
        return {"max_depth": 10000, "min_bytes": min_bytes, "min_peak_bytes": min_peak_bytes,
                "min_residual_bytes": min_residual_bytes, "min_output_bytes": min_output_bytes,
                "min_micros": min_micros, "min_accelerator_micros": min_accelerator_micros,
                "min_cpu_micros": min_cpu_micros, "min_params": 0, "min_float_ops": 0, "min_occurrence": 0,
                "order_by": "micros", "account_type_regexes": [".*"], "start_name_regexes": [".*"],
                "trim_name_regexes": [], "show_name_regexes": [".*"], "hide_name_regexes": [],
                "account_displayed_op_only": True, "select": ["micros", "bytes"], "step": -1, "output": "stdout"}

    def __init__(self, options: Optional[Dict[str, Any]] = None):
        self._options = copy.deepcopy(options) if options is not None else {
            "max_depth": 100, "min_bytes": 0, "min_micros": 0, "min_params": 0, "min_float_ops": 0,
            "min_occurrence": 0, "order_by": "name", "account_type_regexes": [".*"], "start_name_regexes": [".*"],
            "trim_name_regexes": [], "show_name_regexes": [".*"], "hide_name_regexes": [],
            "account_displayed_op_only": False, "select": ["micros"], "step": -1, "output": "stdout"}

    def build(self) -> Dict[str, Any]:
        return copy.deepcopy(self._options)

    def _set(self, **kw: Any) -> "ProfileOptionBuilder":
        self._options.update(kw)
        return self

    def with_max_depth(self, max_depth: int) -> "ProfileOptionBuilder":
        return self._set(max_depth=max_depth)

    def with_min_memory(self, min_bytes: int = 0, min_peak_bytes: int = 0, min_residual_bytes: int = 0,
                        min_output_bytes: int = 0) -> "ProfileOptionBuilder":
        return self._set(min_bytes=min_bytes, min_peak_bytes=min_peak_bytes, min_residual_bytes=min_residual_bytes,
                         min_output_bytes=min_output_bytes)

    def with_min_execution_time(self, min_micros: int = 0, min_accelerator_micros: int = 0,
                                min_cpu_micros: int = 0) -> "ProfileOptionBuilder":
        return self._set(min_micros=min_micros, min_accelerator_micros=min_accelerator_micros,
                         min_cpu_micros=min_cpu_micros)

    def with_min_parameters(self, min_params: int) -> "ProfileOptionBuilder":
        return self._set(min_params=min_params)

    def with_min_occurrence(self, min_occurrence: int) -> "ProfileOptionBuilder":
        return self._set(min_occurrence=min_occurrence)

    def with_min_float_operations(self, min_float_ops: int) -> "ProfileOptionBuilder":
        return self._set(min_float_ops=min_float_ops)

    def with_accounted_types(self, account_type_regexes: List[str]) -> "ProfileOptionBuilder":
        return self._set(account_type_regexes=list(account_type_regexes))

    def with_node_names(self, start_name_regexes: Optional[List[str]] = None,
                        show_name_regexes: Optional[List[str]] = None, hide_name_regexes: Optional[List[str]] = None,
                        trim_name_regexes: Optional[List[str]] = None) -> "ProfileOptionBuilder":
        for k, v in (("start_name_regexes", start_name_regexes), ("show_name_regexes", show_name_regexes),
                     ("hide_name_regexes", hide_name_regexes), ("trim_name_regexes", trim_name_regexes)):
            if v is not None:
                self._options[k] = list(v)
        return self

    def account_displayed_op_only(self, is_true: bool) -> "ProfileOptionBuilder":
        return self._set(account_displayed_op_only=bool(is_true))

    def with_empty_output(self) -> "ProfileOptionBuilder":
        return self._set(output="none")

    def with_stdout_output(self) -> "ProfileOptionBuilder":
        return self._set(output="stdout")

    def with_file_output(self, outfile: str) -> "ProfileOptionBuilder":
        return self._set(output=f"file:outfile={outfile}")

    def with_timeline_output(self, timeline_file: str) -> "ProfileOptionBuilder":
        return self._set(output=f"timeline:outfile={timeline_file}")

    def with_pprof_output(self, pprof_file: str) -> "ProfileOptionBuilder":
        return self._set(output=f"pprof:outfile={pprof_file}")

    def order_by(self, attribute: str) -> "ProfileOptionBuilder":
        return self._set(order_by=attribute)

    def select(self, attributes: List[str]) -> "ProfileOptionBuilder":
        return self._set(select=list(attributes))

    def with_step(self, step: int) -> "ProfileOptionBuilder":
        return self._set(step=step)


# -- the result ------------------------------------------------------------------------------------

_FIELDS = ("parameters", "float_ops", "exec_micros", "accelerator_exec_micros", "cpu_exec_micros",
           "requested_bytes", "peak_bytes", "residual_bytes", "output_bytes", "run_count")


class GraphNodeProto:
    """One node of the scope tree (TF's GraphNodeProto's fields, as plain attributes)."""

    def __init__(self, name: str = ""):
        self.name = name
        for f in _FIELDS:
            setattr(self, f, 0)
            setattr(self, "total_" + f, 0)
        self.total_definition_count = 0
        self.devices: List[str] = []
        self.shapes: List[Any] = []
        self.input_shapes: Dict[int, Any] = {}
        self.children: List["GraphNodeProto"] = []
        self.tensor_value = None

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, total_parameters={self.total_parameters}, "
                f"total_float_ops={self.total_float_ops}, children={len(self.children)})")


class MultiGraphNodeProto(GraphNodeProto):
    """A node of the op-type view: `graph_nodes` are the ops of that type."""

    def __init__(self, name: str = ""):
        super().__init__(name)
        self.graph_nodes: List[GraphNodeProto] = []


class AdviceProto:
    """tf.profiler.advise's result: {checker name: reports} (collflow runs no checkers)."""

    def __init__(self) -> None:
        self.checkers: Dict[str, Any] = {}


class OpLogProto:
    """Extra op information for the profiler (write_op_log): {op name: {"types": [...], "float_ops": n}}."""

    def __init__(self) -> None:
        self.log_entries: List[Dict[str, Any]] = []


# -- FLOPs: TensorFlow's registered statistics ----------------------------------------------------

def _n(t: _g.Tensor) -> int:
    s = t.shape
    if not s.is_fully_defined():
        raise ValueError("incomplete shape")
    return int(np.prod(s.as_list(), dtype=np.int64))


def _dims(t: _g.Tensor) -> List[int]:
    if not t.shape.is_fully_defined():
        raise ValueError("incomplete shape")
    return [int(d) for d in t.shape.as_list()]


def _unary(k: int) -> Callable[[_g.Operation], int]:
    return lambda op: _n(op.inputs[0]) * k


def _binary(k: int) -> Callable[[_g.Operation], int]:
    return lambda op: _n(op.outputs[0]) * k


def _reduction(reduce_flops: int, finalize_flops: int) -> Callable[[_g.Operation], int]:
    return lambda op: _n(op.inputs[0]) * reduce_flops + _n(op.outputs[0]) * (finalize_flops - reduce_flops)


def _matmul(op: _g.Operation) -> int:
    a = _dims(op.inputs[0])
    k = a[-2] if op.attrs.get("transpose_a") or op.attrs.get("adj_x") else a[-1]
    return 2 * k * _n(op.outputs[0])


def _conv2d(op: _g.Operation) -> int:
    _n(op.inputs[0])
    f = _dims(op.inputs[1])
    return _n(op.outputs[0]) * f[0] * f[1] * f[2] * 2


def _depthwise(op: _g.Operation) -> int:
    _n(op.inputs[0])
    f = _dims(op.inputs[1])
    return _n(op.outputs[0]) * f[0] * f[1] * 2


def _area(op: _g.Operation) -> int:
    return int(np.prod(list(op.attrs["ksize"])))


def _stride_area(op: _g.Operation) -> int:
    s = list(op.attrs["strides"])
    return int(s[1] * s[2]) if len(s) == 4 else int(s[0] * s[1])


def _conv_bp_input(op: _g.Operation) -> int:
    out = _dims(op.outputs[0])
    return int(2 * _n(op.outputs[0]) * _n(op.inputs[1]) / (out[-1] * _stride_area(op)))


def _conv_bp_filter(op: _g.Operation) -> int:
    img = _dims(op.inputs[0])
    return int(2 * _n(op.inputs[0]) * _n(op.outputs[0]) / (img[-1] * _stride_area(op)))


def _add_n(op: _g.Operation) -> int:
    return _n(op.inputs[0]) * (len(op.inputs) - 1) if op.inputs else 0


_FLOPS: Dict[str, Callable[[_g.Operation], int]] = {
    "Reciprocal": _unary(1), "Square": _unary(1), "Rsqrt": _unary(2), "Log": _unary(1), "Neg": _unary(1),
    "AssignSub": _unary(1), "AssignAdd": _unary(1), "Softmax": _unary(5),
    "L2Loss": lambda op: _n(op.inputs[0]) * 3 - 1,
    "Add": _binary(1), "AddV2": _binary(1), "Sub": _binary(1), "Mul": _binary(1), "RealDiv": _binary(1),
    "Maximum": _binary(1), "Minimum": _binary(1), "Pow": _binary(1), "RsqrtGrad": _binary(4),
    "GreaterEqual": _binary(1), "Greater": _binary(1), "LessEqual": _binary(1), "Less": _binary(1),
    "Equal": _binary(1), "NotEqual": _binary(1), "SquaredDifference": _binary(2),
    "Mean": _reduction(1, 1), "Sum": _reduction(1, 0), "ArgMax": _reduction(1, 0), "ArgMin": _reduction(1, 0),
    "BiasAddGrad": _reduction(1, 0),
    "AvgPool": lambda op: _area(op) * _n(op.outputs[0]), "MaxPool": lambda op: _area(op) * _n(op.outputs[0]),
    "AvgPoolGrad": lambda op: _area(op) * _n(op.inputs[1]) * 2,
    "MaxPoolGrad": lambda op: _area(op) * _n(op.inputs[1]) + _n(op.inputs[1]),
    "Conv2DBackpropInput": _conv_bp_input, "Conv2DBackpropFilter": _conv_bp_filter, "AddN": _add_n,
    "MatMul": _matmul, "BatchMatMul": _matmul, "BatchMatMulV2": _matmul, "BatchMatMulV3": _matmul,
    "Conv2D": _conv2d, "DepthwiseConv2dNative": _depthwise, "BiasAdd": lambda op: _n(op.inputs[0]),
}


def op_flops(op: _g.Operation) -> Optional[int]:
    """The FLOPs TensorFlow's statistics give `op`: 0 for an op type without any, None when its
    shapes are not fully known."""
    fn = _FLOPS.get(op.type)
    if fn is None:
        return 0
    try:
        return int(fn(op))
    except (ValueError, KeyError, IndexError, ZeroDivisionError, TypeError):
        return None


# -- the tree --------------------------------------------------------------------------------------

class _Node:
    def __init__(self, name: str, op: Optional[_g.Operation]):
        self.name, self.op = name, op
        self.types: List[str] = [op.type] if op is not None else []
        self.params = 0
        self.flops = 0
        self.children: List["_Node"] = []


_ORDER = {"name": None, "params": "total_parameters", "float_ops": "total_float_ops", "micros": "total_exec_micros",
          "bytes": "total_requested_bytes", "occurrence": "total_definition_count"}


def _collect(graph: _g.Graph) -> Dict[str, _Node]:
    nodes: Dict[str, _Node] = {}
    trainable = {v.op.name: v for v in graph.get_collection(_g.GraphKeys.TRAINABLE_VARIABLES) if hasattr(v, "op")}
    missing = 0
    for op in graph.get_operations():
        n = _Node(op.name, op)
        if op.name in trainable:
            n.types.append("_trainable_variables")
            shp = trainable[op.name].shape
            n.params = int(np.prod(shp.as_list(), dtype=np.int64)) if shp.is_fully_defined() else 0
        f = op_flops(op)
        if f is None:
            missing += 1
        else:
            n.flops = f
        nodes[op.name] = n
    if missing:
        log.info("%d ops no flops stats due to incomplete shapes.", missing)
    return nodes


def _shown(n: _Node, opts: Dict[str, Any]) -> bool:
    """Whether a node is displayed (and so, with account_displayed_op_only, accounted)."""
    if n.op is not None:
        regexes = opts.get("account_type_regexes", [".*"])
        if not any(re.fullmatch(r, t) for r in regexes for t in n.types):
            return False
    if n.params < opts.get("min_params", 0) or n.flops < opts.get("min_float_ops", 0):
        return False
    if opts.get("min_micros", 0) > 0 or opts.get("min_bytes", 0) > 0:
        return False  # no timings or memory without a traced run
    if not any(re.fullmatch(r, n.name) for r in opts.get("show_name_regexes", [".*"])):
        return False
    return not any(re.fullmatch(r, n.name) for r in opts.get("hide_name_regexes", []))


def _sort(children: List[GraphNodeProto], order_by: str) -> List[GraphNodeProto]:
    key = _ORDER.get(order_by)
    if key is None:
        return sorted(children, key=lambda c: c.name)
    return sorted(children, key=lambda c: (-getattr(c, key), c.name))


def _proto(n: _Node, cls: type = GraphNodeProto) -> GraphNodeProto:
    p = cls(n.name)
    p.parameters, p.float_ops = n.params, n.flops
    p.total_definition_count = 1
    if n.op is not None:
        p.devices = [n.op.device] if n.op.device else []
        p.shapes = [t.shape for t in n.op.outputs]
        p.input_shapes = {i: t.shape for i, t in enumerate(n.op.inputs)}
    return p


def _scope_tree(nodes: Dict[str, _Node], opts: Dict[str, Any]) -> GraphNodeProto:
    root = _Node("_TFProfRoot", None)
    tree: Dict[str, _Node] = {}

    def attach(name: str) -> _Node:
        if name in tree:
            return tree[name]
        n = nodes.get(name) or _Node(name, None)  # a name scope that is not an op
        tree[name] = n
        parent = name.rpartition("/")[0]
        (attach(parent) if parent else root).children.append(n)
        return n
    for name in nodes:
        attach(name)

    def build(n: _Node, depth: int) -> List[GraphNodeProto]:
        """The displayed protos for n (itself, or its displayed descendants lifted)."""
        kids = [p for c in n.children for p in build(c, depth + (1 if _shown(n, opts) else 0))]
        if not _shown(n, opts):
            return kids
        p = _proto(n)
        p.children = _sort(kids, opts.get("order_by", "name")) if depth < opts.get("max_depth", 10000) else []
        _totals(p, kids)
        return [p]
    kids = [p for c in root.children for p in build(c, 1)]
    r = GraphNodeProto("_TFProfRoot")
    r.children = _sort(kids, opts.get("order_by", "name")) if opts.get("max_depth", 10000) > 0 else []
    _totals(r, kids)
    return r


def _totals(p: GraphNodeProto, kids: List[GraphNodeProto]) -> None:
    for f in _FIELDS:
        setattr(p, "total_" + f, getattr(p, f) + sum(getattr(k, "total_" + f) for k in kids))
    p.total_definition_count = p.total_definition_count + sum(k.total_definition_count for k in kids)


def _op_view(nodes: Dict[str, _Node], opts: Dict[str, Any]) -> MultiGraphNodeProto:
    by_type: Dict[str, MultiGraphNodeProto] = {}
    for n in nodes.values():
        if not _shown(n, opts):
            continue
        for t in n.types[:1]:
            m = by_type.setdefault(t, MultiGraphNodeProto(t))
            m.parameters += n.params
            m.float_ops += n.flops
            m.total_definition_count += 1
            m.graph_nodes.append(_proto(n))
    for m in by_type.values():
        m.total_parameters, m.total_float_ops = m.parameters, m.float_ops
    order = _sort(list(by_type.values()), opts.get("order_by", "name"))
    # TF's op view is a chain: each type's totals include every type listed after it
    root = MultiGraphNodeProto("_TFProfRoot")
    chain: List[MultiGraphNodeProto] = [root] + order  # type: ignore[list-item]
    for i in range(len(chain) - 1, -1, -1):
        c = chain[i]
        nxt = chain[i + 1] if i + 1 < len(chain) else None
        c.children = [nxt] if nxt is not None else []
        for f in _FIELDS:
            setattr(c, "total_" + f, getattr(c, f) + (getattr(nxt, "total_" + f) if nxt is not None else 0))
    return root


def _human(v: float) -> str:
    for unit, scale in (("b", 1e9), ("m", 1e6), ("k", 1e3)):
        if v >= scale:
            return f"{v / scale:.2f}{unit}"
    return str(int(v))


def _report(result: GraphNodeProto, opts: Dict[str, Any], cmd: str) -> str:
    sel = opts.get("select", [])
    what = [("params", "parameters", "params"), ("float_ops", "float_ops", "flops")]
    lines = ["", "==================Model Analysis Report======================", "", "Profile:"]

    def stats(p: GraphNodeProto) -> str:
        parts = [f"{'--' if getattr(p, f) == 0 else _human(getattr(p, f))}/{_human(getattr(p, 'total_' + f))} {u}"
                 for s, f, u in what if s in sel]
        return ", ".join(parts)

    def walk(p: GraphNodeProto, indent: int) -> None:
        lines.append(f"{'  ' * indent}{p.name} ({stats(p)})")
        for c in p.children:
            walk(c, indent + 1)
    if cmd == "op":
        p = result.children[0] if result.children else None
        while p is not None:
            lines.append(f"{p.name:<24} {stats(p)}")
            p = p.children[0] if p.children else None
    else:
        walk(result, 0)
    lines += ["", "======================End of Report=========================="]
    return "\n".join(lines) + "\n"


def _output(text: str, opts: Dict[str, Any]) -> None:
    out = opts.get("output", "stdout")
    if out == "stdout":
        sys.stdout.write(text)
    elif out.startswith("file:outfile="):
        with open(out[len("file:outfile="):], "w") as f:
            f.write(text)


def profile(graph: Optional[_g.Graph] = None, run_meta: Any = None, op_log: Any = None, cmd: str = "scope",
            options: Optional[Dict[str, Any]] = None) -> Any:
    """tf.profiler.profile: the graph's model analysis under `options` (default: the builder's
    default).  cmd: "scope" or "graph" (a GraphNodeProto tree by name), "op" or "code" (a
    MultiGraphNodeProto chain by op type).  Prints a report unless options say output "none".
    run_meta is accepted and not read (no time or memory figures)."""
    g = graph if graph is not None else _g.get_default_graph()
    opts = options if options is not None else ProfileOptionBuilder().build()
    if cmd not in ("scope", "graph", "op", "code"):
        raise ValueError(f"unknown cmd {cmd!r}: one of scope, graph, op, code")
    nodes = _collect(g)
    result: GraphNodeProto = _op_view(nodes, opts) if cmd in ("op", "code") else _scope_tree(nodes, opts)
    if opts.get("output", "stdout") != "none":
        _output(_report(result, opts, cmd), opts)
    return result


def advise(graph: Optional[_g.Graph] = None, run_meta: Any = None, options: Any = None) -> AdviceProto:
    """tf.profiler.advise: TF's checkers give advisory text from a traced run; collflow has no
    checkers, so the result's `checkers` is empty."""
    return AdviceProto()


def write_op_log(graph: _g.Graph, log_dir: str, op_log: Any = None, run_meta: Any = None,
                 add_trace: bool = True) -> None:
    """Writes log_dir/tfprof_log: every op's types, parameters and FLOPs (collflow's JSON, not
    TF's OpLogProto bytes)."""
    os.makedirs(log_dir, exist_ok=True)
    entries = [{"name": n.name, "types": n.types, "parameters": n.params, "float_ops": n.flops}
               for n in _collect(graph).values()]
    if op_log is not None:
        entries += list(getattr(op_log, "log_entries", []))
    with open(os.path.join(log_dir, "tfprof_log"), "w") as f:
        json.dump({"log_entries": entries}, f)


class Profiler:
    """tf.profiler.Profiler: profile views of a graph over training steps (add_step's run
    metadata is kept, not read: the views give parameters and FLOPs)."""

    def __init__(self, graph: Optional[_g.Graph] = None, op_log: Any = None):
        self._graph = graph if graph is not None else _g.get_default_graph()
        self._steps: Dict[int, Any] = {}

    def add_step(self, step: int, run_meta: Any) -> None:
        self._steps[int(step)] = run_meta

    def profile_python(self, options: Dict[str, Any]) -> Any:
        return profile(self._graph, cmd="code", options=options)

    def profile_operations(self, options: Dict[str, Any]) -> Any:
        return profile(self._graph, cmd="op", options=options)

    def profile_name_scope(self, options: Dict[str, Any]) -> Any:
        return profile(self._graph, cmd="scope", options=options)

    def profile_graph(self, options: Dict[str, Any]) -> Any:
        return profile(self._graph, cmd="graph", options=options)

    def advise(self, options: Any) -> AdviceProto:
        return advise(self._graph, None, options)

    def serialize_to_string(self) -> bytes:
        return json.dumps({"steps": sorted(self._steps)}).encode()
