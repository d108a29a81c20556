"""The kernel of PyFunc / PyFuncStateless (graph/ops/script_ops.py): calls the Python function.

Registered for the CPU only: the function works on NumPy arrays on the host.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import string_array, user_string_value
from ..errors import InvalidArgumentError, OutOfRangeError, UnimplementedError
from .registry import register_kernel, KernelContext


def _py_func_kernel(op: Any, ctx: KernelContext) -> Any:
    fn = op.attrs["func"].fn
    fname = op.attrs["func"].name
    touts = op.attrs["Tout"]

    def convert(i: int, v: Any) -> Any:
        dt = touts[i]
        if dt.name == "string":
            arr = string_array(v)  # str or bytes back; held as str
        else:
            arr = np.asarray(v, order="C")
            if arr.dtype != dt.np:
                raise InvalidArgumentError(f"{i}-th value returned by py_func {fname} is {arr.dtype}, but expects "
                                           f"{dt.name} (return NumPy values of the declared Tout dtypes)", op)
        return arr

    def py_func(*args: Any) -> Any:
        # string inputs as TF1 passes them: bytes (a scalar) or object arrays of bytes
        args = tuple(user_string_value(a) for a in args)
        try:
            ret = fn(*args)
        except StopIteration as e:
            raise OutOfRangeError(f"py_func {fname} raised StopIteration: {e}", op) from e
        except NotImplementedError as e:
            raise UnimplementedError(f"py_func {fname} raised NotImplementedError: {e}", op) from e
        if not touts:
            return None
        if isinstance(ret, bytes):
            ret = [ret]
        vals = list(ret) if isinstance(ret, (list, tuple)) else [ret]
        if len(vals) != len(touts):
            raise InvalidArgumentError(f"py_func {fname} returned {len(vals)} values, but Tout declares "
                                       f"{len(touts)}", op)
        outs = tuple(convert(i, v) for i, v in enumerate(vals))
        return outs if len(outs) > 1 else outs[0]
    return py_func


register_kernel("PyFunc", device="CPU")(_py_func_kernel)
register_kernel("PyFuncStateless", device="CPU")(_py_func_kernel)
