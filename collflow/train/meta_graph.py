"""tf.train.export_meta_graph / import_meta_graph: a graph, its collections and its Saver in
one file, and back into a graph (TF1's MetaGraphDef, in collflow's own format).

The file is one JSON header line ({"format": "collflow.MetaGraph", "version", "size",
"crc32"}) and a JSON body: every op (type, inputs, control inputs, device, attributes, output
dtypes and shapes, the cond/loop context it sits in), the collections, the Saver's variable
list and, for SavedModels, the signatures.  Written whole or not at all (a temporary file
renamed), checked on reading (size and CRC-32), and read without running code from the file.

What cannot travel: attributes holding Python objects (a tf.data pipeline's Dataset, a
py_func's function).  Such an op is imported as a stand-in with the same inputs and outputs
that says so when it is run; a custom gradient's function and a loop's construction record are
dropped, so the imported graph runs as before but tf.gradients refuses to build new gradients
through imported conds, loops and custom gradients (the exported train_op needs none).
TensorFlow's own protobuf .meta files are not read (docs/tf1_compat.md).
"""
from __future__ import annotations

import json
import logging
import os
import zlib
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .. import dtypes as _dt
from ..errors import DataLossError, InvalidArgumentError, NotFoundError, UnimplementedError
from ..graph import graph as _g
from ..graph.control_flow import ImportedContext
from ..graph.registry import register_op
from ..graph.variables import Variable
from ..kernels.registry import KernelContext, register_kernel
from ..platform.atomic_files import atomic_write_bytes
from .meta_graph_codec import Unencodable, decode, decode_shape, encode, encode_shape
from .signature_def import SignatureDef

__all__ = ["MetaGraphDef", "export_meta_graph", "import_meta_graph", "read_meta_graph_file", "import_scoped",
           "write_meta_graph", "frame", "unframe"]

log = logging.getLogger("collflow.train")

FORMAT = "collflow.MetaGraph"
VERSION = 1

# attributes that only graph construction reads (a loop's Python record for its gradient, a
# custom gradient's function): left out, the op still runs
_CONSTRUCTION_ONLY = {("Enter", "loop"), ("Exit", "loop"), ("CustomGradient", "grad_fn")}


# -- the stand-in for an op whose attributes could not be written --------------------------------

def _opaque_spec(op: Any) -> list:
    return [(d, s) for d, s in op.attrs["output_specs"]]


register_op("MetaGraphOpaque", _opaque_spec, stateful=True,
            doc="an op imported from a meta graph without the Python object it needs (fails when run)")


@register_kernel("MetaGraphOpaque")
def _opaque(op: Any, ctx: KernelContext) -> Any:
    raise UnimplementedError(
        f"op {op.name!r} ({op.attrs['original_type']}) was imported from a meta graph without {op.attrs['reason']}, "
        "which a meta graph cannot carry; rebuild this part of the graph in Python (e.g. the input pipeline) "
        "and feed or connect it", op)


# -- the document ------------------------------------------------------------------------------------

class MetaGraphDef:
    """A meta graph: the graph's ops, collections, Saver and signatures (TF1's MetaGraphDef)."""

    def __init__(self, body: Optional[Dict[str, Any]] = None):
        self._body: Dict[str, Any] = body if body is not None else {
            "meta_info_def": {}, "graph": {"nodes": [], "contexts": []}, "collections": {},
            "saver_def": None, "signature_def": {}}
        self._signatures: Optional[Dict[str, SignatureDef]] = None

    @property
    def meta_info_def(self) -> Dict[str, Any]:
        return self._body.setdefault("meta_info_def", {})

    @property
    def collection_def(self) -> Dict[str, list]:
        return self._body.setdefault("collections", {})

    @property
    def signature_def(self) -> Dict[str, SignatureDef]:
        """{key: SignatureDef} (a SavedModel's signatures; a live dict)."""
        if self._signatures is None:
            self._signatures = {k: SignatureDef.from_data(v) for k, v in self._body.get("signature_def", {}).items()}
        return self._signatures

    @property
    def saver_def(self) -> Optional[Dict[str, Any]]:
        return self._body.get("saver_def")

    @property
    def nodes(self) -> List[Dict[str, Any]]:
        """The ops, in creation order (name, op, inputs, ...)."""
        return self._body["graph"]["nodes"]

    def to_data(self) -> Dict[str, Any]:
        """The body as JSON-ready data."""
        if self._signatures is not None:
            self._body["signature_def"] = {k: v.to_data() for k, v in self._signatures.items()}
        return self._body

    def SerializeToString(self) -> bytes:  # noqa: N802  (TensorFlow's name)
        return frame(self.to_data(), FORMAT)

    def ParseFromString(self, data: bytes, source: str = "a meta graph") -> None:  # noqa: N802
        self._body = _check_body(unframe(data, FORMAT, source), source)
        self._signatures = None

    @classmethod
    def FromString(cls, data: bytes) -> "MetaGraphDef":  # noqa: N802
        m = cls()
        m.ParseFromString(data)
        return m

    def __repr__(self) -> str:
        return (f"<collflow MetaGraphDef: {len(self.nodes)} ops, collections {sorted(self.collection_def)}, "
                f"signatures {sorted(self.signature_def)}>")


def frame(body: Any, fmt: str) -> bytes:
    """`body` as a header line ({"format", "version", "size", "crc32"}) and compact JSON."""
    data = json.dumps(body, separators=(",", ":"), allow_nan=True).encode("utf-8")
    head = json.dumps({"format": fmt, "version": VERSION, "size": len(data), "crc32": zlib.crc32(data)})
    return head.encode("utf-8") + b"\n" + data


def unframe(data: bytes, fmt: str, source: str) -> Any:
    """The body `frame` wrote, checked (DataLossError for another format, a damaged or cut file)."""
    head, sep, body = data.partition(b"\n")
    try:
        h = json.loads(head.decode("utf-8")) if sep else None
    except (UnicodeDecodeError, ValueError):
        h = None
    if not isinstance(h, dict) or h.get("format") != fmt:
        raise DataLossError(
            f"{source} is not a collflow {fmt.split('.')[-1]} file (no {fmt} header): collflow reads the meta graphs "
            "and SavedModels collflow writes (Saver.save's .meta files, export_meta_graph, SavedModelBuilder); "
            "TensorFlow's protobuf files are not supported (docs/tf1_compat.md)")
    if h.get("version") != VERSION:
        raise DataLossError(f"{source} has format version {h.get('version')}; this collflow reads version {VERSION}")
    if len(body) != h.get("size") or zlib.crc32(body) != h.get("crc32"):
        raise DataLossError(f"{source} is damaged: its body has {len(body)} bytes (header says {h.get('size')}) "
                            "or fails its CRC-32 check")
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise DataLossError(f"{source} is damaged: {e}") from None


def _check_body(doc: Any, source: str) -> Dict[str, Any]:
    if not isinstance(doc, dict) or not isinstance(doc.get("graph"), dict):
        raise DataLossError(f"{source} is damaged: it has no graph")
    return doc


def read_meta_graph_file(filename: str) -> MetaGraphDef:
    """The MetaGraphDef in `filename` (TF1's tf.train.read_meta_graph_file... in meta_graph)."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise NotFoundError(f"meta graph file {filename!r} does not exist") from None
    except OSError as e:
        raise NotFoundError(f"cannot read meta graph file {filename!r}: {e}") from None
    m = MetaGraphDef()
    m.ParseFromString(data, source=f"meta graph file {filename!r}")
    return m


# -- export ----------------------------------------------------------------------------------------

def _scoped(name: str, scope: Optional[str]) -> Optional[str]:
    """`name` relative to export scope `scope` (None when outside it)."""
    if not scope:
        return name
    prefix = scope.rstrip("/") + "/"
    return name[len(prefix):] if name.startswith(prefix) else None


def _context_table(ops: Sequence[_g.Operation]) -> Tuple[Dict[int, int], List[Dict[str, Any]]]:
    index: Dict[int, int] = {}
    table: List[Dict[str, Any]] = []

    def add(ctx: Any) -> Optional[int]:
        if ctx is None:
            return None
        if id(ctx) in index:
            return index[id(ctx)]
        outer = add(ctx.outer)
        kind = getattr(ctx, "kind", None) or type(ctx).__name__
        index[id(ctx)] = len(table)
        table.append({"kind": kind, "outer": outer})
        return index[id(ctx)]
    for op in ops:
        add(op._ctx)
    return index, table


def _node(op: _g.Operation, rename: Any, ctx_index: Dict[int, int], clear_devices: bool) -> Dict[str, Any]:
    attrs: Dict[str, Any] = {}
    dropped: List[str] = []
    opaque = None
    for k, v in op.attrs.items():
        try:
            attrs[k] = encode(v)
        except Unencodable as e:
            if (op.type, k) in _CONSTRUCTION_ONLY or k.startswith("_"):
                dropped.append(k)
            elif opaque is None:
                opaque = f"its attribute {k!r} ({e})"
    node: Dict[str, Any] = {
        "name": rename(op.name), "op": op.type,
        "inputs": [rename(t.op.name) + f":{t.value_index}" for t in op.inputs],
        "control_inputs": [rename(c.name) for c in op.control_inputs],
        "device": None if clear_devices else op.device,
        "outputs": [[t.dtype.name, encode_shape(t.shape)] for t in op.outputs],
        "context": None if op._ctx is None else ctx_index[id(op._ctx)]}
    if opaque is not None:
        node["opaque"] = opaque
    else:
        node["attrs"] = attrs
        if dropped:
            node["dropped"] = dropped
    return node


def _member(v: Any, rename: Any) -> Dict[str, Any]:
    """One collection member as data (Unencodable for what cannot be written)."""
    if isinstance(v, Variable):
        return {"variable": {"handle": rename(v.op.name), "initializer": rename(v.initializer.name),
                             "snapshot": rename(v._snapshot.op.name) + f":{v._snapshot.value_index}",
                             "initial_value": rename(v.initial_value.op.name) + f":{v.initial_value.value_index}",
                             "trainable": bool(v.trainable)}}
    if isinstance(v, _g.Tensor):
        return {"tensor": rename(v.op.name) + f":{v.value_index}"}
    if isinstance(v, _g.Operation):
        return {"op": rename(v.name)}
    if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
        return {"seq": [_member(x, rename) for x in v], "tuple": isinstance(v, tuple)}
    if v is None or isinstance(v, (bool, int, float, str, bytes)):
        return {"value": encode(v)}
    raise Unencodable(f"a {type(v).__module__}.{type(v).__qualname__}")


def _outside(name: str) -> str:
    raise Unencodable(f"it refers to {name!r}, outside the export scope")


def export_meta_graph(filename: Optional[str] = None, meta_info_def: Any = None, graph_def: Any = None,
                      saver_def: Optional[Mapping[str, Any]] = None, collection_list: Optional[Sequence[str]] = None,
                      as_text: bool = False, graph: Optional[_g.Graph] = None, export_scope: Optional[str] = None,
                      clear_devices: bool = False, clear_extraneous_attributes: bool = False,
                      strip_default_attrs: bool = False, save_debug_info: bool = False,
                      signature_def: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> MetaGraphDef:
    """Writes the graph (default: the default graph), its collections (all, or those named)
    and `saver_def` (a Saver's, see Saver.export_meta_graph) to `filename` when given, and
    returns the MetaGraphDef (TF1's tf.train.export_meta_graph).  export_scope: only the ops
    under that name scope, with the scope taken off their names.  as_text,
    clear_extraneous_attributes, strip_default_attrs and save_debug_info change nothing (the
    file is JSON text either way)."""
    if graph_def is not None:
        raise UnimplementedError("export_meta_graph(graph_def=...): collflow exports a Graph (graph=), not a GraphDef")
    g = graph or _g.get_default_graph()
    ops = g.get_operations()
    if export_scope:
        ops = [op for op in ops if _scoped(op.name, export_scope) is not None]

    def rename(name: str) -> str:
        r = _scoped(name, export_scope)
        return r if r is not None else _outside(name)
    ctx_index, contexts = _context_table(ops)
    nodes = []
    for op in ops:
        try:
            nodes.append(_node(op, rename, ctx_index, clear_devices))
        except Unencodable as e:
            raise InvalidArgumentError(f"export_meta_graph: op {op.name!r} cannot be exported: {e}") from None
    opaque = [n["name"] for n in nodes if "opaque" in n]
    if opaque:
        log.info("export_meta_graph: %d op(s) hold Python objects and are exported as stand-ins that fail when "
                 "run after import: %s", len(opaque), ", ".join(opaque[:5]) + (", ..." if len(opaque) > 5 else ""))
    collections: Dict[str, list] = {}
    skipped = []
    keys = g.get_all_collection_keys() if collection_list is None else list(collection_list)
    for key in keys:
        members = []
        for v in g.get_collection(key):
            try:
                members.append(_member(v, rename))
            except Unencodable as e:
                if export_scope and "outside the export scope" in str(e):
                    continue
                skipped.append(f"{key} ({e})")
        if members:
            collections[str(key)] = members
    if skipped:
        log.info("export_meta_graph: collection members not exported: %s", "; ".join(sorted(set(skipped))))
    info = dict(meta_info_def or {})
    info.setdefault("tensorflow_version", "1.15.0")
    import collflow
    info.setdefault("collflow_version", getattr(collflow, "__version__", "unknown"))
    info.setdefault("tags", [])
    m = MetaGraphDef({"meta_info_def": info, "graph": {"nodes": nodes, "contexts": contexts},
                      "collections": collections, "saver_def": dict(saver_def) if saver_def else None,
                      "signature_def": {}})
    m.signature_def.update({str(k): v if isinstance(v, SignatureDef) else SignatureDef.from_data(v)
                            for k, v in (signature_def or {}).items()})
    if filename:
        write_meta_graph(m, filename)
    return m


def write_meta_graph(m: Any, filename: str) -> None:
    """Writes MetaGraphDef `m` (or its serialized bytes) to `filename` atomically (a clear
    error for an unwritable place)."""
    d = os.path.dirname(os.path.abspath(filename))
    try:
        os.makedirs(d, exist_ok=True)
        atomic_write_bytes(filename, m if isinstance(m, bytes) else m.SerializeToString())
    except OSError as e:
        raise InvalidArgumentError(f"cannot write meta graph file {filename!r}: {e}") from None


# -- import ------------------------------------------------------------------------------------------

class _Importer:
    """Rebuilds a meta graph's ops in a graph, under a name scope."""

    def __init__(self, g: _g.Graph, scope: Optional[str], clear_devices: bool, source: str):
        self.g = g
        self.prefix = (scope.rstrip("/") + "/") if scope else ""
        self.clear_devices = clear_devices
        self.source = source
        self.ops: Dict[str, _g.Operation] = {}   # name in the file -> op made

    def tensor(self, name: str) -> _g.Tensor:
        op_name, _, idx = name.rpartition(":")
        op = self.ops.get(op_name)
        if op is None:
            raise _Forward(name)
        try:
            return op.outputs[int(idx)]
        except (IndexError, ValueError):
            raise DataLossError(f"{self.source}: tensor {name!r} does not exist (op {op_name!r} has "
                                f"{len(op.outputs)} outputs)") from None

    def op(self, name: str) -> _g.Operation:
        try:
            return self.ops[name]
        except KeyError:
            raise DataLossError(f"{self.source}: op {name!r} is referred to but not in the graph") from None

    def run(self, nodes: List[Dict[str, Any]], contexts: List[Dict[str, Any]]) -> None:
        g = self.g
        ctxs: List[ImportedContext] = []
        for c in contexts:
            outer = c.get("outer")
            ctxs.append(ImportedContext(g, str(c.get("kind")), ctxs[outer] if outer is not None else None))
        later: List[Tuple[_g.Operation, Dict[str, Any]]] = []
        prev_ctx = g._get_control_flow_context()
        g._set_control_flow_context(None)
        try:
            with g.as_default(), g.name_scope(None), g.control_dependencies(None):
                for node in nodes:
                    later.append((self._make(node, ctxs), node))
                for op, node in later:
                    self._finish(op, node)
        finally:
            g._set_control_flow_context(prev_ctx)

    def _make(self, node: Dict[str, Any], ctxs: List[ImportedContext]) -> _g.Operation:
        name = str(node["name"])
        inputs: List[Optional[_g.Tensor]] = []
        for tname in node["inputs"]:
            try:
                inputs.append(self.tensor(tname))
            except _Forward:
                inputs.append(None)  # a loop's back edge: wired once its op exists
        specs = [(_dt.as_dtype(d), decode_shape(s)) for d, s in node["outputs"]]
        if "opaque" in node:
            op_type, attrs = "MetaGraphOpaque", {"output_specs": specs, "original_type": node["op"],
                                                 "reason": node["opaque"]}
        else:
            op_type, attrs = node["op"], {}
            for k, v in node.get("attrs", {}).items():
                try:
                    attrs[k] = decode(v, self.tensor)
                except _Forward:
                    pass  # a tensor made later (a Merge's predicate): set in _finish
        if any(t is None for t in inputs):
            # stand in with an input of the same dtype until the back edge's op exists
            known = [t for t in inputs if t is not None]
            if not known:
                raise DataLossError(f"{self.source}: op {name!r} reads only ops that come after it")
            inputs = [t if t is not None else known[0] for t in inputs]
        full = self.prefix + name
        if full in self.g._ops_by_name:
            full = self.g.unique_name(full)
        if op_type == "VarHandle" and self.prefix and "shared_name" in attrs:
            # two imports of one model under two scopes keep two variables
            attrs["shared_name"] = self.prefix + str(attrs["shared_name"])
        try:
            op = self.g.create_op(op_type, inputs, attrs, name=full + "/")
        except (InvalidArgumentError, NotFoundError) as e:
            stand_in = next((t.op for t in inputs if t.op.type == "MetaGraphOpaque"), None)
            if stand_in is None:
                raise DataLossError(f"{self.source}: cannot rebuild op {name!r} ({node['op']}): {e}") from None
            # an op that checks its input's producer (an iterator's get_next) follows it
            op = self.g.create_op("MetaGraphOpaque", inputs, {
                "output_specs": specs, "original_type": node["op"],
                "reason": f"its input {stand_in.name!r} ({stand_in.attrs['original_type']}), itself imported without "
                          f"{stand_in.attrs['reason']}"}, name=full + "/")
        op.device = None if self.clear_devices else node.get("device")
        ctx = node.get("context")
        if ctx is not None:
            op._ctx = ctxs[ctx]
            ctxs[ctx].ops.append(op)
        for t, (dt, shape) in zip(op.outputs, specs):
            if t.dtype != dt:
                raise DataLossError(f"{self.source}: op {name!r} ({node['op']}) makes {t.dtype.name} as output "
                                    f"{t.value_index}, the file says {dt.name}")
            try:
                t.set_shape(shape)
            except (ValueError, InvalidArgumentError):
                pass  # the file's shape came from an earlier build: this build's is as valid
        self.ops[name] = op
        return op

    def _finish(self, op: _g.Operation, node: Dict[str, Any]) -> None:
        for i, tname in enumerate(node["inputs"]):
            t = self.tensor_or_fail(tname)
            if op.inputs[i] is not t:
                op._update_input(i, t)
        for k, v in node.get("attrs", {}).items():
            if k not in op.attrs:
                op.attrs[k] = decode(v, self.tensor_or_fail)
        for c in node["control_inputs"]:
            op._add_control_input(self.op(c))

    def tensor_or_fail(self, name: str) -> _g.Tensor:
        try:
            return self.tensor(name)
        except _Forward:
            raise DataLossError(f"{self.source}: tensor {name!r} is referred to but not in the graph") from None


class _Forward(Exception):
    """A reference to an op not made yet."""


def _members(imp: _Importer, data: Dict[str, Any], variables: Dict[str, Variable]) -> Any:
    if "variable" in data:
        d = data["variable"]
        key = d["handle"]
        v = variables.get(key)
        if v is None:
            v = Variable._from_graph(imp.op(key), imp.op(d["initializer"]), imp.tensor_or_fail(d["snapshot"]),
                                     imp.tensor_or_fail(d["initial_value"]), d.get("trainable", True))
            variables[key] = v
        return v
    if "tensor" in data:
        return imp.tensor_or_fail(data["tensor"])
    if "op" in data:
        return imp.op(data["op"])
    if "seq" in data:
        items = [_members(imp, x, variables) for x in data["seq"]]
        return tuple(items) if data.get("tuple") else items
    if "value" in data:
        return decode(data["value"], imp.tensor_or_fail)
    raise DataLossError(f"{imp.source}: unknown collection member {sorted(data)}")


def import_scoped(meta: MetaGraphDef, graph: Optional[_g.Graph] = None, import_scope: Optional[str] = None,
                  clear_devices: bool = False, source: str = "the meta graph",
                  ) -> Tuple[_Importer, Dict[str, Variable]]:
    """Rebuilds `meta`'s ops and collections in `graph` (default: the default graph); returns
    the importer (its `ops`: name in the file -> op) and the variables ({handle name: Variable})."""
    g = graph or _g.get_default_graph()
    imp = _Importer(g, import_scope, clear_devices, source)
    body = meta.to_data()
    imp.run(body["graph"].get("nodes", []), body["graph"].get("contexts", []))
    variables: Dict[str, Variable] = {}
    for key, members in body.get("collections", {}).items():
        for data in members:
            g.add_to_collection(key, _members(imp, data, variables))
    return imp, variables


def import_meta_graph(meta_graph_or_file: Any, clear_devices: bool = False, import_scope: Optional[str] = None,
                      **saver_kwargs: Any) -> Any:
    """Adds a meta graph's ops and collections to the default graph and returns a Saver of its
    variables (None if it has none), as TF1's tf.train.import_meta_graph: restore a checkpoint
    with it, then run tensors found by name (graph.get_tensor_by_name) or collection.

    meta_graph_or_file: a file Saver.save or export_meta_graph wrote, or a MetaGraphDef.
    import_scope: a name scope for every imported op (the Saver still reads the checkpoint's
    names).  clear_devices: drop the ops' device placements.  saver_kwargs go to the Saver.
    """
    from .saver import Saver
    if isinstance(meta_graph_or_file, MetaGraphDef):
        meta, source = meta_graph_or_file, "the meta graph"
    else:
        meta = read_meta_graph_file(str(meta_graph_or_file))
        source = f"meta graph file {str(meta_graph_or_file)!r}"
    imp, variables = import_scoped(meta, None, import_scope, clear_devices, source)
    sdef = meta.saver_def
    if sdef:
        var_list = {}
        for key, handle in sdef.get("variables", {}).items():
            v = variables.get(handle)
            if v is None:
                raise DataLossError(f"{source}: the Saver's variable {key!r} ({handle}) is not among the "
                                    "graph's variables")
            var_list[key] = v
        options = {k: sdef[k] for k in ("max_to_keep", "keep_checkpoint_every_n_hours", "pad_step_number",
                                        "reshape", "save_rng") if k in sdef}
        options.update(saver_kwargs)
        return Saver(var_list=var_list, **options) if var_list else None
    # no Saver recorded: one of the global variables, under the names they were saved with
    handles = [m["variable"]["handle"] for m in meta.collection_def.get(_g.GraphKeys.GLOBAL_VARIABLES, [])
               if "variable" in m]
    if not handles:
        log.info("import_meta_graph: the graph has no variables, so no Saver was made")
        return None
    by_key = {}
    for h in handles:
        v = variables[h]
        key = str(v.op.attrs.get("shared_name", v.op.name))
        by_key[key[len(imp.prefix):] if imp.prefix and key.startswith(imp.prefix) else key] = v
    return Saver(var_list=by_key, **saver_kwargs)
