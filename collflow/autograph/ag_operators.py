"""What converted code calls at run time (the `ag__` module of generated code).

Each statement form takes its blocks as functions of the variables they change and returns
the new values; it runs them as Python when the condition (or iterable) is a Python value,
and stages cf.cond / cf.while_loop when it is a tensor, as TensorFlow's AutoGraph does.

Side effects: a cond branch or loop body is a subgraph whose ops run only when something
depends on them, so the stateful ops a block creates and nobody consumes (a print, an
assert, an assign) become control dependencies of the block's outputs, and the staged
statement's output becomes an effect of the enclosing block (and, at the top, of the
converted function's return values).

Composite names (`self.total`, `d["k"]`) a staged statement assigns are read before it,
carried as cond outputs / loop variables and written back after it, as TF's AutoGraph does;
a tensor put into a Python list, dict or set in place by staged code is an error.
"""
from __future__ import annotations

import builtins
import contextlib
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import dtypes as _dt
from ..graph import control_flow as _cf
from ..graph import graph as _g
from ..graph import nest
from ..graph.ops import array_ops, math_ops
from ..graph.ops.constant_op import constant, identity
from ..graph.shape import TensorShape, as_shape


class Undefined:
    """The value of a variable that is not defined yet where a statement starts."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name: str):
        self.symbol_name = symbol_name

    def __repr__(self) -> str:
        return f"<undefined {self.symbol_name}>"

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"'{self.symbol_name}' may be undefined here (it is defined in only some "
                             "branches or iterations of the code above)")


class UndefinedReturnValue:
    """The return value of a converted function before a return statement ran."""

    def __repr__(self) -> str:
        return "<no return value yet>"


def ld(scope: Dict[str, Any], names: Sequence[str]) -> tuple:
    """The current values of `names` in `scope` (locals()), Undefined for unbound ones."""
    return tuple(scope[n] if n in scope else Undefined(n) for n in names)


def retval(v: Any) -> Any:
    return None if isinstance(v, UndefinedReturnValue) else v


def is_undefined(v: Any) -> bool:
    """Whether v is the marker of a variable not yet defined where converted code reads it."""
    return isinstance(v, Undefined)


def get_composite(read: Callable[[], Any]) -> Any:
    """The value of a composite name (`a.v`, `d["k"]`) by `read()`, Undefined when it has none."""
    try:
        return read()
    except (AttributeError, KeyError, IndexError, NameError):
        return Undefined("<composite>")


class _State:
    """The composite names a staged statement passes on (TF's get_state/set_state): `get()`
    reads their values, `set(values)` writes them back (Undefined ones deleted)."""

    def __init__(self, state: Optional[tuple]):
        self.get, self.set, self.names = state if state else (lambda: (), lambda vals: None, ())
        self.names = tuple(self.names)

    def read(self) -> tuple:
        vals = tuple(self.get())
        return tuple(Undefined(n) if isinstance(v, Undefined) else v for n, v in zip(self.names, vals))


class _MutationGuard:
    """What the objects a staged statement calls methods of hold before it (`l.append(t)`,
    `self.add(t)`): such a call runs once, when the graph is built (in both branches, in one
    iteration), not when the graph runs, so a tensor made inside the statement that ends up in
    one of them afterwards would be a value of the wrong branch or iteration: an error (TF's
    too: its InaccessibleTensorError where the tensor is used)."""

    def __init__(self, mutations: Optional[tuple]):
        import types
        self.before = []
        for obj, text, where in mutations or ():
            v = get_composite(obj)
            if isinstance(v, (list, dict, set)):
                self.before.append((v, self._contents(v), text, where))
            elif (not isinstance(v, (types.ModuleType, type, Undefined, _g.Tensor, _g.Operation))
                  and isinstance(getattr(v, "__dict__", None), dict)):
                self.before.append((v, dict(vars(v)), text, where))
        self.g = _g.get_default_graph()
        self.start = len(self.g._ops)
        self.ctx = self.g._get_control_flow_context()

    @staticmethod
    def _contents(v: Any) -> Any:
        return dict(v) if isinstance(v, dict) else list(v)

    def check(self, kind: str) -> None:
        if not self.before:
            return
        inside = None
        for v, old, text, where in self.before:
            if isinstance(v, (list, set)):
                new = [x for x in v if not any(x is y for y in old)]
                what = f"the Python {type(v).__name__}"
            else:
                cur = v if isinstance(v, dict) else getattr(v, "__dict__", {})
                new = [x for k, x in list(cur.items()) if k not in old or old[k] is not x]
                what = f"the Python {type(v).__name__}" if isinstance(v, dict) else "an attribute of the object"
            tensors = [t for t in nest.flatten(new) if _is_tensor(t)]
            if not tensors:
                continue
            if inside is None:
                inside = {id(op) for op in self.g._ops[self.start:] if op._ctx is not self.ctx}
            if any(id(t.op) in inside for t in tensors):
                raise ValueError(
                    f"{where}: {text} puts a tensor made inside a {kind} staged as TensorFlow control flow (its "
                    f"condition is a tensor) into {what}; that change is made once when the graph is built, not "
                    "when the graph runs, and the tensor cannot be used outside the staged code.  Assign the new "
                    "value in the function itself (`self.total = self.total + i`, `d['k'] = v` are carried "
                    "through), or use a tf.TensorArray (ta = ta.write(i, value)) in a loop.")


def _err(cls: type, msg: str) -> Exception:
    """An error about the user's code, naming the line of the statement being converted."""
    from .converter import user_location
    loc = user_location()
    return cls(f"{msg} (in {loc})" if loc else msg)


def _is_tensor(x: Any) -> bool:
    return isinstance(x, _g.Tensor)


def _map(fn: Callable[[Any], Any], structure: Any) -> Any:
    return nest.pack_sequence_as(structure, [fn(x) for x in nest.flatten(structure)])


# -- effects: ops a block must run --------------------------------------------------------

_tls = threading.local()


def effects_stack() -> List[list]:
    """This thread's stack of the effect lists of the blocks being converted (per thread: each
    thread builds its own graphs)."""
    st = getattr(_tls, "effects", None)
    if st is None:
        st = _tls.effects = []
    return st


def _record(op: Any) -> None:
    """Marks `op` (an op or a tensor) as something the enclosing block must run."""
    effects = effects_stack()
    if effects and op is not None:
        effects[-1].append(op.op if isinstance(op, _g.Tensor) else op)


def _dangling_stateful(g: _g.Graph, start: int, ctx: Any) -> list:
    """Stateful ops made since op number `start` in context `ctx` whose outputs nobody uses."""
    out = []
    for op in g._ops[start:]:
        if op._ctx is ctx and op.stateful and not any(t._consumers for t in op.outputs):
            out.append(op)
    return out


@contextlib.contextmanager
def collecting(generic: bool = True):
    """Collects the effects of a block: recorded ones, and (generic=True) dangling stateful ops."""
    g = _g.get_default_graph()
    start = len(g._ops)
    ctx = g._get_control_flow_context()
    found: list = []
    effects = effects_stack()
    effects.append(found)
    try:
        yield found
    finally:
        effects.pop()
        if generic:
            for op in _dangling_stateful(g, start, ctx):
                if op not in found:
                    found.append(op)


def _with_deps(values: Any, deps: list) -> Any:
    """`values` with every tensor in it made to run after `deps`."""
    if not deps:
        return values
    g = _g.get_default_graph()
    with g.control_dependencies(deps):
        return _map(lambda v: identity(v) if _is_tensor(v) else v, values)


def function_outputs(values: Any, effects: list) -> Any:
    """The return value of a converted function: tied to the effects its body staged."""
    if not effects:
        return values
    flat = [v for v in nest.flatten(values) if _is_tensor(v)]
    if not flat:
        return values
    return _with_deps(values, effects)


# -- if ------------------------------------------------------------------------------------

def _verify_branch(vals: tuple, names: Sequence[str], branch: str) -> None:
    for n, v in zip(names, vals):
        if isinstance(v, Undefined):
            raise _err(ValueError, f"'{n}' must also be initialized in the {branch} branch")
        if isinstance(v, UndefinedReturnValue):
            raise _err(ValueError, f"the {branch} branch must also have a return statement.")
        if v is None:
            raise _err(ValueError, f"'{n}' is None at the end of the {branch} branch.")


def _to_tensors(vals: tuple) -> tuple:
    return tuple(_map(lambda x: x if isinstance(x, (_g.Tensor, _g.Operation)) or hasattr(x, "flow")
                                    else _g.convert_to_tensor(x), v) for v in vals)


def _verify_cond_dtypes(a: tuple, b: tuple, names: Sequence[str]) -> None:
    for n, x, y in zip(names, a, b):
        try:
            nest.assert_same_structure(x, y)
        except (ValueError, TypeError) as e:
            raise _err(TypeError, f"'{n}' must have the same nested structure in the main and else "
                                  f"branches:\n\n{e}") from None
        for u, w in zip(nest.flatten(x), nest.flatten(y)):
            if _is_tensor(u) and _is_tensor(w) and u.dtype != w.dtype:
                raise _err(TypeError, f"'{n}' has dtype {u.dtype.name} in the main branch, but dtype "
                                      f"{w.dtype.name} in the else branch")


def _condition(c: Any, tag: str) -> _g.Tensor:
    if c.dtype != _dt.bool_:
        raise _err(ValueError, f"condition of {tag} expected to be `tf.bool` scalar, got {c}; to use as "
                               "boolean Tensor, use `tf.cast`; to check for None, use `is not None`")
    if c.shape.rank not in (None, 0):
        if c.shape.num_elements() != 1:
            raise _err(ValueError, f"condition of {tag} expected to be `tf.bool` scalar, got {c}")
        c = array_ops.reshape(c, [])
    return c


def if_stmt(cond: Any, body: Callable, orelse: Callable, init: tuple, names: Sequence[str], nouts: int,
            state: Optional[tuple] = None, mutations: Optional[tuple] = None) -> tuple:
    """`if cond: body else: orelse` over the variables `names` (the first `nouts` are outputs);
    state: the composite names the branches assign (outputs too); mutations: the objects they
    change in place (refused when the conditional is staged)."""
    if not _is_tensor(cond):
        return body(*init) if cond else orelse(*init)
    cond = _condition(cond, "if statement")
    st = _State(state)
    out_names = tuple(names[:nouts]) + st.names
    results: Dict[str, tuple] = {}
    state0 = st.read()

    def branch(fn: Callable, label: str) -> Callable:
        def run() -> tuple:
            st.set(state0)  # each branch starts from the values before the statement
            with collecting() as eff:
                vals = tuple(fn(*init)) + st.read()
            _verify_branch(vals, out_names, label)
            vals = _to_tensors(vals)
            other = results.get("else" if label == "main" else "main")
            results[label] = vals
            if other is not None:
                a, b = (vals, other) if label == "main" else (other, vals)
                _verify_cond_dtypes(a, b, out_names)
            if eff or not vals:
                # a block with effects (or no outputs) returns a token that runs them
                with _g.get_default_graph().control_dependencies(eff):
                    token = constant(True, name="effects")
                vals = _with_deps(vals, eff) + (token,)
            else:
                vals = vals + (constant(False, name="no_effects"),)
            return vals
        return run

    guard = _MutationGuard(mutations)
    try:
        out = tuple(_cf._cond(cond, branch(body, "main"), branch(orelse, "else"), "if_stmt"))
    except BaseException:
        st.set(state0)
        raise
    if any(o.op.control_inputs for o in nest.flatten(out[-1:])) or len(out) == 1:
        _record(out[-1])
    out = out[:-1]
    if st.names:
        st.set(out[nouts:])
        out = out[:nouts]
    guard.check("conditional")
    return out


def if_exp(cond: Any, if_true: Callable, if_false: Callable, expr_repr: str = "") -> Any:
    """`a if cond else b`: cf.cond for a tensor condition, lazily."""
    if not _is_tensor(cond):
        return if_true() if cond else if_false()
    cond = _condition(cond, f"conditional expression {expr_repr}".rstrip())
    return _cf.cond(cond, if_true, if_false)


# -- logical operators ----------------------------------------------------------------------

def not_(a: Any) -> Any:
    return math_ops.logical_not(a) if _is_tensor(a) else not a


def and_(a: Callable, b: Callable) -> Any:
    """`a and b`, b evaluated only when needed (in a cond for a tensor `a`)."""
    av = a()
    if _is_tensor(av):
        return _cf.cond(av, lambda: _g.convert_to_tensor(b()), lambda: av)
    return av and b()


def or_(a: Callable, b: Callable) -> Any:
    av = a()
    if _is_tensor(av):
        return _cf.cond(av, lambda: av, lambda: _g.convert_to_tensor(b()))
    return av or b()


# -- loops -----------------------------------------------------------------------------------

_UNSET = object()


def set_loop_options(parallel_iterations: Any = _UNSET, swap_memory: Any = _UNSET,
                     maximum_iterations: Any = _UNSET, shape_invariants: Any = _UNSET) -> None:
    """Options for the while_loop a loop is converted to; as a statement at the top of the
    loop body (the converter takes it out of the body).  Called anywhere else it does nothing."""
    del parallel_iterations, swap_memory, maximum_iterations, shape_invariants


def loop_options(parallel_iterations: Any = _UNSET, swap_memory: Any = _UNSET,
                 maximum_iterations: Any = _UNSET, shape_invariants: Any = _UNSET) -> dict:
    """What the converter calls in place of set_loop_options: the options given, as a dict."""
    opts = dict(parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                maximum_iterations=maximum_iterations, shape_invariants=shape_invariants)
    return {k: v for k, v in opts.items() if v is not _UNSET}


def _check_init(init: tuple, names: Sequence[str]) -> None:
    for n, v in zip(names, init):
        if isinstance(v, UndefinedReturnValue):
            raise _err(NotImplementedError, "a return statement cannot be placed inside this TensorFlow loop; "
                                            "this may happen if a return statement depends on a static Python "
                                            "condition such as a hyperparameter")
        if v is None:
            raise _err(ValueError, f"'{n}' is not allowed to be None before the loop")
        if isinstance(v, Undefined):
            raise _err(ValueError, f"'{n}' must be defined before the loop")


def _subshape(left: TensorShape, right: TensorShape) -> bool:
    """Whether `left` is at least as specific as `right`."""
    if right.dims is None:
        return True
    if left.dims is None or len(left.dims) != len(right.dims):
        return False
    return all(r is None or lv == r for lv, r in zip(left.as_list(), right.as_list()))


def _check_iteration(names: Sequence[str], init: tuple, entry: tuple, exit_: tuple, invariants: list) -> None:
    for n, i0, e, x, inv in zip(names, init, entry, exit_, invariants):
        try:
            nest.assert_same_structure(e, x)
        except (ValueError, TypeError) as err:
            raise _err(TypeError, f"'{n}' does not have the same nested structure after one "
                                  f"iteration.\n\n{err}") from None
        for fe, fx in zip(nest.flatten(e), nest.flatten(x)):
            if fx is None:
                raise _err(ValueError, f"'{n}' is None at the end of the iteration.")
            if not (_is_tensor(fe) and _is_tensor(fx)):
                continue
            if fe.dtype != fx.dtype:
                raise _err(TypeError, f"'{n}' has dtype {fe.dtype.name} before the loop, but dtype "
                                      f"{fx.dtype.name} after one iteration")
            if inv is None:
                if not _subshape(fx.shape, fe.shape):
                    raise _err(ValueError, f"'{n}' has shape {fe.shape} before the loop, but shape {fx.shape} "
                                           "after one iteration. Use tf.autograph.experimental.set_loop_options "
                                           "to set shape invariants.")
            elif not _subshape(fx.shape, inv):
                raise _err(ValueError, f"'{n}' has shape {fx.shape} after one iteration, which does not "
                                       f"conform with the shape invariant {inv}.")


def _invariants(opts: dict, init: tuple, names: Sequence[str]) -> list:
    """Per loop variable: its shape invariant (None: its entry shape), from (value, shape) pairs."""
    pairs = opts.get("shape_invariants") or ()
    by_id = {}
    for p in pairs:
        if not (isinstance(p, (list, tuple)) and len(p) == 2):
            raise _err(ValueError, "shape_invariants must be a list of (variable, shape) pairs, got "
                                   f"{opts.get('shape_invariants')!r}")
        by_id[id(p[0])] = as_shape(p[1])
    out = [by_id.get(id(v)) for v in init]
    for n, v, inv in zip(names, init, out):
        if inv is not None and _is_tensor(v) and not _subshape(v.shape, inv):
            raise _err(ValueError, f"'{n}' has shape {v.shape} before the loop, which does not conform with "
                                   f"the shape invariant {inv}.")
    return out


def _loop_kwargs(opts: dict) -> dict:
    kw = {}
    for k in ("parallel_iterations", "swap_memory", "maximum_iterations"):
        if k in opts and opts[k] is not None:
            kw[k] = opts[k]
    return kw


def _staged_loop(test: Callable, body: Callable, init: tuple, names: Sequence[str], opts: dict,
                 extra: tuple = (), extra_inv: tuple = (), state: Optional[tuple] = None,
                 mutations: Optional[tuple] = None) -> tuple:
    """cf.while_loop over `extra` + the user's variables (+ the composite names of `state`);
    test/body see the first two; returns the user's variables after the loop."""
    st = _State(state)
    nuser = len(init)
    if st.names:
        n_own = len(extra) + nuser
        test1, body1 = test, body

        def test(*vs: Any) -> Any:
            st.set(vs[n_own:])
            return test1(*vs[:n_own])

        def body(*vs: Any) -> tuple:
            st.set(vs[n_own:])
            return tuple(body1(*vs[:n_own])) + st.read()

        init = tuple(init) + st.read()
        names = tuple(names) + st.names
    state0 = st.read()
    guard = _MutationGuard(mutations)
    try:
        res = _staged_loop_vars(test, body, init, names, opts, extra, extra_inv)
    except BaseException:
        st.set(state0)
        raise
    if st.names:
        st.set(res[nuser:])
    guard.check("loop")
    return res[:nuser]


def _staged_loop_vars(test: Callable, body: Callable, init: tuple, names: Sequence[str], opts: dict,
                      extra: tuple, extra_inv: tuple) -> tuple:
    _check_init(init, names)
    init = _to_tensors(init)
    invs = _invariants(opts, init, names)
    if not extra and not init:
        # cf.while_loop needs a variable: a token the iterations pass on
        extra, extra_inv = (constant(0, name="loop_token"),), (TensorShape(()),)
        test0, body0 = test, body
        test = lambda t: test0()  # noqa: E731
        body = lambda t: (t,) + tuple(body0())  # noqa: E731
    n_extra = len(extra)
    all_init = tuple(extra) + init
    flat_inv = list(extra_inv)
    for v, inv in zip(init, invs):
        # a TensorArray (no shape of its own) takes any shape, as cf.while_loop allows
        flat_inv.extend(inv if inv is not None else t.shape if _is_tensor(t) else TensorShape(None)
                        for t in nest.flatten(v))
    had_effects = []

    def aug_test(*vs: Any) -> Any:
        c = test(*vs)
        if not _is_tensor(c):
            c = _g.convert_to_tensor(bool(c))
        return _condition(c, "while loop")

    def aug_body(*vs: Any) -> tuple:
        with collecting() as eff:
            out = tuple(body(*vs))
        ex, user = out[:n_extra], out[n_extra:]
        user = _to_tensors(user)
        _check_iteration(names, init, vs[n_extra:], user, invs)
        out = tuple(ex) + user
        if eff:
            had_effects.append(True)
            out = _with_deps(out, eff)
        return out

    res = tuple(_cf.while_loop(aug_test, aug_body, list(all_init), shape_invariants=flat_inv,
                               return_same_structure=True, **_loop_kwargs(opts)))
    if had_effects:
        _record(nest.flatten(res)[0])
    return res[n_extra:]


def while_stmt(test: Callable, body: Callable, init: tuple, names: Sequence[str], opts: Optional[dict] = None,
               state: Optional[tuple] = None, mutations: Optional[tuple] = None) -> tuple:
    """`while test: body` over loop variables `names` (state, mutations: as for if_stmt)."""
    opts = opts or {}
    first = test(*init)
    if _is_tensor(first):
        return _staged_loop(test, body, init, names, opts, state=state, mutations=mutations)
    vals = tuple(init)
    c = first
    while True:
        if _is_tensor(c):
            raise _err(ValueError, "the condition of a Python while loop became a tensor after its first "
                                   "iteration; make the loop variables tensors before the loop so that it is "
                                   "staged as a tf.while_loop")
        if not c:
            return vals
        vals = tuple(body(*vals))
        c = test(*vals)


def for_stmt(iter_: Any, extra_test: Optional[Callable], body: Callable, init: tuple, names: Sequence[str],
             opts: Optional[dict] = None, state: Optional[tuple] = None, mutations: Optional[tuple] = None) -> tuple:
    """`for x in iter_: body` (body takes the element first); extra_test: break's condition;
    state, mutations: as for if_stmt."""
    opts = opts or {}
    if _is_tensor(iter_):
        return _tensor_for(iter_, extra_test, body, init, names, opts, state, mutations)
    vals = tuple(init)
    for x in iter_:
        if extra_test is not None:
            c = extra_test(*vals)
            if _is_tensor(c):
                raise _err(NotImplementedError,
                           "break out of a Python for loop on a tensor condition: iterate over a tensor (e.g. "
                           "tf.range) instead so that the loop is staged as a tf.while_loop")
            if not c:
                break
        vals = tuple(body(x, *vals))
    return vals


def _tensor_for(iter_: _g.Tensor, extra_test: Optional[Callable], body: Callable, init: tuple,
                names: Sequence[str], opts: dict, state: Optional[tuple] = None,
                mutations: Optional[tuple] = None) -> tuple:
    if iter_.shape.rank == 0:
        raise _err(ValueError, f"cannot iterate over a scalar tensor {iter_}")
    n0 = iter_.shape.dims[0] if iter_.shape.dims is not None else None
    n = constant(n0, dtype=_dt.int32) if n0 is not None else array_ops.shape(iter_)[0]
    i0 = constant(0, dtype=_dt.int32, name="iterate_index")

    def test(i: Any, *vs: Any) -> Any:
        c = math_ops.less(i, n)
        if extra_test is None:
            return c
        return and_(lambda: c, lambda: extra_test(*vs))

    def step(i: Any, *vs: Any) -> tuple:
        x = iter_[i]
        return (i + 1,) + tuple(body(x, *vs))

    return _staged_loop(test, step, init, names, opts, extra=(i0,), extra_inv=(TensorShape(()),), state=state,
                        mutations=mutations)


# -- builtins ---------------------------------------------------------------------------------

def _has_tensor(args: Sequence[Any]) -> bool:
    return any(_is_tensor(t) for a in args for t in nest.flatten(a))


def print_(*args: Any, **kwargs: Any) -> Any:
    """print(): tf.print when an argument holds a tensor (its op becomes an effect), else print."""
    if not _has_tensor(args):
        return builtins.print(*args, **kwargs)
    from ..graph.ops.logging_ops import print_v2
    if "file" in kwargs:
        f = kwargs.pop("file")
        kwargs["output_stream"] = {id(sys.stdout): sys.stdout}.get(id(f), sys.stderr)
    kwargs.pop("flush", None)
    kwargs.setdefault("output_stream", sys.stdout)
    op = print_v2(*args, **kwargs)
    _record(op)
    return None


def assert_stmt(expression: Any, msg: Callable[[], Any]) -> Any:
    """`assert expression, msg`: tf.Assert for a tensor (an effect of the block), else Python's."""
    if not _is_tensor(expression):
        if not expression:
            raise AssertionError(msg())
        return None
    from ..graph.ops.check_ops import Assert
    m = msg()
    data = list(m) if isinstance(m, (list, tuple)) else [m if m is not None else "Assertion failed"]
    op = Assert(expression, data)
    _record(op)
    return op


def len_(s: Any) -> Any:
    """len(): the first dimension of a tensor (a tensor when not known statically); a
    TensorArray's size()."""
    from ..graph.tensor_array import TensorArray
    if isinstance(s, TensorArray):
        return s.size()
    if not _is_tensor(s):
        return len(s)
    if s.shape.rank == 0:
        raise _err(ValueError, f"len requires a non-scalar tensor, got one of shape {s.shape}")
    if s.shape.dims is not None and s.shape.dims[0] is not None:
        return s.shape.dims[0]
    return array_ops.shape(s)[0]


def range_(start_or_stop: Any, stop: Any = _UNSET, step: Any = _UNSET) -> Any:
    """range(): tf.range when an argument is a tensor."""
    args = [a for a in (start_or_stop, stop, step) if a is not _UNSET]
    if not _has_tensor(args):
        return builtins.range(*args)
    from ..graph.ops.misc_ops import range as tf_range
    if len(args) == 1:
        return tf_range(args[0])
    return tf_range(args[0], args[1], args[2] if len(args) > 2 else 1)


def _tf_int(x: Any = 0, *args: Any, **kwargs: Any) -> Any:
    """int(): a cast to int32 for a tensor, else Python's int (a base too)."""
    if _is_tensor(x):
        if args or kwargs:
            raise TypeError("int() can't convert a tensor with an explicit base")
        return math_ops.cast(x, _dt.int32)
    return int(x, *args, **kwargs)


def _tf_float(x: Any = 0.0) -> Any:
    return math_ops.cast(x, _dt.float32) if _is_tensor(x) else float(x)


def _tf_abs(x: Any) -> Any:
    return math_ops.abs(x) if _is_tensor(x) else abs(x)


BUILTINS: Dict[Any, Callable] = {builtins.print: print_, builtins.len: len_, builtins.range: range_,
                                 builtins.int: _tf_int, builtins.float: _tf_float, builtins.abs: _tf_abs}


def overload_of(f: Any) -> Optional[Callable]:
    try:
        return BUILTINS.get(f)
    except TypeError:  # unhashable callable
        return None


def converted_call(f: Any, args: Tuple, kwargs: Optional[dict], recursive: bool = True) -> Any:
    """A call in converted code: builtins get their graph overloads, user functions are
    converted when `recursive`, everything else is called as is."""
    from . import converter  # the converter imports this module: resolved at call time
    kwargs = kwargs or {}
    ov = overload_of(f)
    if ov is not None:
        return ov(*args, **kwargs)
    if recursive:
        g = converter.maybe_convert(f)
        if g is not None:
            return g(*args, **kwargs)
    return f(*args, **kwargs)


__all__ = ["Undefined", "UndefinedReturnValue", "ld", "retval", "if_stmt", "if_exp", "while_stmt", "for_stmt",
           "and_", "or_", "not_", "print_", "assert_stmt", "len_", "range_", "converted_call",
           "set_loop_options", "loop_options", "collecting", "function_outputs", "get_composite", "is_undefined",
           "effects_stack"]

