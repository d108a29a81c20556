"""An offline character corpus: the source code of Python standard-library modules.

Every Python installation carries its standard library as .py files, so this real text
(code, comments, docstrings; about 1 MB with the default modules) is available on any
machine without a download.  The files are read, not imported.  The corpus is the files
concatenated in a fixed order; its last `valid_fraction` is the validation split.  The
vocabulary is the characters seen at least `min_count` times in the training split, in
sorted order after id 0, which stands for any other character; so it is the same on
every rank and every run with the same Python.

Examples for a language model are windows of seq_len + 1 characters: inputs are the
first seq_len, targets the last seq_len (the next character at each position).
"""
from __future__ import annotations

import collections
import importlib.util
import os
import sysconfig
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import InvalidArgumentError, NotFoundError
from .batching import BatchIterator
from .datasets import Dataset

__all__ = ["CharCorpus", "load_stdlib_corpus", "stdlib_source", "DEFAULT_MODULES", "UNKNOWN"]

# pure-Python modules present in every CPython 3.8+ install; about 1.1 MB of source
DEFAULT_MODULES: Tuple[str, ...] = (
    "textwrap", "argparse", "string", "difflib", "shlex", "fractions", "heapq", "bisect", "calendar",
    "functools", "glob", "fnmatch", "queue", "random", "statistics", "tokenize", "dataclasses", "enum",
    "contextlib", "copy", "pprint", "reprlib", "getopt", "gettext", "shutil", "tempfile", "csv",
    "json.decoder", "json.encoder", "configparser", "optparse", "cmd", "code", "colorsys", "inspect",
    "ast", "operator", "numbers",
)

# what characters outside the vocabulary decode to
UNKNOWN = "\ufffd"


def stdlib_source(module: str) -> str:
    """The source text of standard-library module `module` (e.g. 'json.decoder'), read from disk.

    Looks in the installation's stdlib directory first (this also finds frozen modules such
    as posixpath), then asks the import system where the module lives (without importing
    the module itself).
    """
    rel = module.replace(".", os.sep)
    stdlib = sysconfig.get_paths().get("stdlib", "")
    for path in (os.path.join(stdlib, rel + ".py"), os.path.join(stdlib, rel, "__init__.py")):
        if os.path.isfile(path):
            return _read(path)
    origin = _spec_origin(module)
    if origin is not None and os.path.isfile(origin):
        return _read(origin)
    raise NotFoundError(f"no source file for module {module!r} (looked in {stdlib!r}); this Python may ship "
                        "its standard library without .py files")


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _spec_origin(module: str) -> Optional[str]:
    """Where the import system would load `module` from (its parent packages get imported)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None)
    return origin if origin and origin.endswith(".py") else None


@dataclass
class CharCorpus:
    """A character corpus with its vocabulary and train/validation split.

    vocab[0] is UNKNOWN; `encode` maps text to int32 ids, `decode` ids to text.
    """

    train_text: str
    valid_text: str
    vocab: Tuple[str, ...]
    sources: Tuple[str, ...] = ()
    _index: Dict[str, int] = field(default_factory=dict, repr=False)
    _ids: Dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._index = {c: i for i, c in enumerate(self.vocab)}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> np.ndarray:
        """int32 ids of the characters of `text` (0 for characters outside the vocabulary)."""
        idx = self._index
        return np.fromiter((idx.get(c, 0) for c in text), dtype=np.int32, count=len(text))

    def decode(self, ids: Any) -> str:
        """The text of a sequence of ids."""
        v = self.vocab
        return "".join(v[int(i)] for i in np.asarray(ids).reshape(-1))

    def ids(self, split: str) -> np.ndarray:
        """The whole 'train' or 'valid' split as int32 ids (computed once)."""
        if split not in ("train", "valid"):
            raise InvalidArgumentError(f"split must be 'train' or 'valid', got {split!r}")
        got = self._ids.get(split)
        if got is None:
            got = self.encode(self.train_text if split == "train" else self.valid_text)
            got.setflags(write=False)
            self._ids[split] = got
        return got

    def windows(self, split: str, seq_len: int, stride: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray]:
        """(inputs, targets), each int32 [n, seq_len]: window k starts at k * stride (default
        seq_len, non-overlapping) and targets are the inputs shifted by one character."""
        seq_len = int(seq_len)
        stride = seq_len if stride is None else int(stride)
        if seq_len <= 0 or stride <= 0:
            raise InvalidArgumentError(f"seq_len and stride must be positive, got {seq_len} and {stride}")
        ids = self.ids(split)
        n = (len(ids) - seq_len - 1) // stride + 1 if len(ids) > seq_len else 0
        if n <= 0:
            return np.zeros((0, seq_len), np.int32), np.zeros((0, seq_len), np.int32)
        starts = np.arange(n) * stride
        cols = np.arange(seq_len + 1)
        win = ids[starts[:, None] + cols]
        return np.ascontiguousarray(win[:, :-1]), np.ascontiguousarray(win[:, 1:])

    def batches(self, split: str, batch_size: int, seq_len: int, shuffle: bool = True, seed: int = 0,
                num_epochs: Optional[int] = 1, num_shards: int = 1, shard_index: int = 0,
                drop_remainder: bool = True, stride: Optional[int] = None) -> BatchIterator:
        """A BatchIterator of (inputs, targets) [batch_size, seq_len] over `split`'s windows.

        Shuffling, resumable positions and sharding across ranks as cf.data.BatchIterator;
        drop_remainder (default) keeps every batch full.
        """
        x, y = self.windows(split, seq_len, stride)
        if len(x) == 0:
            raise InvalidArgumentError(f"the {split} split ({len(self.ids(split))} characters) is shorter than "
                                       f"one window of seq_len + 1 = {int(seq_len) + 1} characters")
        return BatchIterator(x, y, batch_size, shuffle=shuffle, seed=seed, drop_remainder=drop_remainder,
                             num_epochs=num_epochs, num_shards=num_shards, shard_index=shard_index)

    def as_dataset(self, seq_len: int, stride: Optional[int] = None) -> Dataset:
        """The windows as a cf.data.Dataset: x/y int32 [n, seq_len], validation as the test part,
        num_classes the vocabulary size (what scripts/train.py consumes)."""
        x_tr, y_tr = self.windows("train", seq_len, stride)
        x_va, y_va = self.windows("valid", seq_len, stride)
        return Dataset(x_tr, y_tr, x_va, y_va, self.vocab_size, name="stdlib-chars",
                       info={"seq_len": int(seq_len), "sources": list(self.sources),
                             "train_chars": len(self.train_text), "valid_chars": len(self.valid_text)})


def load_stdlib_corpus(modules: Sequence[str] = DEFAULT_MODULES, valid_fraction: float = 0.1,
                       max_chars: Optional[int] = None, min_count: int = 5) -> CharCorpus:
    """The source of `modules` as one character corpus (see the module docstring).

    max_chars: keep only the first max_chars characters (for quick tests).
    valid_fraction: the last fraction of the characters forms the validation split.
    min_count: characters rarer than this in the training split map to id 0.
    """
    if not 0.0 <= valid_fraction < 1.0:
        raise InvalidArgumentError(f"valid_fraction must be in [0, 1), got {valid_fraction}")
    if not modules:
        raise InvalidArgumentError("load_stdlib_corpus needs at least one module name")
    parts: List[str] = []
    for name in modules:
        parts.append(stdlib_source(name))
    text = "\n\n".join(parts)
    if max_chars is not None:
        if int(max_chars) <= 1:
            raise InvalidArgumentError(f"max_chars must be at least 2, got {max_chars}")
        text = text[:int(max_chars)]
    n_valid = int(round(len(text) * valid_fraction))
    train, valid = text[:len(text) - n_valid], text[len(text) - n_valid:]
    counts = collections.Counter(train)
    chars = sorted(c for c, k in counts.items() if k >= int(min_count) and c != UNKNOWN)
    return CharCorpus(train, valid, (UNKNOWN,) + tuple(chars), tuple(modules))
