"""In-memory classification datasets: the bundled UCI digits, user files, synthetic sets.

Every loader returns a `Dataset`: float32 features and int32 labels split into a train and
a test part.  Splits are deterministic functions of `seed`, so every rank of a job (and
every rerun) sees the same split without communicating.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from ..errors import InvalidArgumentError, NotFoundError

__all__ = ["Dataset", "load_digits", "load_file", "synthetic", "split", "DIGITS_PATH"]

DIGITS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "digits.npz")

_H5_EXTS = (".h5", ".hdf5", ".he5")


@dataclass
class Dataset:
    """A train/test split of a classification dataset.

    x_train: float32 (n_train, *feature_shape); y_train: int32 (n_train,) in [0, num_classes);
    likewise x_test / y_test (possibly empty).
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int
    name: str = "dataset"
    info: Dict[str, Any] = field(default_factory=dict)

    @property
    def feature_shape(self) -> Tuple[int, ...]:
        """Shape of one example, without the batch dimension."""
        return tuple(self.x_train.shape[1:])

    @property
    def input_dim(self) -> int:
        """Number of features in one example (product of feature_shape)."""
        return int(np.prod(self.feature_shape, dtype=np.int64))

    @property
    def train(self) -> Tuple[np.ndarray, np.ndarray]:
        return self.x_train, self.y_train

    @property
    def test(self) -> Tuple[np.ndarray, np.ndarray]:
        return self.x_test, self.y_test

    def reshape(self, feature_shape: Sequence[int]) -> "Dataset":
        """The same data with each example reshaped (e.g. (64,) -> (8, 8, 1) for a CNN)."""
        fs = tuple(int(d) for d in feature_shape)
        if int(np.prod(fs, dtype=np.int64)) != self.input_dim:
            raise InvalidArgumentError(
                f"cannot reshape examples of shape {self.feature_shape} ({self.input_dim} features) "
                f"to {fs}")
        return Dataset(self.x_train.reshape((-1,) + fs), self.y_train, self.x_test.reshape((-1,) + fs),
                       self.y_test, self.num_classes, self.name, dict(self.info))

    def flatten(self) -> "Dataset":
        """The same data with each example flattened to a vector (for an MLP)."""
        return self.reshape((self.input_dim,))

    def __repr__(self) -> str:
        return (f"Dataset({self.name!r}, train={len(self.y_train)}, test={len(self.y_test)}, "
                f"feature_shape={self.feature_shape}, num_classes={self.num_classes})")


def split(x: np.ndarray, y: np.ndarray, test_fraction: float = 0.2, seed: int = 0,
          stratify: bool = True) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Deterministic train/test split: (x_train, y_train, x_test, y_test).

    With `stratify`, each class contributes round(test_fraction * its count) examples to the
    test part, so class proportions match; both parts are then shuffled.  The result depends
    only on (x, y, test_fraction, seed).
    """
    if not 0.0 <= float(test_fraction) < 1.0:
        raise InvalidArgumentError(f"test_fraction must be in [0, 1), got {test_fraction}")
    n = len(y)
    rng = np.random.default_rng(seed)
    if test_fraction == 0:
        perm = rng.permutation(n)
        return x[perm], y[perm], x[:0], y[:0]
    if stratify:
        test_parts, train_parts = [], []
        for c in np.unique(y):
            idx = np.flatnonzero(y == c)
            idx = idx[rng.permutation(len(idx))]
            k = int(round(test_fraction * len(idx)))
            test_parts.append(idx[:k])
            train_parts.append(idx[k:])
        test_idx = np.concatenate(test_parts)
        train_idx = np.concatenate(train_parts)
    else:
        perm = rng.permutation(n)
        k = int(round(test_fraction * n))
        test_idx, train_idx = perm[:k], perm[k:]
    train_idx = train_idx[rng.permutation(len(train_idx))]
    test_idx = test_idx[rng.permutation(len(test_idx))]
    return x[train_idx], y[train_idx], x[test_idx], y[test_idx]


def load_digits(test_fraction: float = 0.2, seed: int = 0, as_images: bool = False) -> Dataset:
    """The UCI 8x8 handwritten digits (1797 examples, 10 classes), bundled with collflow.

    Pixels (0..16) are scaled to float32 in [0, 1]; labels are int32.  The split is stratified
    by class and depends only on (test_fraction, seed).  `as_images` gives examples of shape
    (8, 8, 1) (NHWC) instead of (64,).

    Data: Alpaydin & Kaynak, "Optical Recognition of Handwritten Digits", UCI Machine
    Learning Repository (CC BY 4.0), https://doi.org/10.24432/C50P49.
    """
    with np.load(DIGITS_PATH) as d:
        x = d["x"].astype(np.float32) / np.float32(16.0)
        y = d["y"].astype(np.int32)
    xtr, ytr, xte, yte = split(x, y, test_fraction, seed, stratify=True)
    ds = Dataset(xtr, ytr, xte, yte, 10, "digits",
                 {"source": "UCI ML repository, Optical Recognition of Handwritten Digits (CC BY 4.0)",
                  "test_fraction": test_fraction, "seed": seed})
    return ds.reshape((8, 8, 1)) if as_images else ds


def _read_npz(path: str) -> Dict[str, np.ndarray]:
    try:
        # allow_pickle=False: a data file must never run code when loaded
        with np.load(path, allow_pickle=False) as d:
            return {k: np.asarray(d[k]) for k in d.files}
    except ValueError as e:
        raise InvalidArgumentError(f"cannot read {path!r} as NPZ: {e}") from None
    except OSError as e:
        raise InvalidArgumentError(f"cannot read {path!r} as NPZ: {e}") from None


def _read_h5(path: str) -> Dict[str, np.ndarray]:
    try:
        import h5py
    except ImportError:  # pragma: no cover - h5py is a dependency
        raise ImportError("reading HDF5 datasets needs h5py: pip install h5py") from None
    out: Dict[str, np.ndarray] = {}
    try:
        with h5py.File(path, "r") as f:
            for k in ("x", "y", "x_test", "y_test"):
                if k in f:
                    obj = f[k]
                    if not isinstance(obj, h5py.Dataset):
                        raise InvalidArgumentError(f"{path!r}: {k!r} is an HDF5 group, expected a dataset")
                    out[k] = obj[()]
            out["_keys"] = np.array(sorted(f.keys()), dtype=object)
    except OSError as e:
        raise InvalidArgumentError(f"cannot read {path!r} as HDF5: {e}") from None
    return out


_INT32_MAX = int(np.iinfo(np.int32).max)


def _first(mask: np.ndarray) -> int:
    """The index of the first True of a 1-D mask (which has one)."""
    return int(np.argmax(mask))


def _as_labels(y: np.ndarray, key: str, path: str) -> np.ndarray:
    """Class labels as int32, or an error naming the file, the array, the first offending
    value and its index (nothing is wrapped: int64 2**32 + 3 is not class 3)."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise InvalidArgumentError(f"{path!r}: {key!r} must be a 1-D array of class labels, got shape {y.shape}")
    if y.dtype.kind == "f":
        bad = ~np.isfinite(y) | (y != np.round(y))
        if bad.any():
            i = _first(bad)
            raise InvalidArgumentError(f"{path!r}: {key!r} must hold integer class labels, got non-integer floats "
                                       f"(the first: {y[i].item()!r} at index {i})")
    elif y.dtype.kind not in "iub":
        raise InvalidArgumentError(f"{path!r}: {key!r} must hold integer class labels, got dtype {y.dtype}")
    if y.size and y.min() < 0:
        i = _first(y < 0)
        raise InvalidArgumentError(f"{path!r}: {key!r} has a negative label {y[i].item()!r} at index {i}; labels must be "
                                   "0..C-1")
    if y.size and y.max() > _INT32_MAX:
        i = _first(y > _INT32_MAX)
        raise InvalidArgumentError(f"{path!r}: {key!r} has label {int(y[i])} at index {i}, beyond the int32 range "
                                   f"of class labels (0..{_INT32_MAX}); it would wrap to another class")
    return y.astype(np.int32)


def _as_features(x: np.ndarray, key: str, path: str, scale: Optional[float]) -> np.ndarray:
    """Features as float32, or an error naming the first NaN or infinite value (or one
    float32 cannot hold) and its index: a model cannot learn from them, and the loss would
    only say it diverged."""
    x = np.asarray(x)
    if x.ndim < 2:
        raise InvalidArgumentError(
            f"{path!r}: {key!r} must have shape (examples, features...), got shape {x.shape}")
    if x.dtype.kind not in "fiub":
        raise InvalidArgumentError(f"{path!r}: {key!r} must be numeric, got dtype {x.dtype}")
    if scale is None and x.dtype == np.uint8:
        scale = 1.0 / 255.0  # 8-bit images: the usual [0, 1] scaling
    with np.errstate(over="ignore", invalid="ignore"):  # reported below, by position
        out = x.astype(np.float32)
        if scale is not None and scale != 1.0:
            out *= np.float32(scale)
    finite = np.isfinite(out)
    if not finite.all():
        idx = tuple(int(i) for i in np.unravel_index(_first(~finite.reshape(-1)), out.shape))
        v = x[idx].item()
        what = "a NaN" if np.isnan(v) else ("an infinite value" if np.isinf(v) else
                                           f"{v!r}, beyond float32's range (scaled: {out[idx].item()})")
        raise InvalidArgumentError(
            f"{path!r}: {key!r} has {what} at index {idx} (example {idx[0]}); {int((~finite).sum())} value(s) are "
            "not finite in float32. Clean or drop those examples: training on them only diverges")
    return out


def _check_classes(ys: Dict[str, np.ndarray], path: str, num_classes: Optional[int]) -> Tuple[int, Dict[str, Any]]:
    """(the class count, notes for Dataset.info) for the labels `ys` (by array name).

    With `num_classes`, every label must be below it (else an error naming the value and
    its index).  Without, it is the largest label + 1; when fewer than half of those classes
    occur, a warning names the largest label and where it is (an outlier such as 99999
    among digits would silently build a 100,000-class model)."""
    top_key, top_i, top = "", -1, -1
    for k, y in ys.items():
        if y.size and int(y.max()) > top:
            top_key, top_i, top = k, int(np.argmax(y)), int(y.max())
    if num_classes is not None:
        if int(num_classes) < 1:
            raise InvalidArgumentError(f"num_classes must be positive, got {num_classes}")
        if top >= num_classes:
            raise InvalidArgumentError(f"{path!r}: {top_key!r} has label {top} at index {top_i}, but there are "
                                       f"num_classes={num_classes} classes (labels 0..{int(num_classes) - 1})")
        return int(num_classes), {}
    n = top + 1
    seen = len(np.unique(np.concatenate([y for y in ys.values()])))
    note = {"num_classes_inferred_from": f"label {top} at index {top_i} of {top_key!r}"}
    if seen * 2 < n:
        warnings.warn(f"{path!r}: inferred {n} classes from the largest label, {top} at index {top_i} of "
                      f"{top_key!r}, but only {seen} distinct labels occur: is it an outlier? Pass the class "
                      "count (--num-classes, num_classes=) to check the labels against it", UserWarning,
                      stacklevel=3)
    return n, note


def load_file(path: str, test_fraction: float = 0.2, seed: int = 0, scale: Optional[float] = None,
              num_classes: Optional[int] = None) -> Dataset:
    """Loads a classification dataset from HDF5 (.h5/.hdf5) or NPZ (.npz).

    The file holds arrays `x` (examples, features...) and `y` (examples,) of integer labels,
    and optionally `x_test`, `y_test`; without them the test part is split off `x`, `y` with
    `test_fraction` and `seed` (stratified).  Features become float32 (uint8 data is scaled by
    1/255 unless `scale` is given; other dtypes are multiplied by `scale` when given); a NaN
    or infinite feature is an error naming its index.  Labels must be integers in
    0..num_classes-1 (and int32); without `num_classes` it is the largest label + 1, with a
    UserWarning when fewer than half of those classes occur.  Errors name the file, the array,
    the offending value and its index.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise NotFoundError(f"dataset file {path!r} does not exist (expected an .h5/.hdf5 or .npz file "
                            "with arrays x, y and optionally x_test, y_test)")
    if os.path.isdir(path):
        raise InvalidArgumentError(f"dataset path {path!r} is a directory, expected an .h5/.hdf5 or .npz file")
    ext = os.path.splitext(path)[1].lower()
    if ext in _H5_EXTS:
        arrs = _read_h5(path)
        keys = list(arrs.pop("_keys"))
    elif ext == ".npz":
        arrs = _read_npz(path)
        keys = sorted(arrs)
    else:
        raise InvalidArgumentError(f"dataset file {path!r} has extension {ext!r}; expected .h5, .hdf5 or .npz")

    missing = [k for k in ("x", "y") if k not in arrs]
    if missing:
        raise InvalidArgumentError(f"dataset file {path!r} lacks {' and '.join(repr(m) for m in missing)}; "
                                   f"it has {keys}. Expected arrays x, y and optionally x_test, y_test")
    if ("x_test" in arrs) != ("y_test" in arrs):
        have, lack = ("x_test", "y_test") if "x_test" in arrs else ("y_test", "x_test")
        raise InvalidArgumentError(f"dataset file {path!r} has {have!r} but not {lack!r}; give both or neither")

    x = _as_features(arrs["x"], "x", path, scale)
    y = _as_labels(arrs["y"], "y", path)
    if len(x) != len(y):
        raise InvalidArgumentError(f"dataset file {path!r}: x has {len(x)} examples but y has {len(y)} labels")
    if len(y) == 0:
        raise InvalidArgumentError(f"dataset file {path!r}: x and y are empty")
    if "x_test" in arrs:
        xte = _as_features(arrs["x_test"], "x_test", path, scale)
        yte = _as_labels(arrs["y_test"], "y_test", path)
        if len(xte) != len(yte):
            raise InvalidArgumentError(f"dataset file {path!r}: x_test has {len(xte)} examples but y_test "
                                       f"has {len(yte)} labels")
        if xte.shape[1:] != x.shape[1:]:
            raise InvalidArgumentError(f"dataset file {path!r}: x_test examples have shape {xte.shape[1:]}, "
                                       f"x examples {x.shape[1:]}")
        xtr, ytr = x, y
    else:
        xtr, ytr, xte, yte = split(x, y, test_fraction, seed, stratify=True)
    num_classes, notes = _check_classes({"y": y, **({"y_test": yte} if "y_test" in arrs else {})}, path,
                                        num_classes)
    name = os.path.splitext(os.path.basename(path))[0]
    return Dataset(xtr, ytr, xte, yte, int(num_classes), name, {"path": os.path.abspath(path), **notes})


def synthetic(n: int = 10000, shape: Sequence[int] = (784,), num_classes: int = 10, seed: int = 0,
              test_fraction: float = 0.2, noise: float = 0.0) -> Dataset:
    """A learnable synthetic classification set for benchmarks and smoke tests.

    x ~ N(0, 1) float32 of shape (n, *shape); the label is the argmax of a fixed random
    linear "teacher" of x (plus optional Gaussian `noise` on the teacher's scores), so a
    model can reach high accuracy.  Deterministic in `seed`.
    """
    shape = tuple(int(d) for d in shape)
    if n <= 0 or num_classes < 2 or any(d <= 0 for d in shape):
        raise InvalidArgumentError(f"synthetic needs n > 0, num_classes >= 2 and positive dims; got n={n}, "
                                   f"shape={shape}, num_classes={num_classes}")
    rng = np.random.default_rng(seed)
    d = int(np.prod(shape, dtype=np.int64))
    x = rng.standard_normal((n, d), dtype=np.float32)
    teacher = rng.standard_normal((d, num_classes), dtype=np.float32) / np.float32(np.sqrt(d))
    scores = x @ teacher
    if noise:
        scores += np.float32(noise) * rng.standard_normal(scores.shape, dtype=np.float32)
    y = np.argmax(scores, axis=1).astype(np.int32)
    x = x.reshape((n,) + shape)
    xtr, ytr, xte, yte = split(x, y, test_fraction, seed, stratify=False)
    return Dataset(xtr, ytr, xte, yte, int(num_classes), "synthetic",
                   {"n": n, "shape": shape, "seed": seed, "noise": noise})
