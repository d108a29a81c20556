"""Randomised differential checks of the recurrent-network stack against TensorFlow 1.x
(tests/tf1/rnnfuzz.py draws the programs): random cell trees (BasicRNNCell, BasicLSTMCell with
either state form, LSTMCell with peepholes / clipping / projection, GRUCell, contrib
LSTMBlockCell and GRUBlockCell(V2), MultiRNNCell stacks, DropoutWrapper at keep_prob 1,
ResidualWrapper) run by dynamic_rnn, static_rnn, bidirectional_dynamic_rnn,
static_bidirectional_rnn, LSTMBlockFusedCell or step by step, with random sequence lengths
(zeros and full lengths), given or zero initial states, unknown batch/time dimensions, scopes,
float32 and float64.  The variables' names and shapes, the outputs' static shapes, the
outputs and final states, and the gradients of a random-weighted sum of them with respect to
the inputs, the initial state and every variable must agree (1e-5 float32, 1e-10 float64).

Explore more seeds with `python tests/tf1/test_vs_tensorflow_rnn_fuzz.py FIRST LAST`.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)
import rnnfuzz  # noqa: E402

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
tft.get_logger().setLevel("ERROR")

# TensorFlow's own notices that its TF1 RNN cells and runners are deprecated
pytestmark = [pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning"), pytest.mark.timeout(600)]

SEEDS = list(range(40))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_rnn_program(seed):
    prog = rnnfuzz.make_program(seed)
    rnnfuzz.compare(prog, rnnfuzz.run_program(tft, prog), rnnfuzz.run_program(cft, prog))


if __name__ == "__main__":
    import warnings
    warnings.filterwarnings("ignore")
    first, last = (int(a) for a in sys.argv[1:3])
    bad = 0
    for s in range(first, last):
        p = rnnfuzz.make_program(s)
        try:
            rnnfuzz.compare(p, rnnfuzz.run_program(tft, p), rnnfuzz.run_program(cft, p))
        except Exception as e:  # noqa: BLE001 - report every kind of failure and go on
            bad += 1
            print(s, type(e).__name__, str(e)[:2000])
    print(f"{bad} of {last - first} differ")
