"""Randomised differential checks against TensorFlow of the names a TF1 program depends on.

Each seed builds one random graph-building program (tests/tf1/names_fuzz_programs.py) in
both `tensorflow.compat.v1` and `collflow.compat.v1`: nested variable and name scopes (reuse
True / AUTO_REUSE, scopes re-entered by object, default_name uniquification, op names taken
twice), get_variable and tf.Variable, tf.layers dense / conv2d / batch_normalization (named,
unnamed, reused), LSTM / GRU / basic cells under dynamic_rnn, summaries with families,
tf.losses, l2 regularizers, then an optimizer (minimize, compute + apply, tf.gradients + apply;
var_list, global_step), its slots, and an ExponentialMovingAverage.  Compared: the names,
shapes, dtypes and trainable flags of the variable collections, the GraphKeys collections,
the fetched tensors' names (gradients by their scope), and the keys of a saved checkpoint.

Left out, as collflow differs:
partitioned variables of several parts in one process, and tf.keras layers in a v1 graph
(TF names their variables by the name scope with tf.Variable and ignores variable-scope
reuse; collflow makes them with get_variable in a variable scope).
Skipped cleanly without TensorFlow.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402
import names_fuzz_programs as nf  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

# TensorFlow's notices that its TF1 layers and cells are deprecated
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.timeout(600)]

SEEDS = list(range(80))
CHECKPOINT_SEEDS = set(range(0, 80, 3))  # a Session and a save: the slower part


def _diff(a, b):
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            A, B = a.get(k) or [], b.get(k) or []
            i = next((i for i in range(max(len(A), len(B))) if (A[i:i + 1] != B[i:i + 1])), None)
            out.append(f"{k}[{i}]: TF {A[i] if i is not None and i < len(A) else None!r} "
                       f"collflow {B[i] if i is not None and i < len(B) else None!r}")
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_names_as_tensorflow(seed):
    ck = seed in CHECKPOINT_SEEDS
    want = nf.build(tft, seed, checkpoint=ck)
    got = nf.build(cft, seed, checkpoint=ck)
    assert not _diff(want, got), "\n".join(_diff(want, got))
