"""tf.py_func: a Python function as an op of the graph.

The function gets its inputs as NumPy arrays and returns NumPy values of the declared
output dtypes (`Tout`), checked strictly as TensorFlow does (a float64 result where float32
was declared is an error).  Its kernel (kernels/script_kernels.py) exists for the CPU only,
so on a GPU session the placer runs it on the host, with copies at the boundary.  A stateful
py_func (the default, op type PyFunc) always runs; a stateless one (PyFuncStateless) may be
treated like any pure op.  Neither has a gradient: their inputs get None, as in TensorFlow 1.x.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Union

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_op, not_differentiable
from ..shape import TensorShape
from .op_util import make_op

__all__ = ["py_func", "py_function", "numpy_function"]


class PyFunction:
    """The Python callable an op calls (an attribute; fingerprinted by its name, not its address)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn

    @property
    def name(self) -> str:
        mod = getattr(self.fn, "__module__", None) or ""
        qual = getattr(self.fn, "__qualname__", None) or type(self.fn).__name__
        return f"{mod}.{qual}" if mod else qual

    def fingerprint_repr(self) -> str:
        return "pyfunc:" + self.name

    def __repr__(self) -> str:
        return f"<py_func {self.name}>"


def _py_func_spec(op: _g.Operation) -> list:
    # what the function returns is known only when it runs
    return [(dt, TensorShape(None)) for dt in op.attrs["Tout"]]


register_op("PyFunc", _py_func_spec, stateful=True)
register_op("PyFuncStateless", _py_func_spec)
not_differentiable("PyFunc", "PyFuncStateless")


def py_func(func: Callable[..., Any], inp: Sequence[Any], Tout: Any, stateful: bool = True,  # noqa: N803 - TF name
            name: Optional[str] = None) -> Union[_g.Tensor, List[_g.Tensor], _g.Operation]:
    """Wraps `func(*arrays)` as an op (TensorFlow 1.x's tf.py_func).

    inp: tensors whose values (NumPy arrays) are passed to func.  Tout: one dtype (the op
    returns one tensor) or a list of dtypes (it returns a list; an empty list returns the
    op itself).  func returns one array-like or a list/tuple of them, matching Tout in
    number and dtype.  Outputs have unknown static shapes (set_shape them where known).
    stateful=False promises the function is pure.  An exception in func fails the run,
    naming the op; StopIteration becomes OutOfRangeError (the end of a generator).
    """
    if not callable(func):
        raise TypeError(f"py_func: func must be callable, got {func!r}")
    many = isinstance(Tout, (list, tuple))
    try:
        touts = tuple(_dt.as_dtype(t) for t in (Tout if many else [Tout]))
    except (TypeError, ValueError, KeyError) as e:
        raise InvalidArgumentError(f"py_func: Tout must be a dtype or a list of dtypes, got {Tout!r} ({e})") from None
    if any(t == _dt.resource for t in touts):
        raise InvalidArgumentError("py_func cannot return resource handles")
    if isinstance(inp, (_g.Tensor,)) or not isinstance(inp, (list, tuple)):
        raise TypeError(f"py_func: inp must be a list of tensors, got {type(inp).__name__}")
    op_type = "PyFunc" if stateful else "PyFuncStateless"
    op = make_op(op_type, list(inp), {"func": PyFunction(func), "Tout": touts}, name=name or op_type)
    if not many:
        return op.outputs[0]
    return list(op.outputs) if op.outputs else op


class _EagerLike(np.ndarray):
    """An argument of a py_function: a NumPy array that also answers `.numpy()`, as the
    EagerTensors TF hands py_function's func do (collflow has no eager tensors)."""

    def numpy(self) -> np.ndarray:
        return np.asarray(self)


def py_function(func: Callable[..., Any], inp: Sequence[Any], Tout: Any,  # noqa: N803 - TF name
                name: Optional[str] = None) -> Union[_g.Tensor, List[_g.Tensor], _g.Operation]:
    """tf.py_function: func runs on the inputs' values (arrays with `.numpy()`); otherwise
    tf.py_func (stateful)."""
    def call(*args: Any) -> Any:
        return func(*[np.asarray(a, dtype=object if isinstance(a, bytes) else None).view(_EagerLike)
                      for a in args])
    call.__name__ = getattr(func, "__name__", "py_function")
    return py_func(call, inp, Tout, stateful=True, name=name or "EagerPyFunc")


def numpy_function(func: Callable[..., Any], inp: Sequence[Any], Tout: Any, stateful: bool = True,  # noqa: N803
                   name: Optional[str] = None) -> Union[_g.Tensor, List[_g.Tensor], _g.Operation]:
    """tf.numpy_function: tf.py_func (func takes and returns NumPy arrays)."""
    return py_func(func, inp, Tout, stateful=stateful, name=name)
