"""tf.CriticalSection: `execute(fn)` runs fn's ops under a lock, so that the executes of one
CriticalSection in concurrent `sess.run` calls (threads) do not interleave.

Graph form: a CriticalSectionLock op, every op fn creates made to wait for it (a control
dependency), and a CriticalSectionUnlock op that takes fn's outputs through and waits for
every op fn created; the execute's results are the Unlock's outputs.  The lock is owned by
the run (its cancellation token) that took it: a second execute of the same CriticalSection
in the same run enters at once (it is not serialized against the first, see docs), and a run
that ended without unlocking (an error inside fn) no longer owns it, so the next run takes
it over instead of waiting forever.  Kernels in kernels/critical_section_kernels.py.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from ... import dtypes as _dt
from .. import graph as _g
from .. import nest
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from .op_util import make_op, single

__all__ = ["CriticalSection"]

register_op("CriticalSectionLock", lambda op: [(_dt.int64, TensorShape(()))], stateful=True, host_only=True)
register_op("CriticalSectionUnlock", lambda op: [(t.dtype, t.shape) for t in op.inputs[1:]], stateful=True,
            host_only=True)
not_differentiable("CriticalSectionLock")


@register_gradient("CriticalSectionUnlock")
def _unlock_grad(op: _g.Operation, *grads: Any) -> list:
    return [None] + list(grads)  # fn's outputs pass through unchanged


class LockState:
    """The lock of one CriticalSection: which run holds it and how many times it entered."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.owner: Any = None     # (session, cancellation token) of the run holding it
        self.count = 0


class CriticalSection:
    """TF1's tf.CriticalSection: a lock that serializes `execute(fn)` across runs."""

    def __init__(self, name: Optional[str] = None, shared_name: Optional[str] = None,
                 critical_section_def: Any = None, import_scope: Optional[str] = None):
        if critical_section_def is not None:
            raise ValueError("CriticalSection: critical_section_def (a protocol buffer) is not supported in collflow")
        self._name = name or "CriticalSection"
        self._state = LockState()

    @property
    def name(self) -> str:
        return self._name

    def execute(self, fn: Callable[[], Any], exclusive_resource_access: bool = True,
                name: Optional[str] = None) -> Any:
        """fn()'s results, computed while this critical section's lock is held."""
        g = _g.get_default_graph()
        with g.name_scope(name or "critical_section_execute"):
            lock = single("CriticalSectionLock", [], {"cs": self._state}, name="Lock")
            seen = set(id(op) for op in g.get_operations())
            with g.control_dependencies([lock]):
                result = fn()
            made = [op for op in g.get_operations() if id(op) not in seen and op._ctx is None]
            flat = nest.flatten(result)
            tensors = [_g.convert_to_tensor(v) for v in flat if not isinstance(v, _g.Operation)]
            with g.control_dependencies(made):
                unlock = make_op("CriticalSectionUnlock", [lock] + tensors, {"cs": self._state}, name="Unlock")
            outs = iter(unlock.outputs)
            packed = [unlock if isinstance(v, _g.Operation) else next(outs) for v in flat]
            return nest.pack_sequence_as(result, packed) if result is not None else unlock
