"""Kernels of graph/ops/file_ops.py, on the host."""
from __future__ import annotations

import glob
import os
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..errors import NotFoundError, PermissionDeniedError, UnknownError
from ..platform.atomic_files import atomic_write_bytes
from .registry import KernelContext, register_kernel


_text = _dt.bytes_text


@register_kernel("MatchingFiles")
def _matching_files(op: Any, ctx: KernelContext) -> Any:
    def run(pattern: Any) -> Any:
        names = set()
        for p in np.atleast_1d(np.asarray(pattern, dtype=object)).ravel():
            names.update(glob.glob(str(p)))
        out = np.empty(len(names), dtype=object)
        out[:] = sorted(names)
        return out
    return run


@register_kernel("ReadFile")
def _read_file(op: Any, ctx: KernelContext) -> Any:
    def run(filename: Any) -> Any:
        path = str(np.asarray(filename, dtype=object).item())
        try:
            with open(path, "rb") as f:
                return np.array(_text(f.read()), dtype=object)
        except FileNotFoundError:
            raise NotFoundError(f"read_file: {path}: no such file", op) from None
        except PermissionError:
            raise PermissionDeniedError(f"read_file: {path}: permission denied", op) from None
        except IsADirectoryError:
            raise NotFoundError(f"read_file: {path} is a directory", op) from None
    return run


@register_kernel("WriteFile")
def _write_file(op: Any, ctx: KernelContext) -> Any:
    def run(filename: Any, contents: Any) -> None:
        path = str(np.asarray(filename, dtype=object).item())
        data = str(np.asarray(contents, dtype=object).item()).encode("utf-8", "surrogateescape")
        d = os.path.dirname(path)
        try:
            if d:
                os.makedirs(d, exist_ok=True)
            atomic_write_bytes(path, data, durable=False)  # never a half-written file
        except PermissionError:
            raise PermissionDeniedError(f"write_file: {path}: permission denied", op) from None
        except OSError as e:
            raise UnknownError(f"write_file: {path}: {e.strerror or e}", op) from None
    return run
