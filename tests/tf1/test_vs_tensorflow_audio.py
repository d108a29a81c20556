"""Differential tests against TensorFlow: tf.audio.encode_wav's bytes, decode_wav of either
library's files (with desired_channels / desired_samples), and tf.summary.audio's serialized
Summaries, on random audio of several shapes and rates.  Skipped cleanly without TensorFlow
(tests/test_audio.py checks the same by hand)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = pytest.mark.timeout(300)


def _run(tf, build):
    with tf.Graph().as_default():
        out = build(tf)
        with tf.Session() as s:
            return s.run(out)


@pytest.mark.parametrize("frames, channels, rate", [(1, 1, 8000), (257, 2, 44100), (1000, 3, 22050), (0, 1, 16000)])
def test_encode_decode_match(frames, channels, rate):
    a = np.random.default_rng(frames).uniform(-1.2, 1.2, (frames, channels)).astype(np.float32)
    a[:: 7] = np.round(a[:: 7] * 4) / 4  # exact halves and quarters: the rounding rule
    want = _run(tft, lambda tf: tf.audio.encode_wav(a, rate))
    got = _run(cft, lambda tf: tf.audio.encode_wav(a, rate))
    assert got == want
    for c, n in [(-1, -1), (1, frames + 3), (channels + 2, max(frames - 1, 1))]:
        tw = _run(tft, lambda tf: tf.audio.decode_wav(want, desired_channels=c, desired_samples=n))
        cw = _run(cft, lambda tf: tf.audio.decode_wav(want, desired_channels=c, desired_samples=n))
        np.testing.assert_array_equal(cw[0], tw[0])
        assert int(cw[1]) == int(tw[1])


def test_summary_audio_matches():
    a = np.random.default_rng(1).uniform(-1, 1, (3, 50, 2)).astype(np.float32)

    def build(tf):
        return [tf.summary.audio("a", a, 8000, max_outputs=2), tf.summary.audio("b", a[:, :, 0], 16000.0, max_outputs=1),
                tf.summary.audio("c", a, tf.constant(11025.0), max_outputs=5)]
    assert _run(cft, build) == _run(tft, build)
