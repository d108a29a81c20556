"""Dataset.window against TensorFlow 1.x: every (size, shift, stride, drop_remainder) of a
small grid over ranges of 0-8 elements, and windows of tuples and dicts, give TF's batches.
Skipped cleanly without TensorFlow (`pip install -e ".[conformance]"`)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402
from session_helpers import drain  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = pytest.mark.timeout(300)


def _same(build):
    want, got = drain(tft, build), drain(cft, build)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        for x, y in zip(a if isinstance(a, tuple) else [a], b if isinstance(b, tuple) else [b]):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("drop", [False, True])
def test_window_grid_matches_tensorflow(size, drop):
    for n in range(9):
        for shift in (None, 1, 2, 4):
            for stride in (1, 2):
                _same(lambda tf: tf.data.Dataset.range(n).window(size, shift, stride, drop)
                      .flat_map(lambda w: w.batch(size)))


def test_window_structures_match_tensorflow():
    _same(lambda tf: tf.data.Dataset.zip((tf.data.Dataset.range(7), tf.data.Dataset.range(7).map(lambda x: x * 10)))
          .window(3, 2).flat_map(lambda x, y: tf.data.Dataset.zip((x.batch(3), y.batch(3)))))
    _same(lambda tf: tf.data.Dataset.range(7).map(lambda x: {"a": x, "b": tf.cast(x, tf.float32) * 0.5})
          .window(2).flat_map(lambda d: d["b"].batch(2)))
    _same(lambda tf: tf.data.Dataset.range(10).filter(lambda x: x % 3 > 0).window(3, 1, 2, True)
          .flat_map(lambda w: w.batch(3)).map(lambda b: tf.reduce_sum(b)))
