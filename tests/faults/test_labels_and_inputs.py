"""Hostile labels and inputs: a label beyond int32, a huge or outlying class index, NaN or Inf
features.  Each must be caught at load with an error (or, for an outlier, a warning) naming
the file, the array, the offending value and its index, instead of a wrapped label, a
terabyte allocation deep in the model builder, or a "diverged, try a smaller --lr"."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import collflow as cf
from collflow import data

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(ROOT, "scripts", "train.py")
pytestmark = pytest.mark.timeout(60)


def digits_file(path, y_at=None, x_at=None, key_y="y"):
    """The bundled digits as an .npz at `path`, with y[i] = v for (i, v) in y_at and x[idx] = v
    for (idx, v) in x_at."""
    with np.load(data.DIGITS_PATH) as d:
        x, y = d["x"].astype(np.float64), d["y"].astype(np.int64)
    for i, v in (y_at or []):
        y[i] = v
    for idx, v in (x_at or []):
        x[idx] = v
    np.savez(path, **{"x": x, key_y: y})
    return str(path)


def train(*args, timeout=60):
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, TRAIN, "--no-progress", "--steps", "30", *args], capture_output=True,
                       text=True, timeout=timeout, env=dict(os.environ, PYTHONPATH=ROOT))
    return p, time.monotonic() - t0


# -- labels -------------------------------------------------------------------------------------------


def test_a_label_beyond_int32_is_an_error_not_a_wrapped_class(tmp_path):
    p = digits_file(tmp_path / "wrap.npz", y_at=[(5, 2**32 + 3)])
    with pytest.raises(cf.InvalidArgumentError) as e:
        data.load_file(p)
    msg = str(e.value)
    assert p in msg and "'y' has label 4294967299 at index 5" in msg and "int32" in msg


def test_negative_and_non_integer_labels_name_their_index(tmp_path):
    p = digits_file(tmp_path / "neg.npz", y_at=[(9, -3)])
    with pytest.raises(cf.InvalidArgumentError, match=r"'y' has a negative label -3 at index 9"):
        data.load_file(p)
    q = tmp_path / "frac.npz"
    y = np.zeros(20)
    y[4] = 1.5
    np.savez(q, x=np.ones((20, 2)), y=y)
    with pytest.raises(cf.InvalidArgumentError, match=r"integer class labels.*1\.5 at index 4"):
        data.load_file(q)


def test_labels_are_checked_against_num_classes(tmp_path):
    p = digits_file(tmp_path / "out.npz", y_at=[(7, 99999)])
    with pytest.raises(cf.InvalidArgumentError) as e:
        data.load_file(p, num_classes=10)
    assert "'y' has label 99999 at index 7, but there are num_classes=10 classes (labels 0..9)" in str(e.value)
    # a separate test split is checked too, and named
    q = tmp_path / "split.npz"
    np.savez(q, x=np.ones((6, 2)), y=np.array([0, 1, 2, 0, 1, 2]), x_test=np.ones((3, 2)), y_test=np.array([0, 3, 1]))
    with pytest.raises(cf.InvalidArgumentError, match=r"'y_test' has label 3 at index 1, but there are num_classes=3"):
        data.load_file(q, num_classes=3)
    assert data.load_file(q, num_classes=5).num_classes == 5  # more classes than seen is fine


def test_an_outlier_label_is_inferred_with_a_warning_naming_it(tmp_path):
    p = digits_file(tmp_path / "outlier.npz", y_at=[(7, 99999)])
    with pytest.warns(UserWarning) as w:
        ds = data.load_file(p)
    assert ds.num_classes == 100000
    msg = str(w[0].message)
    assert p in msg and "inferred 100000 classes" in msg and "99999 at index 7 of 'y'" in msg
    assert "only 11 distinct labels" in msg and "--num-classes" in msg
    # dense labels: inferred silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert data.load_file(digits_file(tmp_path / "ok.npz")).num_classes == 10


# -- inputs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, what", [(np.nan, "a NaN"), (np.inf, "an infinite value"),
                                         (-np.inf, "an infinite value"), (1e39, "1e+39, beyond float32's range")])
def test_non_finite_features_are_named_at_load(tmp_path, value, what):
    p = digits_file(tmp_path / "bad.npz", x_at=[((12, 3), value), ((40, 0), value)])
    with pytest.raises(cf.InvalidArgumentError) as e:
        data.load_file(p)
    msg = str(e.value)
    assert p in msg and f"'x' has {what}" in msg and "at index (12, 3) (example 12)" in msg
    assert "2 value(s) are not finite" in msg


def test_non_finite_test_features_are_named(tmp_path):
    q = tmp_path / "t.npz"
    xt = np.ones((3, 2, 2))
    xt[2, 1, 0] = np.nan
    np.savez(q, x=np.ones((4, 2, 2)), y=np.array([0, 1, 0, 1]), x_test=xt, y_test=np.array([0, 1, 1]))
    with pytest.raises(cf.InvalidArgumentError, match=r"'x_test' has a NaN at index \(2, 1, 0\)"):
        data.load_file(q)


# -- train.py -------------------------------------------------------------------------------------


def test_train_refuses_a_wrapped_label_and_nan_inputs_at_once(tmp_path):
    p, took = train("--dataset", digits_file(tmp_path / "wrap.npz", y_at=[(5, 2**32 + 3)]))
    assert p.returncode == 2 and not p.stdout
    assert "error:" in p.stderr and "'y' has label 4294967299 at index 5" in p.stderr
    p, took = train("--dataset", digits_file(tmp_path / "nan.npz", x_at=[((12, 3), np.nan)]))
    assert p.returncode == 2 and "'x' has a NaN at index (12, 3)" in p.stderr
    assert "smaller --lr" not in p.stderr


def test_train_names_the_label_behind_a_model_too_large_for_memory(tmp_path):
    path = digits_file(tmp_path / "huge.npz", y_at=[(5, 2**31 - 1)])
    p, took = train("--dataset", path)
    assert p.returncode == 2, p.stderr
    assert "inferred 2147483648 classes" in p.stderr  # the warning, logged
    err = next(ln for ln in p.stderr.splitlines() if "error:" in ln)
    assert "would not fit in memory" in err and "2,147,483,648 classes" in err
    assert "label 2147483647 at index 5 of 'y'" in err and path in err
    assert took < 20  # no terabyte allocation attempted


def test_train_num_classes_checks_labels_and_outliers_are_warned(tmp_path):
    path = digits_file(tmp_path / "outlier.npz", y_at=[(7, 99999)])
    p, _ = train("--dataset", path, "--num-classes", "10")
    assert p.returncode == 2 and "'y' has label 99999 at index 7, but there are num_classes=10" in p.stderr
    p, _ = train("--dataset", digits_file(tmp_path / "ok.npz"), "--num-classes", "12", "--steps", "3")
    assert p.returncode == 0, p.stderr
    assert ", 12 classes," in p.stderr
    p, _ = train("--dataset", "digits", "--num-classes", "5")
    assert p.returncode == 2 and "the digits have 10 classes" in p.stderr
