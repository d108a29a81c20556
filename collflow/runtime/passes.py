"""Graph passes the TensorFlow papers name, applied to a plan before code generation:
constant folding and common-subexpression elimination.

- Constant folding: an op whose inputs are all constants (Const ops, or values folded
  already) is run once, when the plan is compiled, with its CPU kernel, and its outputs become
  constants of the plan (`FoldedConst`); so is an op that only needs a static shape known
  when building (Shape, Size, Rank, ZerosLike, OnesLike of a fully known shape).  Stateful and
  random ops, ops inside control flow, ops with control inputs and values over 1 MiB are left
  alone.  A kernel that fails at compile time is left to fail at run time, as it would have.
- CSE: two ops of the same type with the same attributes, the same (already deduplicated)
  inputs, control inputs, control-flow context and device compute the same values: the later
  one's consumers read the earlier one's outputs.  Stateful ops (random draws, variable
  reads and updates, collectives) are never merged.

Both rewrite only the plan: the user's graph is unchanged, and a fetch of a folded or merged
tensor returns the same value it would have.  Folding runs for plans whose default device is
the CPU (a folded value is a host array, which a GPU plan would copy to the device every
step); CSE runs for every plan.  Ops pinned to a device with cf.device are not folded.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..graph.gradients import GATE_ATTR
from ..graph.graph import Operation, Tensor, canonical_device
from ..kernels.device import get_device
from ..kernels.registry import KernelContext, get_kernel

__all__ = ["FoldedConst", "Rewrite", "optimize"]

_MAX_FOLD_BYTES = 1 << 20
# ops that need only a static shape, not their input's value
_SHAPE_ONLY = {"Shape", "Size", "Rank", "ZerosLike", "OnesLike"}
# never merged even when stateless: merging would change what runs (a NoOp is a target)
_NO_CSE = {"NoOp", "Placeholder", "PlaceholderWithDefault", "Identity"}


class FoldedConst:
    """A plan-level constant standing for tensor `src`, whose value was computed at compile time.

    `control_inputs`: what must still run before it: the producer of the input a shape-only
    op read (TF's constant folding keeps that edge too), so folding `tf.shape(x)` or
    `tf.zeros_like(x)` never drops x's side effects (an assign, a loop that fills a
    TensorArray its gradient reads)."""

    type = "Const"
    inputs: List[Any] = []
    attrs: Dict[str, Any] = {}
    stateful = False
    device: Optional[str] = None

    def __init__(self, src: Tensor, value: np.ndarray, after: Sequence[Any] = ()):
        self.src = src
        self.control_inputs: List[Any] = list(after)
        self.value = value
        self.name = f"{src.op.name}:{src.value_index}/folded"
        self.graph = src.graph
        self._id = src.op._id
        self.outputs = [_FoldedTensor(self, src)]

    def creation_site(self) -> str:
        return self.src.op.creation_site()

    def kernel(self) -> Callable[[], np.ndarray]:
        value = self.value

        def folded() -> np.ndarray:
            return value
        folded.constant_result = True  # type: ignore[attr-defined]  (bound once by the codegen)
        return folded

    def __repr__(self) -> str:
        return f"<folded {self.name}>"


class _FoldedTensor:
    __slots__ = ("op", "value_index", "dtype", "shape", "name", "graph")

    def __init__(self, op: FoldedConst, src: Tensor):
        self.op, self.value_index, self.dtype, self.shape = op, 0, src.dtype, src.shape
        self.name, self.graph = op.name, src.graph


class Rewrite:
    """What the passes decided: tensor -> the tensor (or folded constant) to read instead."""

    def __init__(self) -> None:
        self.alias: Dict[Tensor, Any] = {}
        self.folded: List[FoldedConst] = []
        self.merged = 0

    def resolve(self, t: Any) -> Any:
        return self.alias.get(t, t)

    def __bool__(self) -> bool:
        return bool(self.alias)


def optimize(needed: Set[Operation], fed: Set[Tensor], targets: Sequence[Operation], session: Any,
             top_level_only: bool = False, fold: bool = True, cse: bool = True) -> Rewrite:
    """Constant folding and CSE over the plan's ops (see the module docstring).
    `top_level_only` (plans with loops and conds): ops inside a loop or cond and the
    control-flow ops themselves are left as they are; only the ops around them are folded
    and merged.  `fold=False`: CSE alone (plans on a GPU); `cse=False`: folding alone."""
    from ..graph.ops.control_flow_ops import CONTROL_FLOW_TYPES
    rw = Rewrite()
    # ops that may not run: downstream of a cond's Switch (through data or control edges)
    # until a Merge with a live input.  A folded or merged value always exists, so such an
    # op's value must not become one (a Merge would take a branch that was not taken).
    maybe_dead: Set[Any] = set()
    values: Dict[Any, np.ndarray] = {}     # resolved tensor -> its constant value
    seen: Dict[Tuple, Operation] = {}
    target_set = set(targets)
    ctx: Optional[KernelContext] = None
    for op in sorted(needed, key=lambda o: o._id):
        if top_level_only:
            if _maybe_dead(op, maybe_dead):
                maybe_dead.add(op)
                continue
            if op._ctx is not None or op.type in CONTROL_FLOW_TYPES:
                continue
        ins = [rw.resolve(t) for t in op.inputs]
        if op.type == "Identity" and op.attrs.get(GATE_ATTR) and op.outputs[0] not in fed:
            # a gradient gate (gradients.py's gate_gradients): it only makes pure gradient ops
            # wait on each other, which changes no value; reading through it lets the fusion
            # pass see a gradient product next to its update (MatMul+ApplyGradientDescent)
            rw.alias[op.outputs[0]] = ins[0]
            continue
        if op.type == "Const" and not op.control_inputs and op._ctx is None:
            values[op.outputs[0]] = op.attrs["value"]
        elif fold and _foldable(op, ins, values, fed, target_set):
            if ctx is None:
                dev = get_device("/cpu:0")
                ctx = KernelContext(dev.xp, dev, session._resources, session, session._config)
            outs = _evaluate(op, ins, values, ctx)
            if outs is not None:
                # a shape-only op's input is not a constant: its producer still runs first
                after = ([x.op for x in ins if x not in fed and not isinstance(x.op, FoldedConst)]
                         if op.type in _SHAPE_ONLY else [])
                for t, v in zip(op.outputs, outs):
                    node = FoldedConst(t, v, after)
                    rw.folded.append(node)
                    rw.alias[t] = node.outputs[0]
                    values[node.outputs[0]] = v
                continue
        if not cse or op.stateful or op in target_set or op.type in _NO_CSE or any(t in fed for t in op.outputs):
            continue
        key = _cse_key(op, ins)
        if key is None:
            continue
        prev = seen.get(key)
        if prev is None:
            seen[key] = op
            continue
        for a, b in zip(op.outputs, prev.outputs):
            rw.alias[a] = rw.resolve(b)
        rw.merged += 1
    return rw


def _maybe_dead(op: Operation, dead: Set[Any]) -> bool:
    """Whether `op` may be skipped at run time, given which ops before it may be."""
    t = op.type
    if t in ("Switch", "RefSwitch") and op.inputs[1].op.type != "LoopCond":
        return True
    if t in ("Merge", "RefMerge"):
        if len(op.inputs) == 2 and op.inputs[1].op.type in ("NextIteration", "RefNextIteration"):
            return op.inputs[0].op in dead  # a loop's merge: as its Enter
        return all(x.op in dead for x in op.inputs)
    return any(x.op in dead for x in op.inputs) or any(c in dead for c in op.control_inputs)


def _foldable(op: Operation, ins: List[Any], values: Dict[Any, np.ndarray], fed: Set[Tensor],
              targets: Set[Operation]) -> bool:
    if (op.stateful or op.control_inputs or op._ctx is not None or op in targets or not op.outputs
            or canonical_device(op.device) is not None  # a pinned op keeps its placement (and its errors)
            or any(t in fed for t in op.outputs) or op.type in ("Const", "Placeholder", "PlaceholderWithDefault")):
        return False
    if op.type in _SHAPE_ONLY:
        return all(t.shape.is_fully_defined() for t in op.inputs[:1])
    return bool(ins) and all(t in values for t in ins)


def _evaluate(op: Operation, ins: List[Any], values: Dict[Any, np.ndarray], ctx: KernelContext) -> Optional[list]:
    """The op's outputs computed now with its CPU kernel (None: leave it to run time)."""
    if op.type in _SHAPE_ONLY:
        shape = tuple(int(d) for d in op.inputs[0].shape.as_list())
        dt = op.outputs[0].dtype.np
        if op.type == "Shape":
            out = np.asarray(shape, dtype=dt)
        elif op.type == "Size":
            out = np.asarray(int(np.prod(shape)), dtype=dt)
        elif op.type == "Rank":
            out = np.asarray(len(shape), dtype=dt)
        elif op.type == "ZerosLike":
            # a string tensor's zeros are empty strings, as the kernel gives them
            out = np.full(shape, b"", dtype=object) if dt == object else np.zeros(shape, dtype=dt)
        else:
            out = np.ones(shape, dtype=dt)
        return _finish(op, [out])
    try:
        factory, is_async = get_kernel(op, "CPU")
        if is_async:
            return None
        fn = factory(op, ctx)
        with np.errstate(all="ignore"):  # as in a run: folding prints no NumPy warnings
            r = fn(*[values[t] for t in ins])
    except Exception:  # the same error will surface when the op runs
        return None
    outs = [r] if len(op.outputs) == 1 else list(r)
    return _finish(op, outs)


def _finish(op: Operation, outs: list) -> Optional[list]:
    res = []
    for t, v in zip(op.outputs, outs):
        if not isinstance(v, (np.ndarray, np.generic)):
            return None
        a = np.array(v, dtype=t.dtype.np, order="C")
        if a.nbytes > _MAX_FOLD_BYTES or not t.shape.matches_value(a.shape):
            return None
        a.setflags(write=False)  # a constant of the plan: nothing may write into it
        res.append(a)
    return res


def _cse_key(op: Operation, ins: List[Any]) -> Optional[Tuple]:
    try:
        attrs = tuple(sorted((k, _attr_key(v)) for k, v in op.attrs.items()))
    except TypeError:
        return None  # an attribute we cannot compare safely: keep the op
    return (op.type, attrs, tuple(id(t) for t in ins), tuple(sorted(id(c) for c in op.control_inputs)),
            id(op._ctx), op.device)


def _attr_key(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return ("nd", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return tuple(_attr_key(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _attr_key(x)) for k, x in v.items()))
    if isinstance(v, (Tensor, Operation)):
        return ("ref", id(v))
    hash(v)  # raises TypeError for what cannot be a key
    return (type(v).__name__, v)
