"""tf.audio.encode_wav / decode_wav and tf.summary.audio, checked by hand (the bytes
TensorFlow 2.21 gives for the same inputs are in the expectations below;
tests/tf1/test_vs_tensorflow_audio.py compares with a live TensorFlow)."""
import struct

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import InvalidArgumentError
from collflow.kernels.audio_kernels import decode_wav, encode_wav

pytestmark = pytest.mark.timeout(60)

A = np.array([[0.0, 1.0], [-1.0, 0.5], [0.25, -0.3], [2.0, -2.0], [1 / 32768, -0.99999]], np.float32)
# what TensorFlow's encode_wav(A, 16000) returns
TF_WAV = bytes.fromhex("524946463800000057415645666d74201000000001000200803e000000fa00000400100064617461140000000000"
                       "ff7f0080004000209ad9ff7f008001000080")


def test_encode_is_tensorflows_bytes():
    with tf.Session() as s:
        assert s.run(tf.audio.encode_wav(A, 16000)) == TF_WAV
    assert encode_wav(A, 16000) == TF_WAV


def test_decode_round_trip_and_fixed_sizes():
    audio, rate = decode_wav(TF_WAV)
    assert rate == 16000 and audio.dtype == np.float32 and audio.shape == (5, 2)
    # x * 32768 rounded half away from zero, clipped to [-32768, 32767], read back / 32768
    np.testing.assert_array_equal(audio, [[0, 32767 / 32768], [-1, 0.5], [0.25, -9830 / 32768], [32767 / 32768, -1],
                                          [1 / 32768, -1]])
    with tf.Session() as s:
        mono, r = s.run(tf.audio.decode_wav(TF_WAV, desired_channels=1, desired_samples=7))
        three = s.run(tf.audio.decode_wav(TF_WAV, desired_channels=3, desired_samples=3))[0]
    assert r == 16000
    np.testing.assert_array_equal(mono[:, 0], [0, -1, 0.25, 32767 / 32768, 1 / 32768, 0, 0])  # first channel, padded
    np.testing.assert_array_equal(three[:, 2], three[:, 1])  # more channels: the last one repeated


def test_other_chunks_are_skipped():
    # a LIST chunk of odd size (padded) before the data, as recorders write
    body = TF_WAV[12:36] + b"LIST" + struct.pack("<I", 3) + b"abc\x00" + TF_WAV[36:]
    wav = b"RIFF" + struct.pack("<I", len(body) + 4) + b"WAVE" + body
    np.testing.assert_array_equal(decode_wav(wav)[0], decode_wav(TF_WAV)[0])


@pytest.mark.parametrize("data, msg", [
    (b"not a wav file at all", "RIFF"),
    (TF_WAV[:20] + struct.pack("<H", 3) + TF_WAV[22:], "Expected 1 \\(PCM\\)"),
    (TF_WAV[:34] + struct.pack("<H", 8) + TF_WAV[36:], "16-bit"),
    (TF_WAV[:-4], "runs past the end"),
])
def test_bad_files_are_clear_errors(data, msg):
    with pytest.raises(InvalidArgumentError, match=msg):
        decode_wav(data)
    with tf.Session() as s:
        with pytest.raises(InvalidArgumentError, match=msg):
            s.run(tf.audio.decode_wav(data))


def test_encode_checks_its_input():
    with pytest.raises(ValueError, match="rank 2"):
        tf.audio.encode_wav(np.zeros(3, np.float32), 8000)
    with tf.Session() as s:
        with pytest.raises(InvalidArgumentError, match="sample_rate"):
            s.run(tf.audio.encode_wav(A, 0))


def test_summary_audio_tags_and_fields():
    with tf.Graph().as_default():
        s2 = tf.summary.audio("snd", A[None], 8000, max_outputs=2)
        s1 = tf.summary.audio("snd", np.stack([A[:, 0], A[:, 1]]), 8000.0, max_outputs=1)
        with tf.Session() as sess:
            a, b = sess.run([s2, s1])
    v = tf.Summary.FromString(a).value
    assert [x.tag for x in v] == ["snd/audio/0"]  # one clip in the batch
    au = v[0].audio
    assert (au.sample_rate, au.num_channels, au.length_frames, au.content_type) == (8000.0, 2, 5, "audio/wav")
    assert decode_wav(au.encoded_audio_string)[1] == 8000
    w = tf.Summary.FromString(b).value
    assert [x.tag for x in w] == ["snd_1/audio"] and w[0].audio.num_channels == 1
    # what TensorFlow's summary op serializes for the first
    assert a == bytes.fromhex("0a650a0b736e642f617564696f2f3032560d0000fa451002180522405249464638000000574156"
                              "45666d74201000000001000200401f0000007d00000400100064617461140000000000ff7f008000"
                              "4000209ad9ff7f0080010000802a09617564696f2f776176")


def test_summary_audio_in_an_event_file(tmp_path):
    with tf.Graph().as_default():
        s = tf.summary.audio("clip", tf.zeros([1, 100]), 16000)
        with tf.Session() as sess:
            w = tf.summary.FileWriter(str(tmp_path))
            w.add_summary(sess.run(s), 3)
            w.close()
    events = [e for f in tmp_path.iterdir() for e in tf.train.summary_iterator(str(f))]
    vals = [v for e in events if e.HasField("summary") for v in e.summary.value]
    assert vals[0].tag == "clip/audio/0" and vals[0].audio.length_frames == 100
