"""tf.make_template: a function whose variables are made on its first call and shared by
every later call (TF1's way to write a network once and apply it to several inputs).

    scale = tf.make_template("scale", lambda x: x * tf.get_variable("w", [], initializer=...))
    a, b = scale(x1), scale(x2)          # one variable, scale/w

The first call opens the variable scope `name_` made unique (scale, scale_1, ... for several
templates of one name), or the one made when the template was (create_scope_now_=True);
later calls re-enter it with reuse.  A trainable variable made by a later call is an error
(tf.Variable where tf.get_variable was meant), as in TF.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, List, Optional

from . import graph as _g
from .graph import GraphKeys
from .variable_scope import VariableScope, variable_scope

__all__ = ["make_template", "Template"]


class Template:
    """The callable make_template returns."""

    def __init__(self, name: str, func: Callable[..., Any], create_scope_now: bool = False,
                 unique_name: Optional[str] = None, custom_getter: Any = None):
        if name is None:
            raise ValueError("name cannot be None.")
        if custom_getter is not None:
            raise NotImplementedError("make_template: custom_getter_ is not supported")
        self._func, self._name, self._unique_name = func, name, unique_name
        self._variable_scope: Optional[VariableScope] = None
        self._variables_created = False
        if create_scope_now:
            with variable_scope(unique_name, default_name=name) as vs:
                self._variable_scope = vs

    def _call_func(self, args: Any, kwargs: Any) -> Any:
        trainable_at_start = len(_g.get_collection(GraphKeys.TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        if self._variables_created:
            made = _g.get_collection(GraphKeys.TRAINABLE_VARIABLES)[trainable_at_start:]
            if made:
                raise ValueError("Trainable variable created when calling a template after the first time, perhaps "
                                 f"you used tf.Variable when you meant tf.get_variable: {made}")
        self._variables_created = True
        return result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._variable_scope is not None:
            with variable_scope(self._variable_scope, reuse=True if self._variables_created else None):
                return self._call_func(args, kwargs)
        with variable_scope(self._unique_name, default_name=self._name) as vs:
            self._variable_scope = vs
            return self._call_func(args, kwargs)

    @property
    def name(self) -> str:
        return self._name

    @property
    def func(self) -> Callable[..., Any]:
        return self._func

    @property
    def variable_scope(self) -> Optional[VariableScope]:
        return self._variable_scope

    @property
    def variable_scope_name(self) -> Optional[str]:
        return None if self._variable_scope is None else self._variable_scope.name

    def _collection(self, key: str) -> List[Any]:
        if self._variable_scope is None:
            return []
        return _g.get_collection(key, self._variable_scope.name + "/")

    @property
    def variables(self) -> List[Any]:
        return self.global_variables + self.local_variables

    @property
    def global_variables(self) -> List[Any]:
        return self._collection(GraphKeys.GLOBAL_VARIABLES)

    @property
    def trainable_variables(self) -> List[Any]:
        return self._collection(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def local_variables(self) -> List[Any]:
        return self._collection(GraphKeys.LOCAL_VARIABLES)


def make_template(name_: str, func_: Callable[..., Any], create_scope_now_: bool = False,
                  unique_name_: Optional[str] = None, custom_getter_: Any = None, **kwargs: Any) -> Template:
    """A Template of func_ (with **kwargs bound): variables made by its first call, shared after."""
    fn = functools.partial(func_, **kwargs) if kwargs else func_
    return Template(name_, fn, create_scope_now=create_scope_now_, unique_name=unique_name_,
                    custom_getter=custom_getter_)
