"""tf.GradientTape in graph mode: gradients of the ops built while a tape records.

While a tape records, the graph hands it every new op (Graph.create_op -> `_record_op`).
The tape keeps the tensors it watches (those given to `watch`, the handles of the variables
it watches, and the outputs of the ops it recorded) and records an op when one of its
differentiable inputs is watched, as TensorFlow's tape does.  `gradient` then runs the
ordinary backward pass (graph/gradients.py) restricted to the recorded ops, so an op built
before the tape, after it, or under `stop_recording` is not differentiated through, and a
source the tape does not watch gets None.  Gradient ops built while another tape records are
recorded by it like any op: nested tapes give higher-order gradients.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, List, Optional, Set

import numpy as np

from .. import dtypes as _dt
from ..platform import tf_logging as _logging
from . import graph as _g
from . import nest
from .gradients import UnconnectedGradients, _differentiable_dtype, _gradients, _unconnected_zeros
from .indexed_slices import IndexedSlices
from .sparse_tensor import SparseTensor

__all__ = ["GradientTape"]

_CONSUMED = "A non-persistent GradientTape can only be used to compute one set of gradients (or jacobians)"
_WARNED = {"persistent": False}  # TF warns once per process about gradients inside a persistent tape


class _Tape:
    """What a GradientTape has recorded: watched tensors, recorded ops, watched variables."""

    __slots__ = ("watched", "ops", "variables", "frames")

    def __init__(self) -> None:
        self.frames: Set[Any] = set()  # the control-flow contexts of recorded ops
        self.watched: Set[_g.Tensor] = set()
        self.ops: Set[_g.Operation] = set()
        self.variables: List[Any] = []


def _is_variable(x: Any) -> bool:
    return isinstance(getattr(x, "handle", None), _g.Tensor)


def _flat_watchables(x: Any) -> List[Any]:
    """Tensors and Variables in a (nested) structure; IndexedSlices and SparseTensors give their
    float components (TF's composite tensors)."""
    out: List[Any] = []
    for leaf in nest.flatten(x):
        if isinstance(leaf, _g.Tensor) or _is_variable(leaf):
            out.append(leaf)
        elif isinstance(leaf, (IndexedSlices, SparseTensor)):
            out.append(leaf.values)
        else:
            raise ValueError(f"Passed in object {leaf!r} of type {type(leaf).__name__!r}, not tf.Tensor or "
                             "tf.Variable or ExtensionType.")
    return out


def _mode(unconnected_gradients: Any) -> str:
    mode = getattr(unconnected_gradients, "value", unconnected_gradients)
    if mode not in (UnconnectedGradients.NONE, UnconnectedGradients.ZERO):
        raise ValueError(f"Unknown value for unconnected_gradients: {unconnected_gradients!r}")
    return mode


class GradientTape:
    """tf.GradientTape(persistent=False, watch_accessed_variables=True): records the ops built
    in its `with` block for `gradient`, `jacobian` and `batch_jacobian`.

    Trainable variables read in the block are watched (unless watch_accessed_variables=False);
    tensors are watched with `watch`.  A non-persistent tape gives one set of gradients.
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._tape: Optional[_Tape] = None
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._watched_variables: tuple = ()
        self._recording = False

    # -- recording --------------------------------------------------------------------------
    def __enter__(self) -> "GradientTape":
        self._push_tape()
        return self

    def __exit__(self, typ: Any, value: Any, traceback: Any) -> None:
        if self._recording:
            self._pop_tape()

    def _push_tape(self) -> None:
        if self._recording:
            raise ValueError("Tape is still recording, This can happen if you try to re-enter an already-active "
                             "tape.")
        if self._tape is None:
            self._tape = _Tape()
        _g.recording_tapes().append(self)
        self._recording = True

    def _pop_tape(self) -> None:
        if not self._recording:
            raise ValueError("Tape is not recording.")
        tapes = _g.recording_tapes()
        for i in range(len(tapes) - 1, -1, -1):  # by identity: the innermost entry of this tape
            if tapes[i] is self:
                del tapes[i]
                break
        self._recording = False

    @contextlib.contextmanager
    def _ensure_recording(self) -> Iterator[None]:
        if self._recording:
            yield
            return
        self._push_tape()
        try:
            yield
        finally:
            self._pop_tape()

    def _record_op(self, op: _g.Operation) -> None:
        """Called by Graph.create_op for each op built while this tape records."""
        tape = self._tape
        if any(t in tape.watched for t in op.inputs if _differentiable_dtype(t)) or (
                op.type == "Exit" and op.inputs and op.inputs[0].op._ctx in tape.frames):
            # a while loop's Exits: its Merges were built before the body closed the back edge,
            # so they are taken as recorded when the tape recorded anything in the loop
            tape.ops.add(op)
            tape.watched.update(op.outputs)
            ctx = op._ctx
            while ctx is not None and ctx not in tape.frames:
                tape.frames.add(ctx)
                ctx = getattr(ctx, "outer", None)

    def _variable_accessed(self, var: Any) -> None:
        """Called when a variable is read while this tape records (TF's variable_accessed)."""
        if self._watch_accessed_variables and var.trainable:
            self._watch_variable(var)

    def _watch_variable(self, var: Any) -> None:
        tape = self._tape
        if var.handle not in tape.watched:
            tape.watched.add(var.handle)
            tape.variables.append(var)

    def watch(self, tensor: Any) -> None:
        """Watches a Tensor or Variable (or a nested structure of them): gradients with respect
        to it can be taken, through the ops recorded from now on."""
        if self._tape is None:
            raise RuntimeError("GradientTape.watch: the tape is not active (enter it with `with tape:` first; a "
                               "non-persistent tape that gave its gradients is spent)")
        for t in _flat_watchables(tensor):
            if not _differentiable_dtype(t.handle if _is_variable(t) else t):
                _logging.warning("The dtype of the watched tensor must be floating (e.g. tf.float32), got %r",
                                 t.dtype)
            if _is_variable(t):
                self._watch_variable(t)
            else:
                self._tape.watched.add(t)

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Ops built in the block are not recorded on this tape (other tapes still record)."""
        if self._tape is None:
            raise RuntimeError("Trying to stop recording a tape which is not recording.")
        self._pop_tape()
        try:
            yield
        finally:
            self._push_tape()

    def reset(self) -> None:
        """Forgets everything recorded so far and goes on recording afresh, as leaving and
        re-entering the tape's context with a new tape."""
        self._pop_tape()
        self._tape = None
        self._push_tape()

    def watched_variables(self) -> tuple:
        """The variables this tape watches, in their order of construction."""
        if self._tape is not None:
            self._watched_variables = tuple(sorted(self._tape.variables, key=lambda v: v.handle.op._id))
        return self._watched_variables

    # -- differentiation -----------------------------------------------------------------------
    def _start_use(self) -> None:
        """gradient/jacobian's preamble: a spent tape refuses; a non-persistent tape stops
        recording (TF's), a persistent one warns that its gradient ops are recorded too."""
        if self._tape is None:
            raise RuntimeError(_CONSUMED)
        if self._recording:
            if not self._persistent:
                self._pop_tape()
            elif not _WARNED["persistent"]:
                _WARNED["persistent"] = True
                _logging.warning("Calling GradientTape.gradient on a persistent tape inside its context is "
                                 "significantly less efficient than calling it outside the context (it causes "
                                 "the gradient ops to be recorded on the tape, leading to increased CPU and "
                                 "memory usage). Only call GradientTape.gradient inside the context if you "
                                 "actually want to trace the gradient in order to compute higher order "
                                 "derivatives.")

    def _end_use(self) -> None:
        if not self._persistent:
            self.watched_variables()  # kept for watched_variables() after the tape is spent
            self._tape = None

    def _compute(self, targets: List[_g.Tensor], sources: List[_g.Tensor], grad_ys: Optional[list],
                 mode: str, capture: bool = False) -> List[Any]:
        """d(sum targets)/d(sources) through the recorded ops; None (or zeros) for sources the
        tape does not watch or the targets do not depend on.  capture: built inside a loop body
        (graph/gradients.py's _gradients)."""
        tape = self._tape
        watched = [s for s in sources if s in tape.watched]
        out: List[Any] = [None] * len(sources)
        if watched and targets:
            g = targets[0].graph
            for t in targets + watched:
                if t.graph is not g:
                    raise ValueError(f"GradientTape.gradient: {t.name} is in another graph than {targets[0].name}")
            with g.as_default():
                grads = _gradients(targets, list(dict.fromkeys(watched)), grad_ys, "gradient_tape", None,
                                   only=set(tape.ops), capture=capture)
            by_src = dict(zip(dict.fromkeys(watched), grads))
            out = [by_src.get(s) for s in sources]
        if mode == UnconnectedGradients.ZERO:
            for i, (gr, s) in enumerate(zip(out, sources)):
                if gr is None:
                    with s.graph.as_default():
                        out[i] = _unconnected_zeros(s)
        return out

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: Any = UnconnectedGradients.NONE) -> Any:
        """The gradient of target (summed over a structure of targets) with respect to each of
        sources, in sources' structure: Tensors, IndexedSlices (a gather from a variable) or
        None where a source is not watched or not connected (zeros with
        unconnected_gradients=ZERO).  output_gradients: one per target (default ones)."""
        self._start_use()
        if target is None:
            raise TypeError("Argument `target` should be a list or nested structure of Tensors, Variables or "
                            "CompositeTensors to be differentiated, but received None.")
        mode = _mode(unconnected_gradients)
        targets = [_target_tensor(t) for t in nest.flatten(target)]
        flat_sources = nest.flatten(sources)
        srcs = [_source_tensor(s) for s in flat_sources]
        grad_ys = None
        if output_gradients is not None:
            ogs = nest.flatten(output_gradients)
            if len(ogs) > len(targets):
                raise ValueError(f"GradientTape.gradient: {len(ogs)} output_gradients for {len(targets)} targets")
            ogs = ogs + [None] * (len(targets) - len(ogs))
            grad_ys = [None if o is None else o if isinstance(o, (_g.Tensor, IndexedSlices))
                       else _g.convert_to_tensor(o, dtype=t.dtype) for o, t in zip(ogs, targets)]
        grads = self._compute(targets, srcs, grad_ys, mode)
        self._end_use()
        return nest.pack_sequence_as(sources, grads)

    def jacobian(self, target: Any, sources: Any, unconnected_gradients: Any = UnconnectedGradients.NONE,
                 parallel_iterations: Optional[int] = None, experimental_use_pfor: bool = True) -> Any:
        """d target[i...] / d source[j...] for each of sources (shape target.shape + source.shape):
        one gradient per element of target, unrolled for a small static size, else in a
        while loop.  Sparse gradients come back dense; None where unconnected (zeros with
        ZERO).  parallel_iterations and experimental_use_pfor change nothing here."""
        self._start_use()
        mode = _mode(unconnected_gradients)
        flat_sources = nest.flatten(sources)
        srcs = [_source_tensor(s) for s in flat_sources]
        target = _target_tensor(target)
        from .ops import array_ops
        with target.graph.as_default():
            with self._ensure_recording():
                flat_target = array_ops.reshape(target, [-1])
            n = flat_target.shape.dims[0]
            if n is not None and n <= _UNROLL:
                rows: List[List[Any]] = [[] for _ in srcs]
                for i in range(n):
                    with self._ensure_recording():
                        y = flat_target[i]
                    for r, gr in zip(rows, self._compute([y], srcs, None, mode)):
                        r.append(gr)
                out = [None if all(gr is None for gr in r) else _stack_rows(r, s, target.shape, axis=0)
                       for s, r in zip(srcs, rows)]
            else:
                n_t = array_ops.size(target)
                stacked = self._loop_rows(target, srcs, n_t, lambda k: array_ops.reshape(
                    _one_hot(k, n_t, target.dtype), array_ops.shape(target)), mode)
                out = [None if st is None else _with_shape(array_ops.reshape(
                    st, array_ops.concat([array_ops.shape(target), array_ops.shape(st)[1:]], 0)),
                    target.shape.concatenate(_value_shape(s))) for st, s in zip(stacked, srcs)]
        self._end_use()
        return nest.pack_sequence_as(sources, out)

    def batch_jacobian(self, target: Any, source: Any, unconnected_gradients: Any = UnconnectedGradients.NONE,
                       parallel_iterations: Optional[int] = None, experimental_use_pfor: bool = True) -> Any:
        """The per-example jacobians of target [b, y1, ...] with respect to source [b, x1, ...]
        (target[i] depending on source[i] only): shape [b, y1, ..., x1, ...].  Unconnected:
        zeros, as TensorFlow's."""
        self._start_use()
        mode = _mode(unconnected_gradients)
        target = _target_tensor(target)
        src = _source_tensor(source)
        from .ops import array_ops
        for t in (target, src):
            if t.shape.rank is not None and t.shape.rank < 2:
                raise ValueError(f"Shape {_shape_str(t.shape)} must have rank at least 2")
        tb = target.shape.dims[0] if target.shape.rank else None
        sb = src.shape.dims[0] if src.shape.rank else None
        if tb is not None and sb is not None and tb != sb:
            raise ValueError(f"Need first dimension of target shape ({_shape_str(target.shape)}) and source shape "
                             f"({_shape_str(src.shape)}) to match.")
        inner = target.shape[1:] if target.shape.rank is not None else None
        row = inner.num_elements() if inner is not None else None
        with target.graph.as_default():
            if row is not None and row <= _UNROLL:
                with self._ensure_recording():
                    t2 = array_ops.reshape(target, [-1, row])
                cols = []
                for j in range(row):
                    with self._ensure_recording():
                        y = t2[:, j]
                    cols.append(self._compute([y], [src], None, mode)[0])
                if all(c is None for c in cols):
                    out = _zeros_jacobian(target, src)
                else:
                    out = _stack_rows(cols, src, inner, axis=1)
            else:
                shp = array_ops.shape(target)
                row_t = array_ops.size(target) // shp[0]

                def gy(j: Any) -> _g.Tensor:  # ones in column j of every example
                    ones = array_ops.ones_like(array_ops.reshape(target, array_ops.stack([shp[0], row_t])))
                    return array_ops.reshape(ones * _one_hot(j, row_t, target.dtype), shp)
                st = self._loop_rows(target, [src], row_t, gy, mode)[0]
                if st is None:
                    out = _zeros_jacobian(target, src)
                else:  # [row, b, x...] -> [b, y..., x...]
                    sshape = array_ops.shape(st)[1:]
                    st = array_ops.transpose(array_ops.reshape(st, array_ops.stack([row_t, shp[0], -1])), [1, 0, 2])
                    out = _with_shape(array_ops.reshape(st, array_ops.concat([shp, sshape[1:]], 0)),
                                      target.shape.concatenate(src.shape[1:]))
        self._end_use()
        return out

    def _loop_rows(self, target: _g.Tensor, srcs: List[_g.Tensor], k_t: _g.Tensor, make_gy: Any,
                   mode: str) -> List[Optional[_g.Tensor]]:
        """For each source, the gradients of target with output gradient make_gy(k) for k in
        range(k_t), stacked along a new axis 0 by a while loop (map_fn); None for a source
        not connected."""
        from .functional_ops import map_fn
        from .ops import misc_ops
        connected: List[bool] = []

        def row(k: _g.Tensor) -> list:
            grads = self._compute([target], srcs, [make_gy(k)], mode, capture=True)
            connected[:] = [gr is not None for gr in grads]
            return [_dense(gr) if gr is not None else _unconnected_zeros(s) for gr, s in zip(grads, srcs)]

        dtypes = [_value_dtype(s) for s in srcs]
        out = map_fn(row, misc_ops.range(k_t), dtype=dtypes, name="jacobian")
        return [o if c else None for o, c in zip(out, connected)]


# -- helpers ---------------------------------------------------------------------------------------

def _shape_str(s: Any) -> str:
    from .type_spec import _shape_str as fmt
    return fmt(s)


def _target_tensor(t: Any) -> _g.Tensor:
    if _is_variable(t):
        return t.value()
    if isinstance(t, _g.Tensor):
        return t
    if isinstance(t, IndexedSlices):
        return _g.convert_to_tensor(t)
    raise TypeError(f"GradientTape: a target must be a Tensor or Variable, got {type(t).__name__}")


def _source_tensor(s: Any) -> _g.Tensor:
    if _is_variable(s):
        return s.handle
    if isinstance(s, _g.Tensor):
        return s
    raise TypeError(f"GradientTape: a source must be a Tensor or Variable, got {type(s).__name__} ({s!r})")


def _dense(gr: Any) -> _g.Tensor:
    return _g.convert_to_tensor(gr) if isinstance(gr, IndexedSlices) else gr


def _value_shape(s: _g.Tensor) -> Any:
    """The static shape of a source's values (a variable handle: the variable's shape)."""
    if s.dtype == _dt.resource:
        from .ops.state_ops import variable_dtype_shape
        from .shape import as_shape
        return as_shape(variable_dtype_shape(s)[1])
    return s.shape


def _stack_rows(rows: List[Any], s: _g.Tensor, lead: Any, axis: int) -> _g.Tensor:
    """Stacks per-element gradients (None: zeros) along `axis` and shapes the result as
    [batch] + lead + source dims (axis 1) or lead + source dims (axis 0)."""
    from .ops import array_ops
    fill = next(_dense(r) for r in rows if r is not None)
    dense = [_dense(r) if r is not None else array_ops.zeros_like(fill) for r in rows]
    stacked = array_ops.stack(dense, axis=axis)
    sshape = _value_shape(s)
    if axis == 0:
        if lead.is_fully_defined() and sshape.is_fully_defined():
            return array_ops.reshape(stacked, lead.as_list() + sshape.as_list())
        return array_ops.reshape(stacked, array_ops.concat([_shape_vec(lead), array_ops.shape(fill)], 0))
    inner = sshape[1:]
    if inner.is_fully_defined():
        return array_ops.reshape(stacked, [-1] + lead.as_list() + inner.as_list())
    return array_ops.reshape(stacked, array_ops.concat([array_ops.shape(fill)[:1], _shape_vec(lead),
                                                        array_ops.shape(fill)[1:]], 0))


_UNROLL = 32  # a jacobian with at most this many rows is built unrolled, a larger one in a while loop


def _one_hot(k: Any, n: Any, dtype: Any) -> _g.Tensor:
    """The float vector of length n (a tensor) with a one at k."""
    from .ops import math_ops, misc_ops
    return math_ops.cast(math_ops.equal(misc_ops.range(n), k), dtype)


def _with_shape(t: _g.Tensor, shape: Any) -> _g.Tensor:
    """t with the static shape it is known to have (a reshape to a computed shape loses it)."""
    if shape.rank is not None:
        t.set_shape(shape)
    return t


def _value_dtype(s: _g.Tensor) -> Any:
    if s.dtype == _dt.resource:
        from .ops.state_ops import variable_dtype_shape
        return variable_dtype_shape(s)[0]
    return s.dtype


def _shape_vec(shape: Any) -> _g.Tensor:
    return _g.convert_to_tensor(np.asarray(shape.as_list(), np.int32))


def _zeros_jacobian(target: _g.Tensor, src: _g.Tensor) -> _g.Tensor:
    """batch_jacobian of an unconnected source: zeros of shape [b] + target dims + source dims."""
    from .ops import array_ops
    shp = target.shape.concatenate(src.shape[1:])
    if shp.is_fully_defined():
        return array_ops.zeros(shp.as_list(), target.dtype)
    dyn = array_ops.concat([array_ops.shape(target), array_ops.shape(src)[1:]], 0)
    return array_ops.zeros(dyn, target.dtype)
