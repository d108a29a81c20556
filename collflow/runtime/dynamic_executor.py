"""The dynamic executor: runs plans that contain control flow (the paper's section 3.4).

Values are tagged with a frame instance and an iteration.  An op becomes ready in a given
(frame, iteration) when all its inputs have arrived there; a *dead* input (from the
untaken side of a Switch) makes it dead without running it, and deadness flows on.  Merge
fires on its first live input (or dead once all expected inputs are dead).  Enter delivers
into a child frame (a constant Enter into every iteration of it), NextIteration into the
next iteration, Exit into the parent frame (dead exits of a live loop are dropped).  Values
are freed when their last consumer in their iteration has read them.
"""
from __future__ import annotations

from collections import deque
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..errors import CancelledError, InternalError, InvalidArgumentError
from ..graph.graph import Operation, Tensor
from ..kernels.control_flow_kernels import DEAD
from .executor import CancellationToken, check_outputs, raise_op_error

__all__ = ["DynamicPlan"]


_OP, _SWITCH, _MERGE, _ENTER, _EXIT, _NEXT, _PASS, _PUSH = range(8)
_KINDS = {"Switch": _SWITCH, "Merge": _MERGE, "Enter": _ENTER, "Exit": _EXIT, "NextIteration": _NEXT,
          "LoopCond": _PASS, "StackPush": _PUSH}


class _Iter:
    __slots__ = ("values", "pending", "dead", "merged")

    def __init__(self) -> None:
        self.values: Dict[Tuple[int, int], list] = {}   # (op, output) -> [value, readers left]
        self.pending: Dict[int, int] = {}
        self.dead: Set[int] = set()                     # ops with a dead control/data input
        self.merged: Dict[int, list] = {}               # Merge -> [fired, dead count, value, index]


class _Frame:
    __slots__ = ("name", "parent", "parent_iter", "iters", "children", "constants", "dead")

    def __init__(self, name: str, parent: Optional["_Frame"], parent_iter: int):
        self.name = name
        self.parent = parent
        self.parent_iter = parent_iter
        self.iters: Dict[int, _Iter] = {}
        self.children: Dict[Tuple[str, int], "_Frame"] = {}
        self.constants: List[Tuple[int, Any]] = []
        self.dead = False


class DynamicPlan:
    """A compiled plan with control flow, run by a ready queue over (frame, iteration)."""

    def __init__(self, session: Any, needed: Set[Operation], feeds: List[Tensor],
                 fetch_tensors: List[Optional[Tensor]], kernels: Dict[Operation, Callable],
                 async_ops: Set[Operation], trace: bool = False):
        ops = sorted(needed, key=lambda o: o._id)
        self.ops = ops
        self.placement: Dict[str, str] = {}
        self._trace = trace  # record every kernel call into the run token's `trace` list
        self.feeds = list(feeds)
        self.fetches = list(fetch_tensors)
        self.source = f"<dynamic plan: {len(ops)} ops with control flow>"
        self.num_runs = 0
        self.async_ops = async_ops
        self._check = bool(session._config.get("check_outputs", False))
        idx = {op: i for i, op in enumerate(ops)}
        feed_pos = {t: k for k, t in enumerate(feeds)}
        n = len(ops)
        self._kind = [_KINDS.get(op.type, _OP) for op in ops]
        self._kern = [kernels[op] for op in ops]
        self._async = [op in async_ops for op in ops]
        self._srcs: List[List[Tuple[bool, int, int]]] = []   # (is_feed, producer or feed index, output)
        self._npend = [0] * n
        self._cons: List[List[List[Tuple[int, int]]]] = [[[] for _ in op.outputs] for op in ops]
        self._ctrl_cons: List[List[int]] = [[] for _ in ops]
        self._loop_merge = [False] * n
        for i, op in enumerate(ops):
            srcs = []
            for pos, t in enumerate(op.inputs):
                if t in feed_pos:
                    srcs.append((True, feed_pos[t], 0))
                else:
                    p = idx[t.op]
                    srcs.append((False, p, t.value_index))
                    self._cons[p][t.value_index].append((i, pos))
                    self._npend[i] += 1
                    if ops[p].type == "NextIteration":
                        self._loop_merge[i] = True
            for c in op.control_inputs:
                if c in idx:
                    self._ctrl_cons[idx[c]].append(i)
                    self._npend[i] += 1
            self._srcs.append(srcs)
        self._roots = [i for i in range(n) if self._npend[i] == 0]
        # per output: readers that are not Merges (they read the stored value), and whether kept
        self._readers = [[sum(1 for c, _ in cons if self._kind[c] != _MERGE) for cons in outs]
                         for outs in self._cons]
        self._fetch_keys: List[Any] = []
        for t in fetch_tensors:
            if t is None:
                self._fetch_keys.append(None)
            elif t in feed_pos:
                self._fetch_keys.append(("feed", feed_pos[t]))
            else:
                self._fetch_keys.append((idx[t.op], t.value_index))
        self._fetch_set = {k for k in self._fetch_keys if k is not None and k[0] != "feed"}

    # -------------------------------------------------------------------------------
    def __call__(self, feed_values: Sequence[Any], token: CancellationToken) -> list:
        self.num_runs += 1
        root = _Frame("", None, 0)
        root.iters[0] = _Iter()
        ready: deque = deque((i, root, 0) for i in self._roots)
        ops = self.ops
        self._tr = (token.trace if token.trace is not None else []) if self._trace else None
        while ready:
            i, fr, it = ready.popleft()
            if token.c:
                raise CancelledError("run cancelled" + (f": {token.reason}" if token.reason else "")
                                     + f" before op {ops[i].name!r}", ops[i])
            self._fire(i, fr, it, feed_values, ready)
        st0 = root.iters[0]
        out = []
        for t, key in zip(self.fetches, self._fetch_keys):
            if key is None:
                out.append(None)
                continue
            if key[0] == "feed":
                out.append(feed_values[key[1]])
                continue
            cell = st0.values.get(key)
            if cell is None:
                raise InternalError(f"fetch {t.name} was never computed (a loop did not finish?)", t.op)
            if cell[0] is DEAD:
                raise InvalidArgumentError(
                    f"fetch {t.name} has no value: it lies on a branch of a cond that was not taken", t.op)
            out.append(cell[0])
        return out

    def _iter(self, fr: _Frame, it: int) -> _Iter:
        st = fr.iters.get(it)
        if st is None:
            st = _Iter()
            fr.iters[it] = st
        return st

    def _fire(self, i: int, fr: _Frame, it: int, feeds: Sequence[Any], ready: deque) -> None:
        st = self._iter(fr, it)
        self._fire_in(i, st, fr, it, feeds, ready)
        # an iteration with nothing left in flight is forgotten: a loop's memory stays flat
        # however many iterations it runs (values are freed after their last read already)
        if not (st.values or st.pending or st.dead or st.merged) and fr.parent is not None:
            fr.iters.pop(it, None)

    def _fire_in(self, i: int, st: _Iter, fr: _Frame, it: int, feeds: Sequence[Any], ready: deque) -> None:
        kind = self._kind[i]
        op = self.ops[i]
        if kind == _MERGE:
            ms = st.merged[i]
            _, _, val, index, arrived = ms
            if self._loop_merge[i] or arrived >= len(self._srcs[i]):
                del st.merged[i]  # nothing more can arrive
            else:
                ms[2] = None  # a later (dead) input is still due: keep the fired flag only
            outs = [DEAD, DEAD] if val is DEAD else [val, np.asarray(index, dtype=np.int32)]
            self._deliver(i, outs, fr, it, ready, val is DEAD)
            return
        dead = i in st.dead
        if dead:
            st.dead.discard(i)
        vals = []
        for is_feed, a, b in self._srcs[i]:
            if is_feed:
                v = feeds[a]
            else:
                cell = st.values[(a, b)]
                v = cell[0]
                cell[1] -= 1
                if cell[1] <= 0 and (a, b) not in self._fetch_set:
                    del st.values[(a, b)]
            if v is DEAD and not (kind == _PUSH and len(vals) == 2):
                dead = True  # a push's saved value (input 2) may be dead: it passes the token on
            vals.append(v)
        nout = len(op.outputs)
        if dead:
            outs = [DEAD] * nout
        elif kind == _SWITCH:
            outs = [DEAD, vals[0]] if bool(vals[1]) else [vals[0], DEAD]
        elif kind != _OP and kind != _PUSH:
            outs = [vals[0]]
        else:
            try:
                tr = self._tr
                if tr is None:
                    r = self._kern[i](*vals)
                    if self._async[i]:
                        r = r.wait()
                else:
                    t0 = time.perf_counter()
                    r = self._kern[i](*vals)
                    if self._async[i]:
                        t1 = time.perf_counter()
                        tr.append((i, 1, t0, t1))
                        r = r.wait()
                        tr.append((i, 2, t1, time.perf_counter()))
                    else:
                        tr.append((i, 0, t0, time.perf_counter()))
            except BaseException as e:
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                raise_op_error(op, e, vals)
            if nout == 0:
                outs = []
            elif nout == 1:
                outs = [r]
                if r is DEAD:  # a StackRead of a value never saved (its branch was not taken)
                    dead = True
                    self._deliver(i, outs, fr, it, ready, dead)
                    return
            else:
                outs = list(r)
            if self._check:
                check_outputs(op, outs)
        self._deliver(i, outs, fr, it, ready, dead)

    def _deliver(self, i: int, outs: List[Any], fr: _Frame, it: int, ready: deque, dead: bool = False) -> None:
        kind = self._kind[i]
        op = self.ops[i]
        if kind == _ENTER:
            key = (op.attrs["frame_name"], it)
            child = fr.children.get(key)
            if child is None:
                child = _Frame(op.attrs["frame_name"], fr, it)
                child.iters[0] = _Iter()
                fr.children[key] = child
            v = outs[0]
            if op.attrs["is_constant"] and v is not DEAD:
                child.constants.append((i, v))
                for k in list(child.iters):
                    self._store_and_arrive(i, 0, v, child, k, ready)
                self._control(i, False, child, 0, ready)
                return
            if v is DEAD:
                child.dead = True
            self._store_and_arrive(i, 0, v, child, 0, ready)
            self._control(i, v is DEAD, child, 0, ready)
            return
        if kind == _EXIT:
            v = outs[0]
            if v is DEAD and not fr.dead:
                return  # the loop goes on (or ended through another iteration's exit)
            parent = fr.parent
            self._store_and_arrive(i, 0, v, parent, fr.parent_iter, ready)  # type: ignore[arg-type]
            self._control(i, v is DEAD, parent, fr.parent_iter, ready)  # type: ignore[arg-type]
            return
        if kind == _NEXT:
            v = outs[0]
            if v is DEAD:
                return
            nxt = it + 1
            if nxt not in fr.iters:
                fr.iters[nxt] = _Iter()
                for ci, cv in fr.constants:
                    self._store_and_arrive(ci, 0, cv, fr, nxt, ready)
                    self._control(ci, False, fr, nxt, ready)
            self._store_and_arrive(i, 0, v, fr, nxt, ready)
            self._control(i, False, fr, nxt, ready)
            return
        for o, v in enumerate(outs):
            self._store_and_arrive(i, o, v, fr, it, ready)
        if self._ctrl_cons[i]:
            # a dead op (a Switch counts as live: one of its outputs is) passes deadness on
            self._control(i, dead, fr, it, ready)

    def _store_and_arrive(self, i: int, o: int, v: Any, fr: _Frame, it: int, ready: deque) -> None:
        cons = self._cons[i][o]
        st = fr.iters.get(it)
        if st is None:
            st = fr.iters[it] = _Iter()
        readers = self._readers[i][o]
        if readers or (i, o) in self._fetch_set:
            st.values[(i, o)] = [v, readers]
        kind = self._kind
        pending = st.pending
        npend = self._npend
        for c, pos in cons:
            if kind[c] == _MERGE:
                self._merge_arrive(c, pos, v, fr, it, st, ready)
            else:
                n = pending.get(c, npend[c]) - 1
                if n == 0:
                    pending.pop(c, None)
                    ready.append((c, fr, it))
                else:
                    pending[c] = n

    def _merge_arrive(self, c: int, pos: int, v: Any, fr: _Frame, it: int, st: _Iter, ready: deque) -> None:
        ms = st.merged.get(c)
        if ms is None:
            ms = [False, 0, None, -1, 0]  # fired, dead inputs, value, index, inputs arrived
            st.merged[c] = ms
        ms[4] += 1
        if ms[0]:
            if ms[4] >= len(self._srcs[c]) and ms[2] is None:
                del st.merged[c]  # fired already and now complete
            return
        if v is not DEAD:
            ms[0], ms[2], ms[3] = True, v, pos
            ready.append((c, fr, it))
            return
        ms[1] += 1
        expected = 1 if self._loop_merge[c] else len(self._srcs[c])
        if ms[1] >= expected:
            ms[0], ms[2] = True, DEAD
            ready.append((c, fr, it))

    def _control(self, i: int, dead: bool, fr: _Frame, it: int, ready: deque) -> None:
        ctrl = self._ctrl_cons[i]
        if not ctrl:
            return
        st = self._iter(fr, it)
        for c in ctrl:
            if dead:
                st.dead.add(c)
            n = st.pending.get(c)
            if n is None:
                n = self._npend[c]
            n -= 1
            if n == 0:
                st.pending.pop(c, None)
                ready.append((c, fr, it))
            else:
                st.pending[c] = n
