"""tf.resource_loader: files shipped beside a program's modules (TF 1.x's names)."""
from __future__ import annotations

import inspect
import os
import sys

__all__ = ["load_resource", "get_data_files_path", "get_root_dir_with_all_resources", "get_path_to_datafile",
           "readahead_file_path"]


def _caller_dir(depth: int = 2) -> str:
    return os.path.dirname(os.path.abspath(inspect.getfile(sys._getframe(depth))))


def load_resource(path: str) -> bytes:
    """The bytes of `path`, relative to the source tree's root (the directory holding the
    collflow package, as TF's was relative to tensorflow's)."""
    import collflow
    root = os.path.dirname(os.path.dirname(os.path.abspath(collflow.__file__)))
    with open(os.path.abspath(os.path.join(root, path)), "rb") as f:
        return f.read()


def get_data_files_path() -> str:
    """The directory of the calling module's file."""
    return _caller_dir()


def get_root_dir_with_all_resources() -> str:
    """The directory of the calling module's file (collflow has no runfiles tree)."""
    return _caller_dir()


def get_path_to_datafile(path: str) -> str:
    """`path` relative to the calling module's directory."""
    return os.path.join(_caller_dir(), path)


def readahead_file_path(path: str, readahead: str = "128M") -> str:
    """`path` itself (no readahead layer here)."""
    return path
