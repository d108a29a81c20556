"""tf.import_graph_def and the GraphDef that Graph.as_graph_def returns (TF1's graph_def
workflow: as_graph_def, graph_util.convert_variables_to_constants, write_graph, GraphDef
ParseFromString, import_graph_def).

collflow's GraphDef is TensorFlow's wire format (graph.proto's GraphDef and NodeDef: name, op,
input, device, attr), so TensorFlow's protobuf parser reads its bytes; but each node's
attributes travel as ONE string attr, "_collflow", holding the node as import_meta_graph's
JSON writes it (its attributes, output dtypes and shapes, cond/loop context), not as TF's typed
AttrValues.  So a GraphDef round-trips within collflow (freeze, write, read, import).  A
GraphDef TensorFlow wrote (no node has a "_collflow" attr: a frozen `.pb`) is imported by
tf_graph_def_import.py, which reads TF's typed AttrValues and translates each op type.
Structure is read from the NodeDef fields (name, op, input, device), so editing those
(graph_util.extract_sub_graph, remove_training_nodes, or by hand) is what gets imported.

The rebuilding of collflow's GraphDefs is import_meta_graph's (_Importer in meta_graph.py).
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import DataLossError, InvalidArgumentError
from ..graph import graph as _g
from ..graph.graph import register_graph_def_builder
from ..summary import proto as _proto
from .meta_graph import _context_table, _Forward, _Importer, _node
from .tf_graph_def_import import import_tf_graph_def, is_tf_graph_def, split_input

__all__ = ["GraphDef", "NodeDef", "graph_def_with_attrs", "node_data", "set_node_data", "import_graph_def",
           "split_input"]

GraphDef = _proto.GraphDef
NodeDef = _proto.NodeDef
ATTR_KEY = "_collflow"


def node_data(node: Any) -> Optional[Dict[str, Any]]:
    """The collflow attributes of NodeDef `node` (the JSON node), or None if it has none."""
    for e in node.attr:
        if e.key == ATTR_KEY:
            try:
                return json.loads(e.value.s.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as err:
                raise DataLossError(f"node {node.name!r} of the GraphDef has a damaged {ATTR_KEY} attr: {err}") from None
    return None


def set_node_data(node: Any, data: Mapping[str, Any]) -> None:
    """Stores `data` as NodeDef `node`'s collflow attributes (replacing any)."""
    raw = json.dumps(data, separators=(",", ":"), allow_nan=True).encode("utf-8")
    node.attr = [e for e in node.attr if e.key != ATTR_KEY]
    node.attr.append(NodeDef.AttrEntry(key=ATTR_KEY, value=_proto.AttrValue(s=raw)))


def graph_def_with_attrs(graph: _g.Graph) -> Any:
    """Graph.as_graph_def: proto.graph_def's nodes, each with its attributes (ATTR_KEY)."""
    gd = _proto.graph_def(graph)
    ops = graph.get_operations()
    ctx_index, contexts = _context_table(ops)
    for op, nd in zip(ops, gd.node):
        data = _node(op, lambda n: n, ctx_index, False)
        # structure lives in the NodeDef fields; the JSON keeps what they cannot say
        for k in ("name", "inputs", "control_inputs", "device"):
            data.pop(k, None)
        ctx = data.pop("context")
        if ctx is not None:
            chain = []
            while ctx is not None:  # the node's context and every context around it
                chain.append([ctx, contexts[ctx]["kind"], contexts[ctx]["outer"]])
                ctx = contexts[ctx]["outer"]
            data["contexts"] = chain
        set_node_data(nd, data)
    return gd


register_graph_def_builder(graph_def_with_attrs)


def _meta_nodes(graph_def: Any, source: str) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """The GraphDef's nodes as import_meta_graph's node dicts, and their context table."""
    nodes: List[Dict[str, Any]] = []
    ctx_remap: Dict[int, int] = {}
    raw_ctx: Dict[int, Tuple[str, Optional[int]]] = {}
    for nd in graph_def.node:
        data = node_data(nd)
        if data is None:
            raise InvalidArgumentError(
                f"{source}: node {nd.name!r} ({nd.op}) has no collflow attributes: import_graph_def imports the "
                "GraphDefs collflow makes (Graph.as_graph_def, tf.graph_util), written and read back as bytes or "
                "text, and TensorFlow's own (no node with collflow attributes); this GraphDef mixes the two")
        chain = data.pop("contexts", [])
        for idx, kind, outer in chain:
            raw_ctx[int(idx)] = (kind, outer)
        inputs, controls = [], []
        for s in nd.input:
            op, i, ctrl = split_input(s)
            if ctrl:
                controls.append(op)
            else:
                inputs.append(f"{op}:{i}")
        ctx = int(chain[0][0]) if chain else None
        data.update({"name": nd.name, "op": nd.op, "inputs": inputs, "control_inputs": controls,
                     "device": nd.device or None, "context": ctx})
        nodes.append(data)
    # renumber the contexts densely, outer ones first
    contexts: List[Dict[str, Any]] = []

    def add(i: int) -> int:
        if i in ctx_remap:
            return ctx_remap[i]
        kind, outer = raw_ctx[i]
        o = add(int(outer)) if outer is not None else None
        ctx_remap[i] = len(contexts)
        contexts.append({"kind": kind, "outer": o})
        return ctx_remap[i]
    for n in nodes:
        if n["context"] is not None:
            n["context"] = add(n["context"])
    return nodes, contexts


class _MappingImporter(_Importer):
    """import_meta_graph's importer, reading some inputs from `input_map` instead."""

    def __init__(self, g: _g.Graph, scope: Optional[str], input_map: Dict[str, Any]):
        super().__init__(g, scope, False, "import_graph_def")
        self.input_map = input_map
        self.used: set = set()

    def tensor(self, name: str) -> _g.Tensor:
        if name in self.input_map:
            self.used.add(name)
            return self.input_map[name]
        return super().tensor(name)

    def op(self, name: str) -> _g.Operation:
        key = "^" + name
        if key in self.input_map:
            self.used.add(key)
            return self.input_map[key]
        return super().op(name)


def _norm_map(input_map: Optional[Mapping[str, Any]], g: _g.Graph) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    if input_map is None:
        return out
    if not isinstance(input_map, Mapping):
        raise TypeError("input_map must be a dictionary mapping strings to Tensor objects.")
    for k, v in input_map.items():
        if not isinstance(k, str):
            raise TypeError("input_map must be a dictionary mapping strings to Tensor objects.")
        if k.startswith("^"):
            if not isinstance(v, _g.Operation):
                raise ValueError(f"input_map entry {k!r} is a control input: its value must be an Operation")
            out[k] = v
            continue
        t = v if isinstance(v, _g.Tensor) else _g.convert_to_tensor(v, graph=g)
        if t.graph is not g:
            raise ValueError(f"input_map's tensor {t.name!r} is from another graph than the one imported into")
        op, i, _ = split_input(k)
        out[f"{op}:{i}"] = t
    return out


def import_graph_def(graph_def: Any, input_map: Optional[Mapping[str, Any]] = None,
                     return_elements: Optional[Sequence[str]] = None, name: Optional[str] = None,
                     op_dict: Any = None, producer_op_list: Any = None) -> Optional[List[Any]]:
    """Adds the ops of `graph_def` to the default graph under name scope `name` ("import" by
    default, made unique; "" for none), as TF1's tf.import_graph_def.

    input_map: {"name:0" (or "name") in graph_def: a Tensor of this graph} used in place of that
    tensor (e.g. a placeholder replaced by a data pipeline's output); "^name": an Operation for
    control inputs.  return_elements: names in graph_def, "name:0" giving the imported Tensor
    and "name" the imported Operation; the list is returned (None when not asked for).
    op_dict and producer_op_list are TF's deprecated arguments and change nothing.
    """
    if not isinstance(graph_def, GraphDef) and type(graph_def).__name__ == "GraphDef" and hasattr(
            graph_def, "SerializeToString"):
        graph_def = GraphDef.FromString(graph_def.SerializeToString())  # TensorFlow's own GraphDef object
    if not isinstance(graph_def, GraphDef):
        if isinstance(graph_def, (bytes, bytearray)):
            raise TypeError("graph_def must be a GraphDef proto (parse the bytes with tf.GraphDef.FromString).")
        raise TypeError("graph_def must be a GraphDef proto.")
    if return_elements is not None:
        if isinstance(return_elements, str) or not all(isinstance(x, str) for x in return_elements):
            raise TypeError("return_elements must be a list of strings.")
    g = _g.get_default_graph()
    imap = _norm_map(input_map, g)
    names = {nd.name for nd in graph_def.node}
    missing = [k for k in imap if split_input(k)[0] not in names]
    if missing:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{', '.join(sorted(missing))}]")
    if name is None:
        name = "import"
    scope = g.unique_name(name) if name else ""
    if is_tf_graph_def(graph_def):  # written by TensorFlow: typed AttrValues, TF's op attrs
        made, used = import_tf_graph_def(graph_def, g, scope, imap)
    else:
        nodes, contexts = _meta_nodes(graph_def, "import_graph_def")
        imp = _MappingImporter(g, scope, imap)
        try:
            imp.run(nodes, contexts)
        except DataLossError as e:
            raise ValueError(str(e)) from None
        except _Forward as e:  # an input no node makes
            raise ValueError(f"Node in graph_def refers to a tensor that is not in graph_def: {e}") from None
        made, used = imp.ops, imp.used
    unused = [k for k in imap if k not in used]
    if unused:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{', '.join(sorted(unused))}]")
    if return_elements is None:
        return None
    out: List[Any] = []
    for r in return_elements:
        op_name, sep, idx = r.rpartition(":")
        try:
            if sep and idx.isdigit():
                out.append(made[op_name].outputs[int(idx)])
            else:
                out.append(made[r])
        except (KeyError, IndexError):
            raise ValueError(f"Requested return_element {r!r} not found in graph_def.") from None
    return out

