"""Raw TF ops between the layers of a functional Model (TF 1.15's automatic op wrapping).

`Model(inputs, outputs)` walks from its outputs back to its inputs through each tensor's
Keras history.  A tensor no layer made, but whose op reads (transitively) tensors that do, is
the output of a raw op (`tf.nn.relu(h) * 2.0`, `tf.concat`, `h[:, :4]`, ...):
`wrap_raw_ops` wraps each such op into a `TensorFlowOpLayer` named `tf_op_layer_<op name>`,
as TF does, and gives the op's outputs a history so the walk goes on.  The op layer re-creates
the op (same type and attributes, new inputs, shapes inferred afresh) when the model is
applied to new tensors or rebuilt from its config.

Inputs of the op that do not depend on the model's inputs (constants, variables, other
tensors) are captured as they are (TF evaluates them to constants when it wraps the op; a
captured variable here keeps being read).  Saving the architecture stores each op layer's
op type and attributes (collflow's own, JSON-encoded as meta graphs hold them) and its
captured inputs' values, evaluated then.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Set

import numpy as np

from ..graph import graph as _g
from ..graph import nest
from .base_layer import Layer
from .layers import history_of, register_call

__all__ = ["TensorFlowOpLayer"]

PREFIX = "tf_op_layer_"

# random ops TF wraps too (re-created with the same seeds); the other stateful ops are refused
_RANDOM = {"RandomNormal", "TruncatedNormal", "RandomUniform", "RandomUniformInt", "RandomShuffle", "RandomGamma",
           "Multinomial", "DropoutMask"}
# graph-building constructs whose ops only mean something together (a cond, a loop, a custom
# gradient's closure over the original tensors): one op of them cannot be re-created alone
_CONSTRUCTS = {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "CustomGradient"}


def _refuse(op: _g.Operation, why: str) -> ValueError:
    return ValueError(f"Cannot use the TF op {op.name!r} ({op.type}) between the layers of a functional Model: {why}. "
                      "Wrap the computation in a `tf.keras.layers.Lambda` layer instead.")


def _holds_graph_element(v: Any) -> bool:
    if isinstance(v, (_g.Tensor, _g.Operation)):
        return True
    if isinstance(v, (list, tuple)):
        return any(_holds_graph_element(e) for e in v)
    if isinstance(v, dict):
        return any(_holds_graph_element(e) for e in v.values())
    return False


def _check_wrappable(op: _g.Operation) -> None:
    if op.type in _CONSTRUCTS or op._ctx is not None:
        raise _refuse(op, "it belongs to a control-flow construct (tf.cond, tf.while_loop or a custom gradient)")
    if op.stateful and op.type not in _RANDOM:
        raise _refuse(op, "it is stateful (it changes or reads state outside the model)")
    if _holds_graph_element(op.attrs):
        raise _refuse(op, "an attribute of it refers to another tensor or op of the graph")


class TensorFlowOpLayer(Layer):
    """One raw TF op as a Keras layer: it re-creates the op (its type and attributes) on the
    tensors it is called on, with the captured inputs (`constants`, by input position) put
    back in their places."""

    def __init__(self, node_def: Dict[str, Any], constants: Optional[Dict[Any, Any]] = None,
                 name: Optional[str] = None, trainable: bool = True, dtype: Any = None, **kwargs: Any):
        super().__init__(trainable=trainable, name=PREFIX + str(name or node_def["name"]), dtype=dtype, **kwargs)
        self.node_def = dict(node_def)
        self.op_type: str = str(node_def["op"])
        attrs = node_def.get("attrs")
        if attrs is None:  # a config: collflow's encoded attributes (TF's NodeDef has others)
            if "collflow_attr" not in node_def:
                raise ValueError(f"TensorFlowOpLayer {self.name}: its config holds a TensorFlow NodeDef "
                                 f"({self.op_type}), which collflow cannot rebuild (only op layers saved by collflow "
                                 "load). Rebuild the model in code and use load_weights.")
            from ..train.meta_graph_codec import decode
            attrs = {k: decode(v, _no_tensor) for k, v in node_def["collflow_attr"].items()}
        self.attrs: Dict[str, Any] = dict(attrs)
        self.constants: Dict[int, Any] = {int(k): _constant_value(v) for k, v in (constants or {}).items()}

    @classmethod
    def wrap(cls, op: _g.Operation, depends: Callable[[_g.Tensor], bool]) -> "TensorFlowOpLayer":
        """The layer for graph op `op`; inputs `depends` says are not model-dependent are captured."""
        _check_wrappable(op)
        constants = {i: t for i, t in enumerate(op.inputs) if not depends(t)}
        node_def = {"name": op.name, "op": op.type, "input": [_input_name(t) for t in op.inputs],
                    "attrs": dict(op.attrs)}
        layer = cls(node_def, name=op.name)
        layer.constants = constants
        layer.built = True
        ins = [t for i, t in enumerate(op.inputs) if i not in constants]
        outs = list(op.outputs)
        register_call(layer, ins if len(ins) != 1 else ins[0], outs if len(outs) != 1 else outs[0])
        return layer

    def call(self, inputs: Any, **kwargs: Any) -> Any:
        ins: List[Any] = [_g.convert_to_tensor(t) for t in nest.flatten(inputs)]
        g = ins[0].graph if ins else _g.get_default_graph()
        full: List[Any] = []
        it = iter(ins)
        for i in range(len(ins) + len(self.constants)):
            full.append(self.constants[i] if i in self.constants else next(it))
        with g.as_default():
            full = [_g.convert_to_tensor(t) for t in full]
            # the original op's control inputs and device are not carried over (nor are they by TF's op layer)
            op = g.create_op(self.op_type, full, dict(self.attrs), name=self.node_def["name"].split("/")[-1])
        return op.outputs[0] if len(op.outputs) == 1 else list(op.outputs)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        flat = [_g.convert_to_tensor(t) for t in nest.flatten(inputs)]
        g = flat[0].graph if flat else _g.get_default_graph()
        with g.as_default(), g.name_scope(self.name):
            out = self.call(inputs)
        register_call(self, inputs, out)
        return out

    def compute_output_shape(self, input_shape: Any) -> Any:
        raise NotImplementedError("TensorFlowOpLayer: the output shape is inferred by calling the layer")

    def get_config(self) -> Dict[str, Any]:
        """TF's layout ({"name": op name, "node_def", "constants"}) with collflow's attributes;
        captured inputs are stored as their values (evaluated now, as TF does when it wraps)."""
        from ..train.meta_graph_codec import Unencodable, encode
        attrs: Dict[str, Any] = {}
        for k, v in self.attrs.items():
            try:
                attrs[k] = encode(v)
            except Unencodable as e:
                if k.startswith("_"):  # graph-building bookkeeping: the op runs without it
                    continue
                raise ValueError(f"Cannot save the architecture of op layer {self.name} ({self.op_type}): its "
                                 f"attribute {k!r} is {e}. Save the weights with model.save_weights and rebuild "
                                 "the model in code, or wrap the op in a Lambda layer.") from None
        node_def = {"name": self.node_def["name"], "op": self.op_type,
                    "input": list(self.node_def.get("input", [])), "collflow_attr": attrs}
        return {"name": self.name[len(PREFIX):], "trainable": self.trainable, "dtype": "float32",
                "node_def": node_def, "constants": {str(i): self._constant_config(i, v)
                                                    for i, v in sorted(self.constants.items())}}

    def _constant_config(self, index: int, v: Any) -> Any:
        if isinstance(v, _g.Tensor):
            v = _evaluate(v, f"op layer {self.name}: its input {index} ({v.name})")
        a = np.asarray(v)
        if a.dtype.kind in "biuf":
            return {"class_name": "__numpy__", "config": {"value": a.tolist(), "dtype": a.dtype.name}}
        from ..train.meta_graph_codec import encode
        return encode(a)

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "TensorFlowOpLayer":
        cfg = dict(config)
        return cls(cfg.pop("node_def"), constants=cfg.pop("constants", None), name=cfg.pop("name", None),
                   trainable=cfg.pop("trainable", True))


def _input_name(t: _g.Tensor) -> str:
    """A NodeDef's input: "op" for output 0, "op:k" for output k (TF's form)."""
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def _no_tensor(name: str) -> Any:
    raise ValueError(f"an op layer's attribute refers to tensor {name!r}, which a config cannot hold")


def _constant_value(v: Any) -> Any:
    """A captured input from a config (TF's {"class_name": "__numpy__"} or a codec value) or kept as given."""
    if isinstance(v, dict) and v.get("class_name") == "__numpy__":
        return np.asarray(v["config"]["value"], dtype=np.dtype(v["config"]["dtype"]))
    if isinstance(v, dict) and len(v) == 1 and next(iter(v)).startswith("$"):
        from ..train.meta_graph_codec import decode
        return decode(v, _no_tensor)
    return v


def _evaluate(t: _g.Tensor, what: str) -> np.ndarray:
    """A captured tensor's value: a Const's own, else run in Keras's session."""
    if t.op.type == "Const":
        return np.asarray(t.op.attrs["value"], dtype=t.dtype.np)
    from . import backend as K
    try:
        return np.asarray(K.get_session().run(t))
    except Exception as e:  # noqa: BLE001  (any failure: the value cannot be known without data)
        raise ValueError(f"Cannot save {what}: its value cannot be computed without the model's data ({e}). Save "
                         "the weights with model.save_weights and rebuild the model in code.") from None


def wrap_raw_ops(outputs: List[_g.Tensor], stop: Set[_g.Tensor]) -> None:
    """Gives every tensor on the paths from `outputs` back to the model inputs `stop` a Keras
    history, wrapping the raw ops among them into TensorFlowOpLayers; raises "Graph
    disconnected" for a tensor that is neither made by a layer nor depends on one."""
    memo: Dict[int, bool] = {}

    def depends(t: _g.Tensor) -> bool:
        """Does t (transitively) read a model input or a tensor with Keras history?"""
        if id(t.op) in memo:
            return memo[id(t.op)]
        # iterative: raw-op chains can be deeper than Python's recursion limit
        stack = [(t.op, False)]
        while stack:
            op, expanded = stack.pop()
            if id(op) in memo and not expanded:
                continue
            if any(o in stop or history_of(o) is not None for o in op.outputs):
                memo[id(op)] = True
                continue
            if not expanded:
                memo[id(op)] = False  # provisional: a loop's back edge reads the op itself
                stack.append((op, True))
                stack += [(i.op, False) for i in op.inputs if id(i.op) not in memo]
            else:
                memo[id(op)] = any(memo.get(id(i.op), False) for i in op.inputs)
        return memo[id(t.op)]

    seen: Set[int] = set()
    todo = list(outputs)
    while todo:
        t = _g.convert_to_tensor(todo.pop())
        if t in stop or id(t) in seen:
            continue
        seen.add(id(t))
        rec = history_of(t)
        if rec is None:
            if not depends(t):
                raise ValueError(f"Graph disconnected: cannot obtain value for tensor {t.name}: it is not made by a "
                                 "Keras layer from the model's inputs")
            TensorFlowOpLayer.wrap(t.op, depends)
            rec = history_of(t)
        todo += [_g.convert_to_tensor(i) for i in rec[1]]
