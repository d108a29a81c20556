"""Differential tests against TensorFlow (graph mode) for tf.signal beyond the FFTs (frame,
overlap_and_add, windows, stft / inverse_stft, mel matrix, MFCCs, DCTs) and the speech ops
AudioSpectrogram / Mfcc: the same graph built in `tensorflow.compat.v1` and
`collflow.compat.v1`, fed the same inputs, values and gradients compared.  Skipped cleanly
without TensorFlow."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402
from collflow.contrib.framework.python.ops import audio_ops as cf_audio  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

# TF's FFTs and DCTs run in float32, collflow's NumPy ones in float64
TOL = 2e-4
R = np.random.RandomState(21)


def _f(*shape, dtype=np.float32):
    return R.uniform(-1, 1, shape).astype(dtype)


def _real_views(tf, outs):
    res = []
    for o in outs if isinstance(outs, (list, tuple)) else [outs]:
        if o.dtype.is_complex:
            res += [tf.real(o), tf.imag(o)]
        else:
            res.append(o)
    return res


def _run(tf, fn, values, shapes, grads=True):
    """(outputs, gradients of sum(out * W) w.r.t. the inputs) of fn built in library `tf`."""
    g = tf.Graph()
    with g.as_default():
        xs = [tf.placeholder(tf.as_dtype(v.dtype), s) for v, s in zip(values, shapes)]
        outs = _real_views(tf, fn(tf, *xs))
        fetch = list(outs)
        if grads:
            r = np.random.RandomState(3)
            terms = [tf.reduce_sum(o * r.uniform(0.5, 1.5, vs.shape).astype(vs.dtype))
                     for o, vs in zip(outs, _shapes_of(tf, outs, xs, values))]
            gs = tf.gradients(tf.add_n(terms), xs)
            fetch += [tf.convert_to_tensor(gr) if gr is not None else tf.zeros_like(x) for gr, x in zip(gs, xs)]
        with tf.Session(graph=g) as s:
            return s.run(fetch, dict(zip(xs, values)))


def _shapes_of(tf, outs, xs, values):
    # the outputs' run-time shapes (placeholders may leave dimensions unknown)
    with tf.Session() as s:
        return s.run(outs, dict(zip(xs, values)))


def _compare(fn, values, shapes=None, grads=True, tol=TOL):
    shapes = shapes or [v.shape for v in values]
    a = _run(tft, fn, values, shapes, grads)
    b = _run(cft, fn, values, shapes, grads)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, y.shape, x.dtype, y.dtype)
        np.testing.assert_allclose(y, x, rtol=tol, atol=tol)


# -- frame / overlap_and_add ------------------------------------------------------------------

FRAME = [
    ("basic", dict(frame_length=5, frame_step=3), (2, 20), None),
    ("exact", dict(frame_length=4, frame_step=4), (2, 16), None),
    ("pad_end", dict(frame_length=6, frame_step=4, pad_end=True), (2, 21), None),
    ("pad_value", dict(frame_length=6, frame_step=4, pad_end=True, pad_value=2.5), (3, 19), [None, 19]),
    ("short", dict(frame_length=8, frame_step=2), (2, 5), None),
    ("short_pad", dict(frame_length=8, frame_step=3, pad_end=True), (2, 5), None),
    ("axis1", dict(frame_length=4, frame_step=2, axis=1), (2, 11, 3), [None, 11, 3]),
    ("axis_neg2", dict(frame_length=3, frame_step=5, axis=-2, pad_end=True), (2, 13, 3), None),
    ("axis0", dict(frame_length=3, frame_step=1, axis=0), (7, 2), None),
    ("1d", dict(frame_length=7, frame_step=2), (30,), None),
]


@pytest.mark.parametrize("case", FRAME, ids=[c[0] for c in FRAME])
def test_frame(case):
    _, kw, shape, ph = case
    _compare(lambda tf, x: tf.signal.frame(x, **kw), [_f(*shape)], [ph or shape])


OLA = [("step3", (2, 5, 8), 3), ("step_eq", (2, 4, 6), 6), ("step_gt", (3, 6), 8), ("step1", (2, 3, 5), 1),
       ("step_uneven", (2, 7, 10), 4), ("rank4", (2, 2, 3, 4), 2), ("one_frame", (2, 1, 5), 2)]


@pytest.mark.parametrize("case", OLA, ids=[c[0] for c in OLA])
def test_overlap_and_add(case):
    _, shape, step = case
    _compare(lambda tf, x: tf.signal.overlap_and_add(x, step), [_f(*shape)])


def test_overlap_and_add_unknown_batch():
    _compare(lambda tf, x: tf.signal.overlap_and_add(x, 3), [_f(4, 5, 7)], [[None, 5, 7]])


# -- windows ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["hann_window", "hamming_window"])
@pytest.mark.parametrize("length", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows(name, length, periodic, dtype):
    outs = []
    for tf in (tft, cft):
        with tf.Graph().as_default():
            w = getattr(tf.signal, name)(length, periodic=periodic, dtype=getattr(tf, dtype))
            with tf.Session() as s:
                outs.append(s.run(w))
    assert outs[0].dtype == outs[1].dtype and outs[0].shape == outs[1].shape
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6, atol=1e-7)


# -- stft / inverse_stft ------------------------------------------------------------------------

STFT = [
    ("default", dict(frame_length=16, frame_step=4)),
    ("fft_length", dict(frame_length=12, frame_step=5, fft_length=32)),
    ("pad_end", dict(frame_length=10, frame_step=3, pad_end=True)),
    ("no_window", dict(frame_length=8, frame_step=8, window_fn=None)),
    ("hamming", dict(frame_length=9, frame_step=2, window_fn="hamming")),
]


def _kw(tf, kw):
    kw = dict(kw)
    if kw.get("window_fn") == "hamming":
        kw["window_fn"] = tf.signal.hamming_window
    return kw


@pytest.mark.parametrize("case", STFT, ids=[c[0] for c in STFT])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stft(case, dtype):
    _, kw = case
    _compare(lambda tf, x: tf.signal.stft(x, **_kw(tf, kw)), [_f(3, 60, dtype=dtype)], [[None, 60]])


@pytest.mark.parametrize("pad_end", [False, True])
@pytest.mark.parametrize("length", [3, 16, 61])
def test_frame_and_stft_of_unknown_length(pad_end, length):
    _compare(lambda tf, x: [tf.signal.frame(x, 8, 3, pad_end=pad_end, pad_value=0.5),
                            tf.signal.stft(x, 8, 3, pad_end=pad_end)], [_f(2, length)], [[None, None]])


def test_overlap_and_add_unknown_frames():
    _compare(lambda tf, x: tf.signal.overlap_and_add(x, 3), [_f(2, 6, 7)], [[None, None, 7]])


def test_stft_magnitude_unknown_batch_rank3():
    _compare(lambda tf, x: tf.abs(tf.signal.stft(x, 20, 7)), [_f(2, 3, 80)], [[None, 3, 80]])


ISTFT = [
    ("default", dict(frame_length=16, frame_step=4)),
    ("crop", dict(frame_length=12, frame_step=3, fft_length=32)),
    ("pad", dict(frame_length=20, frame_step=5, fft_length=16)),
    ("no_window", dict(frame_length=8, frame_step=4, window_fn=None)),
]


@pytest.mark.parametrize("case", ISTFT, ids=[c[0] for c in ISTFT])
def test_inverse_stft(case):
    _, kw = case
    n = kw.get("fft_length", 16 if kw["frame_length"] > 8 else 8)
    bins = n // 2 + 1
    _compare(lambda tf, a, b: tf.signal.inverse_stft(tf.complex(a, b), **kw), [_f(2, 6, bins), _f(2, 6, bins)])


@pytest.mark.parametrize("fl,fs", [(16, 4), (12, 5), (10, 10), (7, 3), (400, 160)])
@pytest.mark.parametrize("fwd", ["hann_window", "hamming_window"])
def test_inverse_stft_window_fn(fl, fs, fwd):
    outs = []
    for tf in (tft, cft):
        with tf.Graph().as_default():
            w = tf.signal.inverse_stft_window_fn(fs, forward_window_fn=getattr(tf.signal, fwd))(fl, dtype=tf.float32)
            with tf.Session() as s:
                outs.append(s.run(w))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)


def test_stft_roundtrip_through_both():
    def fn(tf, x):
        s = tf.signal.stft(x, 32, 8)
        return tf.signal.inverse_stft(s, 32, 8, window_fn=tf.signal.inverse_stft_window_fn(8))
    _compare(fn, [_f(2, 200)])


# -- mel, MFCC, DCT -----------------------------------------------------------------------------

MEL = [dict(), dict(num_mel_bins=40, num_spectrogram_bins=257, sample_rate=16000, lower_edge_hertz=80.0,
                    upper_edge_hertz=7600.0),
       dict(num_mel_bins=64, num_spectrogram_bins=513, sample_rate=22050, lower_edge_hertz=0.0,
            upper_edge_hertz=11025.0),
       dict(num_mel_bins=8, num_spectrogram_bins=33, sample_rate=1000, lower_edge_hertz=30.0, upper_edge_hertz=400.0)]


@pytest.mark.parametrize("kw", MEL)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linear_to_mel_weight_matrix(kw, dtype):
    outs = []
    for tf in (tft, cft):
        with tf.Graph().as_default():
            m = tf.signal.linear_to_mel_weight_matrix(dtype=getattr(tf, dtype), **kw)
            with tf.Session() as s:
                outs.append(s.run(m))
    assert outs[0].shape == outs[1].shape and outs[0].dtype == outs[1].dtype
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("kw", [dict(num_mel_bins=0), dict(lower_edge_hertz=-1.0),
                                dict(lower_edge_hertz=3000.0, upper_edge_hertz=2000.0), dict(sample_rate=0),
                                dict(upper_edge_hertz=5000.0), dict(dtype="int32")])
def test_linear_to_mel_errors(kw):
    for tf in (tft, cft):
        k = dict(kw)
        if "dtype" in k:
            k["dtype"] = getattr(tf, k["dtype"])
        with tf.Graph().as_default():
            with pytest.raises(ValueError):
                tf.signal.linear_to_mel_weight_matrix(**k)


DCT = [(t, norm, n) for t in (1, 2, 3, 4) for norm in ((None,) if t == 1 else (None, "ortho"))
       for n in (None, 5, 11)]


@pytest.mark.parametrize("t,norm,n", DCT)
@pytest.mark.parametrize("fn_name", ["dct", "idct"])
def test_dct(t, norm, n, fn_name):
    _compare(lambda tf, x: getattr(tf.signal, fn_name)(x, type=t, n=n, norm=norm), [_f(3, 2, 8)], [[None, 2, 8]])


def test_dct_float64_and_spectral_alias():
    _compare(lambda tf, x: [tf.spectral.dct(x), tf.spectral.idct(x, norm="ortho")], [_f(4, 9, dtype=np.float64)],
             tol=1e-9)


@pytest.mark.parametrize("kw", [dict(type=5), dict(type=1, norm="ortho"), dict(norm="forward"), dict(n=0)])
def test_dct_errors(kw):
    for tf in (tft, cft):
        with tf.Graph().as_default():
            with pytest.raises(ValueError):
                tf.signal.dct(tf.zeros([2, 6]), **kw)


def test_dct_axis_error():
    for tf in (tft, cft):
        with tf.Graph().as_default():
            with pytest.raises((ValueError, NotImplementedError)):
                tf.signal.dct(tf.zeros([2, 6]), axis=0)


def test_mfcc_pipeline_values_and_gradients():
    """The tf.signal MFCC recipe from TF's docs: stft -> |.| -> mel -> log -> mfccs."""
    def fn(tf, pcm):
        stfts = tf.signal.stft(pcm, frame_length=64, frame_step=16, fft_length=64)
        spectrograms = tf.abs(stfts)
        mel = tf.signal.linear_to_mel_weight_matrix(20, 33, 8000, 80.0, 3800.0)
        mel_spectrograms = tf.tensordot(spectrograms, mel, 1)
        log_mel = tf.log(mel_spectrograms + 1e-3)
        return tf.signal.mfccs_from_log_mel_spectrograms(log_mel)[..., :13]
    _compare(fn, [_f(2, 400)], [[None, 400]], tol=5e-4)


# -- the speech ops -----------------------------------------------------------------------------

SPEC = [(100, 2, 30, 10, False), (1000, 1, 256, 128, True), (30, 1, 30, 7, False), (20, 2, 30, 10, True),
        (17, 3, 3, 1, True), (50, 1, 16, 100, False), (16000, 1, 480, 160, True)]


@pytest.mark.parametrize("samples,channels,ws,st,sq", SPEC)
def test_audio_spectrogram(samples, channels, ws, st, sq):
    x = _f(samples, channels)
    with tft.Graph().as_default():
        p = tft.placeholder(tft.float32, [None, channels])
        o = tensorflow.raw_ops.AudioSpectrogram(input=p, window_size=ws, stride=st, magnitude_squared=sq)
        with tft.Session() as s:
            want = s.run(o, {p: x})
    with cft.Graph().as_default():
        p = cft.placeholder(cft.float32, [None, channels])
        o = cf_audio.audio_spectrogram(p, window_size=ws, stride=st, magnitude_squared=sq)
        assert o.shape.as_list() == [channels, None, (1 << (ws - 1).bit_length()) // 2 + 1]
        with cft.Session() as s:
            got = s.run(o, {p: x})
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


MFCC = [(129, 16000, {}), (257, 16000, dict(upper_frequency_limit=7000.0, lower_frequency_limit=300.0,
                                            filterbank_channel_count=20, dct_coefficient_count=10)),
        (65, 8000, {}), (513, 44100, dict(filterbank_channel_count=64, dct_coefficient_count=30)),
        (17, 1000, dict(upper_frequency_limit=450.0, filterbank_channel_count=5, dct_coefficient_count=5)),
        (129, 16000, dict(upper_frequency_limit=9000.0)), (129, 16000, dict(upper_frequency_limit=8000.0))]


@pytest.mark.parametrize("bins,rate,kw", MFCC)
def test_mfcc_op(bins, rate, kw):
    spec = (R.uniform(0, 3, (2, 5, bins)) ** 2).astype(np.float32)
    with tft.Graph().as_default():
        o = tensorflow.raw_ops.Mfcc(spectrogram=spec, sample_rate=rate, **kw)
        with tft.Session() as s:
            want = s.run(o)
    with cft.Graph().as_default():
        o = cf_audio.mfcc(spec, rate, **kw)
        with cft.Session() as s:
            got = s.run(o)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_speech_pipeline_from_wav():
    """The speech-commands tutorial's features: decode_wav -> audio_spectrogram -> mfcc."""
    audio = (np.sin(np.arange(8000) * 0.05) * 0.5 + _f(8000) * 0.1).astype(np.float32)[:, None]
    outs = []
    for tf, spec_fn, mfcc_fn in ((tft, tensorflow.raw_ops.AudioSpectrogram, tensorflow.raw_ops.Mfcc),
                                 (cft, cf_audio.audio_spectrogram, cf_audio.mfcc)):
        with tf.Graph().as_default():
            wav = tf.audio.encode_wav(audio, 16000)
            pcm, rate = tf.audio.decode_wav(wav, desired_channels=1, desired_samples=8000)
            if tf is tft:
                spec = spec_fn(input=pcm, window_size=480, stride=160, magnitude_squared=True)
                feats = mfcc_fn(spectrogram=spec, sample_rate=rate, dct_coefficient_count=40)
            else:
                spec = spec_fn(pcm, window_size=480, stride=160, magnitude_squared=True)
                feats = mfcc_fn(spec, rate, dct_coefficient_count=40)
            with tf.Session() as s:
                outs.append(s.run(feats))
    assert outs[0].shape == outs[1].shape == (1, 48, 40)
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kw", [dict(window_size=1, stride=1), dict(window_size=4, stride=0)])
def test_audio_spectrogram_errors(kw):
    with tft.Graph().as_default():
        with pytest.raises(ValueError):
            tensorflow.raw_ops.AudioSpectrogram(input=tft.zeros([10, 1]), **kw)
    with cft.Graph().as_default():
        with pytest.raises(ValueError):
            cf_audio.audio_spectrogram(cft.zeros([10, 1]), **kw)


@pytest.mark.parametrize("kw", [dict(lower_frequency_limit=-1.0), dict(dct_coefficient_count=50),
                                dict(sample_rate=0), dict(filterbank_channel_count=0)])
def test_mfcc_op_runtime_errors(kw):
    kw = dict(kw)
    rate = kw.pop("sample_rate", 16000)
    spec = np.ones((1, 2, 129), np.float32)
    with tft.Graph().as_default():
        with tft.Session() as s:
            with pytest.raises(tensorflow.errors.InvalidArgumentError):
                s.run(tensorflow.raw_ops.Mfcc(spectrogram=spec, sample_rate=rate, **kw))
    with cft.Graph().as_default():
        with cft.Session() as s:
            with pytest.raises(cft.errors.InvalidArgumentError):
                s.run(cf_audio.mfcc(spec, rate, **kw))


def test_stft_training_matches():
    """A learnable filter in front of a log-mel front end, trained a few SGD steps in both."""
    sig = np.random.RandomState(8).randn(3, 256).astype(np.float32)
    target = np.random.RandomState(9).randn(3, 15, 10).astype(np.float32)
    runs = []
    for tf in (tft, cft):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [None, 256])
            w = tf.Variable(np.linspace(0.5, 1.5, 256).astype(np.float32), name="w")
            spec = tf.abs(tf.signal.stft(x * w, 32, 16))
            mel = tf.tensordot(spec, tf.signal.linear_to_mel_weight_matrix(10, 17, 8000, 100.0, 4000.0), 1)
            mf = tf.signal.mfccs_from_log_mel_spectrograms(tf.log(mel + 1e-2))
            loss = tf.reduce_mean(tf.square(mf - target))
            step = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                run = [s.run([loss, step], {x: sig})[0] for _ in range(4)]
                run.append(s.run(loss, {x: sig}))
                runs.append((run, s.run(w)))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-4)
    np.testing.assert_allclose(runs[1][1], runs[0][1], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("axes", [None, 0, -1, [0, 2], (1,)])
def test_fftshift(axes):
    _compare(lambda tf, x: [tf.signal.fftshift(x, axes=axes), tf.signal.ifftshift(x, axes=axes)], [_f(3, 4, 5)],
             tol=0)
