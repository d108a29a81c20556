"""Warm starting with vocabulary remapping (TF 1.15's tf.estimator.VocabInfo and
warm_starting_util._warm_start_var_with_vocab).

A variable whose rows (axis=0) or columns (axis=1) follow a vocabulary starts from the old
checkpoint's rows of the same words: new word i takes the old row of that word when the old
vocabulary (its first old_vocab_size lines) has it; the other entries of the first
new_vocab_size rows take backup_initializer's values, called once with the 1-D shape of their
count and consumed in row-major order (TF's load_and_remap_matrix), and the num_oov_buckets
rows after them take backup_initializer([num_oov_buckets, columns]) (columns: axis=1's
transpose).  The default backup initializer is zeros."""
from __future__ import annotations

import collections
from typing import Any, Dict, List

import numpy as np

from .. import dtypes as _dt
from ..graph.initializers import Zeros
from ..graph.ops import array_ops as _a
from ..graph.ops.constant_op import constant, identity
from ..graph.ops.slicing_ops import gather

__all__ = ["VocabInfo", "warm_start_var_with_vocab"]


class VocabInfo(collections.namedtuple("VocabInfo", ["new_vocab", "new_vocab_size", "num_oov_buckets", "old_vocab",
                                                     "old_vocab_size", "backup_initializer", "axis"])):
    """How a variable's vocabulary axis maps to a checkpoint's (tf.estimator.VocabInfo): the
    vocabulary files (one word a line) new_vocab and old_vocab, their sizes (old_vocab_size
    -1: every line) and the new variable's num_oov_buckets rows."""

    def __new__(cls, new_vocab: str, new_vocab_size: int, num_oov_buckets: int, old_vocab: str,
                old_vocab_size: int = -1, backup_initializer: Any = None, axis: int = 0) -> "VocabInfo":
        if axis != 0 and axis != 1:
            raise ValueError(f"The only supported values for the axis argument are 0 and 1.  Provided axis: {axis}")
        return super().__new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab, old_vocab_size,
                               backup_initializer, axis)


def _read_vocab(path: Any, size: int) -> List[str]:
    """The first `size` lines of a vocabulary file (all with size < 0)."""
    path = path.decode() if isinstance(path, bytes) else str(path)
    with open(path, encoding="utf-8") as f:
        words = [line.rstrip("\r\n") for line in f]
    if size is not None and size >= 0:
        if size > len(words):
            raise ValueError(f"Vocabulary file {path} has {len(words)} entries, fewer than the {size} asked for")
        words = words[:size]
    return words


def _remap_index(old_shape: tuple, sources: np.ndarray, axis: int) -> tuple:
    """For the new [rows, cols] matrix without OOV entries, each element's index into
    concat(old.ravel(), backup values) and the number of backup values it needs (row-major)."""
    old_rows, old_cols = old_shape
    if axis == 0:
        rows, cols = len(sources), old_cols
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        src = sources[r]
        present = src >= 0
        old_index = src * old_cols + c
    else:
        rows, cols = old_rows, len(sources)
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        src = sources[c]
        present = src >= 0
        old_index = r * old_cols + src
    n_missing = int((~present).sum())
    index = np.where(present, old_index, 0).astype(np.int64)
    index[~present] = old_rows * old_cols + np.arange(n_missing)  # row-major, as TF consumes them
    return index, n_missing


def warm_start_var_with_vocab(var: Any, ckpt_value: np.ndarray, vocab_info: VocabInfo) -> None:
    """Makes var's initializer assign the checkpoint value `ckpt_value` remapped by vocab_info."""
    shape = var.shape.as_list()
    if len(shape) not in (1, 2) or any(d is None for d in shape):
        raise ValueError(f"Vocabulary remapping needs a variable of known rank 1 or 2, got {var.name} {var.shape}")
    axis = vocab_info.axis
    if len(shape) == 1 and axis != 0:
        raise ValueError(f"Variable {var.name} is 1-D: its vocabulary axis must be 0")
    new_words = _read_vocab(vocab_info.new_vocab, vocab_info.new_vocab_size)
    old_words = _read_vocab(vocab_info.old_vocab, vocab_info.old_vocab_size)
    n_new, n_oov = len(new_words), int(vocab_info.num_oov_buckets or 0)
    if shape[axis] != n_new + n_oov:
        raise ValueError(f"Variable {var.name} has {shape[axis]} entries along axis {axis}, not new_vocab_size + "
                         f"num_oov_buckets = {n_new} + {n_oov}")
    old = np.asarray(ckpt_value)
    old2 = old.reshape(-1, 1) if old.ndim == 1 else old
    full = shape if len(shape) == 2 else [shape[0], 1]
    other = 1 - axis
    if old2.ndim != 2 or old2.shape[other] != full[other]:
        raise ValueError(f"Checkpoint value of shape {old.shape} does not fit variable {var.name} {var.shape} "
                         f"outside its vocabulary axis")
    first: Dict[str, int] = {}
    for i, w in enumerate(old_words[:old2.shape[axis]]):
        first.setdefault(w, i)
    sources = np.asarray([first.get(w, -1) for w in new_words], dtype=np.int64)
    index, n_missing = _remap_index(old2.shape, sources, axis)
    init = vocab_info.backup_initializer or Zeros()
    dtype = var.dtype.base_dtype if hasattr(var.dtype, "base_dtype") else var.dtype
    g = var.graph
    with g.as_default(), g.name_scope(None), g.control_dependencies(None), g.name_scope(var.op.name + "/"):
        pool = constant(old2.ravel().astype(dtype.np if hasattr(dtype, "np") else old2.dtype), dtype=dtype)
        if n_missing:
            pool = _a.concat([pool, _a.reshape(init([n_missing], dtype=dtype), [-1])], 0)
        value = _a.reshape(gather(pool, constant(index.ravel(), dtype=_dt.int64)), list(index.shape))
        if n_oov:
            oov_shape = [n_oov, full[1]] if axis == 0 else [full[0], n_oov]
            value = _a.concat([value, init(oov_shape, dtype=dtype)], axis)
        if len(shape) == 1:
            value = _a.reshape(value, shape)
        value = identity(value, name="checkpoint_initializer")
    var._initialize_from(value)
