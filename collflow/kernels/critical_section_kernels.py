"""Kernels of graph/ops/critical_section_ops.py: CriticalSectionLock waits until no other
live run holds the lock (polling the run's cancellation), CriticalSectionUnlock lets it go."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CancelledError
from .registry import KernelContext, current_cancellation_token, register_kernel


def _alive(owner: Any) -> bool:
    """Whether the run holding the lock is still in flight in its session."""
    sess, tok = owner
    active = getattr(sess, "_active", None)
    return active is None or tok in active


@register_kernel("CriticalSectionLock")
def _lock(op: Any, ctx: KernelContext) -> Any:
    st = op.attrs["cs"]

    def lock() -> Any:
        tok = current_cancellation_token()
        with st.cond:
            while True:
                if st.owner is not None and st.owner[1] is tok and tok is not None:
                    st.count += 1  # the same run again (see the op module's docstring)
                    return np.asarray(st.count, dtype=np.int64)
                if st.owner is None or not _alive(st.owner):
                    st.owner, st.count = (ctx.session, tok), 1
                    return np.asarray(1, dtype=np.int64)
                if tok is not None and tok.cancelled:
                    raise CancelledError(f"{op.name}: run cancelled while waiting for the critical section", op)
                st.cond.wait(0.01)
    return lock


@register_kernel("CriticalSectionUnlock")
def _unlock(op: Any, ctx: KernelContext) -> Any:
    st = op.attrs["cs"]

    def unlock(_token: Any, *values: Any) -> Any:
        tok = current_cancellation_token()
        with st.cond:
            if st.owner is not None and (st.owner[1] is tok or tok is None):
                st.count -= 1
                if st.count <= 0:
                    st.owner, st.count = None, 0
                    st.cond.notify_all()
        return tuple(values) if len(values) != 1 else values[0]
    return unlock
