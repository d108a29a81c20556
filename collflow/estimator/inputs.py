"""TF1's tf.estimator.inputs: numpy_input_fn (pandas_input_fn needs pandas)."""
from __future__ import annotations

import collections
from typing import Any, Callable, Optional

import numpy as np

from ..data.dataset import Dataset

__all__ = ["numpy_input_fn", "pandas_input_fn"]

_TARGET_KEY = "__target_key__"


def numpy_input_fn(x: Any, y: Any = None, batch_size: int = 128, num_epochs: Optional[int] = 1,
                   shuffle: Optional[bool] = None, queue_capacity: int = 1000, num_threads: int = 1) -> Callable:
    """An input_fn giving batches of the rows of `x` (a dict of arrays, or one array) and `y`
    (an array, a dict of arrays, or None) for num_epochs epochs (None: forever); batches run
    across epoch boundaries and the last one may be smaller.  shuffle must be a bool; with
    True the rows go through a shuffle buffer of queue_capacity.  The input_fn returns
    (features, labels), or features when y is None; an array x gives a tensor, not a dict."""
    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be provided explicitly as a bool, got {shuffle}.")
    if num_epochs is not None and num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 or None, got {num_epochs}")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be > 0, got {batch_size}")

    def input_fn() -> Any:
        if isinstance(x, dict):
            data = collections.OrderedDict((k, np.array(v)) for k, v in x.items())
        else:
            data = collections.OrderedDict([("__x__", np.array(x))])
        if not data:
            raise ValueError("x cannot be an empty dict")
        if isinstance(y, dict):
            if isinstance(x, dict) and set(x) & set(y):
                raise ValueError(f"{sorted(set(x) & set(y))} duplicate keys are found in both x and y.")
            targets = collections.OrderedDict((k, np.array(v)) for k, v in y.items())
        elif y is not None:
            targets = collections.OrderedDict([(_TARGET_KEY, np.array(y))])
        else:
            targets = collections.OrderedDict()
        lengths = {len(v) for v in data.values()}
        if len(lengths) != 1:
            raise ValueError("Length of tensors in x must be the same.")
        if targets and {len(v) for v in targets.values()} != lengths:
            raise ValueError("Length of tensors in x and y is mismatched. All elements in x and y must have the same "
                             "length.")
        ds = Dataset.from_tensor_slices((dict(data), dict(targets)) if targets else dict(data))
        if shuffle:
            ds = ds.shuffle(queue_capacity)
        ds = ds.repeat(num_epochs).batch(batch_size)
        out = ds.make_one_shot_iterator().get_next()
        feats, labs = out if targets else (out, None)
        features = dict(feats) if isinstance(x, dict) else feats["__x__"]
        if not targets:
            return features
        labels = labs[_TARGET_KEY] if not isinstance(y, dict) else dict(labs)
        return features, labels

    return input_fn


def pandas_input_fn(x: Any, y: Any = None, batch_size: int = 128, num_epochs: Optional[int] = 1,
                    shuffle: Optional[bool] = None, queue_capacity: int = 1000, num_threads: int = 1,
                    target_column: str = "target") -> Callable:
    """numpy_input_fn over a pandas DataFrame's columns (and a Series or DataFrame `y`, whose
    index must equal x's).  pandas itself is not imported: any DataFrame-like object works."""
    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be provided explicitly as a bool, got {shuffle}.")
    if y is not None:
        if target_column in list(x.columns):
            raise ValueError(f"Cannot use name {target_column} for target column: DataFrame already has a column "
                             f"with that name: {list(x.columns)}")
        if not np.array_equal(np.asarray(x.index), np.asarray(y.index)):
            raise ValueError("Index for x and y are mismatched.\nIndex for x: %s\nIndex for y: %s\n"
                             % (x.index, y.index))
    feats = collections.OrderedDict((str(c), np.asarray(x[c].values)) for c in x.columns)
    if y is None:
        target = None
    elif hasattr(y, "columns"):
        target = collections.OrderedDict((str(c), np.asarray(y[c].values)) for c in y.columns)
    else:
        target = np.asarray(y.values)
    return numpy_input_fn(feats, target, batch_size=batch_size, num_epochs=num_epochs, shuffle=shuffle,
                          queue_capacity=queue_capacity, num_threads=num_threads)
