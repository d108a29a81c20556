"""TF1's file ops: tf.matching_files (tf.io.matching_files), tf.read_file / tf.write_file
(tf.io.read_file / write_file) and tf.train.match_filenames_once.  Host kernels in
kernels/file_kernels.py; strings are Python str (a file's bytes decoded as UTF-8, any
undecodable byte kept as a surrogate, so writing it back restores the bytes).
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..graph import GraphKeys
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .op_util import make_op, single

__all__ = ["matching_files", "read_file", "write_file", "match_filenames_once"]


def _string_arg(x: Any, what: str, scalar: bool) -> _g.Tensor:
    t = _g.convert_to_tensor(x, dtype=_dt.string) if not isinstance(x, _g.Tensor) else x
    if t.dtype != _dt.string:
        raise InvalidArgumentError(f"{what} needs strings, got {t.dtype.name}")
    if scalar and t.shape.rank not in (None, 0):
        raise InvalidArgumentError(f"{what} needs a scalar string, got shape {t.shape}")
    return t


register_op("MatchingFiles", lambda op: [(_dt.string, TensorShape([None]))], host_only=True, stateful=True,
            doc="the sorted file names matching a glob pattern (or any of a vector of patterns)")
register_op("ReadFile", lambda op: [(_dt.string, TensorShape([]))], host_only=True, stateful=True,
            doc="a file's contents")
register_op("WriteFile", lambda op: [], host_only=True, stateful=True, doc="writes a string to a file")
not_differentiable("MatchingFiles", "ReadFile", "WriteFile")


def matching_files(pattern: Any, name: Optional[str] = None) -> _g.Tensor:
    """The names of the files matching the glob pattern(s), sorted (TF's order)."""
    return single("MatchingFiles", [_string_arg(pattern, "matching_files", False)], name=name or "MatchingFiles")


def read_file(filename: Any, name: Optional[str] = None) -> _g.Tensor:
    """The contents of the file (NotFoundError when it cannot be read)."""
    return single("ReadFile", [_string_arg(filename, "read_file", True)], name=name or "ReadFile")


def write_file(filename: Any, contents: Any, name: Optional[str] = None) -> _g.Operation:
    """An op writing `contents` to the file (created, or replaced; its directory made)."""
    return make_op("WriteFile", [_string_arg(filename, "write_file", True), _string_arg(contents, "write_file", True)],
                   name=name or "WriteFile")


def match_filenames_once(pattern: Any, name: Optional[str] = None) -> Any:
    """A local variable holding the file names matching `pattern` when local variables are
    initialized (so a string_input_producer reads one fixed list), as TF1's."""
    from ..variables import Variable
    # a callable initial value: the MatchingFiles op goes under the variable's own scope and
    # the variable is named `name` (TF's "matching_filenames:0", not ".../matching_filenames:0")
    return Variable(lambda: matching_files(pattern), trainable=False, name=name or "matching_filenames",
                    collections=[GraphKeys.LOCAL_VARIABLES], validate_shape=False)
