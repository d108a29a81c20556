"""The global step: an int64 counter variable in the GLOBAL_STEP collection (TensorFlow 1.x)."""
from __future__ import annotations

from typing import Any, Optional

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.variable_scope import get_variable
from ..graph.variables import Variable
from ..graph.initializers import zeros_initializer

__all__ = ["get_global_step", "create_global_step", "get_or_create_global_step", "global_step", "assert_global_step"]


def get_global_step(graph: Optional[_g.Graph] = None) -> Optional[Variable]:
    """The graph's global step variable, or None if it has none."""
    g = graph or _g.get_default_graph()
    found = g.get_collection(GraphKeys.GLOBAL_STEP)
    if not found:
        return None
    if len(found) > 1:
        raise ValueError(f"the graph has {len(found)} variables in the GLOBAL_STEP collection: "
                         f"{[v.name for v in found]}; expected one")
    v = found[0]
    if not v.dtype.is_integer or v.shape.rank not in (None, 0):
        raise TypeError(f"the global step {v.name} must be an integer scalar, got {v.dtype.name} {v.shape}")
    return v


def create_global_step(graph: Optional[_g.Graph] = None) -> Variable:
    """Creates the int64 global step (starting at 0); an error if the graph already has one."""
    g = graph or _g.get_default_graph()
    if get_global_step(g) is not None:
        raise ValueError("the graph already has a global step")
    # TF leaves the name scope but keeps the variable scope: created under
    # tf.variable_scope("Model") (the PTB tutorial) the checkpoint holds "Model/global_step"
    with g.as_default(), g.name_scope(None), g.control_dependencies(None):
        return get_variable(GraphKeys.GLOBAL_STEP, shape=[], dtype=_dt.int64, initializer=zeros_initializer(),
                            trainable=False, collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph: Optional[_g.Graph] = None) -> Variable:
    """The graph's global step, created (int64, 0) if it has none."""
    g = graph or _g.get_default_graph()
    v = get_global_step(g)
    return v if v is not None else create_global_step(g)


def global_step(sess: object, global_step_tensor: object) -> int:
    """The current value of the global step as a Python int."""
    return int(sess.run(global_step_tensor))  # type: ignore[attr-defined]


def assert_global_step(global_step_tensor: Any) -> None:
    """TypeError unless global_step_tensor is a scalar integer variable or tensor (TF1's check)."""
    t = getattr(global_step_tensor, "value", None)
    dtype = getattr(global_step_tensor, "dtype", None)
    shape = getattr(global_step_tensor, "shape", None)
    if dtype is None or shape is None or t is None and not isinstance(global_step_tensor, _g.Tensor):
        raise TypeError(f"Existing \"global_step\" must be a Variable or Tensor: {global_step_tensor}.")
    if not dtype.is_integer:
        raise TypeError(f"Existing \"global_step\" does not have integer type: {dtype.name}")
    if shape.rank is not None and shape.rank != 0:
        raise TypeError(f"Existing \"global_step\" is not scalar: {shape}")
