"""The Session's resource container: variable states, queues, RNG states.

Resources outlive one run; kernels reach them through `ctx.resources`.  Reads of a
variable hand out its current array; an in-place update first checks (by reference
count) that nobody else still holds that array, and copies it if someone does, so a value
read earlier in a run, or fetched by the user, is a snapshot that never changes under them.
"""
from __future__ import annotations

import sys
import threading
from typing import Any, Dict, Optional

import numpy as np

from ..errors import FailedPreconditionError, InvalidArgumentError

__all__ = ["VariableState", "ResourceContainer"]

# getrefcount(v) inside writable(): the state's slot, the local `v`, the call's argument
_EXCLUSIVE_REFS = 3


class VariableState:
    """Storage of one variable: its array (None until initialized), dtype and static shape."""

    __slots__ = ("name", "dtype", "shape", "value", "lock", "xp")

    def __init__(self, name: str, dtype: Any, shape: Any, xp: Any = np):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.value: Optional[Any] = None
        self.lock = threading.Lock()
        self.xp = xp

    def read(self, op: Any = None) -> Any:
        v = self.value
        if v is None:
            raise FailedPreconditionError(
                f"Attempting to use uninitialized variable {self.name!r}; "
                "run cf.global_variables_initializer() (or the variable's initializer) first", op)
        return v

    def snapshot(self, op: Any = None) -> Any:
        """A read-only view of the current value: consumers and fetches can never write into
        the storage, and while the view lives an in-place update copies first."""
        v = self.value
        if v is None:
            self.read(op)
        if self.xp is np:
            v = v.view()
            v.flags.writeable = False
        return v

    def writable(self, op: Any = None) -> Any:
        """The array, safe to update in place (copied first if anyone else holds it)."""
        v = self.value
        if v is None:
            self.read(op)
        if sys.getrefcount(v) > _EXCLUSIVE_REFS or not v.flags.writeable:
            v = v.copy()
            self.value = v
        return v

    def assign(self, value: Any, op: Any = None, validate_shape: bool = True) -> Any:
        xp = self.xp
        if validate_shape and self.shape is not None and not self.shape.matches_value(value.shape):
            raise InvalidArgumentError(
                f"cannot assign a value of shape {tuple(value.shape)} to variable {self.name!r} "
                f"of shape {self.shape}", op)
        # own a private copy: the value may be a constant or an array the caller keeps
        self.value = xp.array(value, dtype=self.dtype.np, copy=True)
        return self.snapshot()


class ResourceContainer:
    """Named resources of one Session (TensorFlow's ResourceMgr)."""

    def __init__(self) -> None:
        self.variables: Dict[str, VariableState] = {}
        self.queues: Dict[str, Any] = {}
        self.rng: Dict[str, Any] = {}
        self.other: Dict[str, Any] = {}
        self._lock = threading.Lock()

    def variable(self, name: str, dtype: Any, shape: Any, xp: Any = np) -> VariableState:
        with self._lock:
            st = self.variables.get(name)
            if st is None:
                st = VariableState(name, dtype, shape, xp)
                self.variables[name] = st
            elif st.dtype != dtype:
                raise InvalidArgumentError(
                    f"variable {name!r} exists with dtype {st.dtype.name}, requested {dtype.name}")
            return st

    def get_or_create(self, kind: str, name: str, factory: Any) -> Any:
        table = {"queue": self.queues, "rng": self.rng}.get(kind, self.other)
        with self._lock:
            r = table.get(name)
            if r is None:
                r = factory()
                table[name] = r
            return r
