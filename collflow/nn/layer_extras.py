"""What TF1's layers do besides their math: `<name>_constraint=` arguments (the variable
`<name>` carries the constraint; optimizers project it after each update) and
`activity_regularizer=` (a penalty on the output in REGULARIZATION_LOSSES)."""
from __future__ import annotations

from typing import Any, Callable, Dict

from ..graph import graph as _g
from ..graph.graph import GraphKeys

# the layers' *_constraint arguments ("kernel", "recurrent", ...) and the variable each one is for
CONSTRAINED_NAMES = ("kernel", "bias", "embeddings", "beta", "gamma", "recurrent", "depthwise", "pointwise",
                     "alpha")
_CONSTRAINED_VAR = {"recurrent": "recurrent_kernel", "depthwise": "depthwise_kernel",
                    "pointwise": "pointwise_kernel"}


def constraints_by_variable(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """{variable name: constraint} from a layer's `<name>_constraint` arguments (None left out)."""
    out = {}
    for k in CONSTRAINED_NAMES:
        c = kwargs.get(k + "_constraint")
        if c is not None:
            out[_CONSTRAINED_VAR.get(k, k)] = c
    return out


def add_activity_loss(regularizer: Callable, outputs: Any, scope_name: str) -> Any:
    """regularizer(output) / batch size for each output (TF 1.15's Keras layers), added to
    REGULARIZATION_LOSSES (a Keras layer's `losses` take it from there); the last loss."""
    from ..graph.ops import array_ops as _a, math_ops as _m
    loss = None
    for t in (outputs if isinstance(outputs, (list, tuple)) else [outputs]):
        if not isinstance(t, _g.Tensor):
            continue
        g = t.graph
        with g.as_default(), g.name_scope(None), g.name_scope(scope_name + "/ActivityRegularizer/"):
            penalty = regularizer(t)
            if penalty is None:
                continue
            penalty = _g.convert_to_tensor(penalty)
            loss = penalty / _m.cast(_a.shape(t)[0], penalty.dtype)
        g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return loss
