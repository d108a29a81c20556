"""More of TF 1.15's names that `collflow.compat.v1` gathers: the session handles
(tf.get_session_handle, ...), tf.sysconfig, tf.load_op_library and friends, the
tensor-equality and v2-TensorShape switches and tf.strings.bytes_split (tf.train.SaverDef: train/saver_def.py).
(tf.nn.compute_average_loss, ctc_loss_v2, ... are in collflow.nn; the new tf.linalg operators
in graph/linear_operator/.)

What TF 1.15 does that collflow cannot, these say so: there is no C++ framework to build or
load kernels against (sysconfig's flags and load_op_library raise NotImplementedError naming
the file; a missing file is TF's NotFoundError / OSError first), and collflow's Tensor keeps
TF1's identity equality (enable_tensor_equality raises instead of silently doing nothing).

`__all__` lists the top-level names v1 takes from this module.
"""
from __future__ import annotations

import errno
import os
from typing import Any, List, Optional

import collflow as _cf
from collflow.compat import namespaces as _ns
from collflow.errors import NotFoundError, UnimplementedError
from collflow.graph import shape as _shape
from collflow.graph.ops.ragged_tensor import RaggedTensor
from collflow.graph.ops.unicode_ops import unicode_split
from collflow.runtime.session_handles import (delete_session_tensor, get_session_handle,  # noqa: F401
                                              get_session_tensor)

__all__ = ["get_session_handle", "get_session_tensor", "delete_session_tensor", "sysconfig", "load_op_library",
           "load_library", "load_file_system_library", "enable_tensor_equality", "disable_tensor_equality",
           "enable_v2_tensorshape", "disable_v2_tensorshape"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(_cf.__file__))
_NO_CPP = ("collflow is pure Python: it has no C++ headers or framework library to build TensorFlow custom ops "
           "against, and runs only its own Python kernels (register an op with collflow.graph.registry.register_op "
           "and its kernel with collflow.kernels.registry.register_kernel)")


# --- tf.sysconfig -------------------------------------------------------------------------------
def get_include() -> str:
    """The collflow package directory (TF's gives its C++ headers; collflow has none)."""
    return _PACKAGE_DIR


def get_lib() -> str:
    """The collflow package directory (TF's holds libtensorflow_framework; collflow has no library)."""
    return _PACKAGE_DIR


def get_compile_flags() -> List[str]:
    """NotImplementedError: collflow has no C++ build to compile against."""
    raise NotImplementedError(f"tf.sysconfig.get_compile_flags: {_NO_CPP}")


def get_link_flags() -> List[str]:
    """NotImplementedError: collflow has no C++ library to link against."""
    raise NotImplementedError(f"tf.sysconfig.get_link_flags: {_NO_CPP}")


sysconfig = _ns._Namespace("sysconfig", "tf.sysconfig: where collflow lives (it has no C++ build to link against).", {
    "get_include": get_include, "get_lib": get_lib, "get_compile_flags": get_compile_flags,
    "get_link_flags": get_link_flags, "CXX11_ABI_FLAG": 0, "MONOLITHIC_BUILD": 0})


# --- loading C++ kernel libraries -----------------------------------------------------------------
def _refuse(library: str, what: str) -> None:
    raise UnimplementedError(f"{what}({library!r}): collflow cannot load TensorFlow's C++ kernel libraries. {_NO_CPP}")


def load_op_library(library_filename: str) -> Any:
    """NotFoundError for a missing file (as TF); otherwise NotImplementedError: collflow
    cannot load TensorFlow's C++ op libraries."""
    if not os.path.exists(library_filename):
        raise NotFoundError(f"{library_filename}: cannot open shared object file: No such file or directory")
    _refuse(library_filename, "load_op_library")


def load_file_system_library(library_filename: str) -> None:
    """As load_op_library (TF 1.15's deprecated loader of file-system plugins)."""
    if not os.path.exists(library_filename):
        raise NotFoundError(f"{library_filename}: cannot open shared object file: No such file or directory")
    _refuse(library_filename, "load_file_system_library")


def load_library(library_location: str) -> None:
    """OSError (ENOENT) for a missing file or folder (as TF); otherwise NotImplementedError."""
    if not os.path.exists(library_location):
        raise OSError(errno.ENOENT, "The file or folder to load kernel libraries from does not exist.",
                      library_location)
    _refuse(library_location, "load_library")


# --- behaviour switches ----------------------------------------------------------------------------
def enable_tensor_equality() -> None:
    """Refused: collflow's Tensors compare by identity and stay hashable (TF1's behaviour,
    which collflow's graph bookkeeping relies on); use tf.equal / tf.math.equal for
    elementwise comparison."""
    raise NotImplementedError("enable_tensor_equality: collflow's Tensors keep TensorFlow 1.x's identity equality "
                              "(`==` is `is`, and tensors are hashable); compare values with tf.equal(a, b)")


def disable_tensor_equality() -> None:
    """Nothing to switch: collflow's Tensors compare by identity (TF1's)."""


def enable_v2_tensorshape() -> None:
    """shape[i] gives an int or None from now on (TF2's TensorShape) instead of a Dimension;
    iteration, as_list() and dims already give ints and None in collflow."""
    _shape.set_v2_tensorshape(True)


def disable_v2_tensorshape() -> None:
    """shape[i] gives a Dimension again (TF1's: an int with `.value`; Dimension(None) unknown)."""
    _shape.set_v2_tensorshape(False)




# --- tf.strings.bytes_split -------------------------------------------------------------------------
def bytes_split(input: Any, name: Optional[str] = None) -> Any:  # noqa: A002 - TF's name
    """Each string's bytes as one-byte strings: a RaggedTensor of one more dimension (a
    vector for a scalar string), as TF 1.15's tf.strings.bytes_split.  The input needs a
    statically known rank; a RaggedTensor keeps its rows."""
    if not isinstance(input, RaggedTensor):
        x = input if isinstance(input, _cf.Tensor) else _cf.convert_to_tensor(input, dtype=_cf.string)
        if x.shape.rank is None:
            raise ValueError("input must have a statically-known rank.")
        input = x
    # ISO-8859-1 maps every byte to one character, so its split is the split into bytes
    return unicode_split(input, "ISO-8859-1", name=name or "BytesSplit")


_ns.strings.__dict__["bytes_split"] = bytes_split
