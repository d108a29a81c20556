"""tf.contrib.framework: `arg_scope` and the variable helpers slim-style model code uses.

    with arg_scope([layers.conv2d, layers.fully_connected], activation_fn=tf.nn.relu,
                   weights_regularizer=layers.l2_regularizer(5e-4)):
        with arg_scope([layers.conv2d], padding="SAME") as sc:
            net = layers.conv2d(images, 64, [3, 3], scope="conv1")   # relu, l2, SAME
    with arg_scope(sc):                                                # the saved scope again
        ...

As TF1's: a function takes the scope's defaults only if decorated with `add_arg_scope`
(the contrib layers are); arguments given in the call win over the scope's; nested scopes
add to (and override) the enclosing one's; `arg_scope(dict)` re-enters a scope the `with`
statement yielded.  The scope stack is one per thread.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.variable_scope import VariableScope, get_variable
from ..train.global_step import get_global_step, get_or_create_global_step

__all__ = ["arg_scope", "add_arg_scope", "has_arg_scope", "arg_scoped_arguments", "current_arg_scope",
           "arg_scope_func_key", "model_variable", "variable", "local_variable", "add_model_variable",
           "get_variables", "get_model_variables", "get_local_variables", "get_trainable_variables",
           "get_variables_to_restore", "get_variables_by_name", "get_variables_by_suffix", "get_unique_variable",
           "assign_from_checkpoint_fn", "get_global_step", "get_or_create_global_step"]

_STACK = threading.local()
_DECORATED: Dict[str, Callable] = {}


def _stack() -> List[Dict[str, Dict[str, Any]]]:
    s = getattr(_STACK, "stack", None)
    if s is None:
        s = _STACK.stack = [{}]
    return s


def current_arg_scope() -> Dict[str, Dict[str, Any]]:
    """The innermost scope: {function key: default keyword arguments}."""
    return _stack()[-1]


def arg_scope_func_key(op: Callable) -> str:
    """The key a function's defaults are stored under (its decorated and undecorated forms share it)."""
    return getattr(op, "_key_op", None) or f"{getattr(op, '__module__', '')}.{getattr(op, '__qualname__', op)}"


def _name(op: Callable) -> str:
    return getattr(op, "__name__", repr(op))


def has_arg_scope(func: Callable) -> bool:
    """Whether `func` takes defaults from arg_scope (decorated with add_arg_scope)."""
    return arg_scope_func_key(func) in _DECORATED


def arg_scoped_arguments(func: Callable) -> List[str]:
    """The argument names of a decorated function (those an arg_scope may set)."""
    if not has_arg_scope(func):
        raise ValueError(f"{_name(func)} is not decorated with @add_arg_scope")
    target = _DECORATED[arg_scope_func_key(func)]
    return list(inspect.signature(target).parameters)


def add_arg_scope(func: Callable) -> Callable:
    """Decorates `func` so calls take the defaults the enclosing arg_scopes set for it."""
    key = arg_scope_func_key(func)

    @functools.wraps(func)
    def func_with_args(*args: Any, **kwargs: Any) -> Any:
        scoped = current_arg_scope().get(key)
        if scoped:
            merged = dict(scoped)
            merged.update(kwargs)
            kwargs = merged
        return func(*args, **kwargs)

    func_with_args._key_op = key  # type: ignore[attr-defined]
    _DECORATED[key] = func
    return func_with_args


@contextlib.contextmanager
def arg_scope(list_ops_or_scope: Any, **kwargs: Any) -> Iterator[Dict[str, Dict[str, Any]]]:
    """Sets default keyword arguments of the decorated functions in `list_ops_or_scope` for the
    `with` block (or re-enters a scope dict yielded by an earlier arg_scope); yields the scope."""
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError("When attempting to re-use a scope by suppling a dictionary, kwargs must be empty.")
        scope = dict(list_ops_or_scope)
    else:
        if not isinstance(list_ops_or_scope, (list, tuple)):
            raise TypeError("list_ops_or_scope must either be a list/tuple or reused scope (i.e. dict)")
        scope = dict(current_arg_scope())
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError(f"{_name(op)} is not decorated with @add_arg_scope")
            key = arg_scope_func_key(op)
            merged = dict(scope.get(key, {}))
            merged.update(kwargs)
            scope[key] = merged
    stack = _stack()
    stack.append(scope)
    try:
        yield scope
    finally:
        stack.pop()


# -- variables ---------------------------------------------------------------------------------


def _collections(collections: Any, base: Sequence[str]) -> List[str]:
    extra = [collections] if isinstance(collections, str) else list(collections or [])
    return list(dict.fromkeys(list(base) + extra))


@add_arg_scope
def variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None, regularizer: Any = None,
             trainable: bool = True, collections: Any = None, caching_device: Any = None, device: Any = None,
             partitioner: Any = None, custom_getter: Any = None, use_resource: Any = None,
             synchronization: Any = None, aggregation: Any = None) -> Any:
    """get_variable in GLOBAL_VARIABLES plus `collections` (also TRAINABLE_VARIABLES if trainable)."""
    cols = _collections(collections, [GraphKeys.GLOBAL_VARIABLES])
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                        trainable=trainable, collections=cols, partitioner=partitioner, custom_getter=custom_getter)


@add_arg_scope
def model_variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None, regularizer: Any = None,
                   trainable: bool = True, collections: Any = None, caching_device: Any = None, device: Any = None,
                   partitioner: Any = None, custom_getter: Any = None, use_resource: Any = None) -> Any:
    """A variable that is part of the model: also in MODEL_VARIABLES (what a restore of the
    model's weights, get_model_variables, lists)."""
    cols = _collections(collections, [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES])
    return variable(name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                    trainable=trainable, collections=cols, partitioner=partitioner, custom_getter=custom_getter)


def local_variable(initial_value: Any, validate_shape: bool = True, name: Optional[str] = None,
                   use_resource: Any = None) -> Any:
    """A non-trainable variable in LOCAL_VARIABLES (initialized by local_variables_initializer)."""
    from ..graph.variables import Variable
    return Variable(initial_value, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                    validate_shape=validate_shape, name=name or "Variable")


def add_model_variable(var: Any) -> None:
    """Adds `var` to MODEL_VARIABLES (once)."""
    g = _g.get_default_graph()
    if not any(v is var for v in g.get_collection(GraphKeys.MODEL_VARIABLES)):
        g.add_to_collection(GraphKeys.MODEL_VARIABLES, var)


def get_variables(scope: Any = None, suffix: Optional[str] = None,
                  collection: str = GraphKeys.GLOBAL_VARIABLES) -> List[Any]:
    """The variables of `collection` whose names match the scope (a regex from the start, or a
    VariableScope) and, if given, end in `suffix` (TF1's matching: scope + '.*' + suffix)."""
    if isinstance(scope, VariableScope):
        scope = scope.name
    if suffix is not None:
        scope = (scope or "") + ".*" + suffix
    return _g.get_default_graph().get_collection(collection, scope)


def get_model_variables(scope: Any = None, suffix: Optional[str] = None) -> List[Any]:
    return get_variables(scope, suffix, GraphKeys.MODEL_VARIABLES)


def get_local_variables(scope: Any = None, suffix: Optional[str] = None) -> List[Any]:
    return get_variables(scope, suffix, GraphKeys.LOCAL_VARIABLES)


def get_trainable_variables(scope: Any = None, suffix: Optional[str] = None) -> List[Any]:
    return get_variables(scope, suffix, GraphKeys.TRAINABLE_VARIABLES)


def get_variables_by_name(given_name: str, scope: Any = None) -> List[Any]:
    """The global variables whose names end in `given_name` (and match `scope`)."""
    return get_variables(scope=scope, suffix=given_name)


def get_variables_by_suffix(suffix: str, scope: Any = None) -> List[Any]:
    return get_variables(scope=scope, suffix=suffix)


def get_unique_variable(var_op_name: str) -> Any:
    """The one global variable whose op name is exactly `var_op_name` (ValueError otherwise)."""
    found = [v for v in get_variables(scope=var_op_name) if v.op.name == var_op_name]
    if not found:
        raise ValueError(f"Couldn't find variable {var_op_name}")
    if len(found) > 1:
        raise ValueError(f"Variable {var_op_name} does not uniquely identify a variable")
    return found[0]


def get_variables_to_restore(include: Optional[Sequence[str]] = None,
                             exclude: Optional[Sequence[str]] = None) -> List[Any]:
    """The global variables of the `include` scopes (all if None) minus those of the `exclude`
    scopes: what a fine-tuning run restores from a pretrained checkpoint."""
    if include is None:
        chosen = get_variables()
    else:
        if not isinstance(include, (list, tuple)):
            raise TypeError("include is provided but is not a list or a tuple.")
        chosen = [v for s in include for v in get_variables(s)]
    if exclude is not None and not isinstance(exclude, (list, tuple)):
        raise TypeError("exclude is provided but is not a list or a tuple.")
    dropped = {id(v) for s in (exclude or []) for v in get_variables(s)}
    return [v for v in chosen if id(v) not in dropped]


def assign_from_checkpoint_fn(model_path: str, var_list: Any, ignore_missing_vars: bool = False,
                              reshape_variables: bool = False) -> Callable[[Any], None]:
    """fn(session) restoring `var_list` (a list, or a dict of checkpoint name -> variable) from
    the checkpoint at model_path; with ignore_missing_vars, variables the checkpoint lacks are
    left out (a warning names them)."""
    from ..platform import tf_logging
    from ..train.checkpoint_utils import list_variables
    from ..train.saver import Saver
    if not var_list:
        raise ValueError("var_list cannot be empty")
    if ignore_missing_vars:
        present = {name for name, _ in list_variables(model_path)}
        items = var_list.items() if isinstance(var_list, dict) else [(v.op.name, v) for v in var_list]
        kept = {}
        for name, v in items:
            if name in present:
                kept[name] = v
            else:
                tf_logging.warning("Variable %s missing in checkpoint %s", name, model_path)
        var_list = kept
    saver = Saver(var_list, reshape=reshape_variables)

    def callback(session: Any) -> None:
        saver.restore(session, model_path)
    return callback


# assign_from_values/checkpoint, filter_variables, smart_cond, ... (contrib/framework_more.py)
from . import framework_more as _more  # noqa: E402
for _more_name in _more.__all__:
    globals()[_more_name] = getattr(_more, _more_name)
del _more_name
__all__ += list(_more.__all__)
