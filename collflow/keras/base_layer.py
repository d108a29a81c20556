"""tf.keras.layers.Layer for user subclasses (TF1 graph mode): build(input_shape) with
add_weight, call(inputs[, training]), add_loss / add_update, get/set_weights.

The first call opens the layer's variable scope (its unique snake_case name: my_layer,
my_layer_1, ...) and builds; later calls reuse the weights.  A `training` argument of call()
that the caller leaves out is the learning phase."""
from __future__ import annotations

import inspect
import re
from typing import Any, Dict, List, Optional

from ..graph import graph as _g
from ..graph import nest
from ..graph.graph import GraphKeys
from ..graph.shape import TensorShape
from ..graph.variable_scope import get_variable, variable_scope
from . import backend as K
from . import mixed_precision as _mp
from .layers import _CallRecord, _input_shape_kwargs, _unique_name, mask_of, register_call, set_mask

__all__ = ["Layer"]


def _snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


class Layer(_CallRecord):
    """Base of user-defined Keras layers (see the module doc)."""

    # a class attribute, so a subclass may set it in its body or in __init__
    supports_masking = False

    def __init__(self, trainable: bool = True, name: Optional[str] = None, dtype: Any = None, dynamic: bool = False,
                 **kwargs: Any):
        self._batch_input_shape = _input_shape_kwargs(kwargs)
        # dtype=: the mixed-precision policy (keras/mixed_precision.py; None: the global one)
        self._dtype_policy = _mp.policy_of(dtype)
        self._autocast = bool(kwargs.pop("autocast", True))
        if kwargs:
            raise TypeError(f"Keyword argument not understood: {sorted(kwargs)}")
        self.trainable = bool(trainable)
        # named when made, as Keras does (my_layer, my_layer_1, ... in the order of construction)
        self._name = name if name is not None else _unique_name(_snake(type(self).__name__))
        self._scope: Any = None
        self._own_weights: List[Any] = []
        self.built = False
        self.updates: List[Any] = []
        self.losses: List[Any] = []

    @property
    def dtype(self) -> Any:
        """The dtype of the layer's variables (its policy's; None under 'infer')."""
        return self._policy().variable_dtype

    @property
    def _compute_dtype(self) -> Any:
        return self._policy().compute_dtype

    def _policy(self) -> Any:
        # a subclass that never called Layer.__init__ has the global policy
        return self.__dict__.get("_dtype_policy") or _mp.global_policy()

    @property
    def name(self) -> str:
        if self._name is None:
            self._name = _unique_name(_snake(type(self).__name__))
        return self._name

    # -- weights --------------------------------------------------------------------------
    def add_weight(self, name: Optional[str] = None, shape: Any = None, dtype: Any = None, initializer: Any = None,
                   regularizer: Any = None, trainable: Optional[bool] = None, constraint: Any = None,
                   **kwargs: Any) -> Any:
        """A variable of this layer (under its scope), initialized by `initializer` (a name, an
        initializer or a callable; default glorot_uniform, zeros for non-float dtypes)."""
        from .initializers import get as _get_init
        init = _get_init(initializer) if initializer is not None else None
        dtype = dtype or self._policy().variable_dtype or K.floatx()
        v = get_variable(name, list(shape or []), dtype, init, regularizer,
                         trainable=self.trainable if trainable is None else bool(trainable))
        # under a mixed policy v reads as float16 in call() (TF's experimental_autocast, default
        # True); the layer's weights are the float32 variables
        stored = v._variable if isinstance(v, _mp.AutoCastVariable) else v
        if self._policy().should_cast_variables and stored.dtype.is_floating and \
                kwargs.get("experimental_autocast", True):
            v = _mp.AutoCastVariable(stored)
        if constraint is not None:
            from .constraints import get as _get_constraint
            stored._constraint = _get_constraint(constraint)  # optimizers project v with it after each update
        self._own_weights.append(stored)
        return v

    add_variable = add_weight

    @property
    def weights(self) -> List[Any]:
        out = list(self._own_weights)
        for sub in self._sublayers():
            out += [w for w in sub.weights if all(w is not o for o in out)]
        return out

    variables = weights

    @property
    def trainable_weights(self) -> List[Any]:
        return [w for w in self.weights if w.trainable] if self.trainable else []

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self) -> List[Any]:
        return [w for w in self.weights if not w.trainable or not self.trainable]

    def get_weights(self) -> List[Any]:
        return K.batch_get_value(self.weights)

    def set_weights(self, weights: List[Any]) -> None:
        ws = self.weights
        if len(ws) != len(weights):
            raise ValueError(f"You called `set_weights(weights)` on layer \"{self.name}\" with a weight list of "
                             f"length {len(weights)}, but the layer was expecting {len(ws)} weights.")
        K.batch_set_value(list(zip(ws, weights)))

    def count_params(self) -> int:
        return int(sum(w.shape.num_elements() for w in self.weights))

    # what Layer itself keeps: not tracked in object checkpoints (a subclass's own attributes are)
    _UNTRACKED = frozenset(("_batch_input_shape", "trainable", "_name", "_scope", "_own_weights", "built", "updates",
                            "losses", "_keras_nodes", "_dtype_policy", "_autocast"))

    _CHECKPOINT_LISTS: tuple = ()  # list attributes tf_keras tracks as empty nodes (LSTMCell's state_size)

    def _checkpoint_children(self) -> List[Any]:
        """Object checkpoints' children (train/trackable.py): the weights by their add_weight
        names, then the trackable attributes (sublayers, variables, lists of them)."""
        from ..train.trackable import attribute_children, cached_node, weight_children
        return [(n, cached_node(self, n)) for n in self._CHECKPOINT_LISTS] + weight_children(self._own_weights) + \
            attribute_children(self, self._UNTRACKED | {"_checkpoint_nodes"}, only_state=True)

    def _sublayers(self) -> List[Any]:
        return [v for v in vars(self).values() if _is_layer(v) and v is not self]

    # -- building and calling ----------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Any:
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The output's mask: the input's when `supports_masking`, else none (called with a mask
        on a layer that does not support masking: TF's TypeError; a call of the layer itself
        drops such a mask, as TF 1.15's __call__ does)."""
        if not self.supports_masking:
            if any(m is not None for m in nest.flatten(mask)):
                raise TypeError(f"Layer {self.name} does not support masking, but was passed an input_mask: {mask}")
            return None
        return mask

    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        for t in (losses if isinstance(losses, (list, tuple)) else [losses]):
            self.losses.append(_g.convert_to_tensor(t))

    def add_update(self, updates: Any, inputs: Any = None) -> None:
        self.updates += list(updates) if isinstance(updates, (list, tuple)) else [updates]

    def get_config(self) -> Dict[str, Any]:
        return {"name": self.name, "trainable": self.trainable,
                "dtype": _mp.layer_policy_name(self._policy(), K.floatx())}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "Layer":
        return cls(**config)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        given = inputs  # the call's record and masks are the given tensors'; call() gets them cast
        if not self.built and self._policy().compute_dtype is None and "_dtype_policy" in self.__dict__:
            # 'infer' (TF 1.x's default): the layer takes its first floating input's dtype, so
            # add_weight in build() makes float64 weights for a float64 input, as TF's
            first = next(iter(nest.flatten(inputs)), None)
            dt = getattr(first, "dtype", None)
            if dt is not None and getattr(dt, "is_floating", False) and self._policy().name == "infer":
                self._dtype_policy = _mp.Policy(dt.name)
        policy = self._policy()
        inputs = _mp.cast_inputs(policy, inputs) if getattr(self, "_autocast", True) else inputs
        flat = [_g.convert_to_tensor(t) for t in nest.flatten(inputs)]
        g = flat[0].graph if flat else _g.get_default_graph()
        params = inspect.signature(self.call).parameters
        if "training" in params and kwargs.get("training") is None:
            kwargs["training"] = K.learning_phase()
        before = {k: len(g.get_collection(k)) for k in (GraphKeys.UPDATE_OPS, GraphKeys.REGULARIZATION_LOSSES)}
        with g.as_default():
            # the first call takes a graph-unique scope from the name (TF's Keras name scope)
            scope = variable_scope(self._scope, reuse=True if self.built else None) if self._scope is not None \
                else variable_scope(None, default_name=self.name)
            with scope as vs, _mp.autocast_scope(policy, g, inputs, first=not self.built):
                self._scope = vs
                if not self.built:
                    shapes = [TensorShape(t.shape) for t in flat]
                    self.build(shapes[0] if len(shapes) == 1 and not isinstance(inputs, (list, tuple)) else shapes)
                    self.built = True
                in_mask = _input_mask(given)
                if "mask" in params and "mask" not in kwargs:
                    kwargs["mask"] = in_mask
                out = self.call(inputs, *args, **kwargs)
                # TF 1.15's rule: the mask is computed only by a layer that supports masking or
                # overrides compute_mask; another drops it (no error: that is compute_mask's own)
                own = type(self).compute_mask is not Layer.compute_mask
                out_mask = self.compute_mask(inputs, in_mask) if (self.supports_masking or own) else None
        for t, m in zip(nest.flatten(out), nest.flatten(out_mask) if out_mask is not None else []):
            set_mask(t, m)
        self.updates += g.get_collection(GraphKeys.UPDATE_OPS)[before[GraphKeys.UPDATE_OPS]:]
        self.losses += g.get_collection(GraphKeys.REGULARIZATION_LOSSES)[before[GraphKeys.REGULARIZATION_LOSSES]:]
        register_call(self, given, nest.flatten(out))
        return out

    apply = __call__


def _input_mask(inputs: Any) -> Any:
    """The mask of a tensor input, the list of masks of a list input (None when none has one)."""
    if isinstance(inputs, (list, tuple)):
        masks = [mask_of(t) for t in inputs]
        return masks if any(m is not None for m in masks) else None
    return mask_of(inputs)


def _is_layer(v: Any) -> bool:
    from ..nn.layer_classes import Layer as _TFLayer
    from .layers import InputLayer
    return isinstance(v, (Layer, _TFLayer)) and not isinstance(v, InputLayer)
