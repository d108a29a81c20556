"""Session.partial_run_setup / partial_run (TF1): one step run in pieces, feeding later inputs
after reading earlier outputs.

    h = sess.partial_run_setup([r1, r2], [a, b, c])
    v1 = sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
    v2 = sess.partial_run(h, r2, feed_dict={c: v1})

As in TF, fetches and feeds must be named at setup, each fed once and fetched once.  The ops a
later piece shares with an earlier one run once: each piece also reads the values of those
shared intermediate tensors, and the later pieces are fed them.  (An op with no outputs that an
earlier piece ran, reached by a later fetch only through control dependencies, runs again: it
has no value to stand in for it.)
"""
from __future__ import annotations

import collections
import itertools
from typing import Any, Dict, List, Optional, Set

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g

__all__ = ["PartialRun"]

_HANDLES = itertools.count()


def _element(graph: _g.Graph, x: Any) -> Any:
    el = graph.as_graph_element(x, allow_tensor=True, allow_operation=True)
    return el


def _feed_element(graph: _g.Graph, x: Any) -> Any:
    """A feed key's tensor; one the graph cannot resolve is TF1's TypeError."""
    try:
        return _element(graph, x)
    except (TypeError, ValueError, KeyError) as e:
        msg = e.args[0] if e.args else str(e)
        raise TypeError(f"Cannot interpret feed_list key as Tensor: {msg}") from None


def _name(el: Any) -> str:
    return el.name


class PartialRun:
    """The state of one partial run: what may be fed and fetched, what was, and the values of
    the intermediate tensors later pieces read."""

    def __init__(self, session: Any, fetches: Any, feeds: Any):
        self.session = session
        g = session.graph
        self.handle = f"partial_run:{next(_HANDLES)}"
        # the fetch structure as Session.run reads it (SparseTensors as their parts; TF1's errors)
        self.allowed_fetches: List[Any] = list(session._fetches(fetches).elements)
        feeds = [] if feeds is None else (feeds if isinstance(feeds, (list, tuple)) else [feeds])
        self.allowed_feeds: List[_g.Tensor] = []
        for f in feeds:
            el = _feed_element(g, f)
            if not isinstance(el, _g.Tensor):
                raise TypeError(f"partial_run_setup: feed {f!r} is not a tensor")
            self.allowed_feeds.append(el)
        self.fed: Dict[_g.Tensor, Any] = {}
        self.fetched: Set[Any] = set()
        self.cache: Dict[_g.Tensor, Any] = {}

    # -- the graph walk ------------------------------------------------------------------------
    def _ancestors(self, elements: List[Any], stop: Set[_g.Tensor]) -> Set[_g.Tensor]:
        """The tensors the elements' computation produces (not crossing `stop`)."""
        seen_ops: Set[Any] = set()
        out: Set[_g.Tensor] = set()
        todo = [e.op if isinstance(e, _g.Tensor) else e for e in elements]
        while todo:
            op = todo.pop()
            if op in seen_ops:
                continue
            seen_ops.add(op)
            for t in op.outputs:
                out.add(t)
            for t in op.inputs:
                if t not in stop:
                    todo.append(t.op)
            todo.extend(op.control_inputs)
        return out

    @staticmethod
    def _cacheable(t: _g.Tensor) -> bool:
        return t.dtype != _dt.resource and getattr(t.op, "_ctx", None) is None and t.op.type not in (
            "Placeholder", "Const", "VarHandle")

    # -- a piece -------------------------------------------------------------------------------
    def run(self, fetches: Any, feed_dict: Optional[dict]) -> Any:
        g = self.session.graph
        wanted = list(self.session._fetches(fetches).elements)
        targets = [el for el in wanted if isinstance(el, _g.Operation)]
        if targets:
            # TF1: ops may be named at setup but a piece can only fetch tensors
            raise RuntimeError(f"partial_run() requires empty target_list; got operation(s) "
                               f"{', '.join(op.name for op in targets)}")
        for el in wanted:
            if el not in self.allowed_fetches:
                raise InvalidArgumentError(f"partial_run: fetch {_name(el)} was not specified in partial_run_setup")
            if el in self.fetched:
                raise InvalidArgumentError(f"partial_run: fetch {_name(el)} was already fetched in this partial run")
        new_feeds: Dict[_g.Tensor, Any] = {}
        for k, v in (feed_dict or {}).items():
            t = _feed_element(g, k)
            if t not in self.allowed_feeds:
                raise InvalidArgumentError(f"partial_run: feed {_name(t)} was not specified in partial_run_setup")
            if t in self.fed or t in new_feeds:
                raise InvalidArgumentError(f"partial_run: feed {_name(t)} was already fed in this partial run")
            new_feeds[t] = v
        feeds = {**self.cache, **self.fed, **new_feeds}
        stop = set(feeds)
        now = self._ancestors(wanted, stop)
        remaining = [f for f in self.allowed_fetches if f not in self.fetched and f not in wanted]
        later = self._ancestors(remaining, stop) if remaining else set()
        # intermediate values a later piece needs: read them now, feed them then (they run once)
        extra = sorted((t for t in now & later if self._cacheable(t) and t not in stop), key=lambda t: t.name)
        result, values = self.session.run((fetches, extra), feed_dict=feeds)
        self.cache.update(zip(extra, values))
        self.fed.update(new_feeds)
        self.fetched.update(wanted)
        # a fetch an earlier piece computed came back as the fed value (a 0-d array for a
        # scalar): the user gets what a fetch gives, as TF1's partial_run does
        return _scalars(result)


def _scalars(v: Any) -> Any:
    """0-d arrays in a fetched structure as NumPy scalars (Session.run's form of a scalar)."""
    if isinstance(v, np.ndarray):
        return v[()] if v.ndim == 0 else v
    if isinstance(v, list):
        return [_scalars(x) for x in v]
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return type(v)(_scalars(x) for x in v) if type(v) is tuple else v
    if isinstance(v, dict) and type(v) in (dict, collections.OrderedDict):
        return type(v)((k, _scalars(x)) for k, x in v.items())
    return v
