"""tf.data.experimental.rejection_resample: (class, element) pairs whose class distribution
follows `target_dist`, by TF's algorithm.

With an initial distribution p (given, or estimated as TF does: counts starting at 10 per
class, updated per block of 32 class values, the block's elements all using the estimate
after it), the per-class ratios r = target / (p + tiny) give m = min(r) and acceptance
probabilities a = (r - m) / (max(r) - m).  Each output is, with probability m, the next
element of one pass over the input (kept whatever its class), else the next element of a
second pass that survives rejection (kept with probability a[class]); each pass is its own
iteration of the input, as TF's datasets each iterate it.  A given initial_dist with m == 1
(or 0) uses the first (or the second) pass only, as TF decides when both distributions are
constants.  The random draws are collflow's own streams, seeded by TF's rules
(deterministic given the seeds; not TF's values).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.ops.random_ops import get_seed
from .dataset import Dataset
from .dataset_core import Element, IterationContext, TensorSpec, _TracedFunction

__all__ = ["rejection_resample"]

_BLOCK, _SMOOTHING = 32, 10


def _acceptance(initial: np.ndarray, target: np.ndarray) -> Tuple[np.ndarray, float]:
    """(acceptance probability per class, probability of taking an unfiltered element)."""
    ratio = target / (initial + np.finfo(initial.dtype).tiny)
    hi, lo = ratio.max(), ratio.min()
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (ratio - lo) / (hi - lo)
    return a, float(lo)


class _RejectionResample(Dataset):
    def __init__(self, ds: Dataset, class_func: Callable[..., Any], target_dist: Any, initial_dist: Any,
                 seed: Optional[int]):
        graph = ds._graph() or _g.get_default_graph()
        self._fn = _TracedFunction(class_func, ds._structure, "class_func", graph)
        out = self._fn.out_structure
        if not isinstance(out, TensorSpec) or out.dtype not in (_dt.int32, _dt.int64) \
                or out.shape.rank not in (None, 0):
            raise ValueError(f"`class_func` must return a scalar int32 or int64 tensor, got {out}")
        caps = list(self._fn.captures.outer)
        self._target = target_dist
        self._initial = initial_dist
        for v in (target_dist, initial_dist):
            if isinstance(v, _g.Tensor):
                caps.append(v)
        self._seeds = get_seed(seed, graph)
        super().__init__((out, ds._structure), inputs=[ds], captures=caps)

    def _dist(self, ctx: IterationContext, v: Any) -> np.ndarray:
        a = np.asarray(ctx.value(v), dtype=np.float32)
        if a.ndim != 1:
            raise InvalidArgumentError(f"rejection_resample: a distribution must be a vector, got shape {a.shape}")
        return a

    def _classes(self, ctx: IterationContext, call: Any) -> Iterator[Tuple[int, Element]]:
        for el in self._inputs[0]._elements(ctx):
            yield int(np.asarray(call(*el)[0])), el

    def _estimates(self, ctx: IterationContext, call: Any, k: int) -> Iterator[Tuple[int, Element, np.ndarray]]:
        """(class, element, the initial distribution estimated for it) over one pass."""
        counts = np.full(k, _SMOOTHING, dtype=np.int64)
        it = self._classes(ctx, call)
        while True:
            block = [x for _, x in zip(range(_BLOCK), it)]
            if not block:
                return
            for c, _ in block:
                if not 0 <= c < k:
                    raise InvalidArgumentError(f"rejection_resample: class {c} is not in [0, {k})")
                counts[c] += 1
            dist = (counts / counts.sum()).astype(np.float32)
            for c, el in block:
                yield c, el, dist

    def _rng(self, ctx: IterationContext, salt: int) -> np.random.Generator:
        s1, s2 = self._seeds
        if s1 is None:
            return ctx.unseeded_rng()
        counter = ctx.state.setdefault(("rejection_resample", self._id, salt), [0])
        counter[0] += 1
        return np.random.default_rng([s1 & 0xFFFFFFFFFFFF, s2 & 0xFFFFFFFFFFFF, counter[0], salt])

    def _elements(self, ctx: IterationContext) -> Iterator[Element]:
        call = self._fn.caller(ctx)
        target = self._dist(ctx, self._target)
        k = target.shape[0]
        cls_dtype = self._structure[0].dtype.np
        given = None if self._initial is None else self._dist(ctx, self._initial)

        def pair(c: int, el: Element) -> Element:
            return (np.array(c, dtype=cls_dtype),) + tuple(el)

        def original() -> Iterator[Element]:
            for c, el in self._classes(ctx, call):
                yield pair(c, el)

        def filtered() -> Iterator[Element]:
            rng = self._rng(ctx, 1)
            src = ((c, el, given) for c, el in self._classes(ctx, call)) if given is not None \
                else self._estimates(ctx, call, k)
            for c, el, init in src:
                if not 0 <= c < k:
                    raise InvalidArgumentError(f"rejection_resample: class {c} is not in [0, {k})")
                a, _ = _acceptance(init, target)
                if rng.random(dtype=np.float32) < a[c]:
                    yield pair(c, el)

        if given is not None:
            if given.shape != target.shape:
                raise InvalidArgumentError(f"rejection_resample: initial_dist has shape {given.shape}, target_dist "
                                           f"{target.shape}")
            m = _acceptance(given, target)[1]
            if m == 1.0:
                yield from original()
                return
            if m == 0.0:
                yield from filtered()
                return
            weights: Iterator[float] = iter(lambda: m, None)  # type: ignore[call-overload]
        else:
            weights = (_acceptance(d, target)[1] for _, _, d in self._estimates(ctx, call, k))
        # the two passes mixed, as sample_from_datasets with the per-draw weights (m, 1 - m)
        rng = self._rng(ctx, 2)
        its = [original(), filtered()]
        live = [True, True]
        for m in weights:
            if not any(live):
                return
            w = np.array([m if live[0] else 0.0, (1.0 - m) if live[1] else 0.0])
            if w.sum() <= 0:
                w = np.array(live, dtype=np.float64)
            i = int(rng.choice(2, p=w / w.sum()))
            el = next(its[i], None)
            if el is None:
                live[i] = False
                continue
            yield el

    def _describe(self) -> str:
        name = (lambda v: v.name if isinstance(v, _g.Tensor) else repr(np.asarray(v).tolist()))
        init = "None" if self._initial is None else name(self._initial)
        return f"rejection_resample({self._fn.describe()},{name(self._target)},{init},{self._seeds})"


def rejection_resample(class_func: Callable[..., Any], target_dist: Any, initial_dist: Any = None,
                       seed: Optional[int] = None) -> Callable[[Dataset], Dataset]:
    """A transformation resampling a dataset to `target_dist` over the classes `class_func`
    gives (int32/int64 scalars in [0, len(target_dist))): elements become (class, element)."""
    return lambda ds: _RejectionResample(ds, class_func, target_dist, initial_dist, seed)
