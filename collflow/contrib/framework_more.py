"""The rest of tf.contrib.framework that TF1 programs call: assigning variables from values
or a checkpoint (slim's fine-tuning idiom), filtering variable lists by regex, the
global-step and checkpoint helpers under their contrib names, and small tensor utilities
(smart_cond, with_shape, remove_squeezable_dimensions, reduce_sum_n, get_name_scope,
deprecated).  Re-exported by contrib/framework.py."""
from __future__ import annotations

import functools
import re
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..graph import graph as _g
from ..graph.control_flow import cond
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops, math_ops
from ..graph.ops.check_more_ops import assert_scalar
from ..graph.ops.constant_op import group, placeholder
from ..graph.ops.misc_more_ops import get_static_value
from ..graph.variables import Variable
from ..nn.metrics_shapes import squeeze_pair
from ..train.checkpoint_utils import init_from_checkpoint, list_variables, load_checkpoint, load_variable
from ..train.global_step import assert_global_step, create_global_step, get_global_step

__all__ = ["assign_from_values", "assign_from_values_fn", "assign_from_checkpoint", "filter_variables",
           "get_variable_full_name", "global_variable", "zero_initializer", "create_global_step",
           "assert_global_step", "assert_or_get_global_step", "load_variable", "list_variables",
           "init_from_checkpoint", "load_checkpoint", "is_tensor", "smart_cond", "with_shape", "with_same_shape",
           "remove_squeezable_dimensions", "reduce_sum_n", "get_name_scope", "deprecated", "assert_scalar_int"]


def get_variable_full_name(var: Any) -> str:
    """The variable's name in a checkpoint (collflow has no multi-part partitioned variables
    in one process, so always its op name)."""
    return var.op.name


def _find_variable(name: str) -> Variable:
    found = _g.get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, name)
    if not found:
        raise ValueError(f"Variable {name} wasn't found")
    if len(found) > 1:  # the scope filter is a prefix match: take the exact name
        exact = [v for v in found if v.op.name == name]
        if not exact:
            raise ValueError(f"Variable {name} doesn't uniquely identify a variable")
        return exact[0]
    return found[0]


def _assign_from(v: Variable, value: np.ndarray, feed: Dict[Any, Any], ops: List[Any]) -> None:
    ph = placeholder(v.dtype.base_dtype, shape=v.get_shape(), name="placeholder/" + v.op.name)
    ops.append(v.assign(ph))
    feed[ph] = value


def assign_from_values(var_names_to_values: Dict[str, Any]) -> Tuple[Any, Dict[Any, Any]]:
    """(assign_op, feed_dict) setting each named variable to its value (reshaped to the
    variable's shape) through a placeholder "placeholder/<name>"."""
    feed: Dict[Any, Any] = {}
    ops: List[Any] = []
    for name, value in var_names_to_values.items():
        v = _find_variable(name)
        _assign_from(v, np.asarray(value).reshape(v.get_shape().as_list()), feed, ops)
    return group(*ops), feed


def assign_from_values_fn(var_names_to_values: Dict[str, Any]) -> Callable[[Any], Any]:
    """fn(session) running assign_from_values' op with its feeds."""
    op, feed = assign_from_values(var_names_to_values)
    return lambda session: session.run(op, feed)


def assign_from_checkpoint(model_path: str, var_list: Any,
                           ignore_missing_vars: bool = False) -> Tuple[Any, Dict[Any, Any]]:
    """(assign_op, feed_dict) loading `var_list` (variables, or a dict of checkpoint name ->
    variable or list of variables) from the checkpoint at model_path.  A name the checkpoint
    lacks is a ValueError, or with ignore_missing_vars a warning."""
    from ..platform import tf_logging
    grouped: Dict[str, List[Any]] = {}
    if isinstance(var_list, (list, tuple)):
        for v in var_list:
            grouped.setdefault(get_variable_full_name(v), []).append(v)
    else:
        for name, v in var_list.items():
            grouped[name] = list(v) if isinstance(v, (list, tuple)) else [v]
    reader = load_checkpoint(model_path)
    feed: Dict[Any, Any] = {}
    ops: List[Any] = []
    for name, variables in grouped.items():
        if not reader.has_tensor(name):
            msg = f"Checkpoint is missing variable [{name}]"
            if ignore_missing_vars:
                tf_logging.warning(msg)
                continue
            raise ValueError(msg)
        value = reader.get_tensor(name)
        for v in variables:
            if list(v.get_shape().as_list()) != list(value.shape):
                raise ValueError(f"Total size of new array must be unchanged for {name} lh_shape: "
                                 f"[{value.shape}], rh_shape: [{v.get_shape()}]")
            _assign_from(v, value, feed, ops)
    return group(*ops), feed


def filter_variables(var_list: Sequence[Any], include_patterns: Optional[Sequence[str]] = None,
                     exclude_patterns: Optional[Sequence[str]] = None, reg_search: bool = True) -> List[Any]:
    """The variables whose names match any include pattern (all without any) and no exclude
    pattern; re.search, or re.match with reg_search=False."""
    fn = re.search if reg_search else re.match
    kept = [v for v in var_list if include_patterns is None or any(fn(p, v.name) for p in include_patterns)]
    return [v for v in kept if exclude_patterns is None or not any(fn(p, v.name) for p in exclude_patterns)]


def global_variable(initial_value: Any, validate_shape: bool = True, name: Optional[str] = None,
                    use_resource: Any = None) -> Variable:
    """A non-trainable variable in GLOBAL_VARIABLES only."""
    return Variable(initial_value, trainable=False, collections=[GraphKeys.GLOBAL_VARIABLES],
                    validate_shape=validate_shape, name=name)


def zero_initializer(ref: Any, use_locking: bool = True, name: str = "zero_initializer") -> Any:
    """An op setting the variable `ref` to zeros (its initializer, in TF1's slim code)."""
    return ref.assign(array_ops.zeros_like(_g.convert_to_tensor(ref)), use_locking=use_locking, name=name)


def assert_or_get_global_step(graph: Optional[_g.Graph] = None, global_step_tensor: Any = None) -> Any:
    """global_step_tensor checked to be a global step, else the graph's global step (or None)."""
    if global_step_tensor is None:
        return get_global_step(graph)
    assert_global_step(global_step_tensor)
    return global_step_tensor


def is_tensor(x: Any) -> bool:
    """Whether x is a graph tensor (Tensor, SparseTensor, IndexedSlices or a Variable)."""
    return _g.is_tensor(x)


def smart_cond(pred: Any, fn1: Callable[[], Any], fn2: Callable[[], Any], name: Optional[str] = None) -> Any:
    """fn1() or fn2() chosen now when `pred` is a Python bool or a tensor whose value the graph
    already determines; otherwise a cond."""
    if isinstance(pred, (bool, np.bool_)):
        return fn1() if pred else fn2()
    value = get_static_value(pred)
    if value is not None:
        return fn1() if bool(value) else fn2()
    return cond(pred, fn1, fn2, name=name)


def with_shape(expected_shape: Any, tensor: Any) -> _g.Tensor:
    """tensor, its static shape merged with expected_shape (a list or a vector); ValueError
    where they conflict."""
    t = _g.convert_to_tensor(tensor)
    shape = get_static_value(expected_shape) if isinstance(expected_shape, _g.Tensor) else expected_shape
    if shape is None:
        raise ValueError("with_shape: expected_shape must be known when the graph is built")
    shape = [int(d) if d is not None and int(d) >= 0 else None for d in np.asarray(shape, dtype=object).ravel()]
    if not t.shape.is_compatible_with(shape):
        raise ValueError(f"Invalid shape for tensor {t.name}, expected {shape}, got {t.shape}.")
    t.set_shape(t.shape.merge_with(shape))
    return t


def with_same_shape(expected_tensor: Any, tensor: Any) -> _g.Tensor:
    """with_shape with expected_tensor's static shape."""
    return with_shape(_g.convert_to_tensor(expected_tensor).shape.as_list(), tensor)


def remove_squeezable_dimensions(predictions: Any, labels: Any, name: Optional[str] = None) -> Tuple[Any, Any]:
    """(predictions, labels) with a trailing size-1 dimension dropped from whichever has one
    more dimension than the other."""
    p = _g.convert_to_tensor(predictions)
    if labels is None:
        return p, None
    lab, p = squeeze_pair(_g.convert_to_tensor(labels), p)
    return p, lab


def reduce_sum_n(tensors: Sequence[Any], name: Optional[str] = None) -> _g.Tensor:
    """The sum of all the entries of all the tensors (one scalar)."""
    if not tensors:
        raise ValueError("No tensors provided.")
    sums = [math_ops.reduce_sum(t) for t in tensors]
    return sums[0] if len(sums) == 1 else math_ops.add_n(sums, name=name)


def get_name_scope() -> str:
    """The current name scope ("" at the top), without a trailing slash."""
    stack = [s for s in _g.get_default_graph()._stack("name_scope") if s]
    return stack[-1] if stack else ""


def deprecated(date: Optional[str], instructions: str, warn_once: bool = True) -> Callable[[Callable], Callable]:
    """A decorator warning (once, by default) that the function is deprecated."""
    def decorate(fn: Callable) -> Callable:
        warned = []

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not (warn_once and warned):
                warned.append(True)
                when = "in a future version" if date is None else f"after {date}"
                warnings.warn(f"{fn.__name__} (from {fn.__module__}) is deprecated and will be removed {when}.\n"
                              f"Instructions for updating:\n{instructions}", DeprecationWarning, stacklevel=2)
            return fn(*args, **kwargs)
        return wrapper
    return decorate


def assert_scalar_int(tensor: Any, name: Optional[str] = None) -> _g.Tensor:
    """tensor, checked to be an integer scalar (ValueError when the graph is built)."""
    t = _g.convert_to_tensor(tensor)
    if not t.dtype.is_integer:
        raise ValueError(f"Expected integer type for {t.name}, received type: {t.dtype.name}.")
    assert_scalar(t)
    return t
