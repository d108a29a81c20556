"""tf.contrib.learn.datasets.base: TF 1.x's small-CSV loaders (the iris tutorial's
`load_csv_with_header`), beside the MNIST reader (collflow/data/mnist_input.py).

    training_set = tf.contrib.learn.datasets.base.load_csv_with_header(
        filename="iris_training.csv", target_dtype=np.int32, features_dtype=np.float32)
    training_set.data, training_set.target
"""
from __future__ import annotations

import collections
import csv
import functools
import io
import os
import random
import time
from typing import Any, Callable, Optional

import numpy as np

from ..data.mnist_input import Datasets, maybe_download
from ..platform.atomic_files import atomic_write_bytes
from ..platform.gfile import GFile

__all__ = ["Dataset", "Datasets", "load_csv_with_header", "load_csv_without_header", "shrink_csv", "retry",
           "maybe_download"]

Dataset = collections.namedtuple("Dataset", ["data", "target"])


def _rows(filename: str) -> Any:
    with GFile(filename, "r") as f:
        return list(csv.reader(f))


def _bad(filename: str, line: int, why: str) -> ValueError:
    return ValueError(f"{filename}, line {line}: {why}")


def load_csv_with_header(filename: str, target_dtype: Any, features_dtype: Any, target_column: int = -1) -> Dataset:
    """Dataset(data, target) of a CSV whose first row is `n_samples,n_features,...` (the
    rest of the header, e.g. class names, is ignored); column `target_column` of each
    following row is the target, the others the features."""
    rows = _rows(filename)
    if not rows:
        raise ValueError(f"{filename} is empty: load_csv_with_header needs a header row 'n_samples,n_features,...'")
    try:
        n_samples, n_features = int(rows[0][0]), int(rows[0][1])
    except (IndexError, ValueError):
        raise ValueError(f"{filename}: the header row must start with n_samples,n_features; got {rows[0]}") from None
    body = rows[1:]
    if len(body) > n_samples:
        raise _bad(filename, n_samples + 2, f"the header says {n_samples} samples but there are {len(body)} rows")
    data = np.zeros((n_samples, n_features), dtype=features_dtype)
    target = np.zeros((n_samples,), dtype=target_dtype)
    for i, row in enumerate(body):
        try:
            target[i] = np.asarray(row.pop(target_column), dtype=target_dtype)
            data[i] = np.asarray(row, dtype=features_dtype)
        except (IndexError, ValueError) as e:
            raise _bad(filename, i + 2, f"{e} (expected {n_features} features and a target)") from None
    return Dataset(data=data, target=target)


def load_csv_without_header(filename: str, target_dtype: Any, features_dtype: Any,
                            target_column: int = -1) -> Dataset:
    """Dataset(data, target) of a header-less CSV, column `target_column` the target."""
    data, target = [], []
    for i, row in enumerate(_rows(filename)):
        try:
            target.append(row.pop(target_column))
            data.append(np.asarray(row, dtype=features_dtype))
        except (IndexError, ValueError) as e:
            raise _bad(filename, i + 1, str(e)) from None
    try:
        return Dataset(data=np.array(data), target=np.array(target, dtype=target_dtype))
    except ValueError as e:
        raise ValueError(f"{filename}: {e} (do all rows have the same number of columns?)") from None


def shrink_csv(filename: str, ratio: int) -> None:
    """Writes <name>_small<ext> beside `filename` with every ratio-th row of it, the first
    included.  (TF 1.x replaced every '.' of the path, which broke paths like ./data/x.csv.)"""
    if ratio < 1:
        raise ValueError(f"ratio must be a positive integer, got {ratio}")
    rows = _rows(filename)
    out = [r for i, r in enumerate(rows) if i % ratio == 0]
    buf = io.StringIO()
    csv.writer(buf).writerows(out)
    root, ext = os.path.splitext(filename)
    atomic_write_bytes(root + "_small" + ext, buf.getvalue().encode("utf-8"), durable=False)


def retry(initial_delay: float, max_delay: float, factor: float = 2.0, jitter: float = 0.25,
          is_retriable: Optional[Callable[[Exception], bool]] = None) -> Callable:
    """A decorator retrying a function on errors `is_retriable` accepts (all, if None), with
    exponentially growing, jittered delays from initial_delay up to max_delay."""
    if factor < 1:
        raise ValueError(f"factor must be >= 1; was {factor}")
    if not 0 <= jitter < 1:
        raise ValueError(f"jitter must be in [0, 1); was {jitter}")

    def delays() -> Any:
        d = initial_delay
        while d <= max_delay:
            yield d * random.uniform(1 - jitter, 1 + jitter)
            d *= factor

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            for d in delays():
                try:
                    return fn(*args, **kwargs)
                except Exception as e:  # noqa: BLE001 - the caller's predicate decides
                    if is_retriable is not None and not is_retriable(e):
                        raise
                time.sleep(d)
            return fn(*args, **kwargs)  # the last try's error reaches the caller
        return wrapped
    return wrap
