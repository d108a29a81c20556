"""TF1's function wrappers around gradients and conversion: tf.grad_pass_through,
tf.recompute_grad, tf.vectorized_map, tf.op_scope, tf.register_tensor_conversion_function.

recompute_grad keeps none of f's intermediate values for the backward pass: its gradient
calls f again (after the output gradients exist, with the variable scope it was first
called in, reused) and differentiates that second copy, so the forward ops run twice and
the first copy's activations are not read by any gradient op.  Gradients reach the inputs
and the variables f reads.

vectorized_map runs fn once per element in a while loop (tf.map_fn): the values are the same
as TF's vectorized (pfor) form, which collflow does not have.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterator, List, Optional

from .. import dtypes as _dt
from . import graph as _g
from . import nest
from .custom_gradient import custom_gradient
from .functional_ops import map_fn
from .gradients import gradients
from .ops.op_util import make_op

__all__ = ["grad_pass_through", "recompute_grad", "vectorized_map", "op_scope",
           "register_tensor_conversion_function"]


def grad_pass_through(f: Callable[..., Any]) -> Callable[..., Any]:
    """f's value, with the identity as its gradient: each input gets its output's gradient
    (e.g. through a variable assignment, which has no gradient of its own)."""
    @functools.wraps(f)
    def wrapped(*args: Any) -> Any:
        @custom_gradient
        def inner(*xs: Any) -> Any:
            def grad(*dys: Any) -> Any:
                return list(dys) if len(dys) != 1 else dys[0]
            return f(*xs), grad
        return inner(*args)
    return wrapped


def recompute_grad(f: Callable[..., Any]) -> Callable[..., Any]:
    """f, whose gradient recomputes f's forward pass instead of keeping its activations."""
    from .variable_scope import get_variable_scope, variable_scope
    from .ops.constant_op import identity

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        g = _g.get_default_graph()
        xs: List[_g.Tensor] = [_g.convert_to_tensor(a) for a in args]
        scope = get_variable_scope()
        seen = set(id(op) for op in g.get_operations())
        result = f(*xs, **kwargs)
        flat = [_g.convert_to_tensor(y) for y in nest.flatten(result)]
        # the variables f reads: one read each carries its gradient back to the variable
        handles: List[_g.Tensor] = []
        reads: List[_g.Tensor] = []
        for op in g.get_operations():
            if id(op) not in seen and op.type == "ReadVariable":
                h = op.inputs[0]
                if all(h is not k for k in handles):
                    handles.append(h)
                    reads.append(op.outputs[0])

        def grad_fn(*dys: Any) -> list:
            with g.control_dependencies(list(dys)):  # recompute once the backward pass reaches f
                ids = [identity(x) for x in xs]
                with variable_scope(scope, reuse=True):
                    again = f(*ids, **kwargs)
            ys2 = [_g.convert_to_tensor(y) for y in nest.flatten(again)]
            return gradients(ys2, ids + handles, grad_ys=list(dys))

        op = make_op("CustomGradient", xs + reads + flat, {"n_in": len(xs) + len(reads), "grad_fn": grad_fn},
                     name="RecomputeGrad")
        return nest.pack_sequence_as(result, list(op.outputs))
    return wrapped


def _output_dtypes(fn: Callable[[Any], Any], elems: Any) -> Any:
    """The structure of fn's output dtypes, from one call on an element-shaped placeholder
    in a scratch graph (or, where fn uses this graph's tensors, a probe here)."""
    flat = [_g.convert_to_tensor(e) for e in nest.flatten(elems)]

    def probe() -> Any:
        from .ops.constant_op import placeholder
        xs = [placeholder(e.dtype, e.shape[1:] if e.shape.rank is not None else None) for e in flat]
        out = fn(nest.pack_sequence_as(elems, xs))
        return nest.pack_sequence_as(out, [_g.convert_to_tensor(o).dtype for o in nest.flatten(out)])
    try:
        with _g.Graph().as_default():
            return probe()
    except Exception:  # fn reaches tensors of the caller's graph
        with _g.get_default_graph().name_scope("vectorized_map_probe"):
            return probe()


def vectorized_map(fn: Callable[[Any], Any], elems: Any, fallback_to_while_loop: bool = True,
                   warn: bool = True) -> Any:
    """Stacks fn(elems[i]) over axis 0 (tf.vectorized_map), computed with tf.map_fn."""
    dtype = _output_dtypes(fn, elems)
    return map_fn(fn, elems, dtype=dtype)


@contextlib.contextmanager
def op_scope(values: Any, name: Optional[str], default_name: Optional[str] = None) -> Iterator[str]:
    """TF1's deprecated tf.op_scope: tf.name_scope(name, default_name, values)."""
    with _g.name_scope(name, default_name, values) as scope:
        yield scope


_USER_CONVERTERS: List[tuple] = []   # (priority, order, base_type, conversion_func)


def _convert_user(value: Any, dtype: Any) -> _g.Tensor:
    """The registered functions for value's type, by priority (lower first), until one does
    not return NotImplemented; then the constant conversion."""
    for _, _, base, fn in sorted(_USER_CONVERTERS, key=lambda e: e[:2]):
        if not isinstance(value, base):
            continue
        out = fn(value, dtype=dtype, name=None, as_ref=False)
        if out is NotImplemented:
            continue
        if not isinstance(out, _g.Tensor):
            out = _g.convert_to_tensor(out, dtype=dtype)
        if dtype is not None and out.dtype != _dt.as_dtype(dtype):
            raise RuntimeError(f"Conversion function {fn!r} for type {base} returned incompatible dtype: requested "
                               f"= {_dt.as_dtype(dtype).name}, actual = {out.dtype.name}")
        return out
    from .ops.constant_op import constant
    return constant(value, dtype=dtype)


def register_tensor_conversion_function(base_type: Any, conversion_func: Callable[..., Any],
                                        priority: int = 100) -> None:
    """convert_to_tensor (and every op argument) turns a `base_type` value into a Tensor with
    conversion_func(value, dtype=None, name=None, as_ref=False)."""
    import numbers

    import numpy as np
    types = base_type if isinstance(base_type, tuple) else (base_type,)
    if any(not isinstance(t, type) for t in types):
        raise TypeError("base_type must be a type or a tuple of types.")
    if any(issubclass(t, (numbers.Number, np.ndarray, np.generic, str, bytes)) for t in types):
        raise TypeError("Cannot register conversions for Python numeric types and NumPy scalars and arrays.")
    if not callable(conversion_func):
        raise TypeError("conversion_func must be callable.")
    _USER_CONVERTERS.append((priority, len(_USER_CONVERTERS), base_type, conversion_func))
    for t in types:
        if all(t is not c for c, fn in _g._CONVERTERS if fn is _convert_user):
            _g.register_tensor_conversion(t, _convert_user)
