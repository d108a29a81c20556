"""AutoGraph for TF1 graph mode: `tf.autograph.to_graph` converts Python control flow on
tensors into cf.cond / cf.while_loop by rewriting the function's source (converter*.py), and
the converted code calls the runtime operators of ag_operators.py.

    def f(x):
        while tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
        return x
    y = tf.autograph.to_graph(f)(tf.constant([2.0]))   # a graph with a while loop

`to_graph(f, recursive=True)` is the entry point tf.function uses too.
"""
from __future__ import annotations

import enum
import os
from typing import Any, Callable, Optional

from .ag_operators import set_loop_options
from .converter import ConversionError, convert_entity, converted_source, do_not_convert, is_converted

__all__ = ["to_graph", "to_code", "set_verbosity", "trace", "do_not_convert", "set_loop_options", "Feature",
           "Verbosity", "ConversionError", "is_converted", "get_verbosity"]


class Feature(enum.Enum):
    """Optional conversion features (TF 1.15's tf.autograph.experimental.Feature).  collflow's
    converter always applies those it implements; the value is accepted and checked."""

    ALL = "ALL"
    AUTO_CONTROL_DEPS = "AUTO_CONTROL_DEPS"
    ASSERT_STATEMENTS = "ASSERT_STATEMENTS"
    BUILTIN_FUNCTIONS = "BUILTIN_FUNCTIONS"
    EQUALITY_OPERATORS = "EQUALITY_OPERATORS"
    LISTS = "LISTS"
    NAME_SCOPES = "NAME_SCOPES"


class Verbosity(enum.IntEnum):
    """Conversion verbosity levels (older AutoGraph's; set_verbosity takes an int)."""

    BRIEF = 0
    VERBOSE = 1


def _check_features(features: Any) -> None:
    if features is None:
        return
    items = features if isinstance(features, (list, tuple, set, frozenset)) else (features,)
    for f in items:
        if not isinstance(f, Feature):
            raise TypeError(f"experimental_optional_features must be Feature values, got {f!r}")


def to_graph(entity: Callable, recursive: bool = True, arg_values: Any = None, arg_types: Any = None,
             experimental_optional_features: Any = None) -> Callable:
    """The Python function `entity` converted to graph code (TF 1.15's tf.autograph.to_graph).

    Calling the result with tensors builds cf.cond / cf.while_loop for `if`, `while` and `for`
    statements on tensors (Python values keep Python's control flow), lazy tensor and/or/not,
    tf.print for print, tf.Assert for assert, and (recursive=True) converts the user functions
    it calls.  Bound methods and callable objects are converted too.  arg_values/arg_types:
    accepted, unused (as in TF 1.15).  Raises ConversionError (a ValueError) naming the file
    and line of a construct it cannot convert.
    """
    del arg_values, arg_types
    _check_features(experimental_optional_features)
    return convert_entity(entity, recursive)


def to_code(entity: Callable, recursive: bool = True, arg_values: Any = None, arg_types: Any = None,
            indentation: str = "  ", experimental_optional_features: Any = None) -> str:
    """The source code to_graph generates for `entity`, as a string."""
    del recursive, arg_values, arg_types
    _check_features(experimental_optional_features)
    src = converted_source(entity)
    if indentation != "    ":
        lines = []
        for line in src.splitlines():
            stripped = line.lstrip(" ")
            depth = (len(line) - len(stripped)) // 4
            lines.append(indentation * depth + stripped)
        src = "\n".join(lines)
    return src + "\n"


_verbosity: Optional[int] = None
_also_stdout = False


def set_verbosity(level: int, alsologtostdout: bool = False) -> None:
    """Sets AutoGraph's logging verbosity (takes precedence over $AUTOGRAPH_VERBOSITY)."""
    global _verbosity, _also_stdout
    _verbosity = int(level)
    _also_stdout = bool(alsologtostdout)


def get_verbosity() -> int:
    """AutoGraph's logging verbosity: what set_verbosity set, else $AUTOGRAPH_VERBOSITY (default 0)."""
    if _verbosity is not None:
        return _verbosity
    return int(os.environ.get("AUTOGRAPH_VERBOSITY", "0"))


def trace(*args: Any) -> None:
    """Prints its arguments when the code runs in Python (at graph-building time)."""
    print(*args)
