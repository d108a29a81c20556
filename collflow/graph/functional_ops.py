"""tf.scan, tf.map_fn, tf.foldl, tf.foldr: a function applied along axis 0 in one cf.while_loop.

Both unstack their `elems` into TensorArrays, run `fn` once per element in the loop body
(one graph whatever the length, which may be known only at run time), and stack the
results.  Gradients come from the while loop's gradient and the TensorArray gradients,
like dynamic_rnn's; tensors and variables `fn` uses from outside receive theirs too.

`elems` may be a nested structure (tuples, lists, dicts, namedtuples) of tensors sharing
their first dimension; `fn` receives the same structure of slices.  As in TensorFlow 1.x:

    scan(fn, elems, initializer)  ->  a[i] = fn(a[i-1], elems[i]), a[-1] = initializer
    scan(fn, elems)               ->  a[0] = elems[0], then as above from i = 1
    map_fn(fn, elems)             ->  out[i] = fn(elems[i])  (pass dtype= when fn's
                                      output structure or dtypes differ from elems')
    foldl / foldr                 ->  scan's last accumulated value only (foldr walks
                                      from the end)
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from . import graph as _g
from . import nest
from .control_flow import while_loop
from .ops import array_ops as _a
from .ops.constant_op import constant, stop_gradient
from .shape import TensorShape
from .tensor_array import TensorArray

__all__ = ["scan", "map_fn", "foldl", "foldr"]


def _flat_elems(elems: Any, what: str) -> List[_g.Tensor]:
    flat = [_g.convert_to_tensor(e) for e in nest.flatten(elems)]
    if not flat:
        raise InvalidArgumentError(f"{what}: elems must be a tensor or a non-empty structure of tensors")
    for e in flat:
        if e.shape.rank == 0:
            raise InvalidArgumentError(f"{what}: elems must be tensors of rank >= 1 (unstacked along axis 0), "
                                       f"got the scalar {e.name}")
    return flat


def _length(flat: List[_g.Tensor], what: str) -> Any:
    """(n as an int32 tensor, n if static else None); every elem must agree on n."""
    n_static = TensorShape([None])
    for e in flat:
        d0 = TensorShape([e.shape.dims[0] if e.shape.rank is not None else None])
        if not n_static.is_compatible_with(d0):
            raise InvalidArgumentError(f"{what}: all elems must have the same first dimension, got "
                                       f"{[tuple(x.shape.dims or ()) for x in flat]}")
        n_static = n_static.merge_with(d0)
    n = n_static.dims[0]
    n_t = constant(n, dtype=_dt.int32) if n is not None else _a.shape(flat[0])[0]
    return n_t, n


def _unstacked(flat: List[_g.Tensor], n_t: Any) -> List[TensorArray]:
    return [TensorArray(e.dtype, n_t, element_shape=TensorShape(e.shape.dims[1:]) if e.shape.rank is not None
                        else None, name="elems").unstack(e) for e in flat]


def _results(tas: List[TensorArray], n: Optional[int], back_prop: bool) -> List[_g.Tensor]:
    out = []
    for ta in tas:
        r = ta.stack()
        if n is not None and r.shape.rank is not None:
            r.set_shape([n] + [None] * (r.shape.rank - 1))
        out.append(r if back_prop else stop_gradient(r))
    return out


def scan(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
         back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True, reverse: bool = False,
         name: Optional[str] = None) -> Any:
    """Repeatedly applies fn(accumulated, element) along axis 0 of `elems` (tf.scan).

    Returns the stack of every accumulated value, shaped [n, ...] and structured like
    `initializer` (or like `elems` without one).  reverse: walk from the last element.
    back_prop=False: no gradient flows through.  swap_memory is accepted (no effect).
    infer_shape: the accumulated values keep one static shape (their shape in the
    loop must not change).
    """
    g = _g.get_default_graph()
    with g.as_default(), g.name_scope(name or "scan"):
        flat = _flat_elems(elems, "scan")
        n_t, n = _length(flat, "scan")
        elems_ta = _unstacked(flat, n_t)
        one = constant(1, dtype=_dt.int32)
        if initializer is None:
            a_struct = elems
            first = n_t - one if reverse else constant(0, dtype=_dt.int32)
            a_flat = [ta.read(first) for ta in elems_ta]
            start = one
        else:
            a_struct = initializer
            a_flat = [_g.convert_to_tensor(v) for v in nest.flatten(initializer)]
            start = constant(0, dtype=_dt.int32)
        accs = [TensorArray(a.dtype, n_t, element_shape=a.shape if infer_shape else None, name="accs")
                for a in a_flat]
        if initializer is None:
            accs = [ta.write(first, a) for ta, a in zip(accs, a_flat)]
        i0 = n_t - one - start if reverse else start

        def cond(i: Any, a: Any, tas: Any) -> Any:
            return i >= 0 if reverse else i < n_t

        def body(i: Any, a: Any, tas: Any) -> Any:
            x = nest.pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
            out = fn(nest.pack_sequence_as(a_struct, list(a)), x)
            try:
                nest.assert_same_structure(a_struct, out)
            except ValueError:
                raise InvalidArgumentError(f"scan: fn must return the structure of the "
                                           f"{'initializer' if initializer is not None else 'elems'} "
                                           f"({a_struct!r}), got {out!r}") from None
            out_flat = [_g.convert_to_tensor(o) for o in nest.flatten(out)]
            for k, (o, prev) in enumerate(zip(out_flat, a)):
                if o.dtype != prev.dtype:
                    raise InvalidArgumentError(f"scan: fn's output {k} has dtype {o.dtype.name}, the accumulator "
                                               f"has {prev.dtype.name}")
            tas = [ta.write(i, o) for ta, o in zip(tas, out_flat)]
            return i - one if reverse else i + one, out_flat, tas

        _, _, accs = while_loop(cond, body, (i0, a_flat, accs), parallel_iterations=parallel_iterations,
                                name="while")
        return nest.pack_sequence_as(a_struct, _results(accs, n, back_prop))


def map_fn(fn: Callable[[Any], Any], elems: Any, dtype: Any = None, parallel_iterations: Optional[int] = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
           name: Optional[str] = None) -> Any:
    """Stacks fn(elems[i]) for every i along axis 0 of `elems` (tf.map_fn).

    dtype: the structure of fn's output dtypes when it differs from `elems`' (as in
    TensorFlow).  back_prop=False: no gradient flows through.  swap_memory is accepted
    (no effect).  infer_shape: every output slice has one static shape.
    """
    g = _g.get_default_graph()
    with g.as_default(), g.name_scope(name or "map"):
        flat = _flat_elems(elems, "map_fn")
        n_t, n = _length(flat, "map_fn")
        elems_ta = _unstacked(flat, n_t)
        out_struct = elems if dtype is None else dtype
        out_dtypes = [e.dtype for e in flat] if dtype is None else [_dt.as_dtype(d) for d in nest.flatten(dtype)]
        accs = [TensorArray(d, n_t, name="accs", infer_shape=infer_shape) for d in out_dtypes]
        one = constant(1, dtype=_dt.int32)

        def body(i: Any, tas: Any) -> Any:
            out = fn(nest.pack_sequence_as(elems, [ta.read(i) for ta in elems_ta]))
            try:
                nest.assert_same_structure(out_struct, out)
            except ValueError:
                hint = "" if dtype is not None else "; pass dtype= with the structure of fn's outputs"
                raise InvalidArgumentError(f"map_fn: fn must return the structure of "
                                           f"{'dtype' if dtype is not None else 'elems'} ({out_struct!r}), got "
                                           f"{out!r}{hint}") from None
            out_flat = [_g.convert_to_tensor(o) for o in nest.flatten(out)]
            for k, (o, d) in enumerate(zip(out_flat, out_dtypes)):
                if o.dtype != d:
                    raise InvalidArgumentError(f"map_fn: fn's output {k} has dtype {o.dtype.name}, expected "
                                               f"{d.name} (pass dtype= when fn changes the dtype)")
            return i + one, [ta.write(i, o) for ta, o in zip(tas, out_flat)]

        _, accs = while_loop(lambda i, tas: i < n_t, body, (constant(0, dtype=_dt.int32), accs),
                             parallel_iterations=parallel_iterations or 10, name="while")
        return nest.pack_sequence_as(out_struct, _results(accs, n, back_prop))


def _fold(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any, parallel_iterations: int, back_prop: bool,
          reverse: bool, what: str, name: Optional[str]) -> Any:
    g = _g.get_default_graph()
    with g.as_default(), g.name_scope(name or what):
        flat = _flat_elems(elems, what)
        n_t, _ = _length(flat, what)
        elems_ta = _unstacked(flat, n_t)
        one = constant(1, dtype=_dt.int32)
        if initializer is None:
            a_struct = elems
            a_flat = [ta.read(n_t - one if reverse else constant(0, dtype=_dt.int32)) for ta in elems_ta]
            start = one
        else:
            a_struct = initializer
            a_flat = [_g.convert_to_tensor(v) for v in nest.flatten(initializer)]
            start = constant(0, dtype=_dt.int32)
        i0 = n_t - one - start if reverse else start

        def body(i: Any, a: Any) -> Any:
            x = nest.pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
            out = fn(nest.pack_sequence_as(a_struct, list(a)), x)
            try:
                nest.assert_same_structure(a_struct, out)
            except ValueError:
                raise InvalidArgumentError(f"{what}: fn must return the structure of the accumulator ({a_struct!r}), "
                                           f"got {out!r}") from None
            return i - one if reverse else i + one, [_g.convert_to_tensor(o) for o in nest.flatten(out)]

        _, a = while_loop(lambda i, a: i >= 0 if reverse else i < n_t, body, (i0, a_flat),
                          parallel_iterations=parallel_iterations, name="while")
        return nest.pack_sequence_as(a_struct, [x if back_prop else stop_gradient(x) for x in a])


def foldl(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: Optional[str] = None) -> Any:
    """fn(...fn(fn(initializer, elems[0]), elems[1])..., elems[n-1]) (tf.foldl); without an
    initializer, elems[0] starts the fold.  Only the accumulator is carried (no stack)."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, False, "foldl", name)


def foldr(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: Optional[str] = None) -> Any:
    """foldl from the last element to the first (tf.foldr)."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, True, "foldr", name)
