"""TensorFlow's object graph for object-based checkpoints: what is trackable, how its children
are named and numbered, and the TrackableObjectGraph proto stored under
`_CHECKPOINTABLE_OBJECT_GRAPH`.

The protocol is one method: an object that holds state defines

    _checkpoint_children(self) -> List[Tuple[str, Any]]    # ordered (local name, child)

(tf.train.Checkpoint, tf.Module, Keras layers and models, optimizers).  Leaves are collflow
Variables (saved as `VARIABLE_VALUE`) and ConstantValue (a value kept as a Python number,
e.g. a Keras optimizer's hyperparameters: saved, and accepted but not assigned on restore).
Python lists/tuples/dicts holding trackables are nodes of their own, as TF's ListWrapper and
_DictWrapper are (children "0", "1", ... or the dict's keys).  An optimizer's slots are
found through `get_slot_names()` (or `_checkpoint_slot_names()`) and `get_slot(var, name)`.

Numbering follows TF: a breadth-first walk from the root, each object numbered when first
reached; then the slot variables, optimizer by optimizer, slot name by slot name, original
variable by node number.  A key is the path of escaped local names ('.' -> '..',
'/' -> '.S') plus `/.ATTRIBUTES/VARIABLE_VALUE`; a slot's is `<variable path>/.OPTIMIZER_SLOT/
<optimizer path>/<slot>/.ATTRIBUTES/VARIABLE_VALUE`.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ..graph.variables import Variable
from ..summary.proto import Message

__all__ = ["OBJECT_GRAPH_KEY", "VARIABLE_VALUE", "ConstantValue", "TrackableObjectGraph", "children_of",
           "is_trackable", "escape_local_name", "checkpoint_key", "slot_key", "ObjectGraph", "walk",
           "attribute_children", "weight_children", "ChildGroup", "cached_node"]

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
VARIABLE_VALUE = "VARIABLE_VALUE"
_ESCAPE = "."
_ATTRIBUTES = _ESCAPE + "ATTRIBUTES"
_OPTIMIZER_SLOT = _ESCAPE + "OPTIMIZER_SLOT"


# -- the proto (tensorflow/core/protobuf/trackable_object_graph.proto) ---------------------------

class ObjectReference(Message):
    """TrackableObjectGraph's child reference: (node_id, local_name)."""
    FIELDS = ((1, "node_id", "int32", 0), (2, "local_name", "string", ""))


class SerializedTensor(Message):
    """A saved attribute of a node: (name, full_name, checkpoint_key)."""
    FIELDS = ((1, "name", "string", ""), (2, "full_name", "string", ""), (3, "checkpoint_key", "string", ""))


class SlotVariableReference(Message):
    """An optimizer slot: (original variable's node, slot name, slot variable's node)."""
    FIELDS = ((1, "original_variable_node_id", "int32", 0), (2, "slot_name", "string", ""),
              (3, "slot_variable_node_id", "int32", 0))


class RegisteredSaver(Message):
    """A node's registered saver (name, object_name); kept for TF's files."""
    FIELDS = ((1, "name", "string", ""), (2, "object_name", "string", ""))


class BoolValue(Message):
    """google.protobuf.BoolValue."""
    FIELDS = ((1, "value", "bool", False),)


class TrackableObject(Message):
    """One node of the object graph: children, attributes, slot variables."""
    FIELDS = ((1, "children", [ObjectReference], None), (2, "attributes", [SerializedTensor], None),
              (3, "slot_variables", [SlotVariableReference], None), (4, "registered_saver", RegisteredSaver, None),
              (5, "has_checkpoint_values", BoolValue, None))


class TrackableObjectGraph(Message):
    """TF's TrackableObjectGraph proto, stored under _CHECKPOINTABLE_OBJECT_GRAPH."""
    FIELDS = ((1, "nodes", [TrackableObject], None),)


# -- what is trackable -----------------------------------------------------------------------

class ConstantValue:
    """A checkpointed value that lives in Python, not in a variable (a Keras optimizer's
    hyperparameter): saved as a scalar of `dtype`; a restore accepts its value unassigned."""

    def __init__(self, value: Any, dtype: Any = np.float32, full_name: str = ""):
        self.value = value
        self.dtype = np.dtype(dtype)
        self.full_name = full_name

    def __repr__(self) -> str:
        return f"ConstantValue({self.value!r}, {self.dtype.name})"


def is_trackable(obj: Any) -> bool:
    """Whether `obj` is a node of an object graph (see the module doc)."""
    if isinstance(obj, (Variable, ConstantValue)) or hasattr(type(obj), "_checkpoint_children"):
        return True
    if isinstance(obj, (list, dict)):
        return True
    if isinstance(obj, tuple):
        return any(is_trackable(x) for x in obj)
    return False


def holds_state(obj: Any) -> bool:
    """Trackable, and not a container without trackables (what Keras attribute walks track)."""
    if isinstance(obj, (list, tuple)):
        return any(holds_state(x) for x in obj)
    if isinstance(obj, dict):
        return any(holds_state(x) for x in obj.values())
    return is_trackable(obj)


def children_of(obj: Any) -> List[Tuple[str, Any]]:
    """The ordered (local name, child) pairs of a trackable object."""
    if isinstance(obj, (Variable, ConstantValue)):
        return []
    method = getattr(obj, "_checkpoint_children", None)
    if method is not None and not isinstance(obj, (list, tuple, dict)):
        return [(str(n), c) for n, c in method() if c is not None]
    if isinstance(obj, (list, tuple)):
        return [(str(i), x) for i, x in enumerate(obj) if is_trackable(x)]
    if isinstance(obj, dict):
        out = []
        for k, v in obj.items():
            if not is_trackable(v):
                continue
            if not isinstance(k, str):
                raise ValueError(f"Unable to save the object {obj!r} (a dictionary wrapper constructed automatically "
                                 f"on attribute assignment): its key {k!r} is not a string; only string keys are "
                                 "supported in object-based checkpoints")
            out.append((k, v))
        return out
    return []


def attribute_children(obj: Any, exclude: Any = (), only_state: bool = False) -> List[Tuple[str, Any]]:
    """(attribute name, value) for the trackable attributes of `obj` in assignment order
    (TF's AutoTrackable), leaving out names in `exclude`; only_state: skip containers that
    hold no trackables (for classes whose own attributes are lists of other things)."""
    keep = holds_state if only_state else is_trackable
    return [(k, v) for k, v in vars(obj).items() if k not in exclude and v is not obj and keep(v)]


class ChildGroup:
    """A node for an object TF has where collflow has none (a Keras RNN layer's cell holding
    its weights): the children are given."""

    def __init__(self) -> None:
        self.children: List[Tuple[str, Any]] = []

    def _checkpoint_children(self) -> List[Tuple[str, Any]]:
        return list(self.children)


def cached_node(owner: Any, name: str, factory: Callable[[], Any] = list) -> Any:
    """The same placeholder node of `owner` from walk to walk (a list TF tracks empty, a
    ChildGroup), kept in owner.__dict__ so a restore's matching sees one object."""
    return owner.__dict__.setdefault("_checkpoint_nodes", {}).setdefault(name, factory())


def weight_children(weights: Any) -> List[Tuple[str, Any]]:
    """(the name a weight was made with: its last name component, weight) for a layer's weights."""
    return [(w.op.name.rsplit("/", 1)[-1], w) for w in weights if isinstance(w, Variable)]


def optimizer_slot_names(obj: Any) -> Optional[List[str]]:
    """The slot names of an optimizer in TF's checkpoint order (None: not an optimizer)."""
    own = getattr(obj, "_checkpoint_slot_names", None)
    if own is not None:
        return list(own())
    if isinstance(obj, (list, tuple, dict, Variable)) or not callable(getattr(obj, "get_slot", None)):
        return None
    names = getattr(obj, "get_slot_names", None)
    return list(names()) if callable(names) else None


# -- naming ----------------------------------------------------------------------------------

def escape_local_name(name: str) -> str:
    """TF's escaping of a local name inside a key: '.' -> '..', '/' -> '.S'."""
    return name.replace(_ESCAPE, _ESCAPE + _ESCAPE).replace("/", _ESCAPE + "S")


def object_path(names: List[str]) -> str:
    """The escaped path of local names from the root ('model/layer-0/kernel')."""
    return "/".join(escape_local_name(n) for n in names)


def checkpoint_key(path: str, attribute: str = VARIABLE_VALUE) -> str:
    """A value's key in the bundle: '<path>/.ATTRIBUTES/VARIABLE_VALUE'."""
    return f"{path}/{_ATTRIBUTES}/{escape_local_name(attribute)}"


def slot_key(variable_path: str, optimizer_path: str, slot_name: str) -> str:
    """The object path of a slot variable (checkpoint_key adds the attribute)."""
    return f"{variable_path}/{_OPTIMIZER_SLOT}/{optimizer_path}/{escape_local_name(slot_name)}"


# -- the walk ----------------------------------------------------------------------------------

@dataclass
class ObjectGraph:
    """The live object graph as TF numbers it: `objects[i]` is node i; `paths[i]` its object
    path (escaped); `children[i]` its (local name, node id) pairs; `slots[i]` an optimizer
    node's (slot name, original node id, slot node id) triples."""

    objects: List[Any] = field(default_factory=list)
    paths: List[str] = field(default_factory=list)
    children: List[List[Tuple[str, int]]] = field(default_factory=list)
    slots: Dict[int, List[Tuple[str, int, int]]] = field(default_factory=dict)
    ids: Dict[int, int] = field(default_factory=dict)  # id(object) -> node id

    def node_of(self, obj: Any) -> Optional[int]:
        """The node id of a live object in this graph."""
        return self.ids.get(id(obj))

    def variables(self) -> List[Variable]:
        """The variables of the graph's nodes, in node order."""
        return [o for o in self.objects if isinstance(o, Variable)]

    def to_proto(self, full_name: Callable[[Any], str]) -> TrackableObjectGraph:
        """The proto TF writes: children, each leaf's VARIABLE_VALUE attribute, slot references,
        and has_checkpoint_values (a node with values or with a descendant that has some)."""
        proto = TrackableObjectGraph()
        for i, obj in enumerate(self.objects):
            node = proto.nodes.add()
            for name, child in self.children[i]:
                node.children.add(node_id=child, local_name=name)
            if isinstance(obj, (Variable, ConstantValue)):
                node.attributes.add(name=VARIABLE_VALUE, full_name=full_name(obj),
                                    checkpoint_key=checkpoint_key(self.paths[i]))
            for slot_name, orig, slot in self.slots.get(i, []):
                node.slot_variables.add(original_variable_node_id=orig, slot_name=slot_name,
                                        slot_variable_node_id=slot)
        has = [bool(n.attributes or n.slot_variables) for n in proto.nodes]
        parents: Dict[int, List[int]] = collections.defaultdict(list)
        for i, node in enumerate(proto.nodes):
            for c in node.children:
                parents[c.node_id].append(i)
        todo = [i for i, h in enumerate(has) if h]
        while todo:
            for p in parents.pop(todo.pop(), []):
                if not has[p]:
                    has[p] = True
                    todo.append(p)
        for node, h in zip(proto.nodes, has):
            node.has_checkpoint_values = BoolValue(value=h)
        return proto


def walk(root: Any) -> ObjectGraph:
    """Numbers the objects reachable from `root` as TF does (see the module doc)."""
    g = ObjectGraph()

    def add(obj: Any, path: str) -> int:
        g.ids[id(obj)] = len(g.objects)
        g.objects.append(obj)
        g.paths.append(path)
        g.children.append([])
        return len(g.objects) - 1

    add(root, "")
    queue = collections.deque([0])
    while queue:
        i = queue.popleft()
        seen = set()
        for name, child in children_of(g.objects[i]):
            if name in seen:
                continue  # one child per local name (the first), as TF's dict of children
            seen.add(name)
            j = g.ids.get(id(child))
            if j is None:
                j = add(child, (g.paths[i] + "/" if g.paths[i] else "") + escape_local_name(name))
                queue.append(j)
            g.children[i].append((name, j))
    # slot variables: appended after every other object, as TF's serialize_slot_variables
    n_plain = len(g.objects)
    for i in range(n_plain):
        opt = g.objects[i]
        names = optimizer_slot_names(opt)
        if not names:
            continue
        for slot_name in names:
            for j in range(n_plain):
                orig = g.objects[j]
                if not isinstance(orig, Variable):
                    continue
                try:
                    slot = opt.get_slot(orig, slot_name)
                except (AttributeError, KeyError, TypeError):
                    slot = None
                if slot is None:
                    continue
                if id(slot) in g.ids:
                    raise NotImplementedError(f"A slot variable was re-used as a dependency of a Trackable object: "
                                              f"{slot.name}. This is not supported in object-based checkpoints.")
                k = add(slot, slot_key(g.paths[j], g.paths[i], slot_name))
                g.slots.setdefault(i, []).append((slot_name, j, k))
    return g


def proto_paths(proto: TrackableObjectGraph) -> Dict[int, str]:
    """Node id -> a readable path ('(root).model.kernel') of a checkpoint's object graph."""
    out = {0: "(root)"}
    queue = collections.deque([0])
    while queue:
        i = queue.popleft()
        for c in proto.nodes[i].children:
            if c.node_id not in out:
                out[c.node_id] = f"{out[i]}.{c.local_name}"
                queue.append(c.node_id)
        for s in proto.nodes[i].slot_variables:
            if s.slot_variable_node_id not in out and s.original_variable_node_id in out:
                out[s.slot_variable_node_id] = (f"{out[s.original_variable_node_id]}'s state '{s.slot_name}' "
                                                f"for {out[i]}")
    return out


def match(root: Any, proto: TrackableObjectGraph) -> Dict[int, Any]:
    """Checkpoint node id -> live object, matched through the stored object graph from the
    root by local names (TF's restore); slot variables through their optimizer and original
    variable."""
    n = len(proto.nodes)
    found: Dict[int, Any] = {0: root}
    used = {id(root)}
    queue = collections.deque([0])
    while queue:
        i = queue.popleft()
        live = {}
        for name, child in children_of(found[i]):
            live.setdefault(name, child)
        for ref in proto.nodes[i].children:
            if ref.node_id in found or not 0 <= ref.node_id < n:
                continue
            obj = live.get(ref.local_name)
            if obj is None or id(obj) in used:
                continue
            found[ref.node_id] = obj
            used.add(id(obj))
            queue.append(ref.node_id)
    for i in list(found):
        opt = found[i]
        refs = proto.nodes[i].slot_variables
        if not refs or optimizer_slot_names(opt) is None:
            continue
        for s in refs:
            orig = found.get(s.original_variable_node_id)
            if orig is None or s.slot_variable_node_id in found:
                continue
            try:
                slot = opt.get_slot(orig, s.slot_name)
            except (AttributeError, KeyError, TypeError):
                slot = None
            if slot is not None:
                found[s.slot_variable_node_id] = slot
    return found
