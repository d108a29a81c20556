"""TF1 programs (tests/tf1/programs.py) run unchanged on collflow: they learn, and where
TensorFlow is installed they give TensorFlow's numbers."""
import os
import sys
import warnings

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import programs  # noqa: E402
from tfdiff import RTOL  # noqa: E402,F401  (sets TensorFlow's environment before it loads)

import collflow.compat.v1 as cft  # noqa: E402
from collflow.data.datasets import load_digits  # noqa: E402

DATA = load_digits()

try:
    import tensorflow
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
except ImportError:
    tft = None


def _compare(name, got, want, rtol=1e-4, atol=1e-5):
    for k in got:
        if isinstance(got[k], (str, list)):
            assert got[k] == want[k], (name, k)
        else:
            np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=atol, err_msg=f"{name}: {k}")


PROGRAMS = ["softmax_regression", "deep_conv", "autoencoder", "gan", "lstm_static", "scan_rnn"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_learns_on_collflow(name):
    r = getattr(programs, name)(cft, DATA)
    losses = r["losses"]
    first, last = (losses[0], losses[-1]) if losses.ndim == 1 else (losses[0, 0], losses[-1, 0])
    assert np.all(np.isfinite(losses)) and last < first, (name, losses)
    if "accuracy" in r:
        assert r["accuracy"] > 0.3, r["accuracy"]
    if name == "gan":  # the discriminator's second call shared its variables
        assert r["variables"] == ["GAN/Discriminator/h1/bias:0", "GAN/Discriminator/h1/kernel:0",
                                  "GAN/Discriminator/out/bias:0", "GAN/Discriminator/out/kernel:0",
                                  "GAN/Generator/h1/bias:0", "GAN/Generator/h1/kernel:0",
                                  "GAN/Generator/out/bias:0", "GAN/Generator/out/kernel:0"]


@pytest.mark.skipif(tft is None, reason="TensorFlow is not installed (the conformance extra)")
@pytest.mark.parametrize("name", PROGRAMS)
def test_program_gives_tensorflows_numbers(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TensorFlow's deprecation notices for the TF1 API
        want = getattr(programs, name)(tft, DATA)
    _compare(name, getattr(programs, name)(cft, DATA), want)


def test_save_restore_round_trip(tmp_path):
    r = programs.save_restore(cft, DATA, str(tmp_path / "model.ckpt"))
    assert r["saved"] == str(tmp_path / "model.ckpt") + "-10" and r["step"] == 10
    assert r["after"] == r["before"]


def test_word2vec_learns_its_pairs():
    # random negative samples differ from TensorFlow's, so this checks learning, not numbers
    r = programs.word2vec(cft, DATA)
    losses = r["losses"]
    assert np.mean(losses[-20:]) < 0.6 * np.mean(losses[:20]), (losses[:5], losses[-5:])
    sim = r["similarity"]
    partner = [sim[2 * k, 2 * k + 1] for k in range(20)]
    others = [sim[2 * k, (2 * k + 7) % 40] for k in range(20)]
    assert np.mean(partner) > np.mean(others)
