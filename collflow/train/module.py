"""tf.Module (TF 1.15's top-level `tf.Module`): a named container of variables and other
modules, trackable in object-based checkpoints.

A module's name scope is taken (made graph-unique) when it is constructed and re-entered by
`with module.name_scope:`; `variables`, `trainable_variables` and `submodules` walk its
attributes in TF's order (attribute names sorted, dicts by sorted key, a module's own leaves
before its submodules' ones); in a checkpoint its children are its trackable attributes in
assignment order (lists and dicts as nodes of their own, as TF's ListWrapper/_DictWrapper).
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Iterator, List, Optional, Tuple

from ..graph import graph as _g
from ..graph.variables import Variable
from .trackable import attribute_children

__all__ = ["Module"]

# TF's Module keeps these out of its attribute walks (its checkpoint bookkeeping)
_IGNORED = frozenset(("_self_unconditional_checkpoint_dependencies", "_self_unconditional_dependency_names",
                      "_scope_name", "_name"))
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _camel_to_snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


class Module:
    """Base of neural network modules (tf.Module): `name`, `name_scope`, `variables`,
    `trainable_variables`, `submodules`, `with_name_scope`."""

    def __init__(self, name: Optional[str] = None):
        if name is None:
            name = _camel_to_snake(type(self).__name__)
        elif not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise ValueError(f"{name!r} is not a valid module name. Module names must be valid Python identifiers "
                             "(e.g. a valid class name).")
        self._name = name
        with _g.get_default_graph().name_scope(name) as scope:
            self._scope_name = scope  # "name/" (or "name_1/"): re-entered exactly later

    @property
    def name(self) -> str:
        """The name given to the constructor (or the class name in snake_case)."""
        return self._name

    @property
    def name_scope(self) -> Any:
        """A context manager re-entering the module's name scope (taken at construction)."""
        return _g.get_default_graph().name_scope(self._scope_name)

    @property
    def variables(self) -> Tuple[Variable, ...]:
        """The variables of this module and its submodules (TF's attribute walk order)."""
        return tuple(self._flatten(lambda v: isinstance(v, Variable)))

    @property
    def trainable_variables(self) -> Tuple[Variable, ...]:
        return tuple(self._flatten(lambda v: isinstance(v, Variable) and v.trainable))

    @property
    def submodules(self) -> Tuple["Module", ...]:
        """Every module reachable from this one (not itself), nearest first."""
        return tuple(self._flatten(lambda v: isinstance(v, Module)))

    def _flatten(self, predicate: Callable[[Any], bool], recursive: bool = True) -> Iterator[Any]:
        seen = {id(self)}
        yield from _walk_module(self, predicate, recursive, seen)

    def _checkpoint_children(self) -> List[Tuple[str, Any]]:
        """Object checkpoints' children (train/trackable.py): trackable attributes in
        assignment order."""
        return attribute_children(self, _IGNORED)

    @classmethod
    def with_name_scope(cls, method: Callable) -> Callable:
        """Decorates a method to run inside the module's name scope."""
        @functools.wraps(method)
        def wrapper(self: "Module", *args: Any, **kwargs: Any) -> Any:
            with self.name_scope:
                return method(self, *args, **kwargs)
        return wrapper

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} object named {self._name!r}>"


def _leaves(value: Any) -> Iterator[Any]:
    """tf.nest's flattening of an attribute value: dicts by sorted key, lists/tuples in order."""
    if isinstance(value, dict):
        for k in sorted(value, key=lambda k: (str(type(k)), k) if not isinstance(k, str) else ("", k)):
            yield from _leaves(value[k])
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _walk_module(module: Module, predicate: Callable[[Any], bool], recursive: bool, seen: set) -> Iterator[Any]:
    subs = []
    for key in sorted(vars(module)):
        if key in _IGNORED:
            continue
        for leaf in _leaves(vars(module)[key]):
            if id(leaf) in seen:
                continue
            seen.add(id(leaf))
            if predicate(leaf):
                yield leaf
            if recursive and isinstance(leaf, Module):
                subs.append(leaf)
    for sub in subs:
        yield from _walk_module(sub, predicate, recursive, seen)
