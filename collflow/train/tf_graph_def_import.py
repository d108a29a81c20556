"""tf.import_graph_def of GraphDefs TensorFlow wrote (frozen inference graphs, `.pb` files of
tf.train.write_graph or graph_util.convert_variables_to_constants): their nodes carry TF's typed
AttrValues instead of collflow's one "_collflow" attr (graph_def_io.py).

Each attr is decoded from the parsed message (summary/proto.py's hand-written AttrValue, so no
protobuf dependency; a `tensor` value through kernels/tensor_proto_wire.py, which reads
tensor_content and every typed field as TF's Tensor::FromProto does), and each node is
rebuilt by op type with collflow's op constructors, reading the attrs as TF defines them
(data_format NHWC/NCHW, 4-element strides/ksize, EXPLICIT padding, T/dtype, keep_dims, ...).
The op that yields a node's outputs is named exactly as the node (under the import scope), so
"name:0" and "name" look-ups, input_map and return_elements work as for collflow's own
GraphDefs; ops a translation needs besides are made under "name/".  The op-type table lives
in tf_graph_def_ops.py.

Node types collflow does not translate (and TF1's raw control-flow ops, Enter/Exit/Merge/
Switch/NextIteration/LoopCond, and unfrozen variables) are all listed in one NotFoundError
before anything is built.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Set, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, NotFoundError
from ..graph import graph as _g
from ..graph.shape import TensorShape
from ..kernels.tensor_proto_wire import DT_ENUM, ENUM_NAMES, decode_tensor_proto

__all__ = ["is_tf_graph_def", "split_input", "decode_attr", "node_attrs", "import_tf_graph_def", "known_op_types"]

_BY_ENUM = {v: k for k, v in DT_ENUM.items()}
ATTR_KEY = "_collflow"

# TF1's raw control flow (what tf.while_loop / tf.cond build in a v1 graph): out of scope
CONTROL_FLOW = frozenset({"Enter", "RefEnter", "Exit", "RefExit", "Merge", "RefMerge", "Switch", "RefSwitch",
                          "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger"})
VARIABLES = frozenset({"VariableV2", "Variable", "VarHandleOp", "ReadVariableOp", "AssignVariableOp", "Assign",
                       "VarIsInitializedOp"})


def is_tf_graph_def(graph_def: Any) -> bool:
    """Whether `graph_def` is TensorFlow's (no node carries collflow's "_collflow" attr)."""
    return bool(graph_def.node) and not any(e.key == ATTR_KEY for n in graph_def.node for e in n.attr)


def _dtype(enum: int, where: str) -> _dt.DType:
    e = int(enum)
    if e > 100:  # a reference type (DT_FLOAT_REF = 101): the same values
        e -= 100
    name = _BY_ENUM.get(e)
    if name is None:
        raise InvalidArgumentError(f"{where}: dtype {ENUM_NAMES.get(e, e)!r} (DataType {e}) is not one collflow has")
    return _dt.as_dtype(name)


def _shape(sp: Any) -> TensorShape:
    if sp.unknown_rank:
        return TensorShape(None)
    return TensorShape([None if int(d.size) < 0 else int(d.size) for d in sp.dim])


def _tensor(tp: Any, where: str) -> np.ndarray:
    try:
        enum, arr = decode_tensor_proto(tp.SerializeToString())
    except (ValueError, IndexError) as e:
        raise InvalidArgumentError(f"{where}: cannot read the TensorProto ({e})") from None
    if enum not in _BY_ENUM:
        _dtype(enum, where)  # raises, naming the dtype
    return arr


def decode_attr(av: Any, where: str = "attr") -> Any:
    """The Python value of AttrValue `av`: bytes (s), int (i), float (f), bool (b), DType
    (type), TensorShape (shape), ndarray (tensor), str (placeholder), or a list of those."""
    which = av.WhichOneof("value")
    if which is None:  # a message built by hand: the member that holds something
        which = next((f[1] for f in av.FIELDS if av.HasField(f[1])), None)
    if which == "list":
        lv = av.list
        for field, conv in (("s", bytes), ("i", int), ("f", float), ("b", bool),
                            ("type", lambda e: _dtype(e, where)), ("shape", _shape),
                            ("tensor", lambda t: _tensor(t, where))):
            vals = getattr(lv, field)
            if vals:
                return [conv(v) for v in vals]
        return []
    if which in (None, "s"):
        return bytes(av.s)
    if which == "i":
        return int(av.i)
    if which == "f":
        return float(av.f)
    if which == "b":
        return bool(av.b)
    if which == "type":
        return _dtype(av.type, where)
    if which == "shape":
        return _shape(av.shape)
    if which == "tensor":
        return _tensor(av.tensor, where)
    if which == "placeholder":
        return str(av.placeholder)
    raise InvalidArgumentError(f"{where}: function-valued attrs are not imported")


def node_attrs(node: Any) -> Dict[str, Any]:
    """{attr name: decoded value} of a TensorFlow NodeDef (its "_output_shapes" and other
    "_"-prefixed bookkeeping attrs left out)."""
    return {e.key: decode_attr(e.value, f"node {node.name!r} ({node.op}) attr {e.key!r}")
            for e in node.attr if not e.key.startswith("_")}


def split_input(name: str) -> Tuple[str, int, bool]:
    """(op name, output index, is a control input) of a NodeDef input string ("x", "x:1", "^x")."""
    if name.startswith("^"):
        return name[1:], -1, True
    op, sep, idx = name.rpartition(":")
    if sep and idx.isdigit():
        return op, int(idx), False
    return name, 0, False


def _check_ops(graph_def: Any, table: Mapping[str, Any]) -> None:
    """Raises one NotFoundError listing every node whose op type is not imported."""
    bad: Dict[str, List[str]] = {}
    for n in graph_def.node:
        if n.op not in table:
            bad.setdefault(n.op, []).append(n.name)
    if not bad:
        return
    parts = []
    for op_type in sorted(bad):
        names = bad[op_type]
        shown = ", ".join(repr(x) for x in names[:5]) + (f", ... ({len(names)} nodes)" if len(names) > 5 else "")
        why = (" (TF1 control flow: not imported)" if op_type in CONTROL_FLOW else
               " (a variable: freeze the graph with graph_util.convert_variables_to_constants first)"
               if op_type in VARIABLES else "")
        parts.append(f"{op_type}{why}: {shown}")
    raise NotFoundError(
        f"import_graph_def: {sum(len(v) for v in bad.values())} node(s) of this TensorFlow GraphDef have op types "
        f"collflow does not import: " + "; ".join(parts) + " (docs/tf1_compat.md lists the imported ones)")


def _order(graph_def: Any) -> List[Any]:
    """The nodes in an order where each comes after its inputs and control inputs (TF's
    GraphDefs need not be sorted)."""
    by_name = {n.name: n for n in graph_def.node}
    state: Dict[str, int] = {}
    out: List[Any] = []
    for root in graph_def.node:
        if root.name in state:
            continue
        stack: List[Tuple[Any, int]] = [(root, 0)]
        state[root.name] = 1
        while stack:
            node, i = stack.pop()
            deps = [split_input(s)[0] for s in node.input]
            while i < len(deps) and (deps[i] not in by_name or state.get(deps[i]) == 2):
                i += 1
            if i == len(deps):
                state[node.name] = 2
                out.append(node)
                continue
            stack.append((node, i + 1))
            dep = deps[i]
            if state.get(dep) == 1:
                raise InvalidArgumentError(f"import_graph_def: the GraphDef has a cycle through node {dep!r} "
                                           "(TF1 while loops are not imported)")
            state[dep] = 1
            stack.append((by_name[dep], 0))
    return out


class TFImporter:
    """Builds a TensorFlow GraphDef's nodes in graph `g` under `scope` ("" for none)."""

    def __init__(self, g: _g.Graph, scope: str, input_map: Dict[str, Any]):
        self.g = g
        self.prefix = (scope.rstrip("/") + "/") if scope else ""
        self.input_map = input_map
        self.used: Set[str] = set()
        self.ops: Dict[str, _g.Operation] = {}    # node name -> the op named as it
        self.outputs: Dict[str, List[_g.Tensor]] = {}
        self.consts: Dict[int, np.ndarray] = {}  # id(tensor) -> value, of the Consts imported
        self.node: Any = None
        self.full = ""

    # -- what translations use --
    def tensor(self, name: str) -> _g.Tensor:
        op, i, _ = split_input(name)
        key = f"{op}:{i}"
        if key in self.input_map:
            self.used.add(key)
            return self.input_map[key]
        outs = self.outputs.get(op)
        if outs is None:
            raise ValueError(f"Node in graph_def refers to a tensor that is not in graph_def: {name!r}")
        if i >= len(outs):
            raise ValueError(f"Node {self.node.name!r} in graph_def reads output {i} of {op!r}, which has "
                             f"{len(outs)} outputs")
        return outs[i]

    def control(self, name: str) -> _g.Operation:
        key = "^" + name
        if key in self.input_map:
            self.used.add(key)
            return self.input_map[key]
        if name not in self.ops:
            raise ValueError(f"Node in graph_def refers to a control input that is not in graph_def: {name!r}")
        return self.ops[name]

    def const(self, t: _g.Tensor, what: str) -> np.ndarray:
        """The value of `t`, which must be a constant (a Const of the GraphDef, or one mapped in)."""
        v = self.consts.get(id(t))
        if v is not None:
            return v
        if t.op.type == "Const" and "value" in t.op.attrs:
            return np.asarray(t.op.attrs["value"])
        from ..graph.ops.misc_more_ops import get_static_value
        v = get_static_value(t)
        if v is None:
            raise InvalidArgumentError(f"import_graph_def: node {self.node.name!r} ({self.node.op}): {what} must be a "
                                       f"constant for collflow, but {t.name!r} is computed at run time")
        return np.asarray(v)

    @property
    def name(self) -> str:
        """The exact name (trailing "/") for the op that yields the node's outputs."""
        return self.full + "/"

    # -- the build --
    def run(self, graph_def: Any, table: Mapping[str, Any]) -> None:
        _check_ops(graph_def, table)
        nodes = _order(graph_def)
        g = self.g
        for node in nodes:  # the nodes' names are taken: the helper ops a translation makes avoid them
            key = (self.prefix + node.name).lower()
            if key not in g._names_in_use:
                g._names_in_use[key] = 1
        with g.as_default(), g.name_scope(None), g.control_dependencies(None):
            for node in nodes:
                self._make(node, table)

    def _make(self, node: Any, table: Mapping[str, Any]) -> None:
        self.node = node
        full = self.prefix + node.name
        if full in self.g._ops_by_name:
            full = self.g.unique_name(full)
        self.full = full
        ins, ctrls = [], []
        for s in node.input:
            op, _, is_ctrl = split_input(s)
            if is_ctrl:
                ctrls.append(self.control(op))
            else:
                ins.append(self.tensor(s))
        attrs = node_attrs(node)
        g = self.g
        try:
            with g.control_dependencies(ctrls or None), g.name_scope(full + "/"):
                if node.device:
                    with g.device(node.device):
                        res = table[node.op](self, ins, attrs)
                else:
                    res = table[node.op](self, ins, attrs)
                op, outs = self._named(res)
        except KeyError as e:
            raise ValueError(f"import_graph_def: cannot import node {node.name!r} ({node.op}): it has no attr "
                             f"{e}, which TensorFlow's {node.op} requires") from None
        except (ValueError, TypeError, InvalidArgumentError) as e:
            raise ValueError(f"import_graph_def: cannot import node {node.name!r} ({node.op}): {e}") from None
        self.ops[node.name] = op
        self.outputs[node.name] = outs

    def _named(self, res: Any) -> Tuple[_g.Operation, List[_g.Tensor]]:
        """The op named exactly as the node, and its outputs (an Identity/IdentityN named so
        when the translation's outputs come from ops named otherwise)."""
        from ..graph.ops import array_ops, constant_op
        if isinstance(res, _g.Operation):
            return res, list(res.outputs)
        outs = [res] if isinstance(res, _g.Tensor) else list(res)
        if outs:
            op = outs[0].op
            if op.name == self.full and list(op.outputs[:len(outs)]) == outs:
                return op, outs
        if self.full in self.g._ops_by_name:
            raise InvalidArgumentError(f"an op named {self.full!r} exists already")
        if not outs:
            op = constant_op.no_op(name=self.name)
            return op, []
        if len(outs) == 1:
            t = constant_op.identity(outs[0], name=self.name)
            return t.op, [t]
        new = array_ops.identity_n(outs, name=self.name)
        return new[0].op, list(new)


def import_tf_graph_def(graph_def: Any, g: _g.Graph, scope: str,
                        input_map: Dict[str, Any]) -> Tuple[Dict[str, _g.Operation], Set[str]]:
    """Imports TensorFlow GraphDef `graph_def` into `g` under `scope`; returns ({node name: op
    made}, the input_map keys used)."""
    from .tf_graph_def_ops import OPS
    imp = TFImporter(g, scope, input_map)
    imp.run(graph_def, OPS)
    return imp.ops, imp.used


def known_op_types() -> Sequence[str]:
    """The TensorFlow op types import_graph_def translates."""
    from .tf_graph_def_ops import OPS
    return sorted(OPS)
