"""tf.nn.static_state_saving_rnn against TensorFlow's (tensorflow.compat.v1, graph mode): a long
sequence fed in chunks with a state saver (truncated backpropagation with a GradientDescent step
per chunk, a shorter sequence in one chunk), GRU, LSTM and a MultiRNNCell of both: the outputs,
losses, saved states and trained variables (TF's names) after every chunk equal TF's.
Skipped cleanly without TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from state_saving_programs import run_chunks as _run_chunks  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.mark.parametrize("kind", ["gru", "lstm", "multi"])
def test_static_state_saving_rnn_matches_tensorflow(kind):
    ours, theirs = _run_chunks(cft, kind), _run_chunks(tft, kind)
    assert ours[-1][0] == theirs[-1][0]  # variable names
    for c, (a, b) in enumerate(zip(ours[:-1], theirs[:-1])):
        np.testing.assert_allclose(a[0], b[0], rtol=1e-4, atol=1e-5, err_msg=f"outputs, chunk {c}")
        np.testing.assert_allclose(a[1], b[1], rtol=1e-4, atol=1e-5, err_msg=f"loss, chunk {c}")
        for x, y in zip(a[2], b[2]):
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5, err_msg=f"saved state, chunk {c}")
    for x, y in zip(ours[-1][1], theirs[-1][1]):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5, err_msg="trained variables")
