"""tf.signal beyond the FFTs and the speech ops, checked by hand (no TensorFlow): DCTs against
their defining sums, frame / overlap_and_add against NumPy slicing, stft against windowed
rffts, perfect reconstruction through inverse_stft, the mel matrix's properties, the speech
ops against loop references, finite-difference gradients, and the argument errors."""
import math

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.contrib.framework.python.ops import audio_ops as contrib_audio

R = np.random.RandomState(4)


def _run(fetches, feed=None):
    with tf.Session() as s:
        return s.run(fetches, feed)


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


# -- DCT --------------------------------------------------------------------------------------

def _dct_by_sum(x, t, norm):
    """The DCT of the last axis of x by its defining sums (scipy.fftpack's conventions)."""
    n = x.shape[-1]
    y = np.zeros_like(x)
    for k in range(n):
        if t == 1:
            acc = x[..., 0] + (-1) ** k * x[..., -1]
            for j in range(1, n - 1):
                acc = acc + 2 * x[..., j] * math.cos(math.pi * k * j / (n - 1))
        elif t == 2:
            acc = sum(2 * x[..., j] * math.cos(math.pi * k * (2 * j + 1) / (2 * n)) for j in range(n))
            if norm == "ortho":
                acc = acc * (math.sqrt(1 / (4 * n)) if k == 0 else math.sqrt(1 / (2 * n)))
        elif t == 3:
            first = x[..., 0] * (math.sqrt(1 / n) if norm == "ortho" else 1.0)
            rest = sum(2 * x[..., j] * math.cos(math.pi * (2 * k + 1) * j / (2 * n)) for j in range(1, n))
            acc = first + (rest * math.sqrt(1 / (2 * n)) if norm == "ortho" else rest)
        else:
            acc = sum(2 * x[..., j] * math.cos(math.pi * (2 * k + 1) * (2 * j + 1) / (4 * n)) for j in range(n))
            if norm == "ortho":
                acc = acc * math.sqrt(1 / (2 * n))
        y[..., k] = acc
    return y


@pytest.mark.parametrize("t,norm", [(1, None), (2, None), (2, "ortho"), (3, None), (3, "ortho"), (4, None),
                                    (4, "ortho")])
def test_dct_matches_defining_sum(t, norm):
    x = R.randn(3, 7)
    got = _run(tf.signal.dct(tf.constant(x), type=t, norm=norm))
    np.testing.assert_allclose(got, _dct_by_sum(x, t, norm), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [4, 7, 10])
def test_dct_n_crops_or_pads(n):
    x = R.randn(2, 7)
    ref = x[:, :n] if n <= 7 else np.concatenate([x, np.zeros((2, n - 7))], 1)
    got = _run(tf.signal.dct(tf.constant(x), n=n))
    assert got.shape == (2, n)
    np.testing.assert_allclose(got, _dct_by_sum(ref, 2, None), atol=1e-12)


def test_dct_orthonormal_and_idct_inverts():
    x = R.randn(4, 9)
    xt = tf.constant(x)
    for t in (2, 3, 4):
        back = _run(tf.signal.idct(tf.signal.dct(xt, type=t, norm="ortho"), type=t, norm="ortho"))
        np.testing.assert_allclose(back, x, atol=1e-12)
    # unnormalized: the round trip scales by 2N (types 2/3), 2(N - 1) (type 1)
    np.testing.assert_allclose(_run(tf.signal.idct(tf.signal.dct(xt))), 18 * x, atol=1e-10)
    np.testing.assert_allclose(_run(tf.signal.idct(tf.signal.dct(xt, type=1), type=1)), 16 * x, atol=1e-10)


def test_dct_float32_and_unknown_batch():
    x = R.randn(5, 6).astype(np.float32)
    p = tf.placeholder(tf.float32, [None, 6])
    y = tf.signal.dct(p, norm="ortho")
    assert y.dtype == tf.float32 and y.shape.as_list() == [None, 6]
    np.testing.assert_allclose(_run(y, {p: x}), _dct_by_sum(x.astype(np.float64), 2, "ortho"), atol=1e-5)


@pytest.mark.parametrize("kw,msg", [(dict(type=5), "Types I, II, III and IV"),
                                    (dict(type=1, norm="ortho"), "not supported for the Type-I"),
                                    (dict(norm="l2"), "Unknown normalization"), (dict(n=0), "positive integer")])
def test_dct_argument_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        tf.signal.dct(tf.zeros([2, 5]), **kw)


def test_dct_axis_and_type1_length_errors():
    with pytest.raises(NotImplementedError, match="axis must be -1"):
        tf.signal.dct(tf.zeros([2, 5]), axis=0)
    with pytest.raises(ValueError, match="greater than one"):
        tf.signal.dct(tf.zeros([2, 1]), type=1)


# -- frame / overlap_and_add ----------------------------------------------------------------------

def _frames_np(x, fl, fs, pad_end=False, pad_value=0.0):
    n = x.shape[-1]
    if pad_end:
        count = -(-n // fs)
        need = max(0, (count - 1) * fs + fl - n)
        x = np.concatenate([x, np.full(x.shape[:-1] + (need,), pad_value, x.dtype)], -1)
    else:
        count = 1 + (n - fl) // fs if n >= fl else 0
    return np.stack([x[..., i * fs:i * fs + fl] for i in range(count)], -2) if count else \
        np.zeros(x.shape[:-1] + (0, fl), x.dtype)


@pytest.mark.parametrize("n,fl,fs,pad_end", [(20, 5, 3, False), (20, 5, 3, True), (16, 4, 4, False),
                                             (16, 4, 4, True), (5, 8, 2, False), (5, 8, 3, True),
                                             (11, 3, 7, True), (9, 9, 1, False)])
def test_frame_matches_slicing(n, fl, fs, pad_end):
    x = R.randn(2, 3, n).astype(np.float32)
    y = tf.signal.frame(tf.constant(x), fl, fs, pad_end=pad_end, pad_value=-7.0)
    want = _frames_np(x, fl, fs, pad_end, -7.0)
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(_run(y), want)


def test_frame_axis():
    x = R.randn(2, 10, 3).astype(np.float32)
    y = tf.signal.frame(tf.constant(x), 4, 3, axis=1, pad_end=True)
    want = np.moveaxis(_frames_np(np.moveaxis(x, 1, -1), 4, 3, True), (-2, -1), (1, 2))
    assert y.shape.as_list() == [2, 4, 4, 3]
    np.testing.assert_array_equal(_run(y), want)
    assert tf.signal.frame(tf.zeros([7, 2]), 3, 2, axis=-2).shape.as_list() == [3, 3, 2]


@pytest.mark.parametrize("pad_end", [False, True])
def test_frame_of_unknown_length(pad_end):
    p = tf.placeholder(tf.float32, [2, None])
    y = tf.signal.frame(p, 5, 3, pad_end=pad_end, pad_value=9.0)
    assert y.shape.as_list() == [2, None, 5]
    for n in (0, 4, 5, 12, 13):
        x = R.randn(2, n).astype(np.float32)
        np.testing.assert_array_equal(_run(y, {p: x}), _frames_np(x, 5, 3, pad_end, 9.0))


def test_overlap_and_add_static_length():
    assert tf.signal.overlap_and_add(tf.placeholder(tf.float32, [None, 5, 9]), 3).shape.as_list() == [None, 21]
    assert tf.signal.overlap_and_add(tf.placeholder(tf.float32, [4, None, 9]), 3).shape.as_list() == [4, None]


def test_frame_is_one_gather():
    y = tf.signal.frame(tf.placeholder(tf.float32, [None, 16000]), 400, 160)
    kinds = [op.type for op in tf.get_default_graph().get_operations()]
    assert kinds.count("GatherV2") == 1 and y.shape.as_list() == [None, 98, 400]


def test_overlap_and_add_matches_loop():
    for shape, fs in (((2, 5, 8), 3), ((3, 4, 6), 6), ((6, 4), 9), ((2, 7, 10), 4), ((2, 3, 5), 1)):
        x = R.randn(*shape)
        nf, fl = shape[-2:]
        want = np.zeros(shape[:-2] + ((nf - 1) * fs + fl,))
        for i in range(nf):
            want[..., i * fs:i * fs + fl] += x[..., i, :]
        np.testing.assert_allclose(_run(tf.signal.overlap_and_add(tf.constant(x), fs)), want, atol=1e-12)


def test_frame_then_overlap_and_add_counts_coverage():
    ones = tf.ones([1, 12])
    y = _run(tf.signal.overlap_and_add(tf.signal.frame(ones, 4, 2), 2))
    np.testing.assert_array_equal(y, [[1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1]])


def test_frame_errors():
    with pytest.raises(ValueError, match="frame_step must be positive"):
        tf.signal.frame(tf.zeros([10]), 4, 0)
    with pytest.raises(ValueError, match="rank at least 1"):
        tf.signal.frame(tf.zeros([]), 4, 2)
    with pytest.raises(ValueError, match="rank at least 2"):
        tf.signal.overlap_and_add(tf.zeros([5]), 2)
    with pytest.raises(NotImplementedError, match="known when the graph is built"):
        tf.signal.frame(tf.zeros([10]), tf.placeholder(tf.int32, []), 2)


# -- windows, stft -------------------------------------------------------------------------------

def test_windows_closed_form():
    n = np.arange(8)
    np.testing.assert_allclose(_run(tf.signal.hann_window(8)), 0.5 - 0.5 * np.cos(2 * np.pi * n / 8), atol=1e-7)
    np.testing.assert_allclose(_run(tf.signal.hann_window(8, periodic=False)),
                               0.5 - 0.5 * np.cos(2 * np.pi * n / 7), atol=1e-7)
    np.testing.assert_allclose(_run(tf.signal.hamming_window(8, dtype=tf.float64)),
                               0.54 - 0.46 * np.cos(2 * np.pi * n / 8), atol=1e-15)
    # as TF, periodic changes only even lengths: an odd window is the symmetric one
    np.testing.assert_allclose(_run(tf.signal.hann_window(7)), 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(7) / 6),
                               atol=1e-7)
    assert _run(tf.signal.hann_window(1)).tolist() == [1.0]
    assert _run(tf.signal.hamming_window(0)).shape == (0,)
    with pytest.raises(ValueError, match="floating"):
        tf.signal.hann_window(4, dtype=tf.int32)


def test_stft_matches_windowed_rfft():
    x = R.randn(2, 100)
    z = tf.signal.stft(tf.constant(x), 20, 7)
    assert z.dtype == tf.complex128 and z.shape.as_list() == [2, 12, 17]
    w = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(20) / 20)
    want = np.fft.rfft(_frames_np(x, 20, 7) * w, 32)
    np.testing.assert_allclose(_run(z), want, atol=1e-10)


@pytest.mark.parametrize("fl,fs,fwd", [(16, 4, "hann_window"), (32, 8, "hann_window"), (12, 3, "hamming_window"),
                                       (20, 5, "hamming_window"), (10, 4, "hann_window")])
def test_perfect_reconstruction(fl, fs, fwd):
    fwd_fn = getattr(tf.signal, fwd)
    x = R.randn(3, 300).astype(np.float32)
    z = tf.signal.stft(tf.constant(x), fl, fs, window_fn=fwd_fn)
    back = tf.signal.inverse_stft(z, fl, fs, window_fn=tf.signal.inverse_stft_window_fn(fs, fwd_fn))
    y = _run(back)
    # the first and last frame_length samples are covered by fewer frames
    np.testing.assert_allclose(y[:, fl:y.shape[1] - fl], x[:, fl:y.shape[1] - fl], atol=2e-5)


def test_inverse_stft_errors():
    with pytest.raises(ValueError, match="complex"):
        tf.signal.inverse_stft(tf.zeros([3, 9]), 16, 4)
    with pytest.raises(ValueError, match="float32 or float64"):
        tf.signal.stft(tf.zeros([3, 9], tf.int32), 4, 2)


# -- mel, MFCC -----------------------------------------------------------------------------------

def test_mel_matrix_properties():
    m = _run(tf.signal.linear_to_mel_weight_matrix(20, 129, 8000, 125.0, 3800.0))
    assert m.shape == (129, 20) and m.dtype == np.float32
    assert (m >= 0).all() and (m <= 1).all() and not m[0].any()
    freqs = np.linspace(0, 4000, 129)
    assert not m[(freqs < 125.0) | (freqs > 3800.0)].any()
    peaks = m.argmax(0)
    assert (np.diff(peaks) >= 0).all() and m.max(0).min() > 0.5
    # neighbouring triangles cross: between the first and the last centre a bin's weights sum to 1
    mel = 1127.0 * np.log1p(freqs / 700.0)
    edges = np.linspace(1127.0 * np.log1p(125.0 / 700.0), 1127.0 * np.log1p(3800.0 / 700.0), 22)
    inner = (mel >= edges[1]) & (mel <= edges[-2])
    np.testing.assert_allclose(m[inner].sum(1), 1.0, atol=1e-5)


@pytest.mark.parametrize("kw,msg", [(dict(num_mel_bins=0), "num_mel_bins must be positive"),
                                    (dict(lower_edge_hertz=-1.0), "non-negative"),
                                    (dict(lower_edge_hertz=300.0, upper_edge_hertz=200.0), ">= upper_edge_hertz"),
                                    (dict(sample_rate=0), "sample_rate must be positive"),
                                    (dict(upper_edge_hertz=4100.0), "Nyquist"),
                                    (dict(dtype=tf.int32), "floating point")])
def test_mel_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        tf.signal.linear_to_mel_weight_matrix(**kw)


def test_mfccs_is_scaled_dct2():
    x = R.randn(3, 4, 10)
    got = _run(tf.signal.mfccs_from_log_mel_spectrograms(tf.constant(x)))
    np.testing.assert_allclose(got, _dct_by_sum(x, 2, None) / math.sqrt(20), atol=1e-12)


# -- gradients by finite differences --------------------------------------------------------------

def _fd_check(fn, x, eps=1e-6, tol=1e-6):
    p = tf.placeholder(tf.float64, x.shape)
    y = fn(p)
    w = R.uniform(0.5, 1.5, _run(y, {p: x}).shape)
    loss = tf.reduce_sum(y * w)
    g = _run(tf.gradients(loss, p)[0], {p: x})
    num = np.zeros_like(x)
    flat = x.reshape(-1)
    for i in range(flat.size):
        d = np.zeros_like(flat)
        d[i] = eps
        num.reshape(-1)[i] = (_run(loss, {p: (flat + d).reshape(x.shape)}) -
                              _run(loss, {p: (flat - d).reshape(x.shape)})) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=tol, atol=tol)


def test_gradient_frame_and_overlap_and_add():
    _fd_check(lambda p: tf.signal.frame(p, 4, 3, pad_end=True) ** 2, R.randn(2, 10))
    _fd_check(lambda p: tf.signal.overlap_and_add(p, 3) ** 2, R.randn(2, 4, 5))


def test_gradient_stft_magnitude_and_inverse():
    _fd_check(lambda p: tf.abs(tf.signal.stft(p, 8, 3)), R.randn(2, 24))
    _fd_check(lambda p: tf.signal.inverse_stft(tf.signal.stft(p, 8, 2), 8, 2) ** 2, R.randn(1, 20))


def test_gradient_mfcc_pipeline():
    def fn(p):
        spec = tf.abs(tf.signal.stft(p, 16, 8))
        mel = tf.tensordot(spec, tf.signal.linear_to_mel_weight_matrix(6, 9, 8000, 100.0, 3900.0, tf.float64), 1)
        return tf.signal.mfccs_from_log_mel_spectrograms(tf.log(mel + 0.1))
    _fd_check(fn, R.randn(2, 48), tol=1e-5)


def test_gradient_dct():
    for t in (1, 2, 3, 4):
        _fd_check(lambda p: tf.signal.dct(p, type=t, n=6) ** 2, R.randn(2, 5))


# -- the speech ops ------------------------------------------------------------------------------

def test_audio_spectrogram_of_a_sine():
    rate, n = 8000, 4000
    tone = np.sin(2 * np.pi * 1000.0 * np.arange(n) / rate).astype(np.float32)[:, None]
    spec = contrib_audio.audio_spectrogram(tf.constant(tone), window_size=256, stride=128)
    assert spec.shape.as_list() == [1, 30, 129]
    s = _run(spec)
    assert (s.argmax(-1) == 32).all()            # 1000 Hz at 8000 / 256 Hz per bin
    # the magnitude of a periodic-Hann-windowed sine at its bin: window sum / 4
    np.testing.assert_allclose(s[0, :, 32], 256 / 4, rtol=1e-3)
    sq = _run(contrib_audio.audio_spectrogram(tf.constant(tone), 256, 128, magnitude_squared=True))
    np.testing.assert_allclose(sq, s.astype(np.float64) ** 2, rtol=1e-4, atol=1e-4)


def test_audio_spectrogram_matches_loop_and_short_input():
    x = R.uniform(-1, 1, (50, 2)).astype(np.float32)
    got = _run(contrib_audio.audio_spectrogram(tf.constant(x), 12, 5))
    w = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(12) / 12)
    want = np.array([[np.abs(np.fft.rfft(x[i * 5:i * 5 + 12, c] * w, 16)) for i in range(8)] for c in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert _run(contrib_audio.audio_spectrogram(tf.constant(x[:10]), 12, 5)).shape == (2, 0, 9)


def _mfcc_loop(spec, rate, upper, lower, chans, coefs):
    """The Mfcc op by loops over bins, one filterbank channel pair at a time."""
    mel = lambda f: 1127.0 * math.log1p(f / 700.0)  # noqa: E731
    bins = spec.shape[-1]
    centres = [mel(lower) + (mel(upper) - mel(lower)) / (chans + 1) * (i + 1) for i in range(chans + 1)]
    hz = 0.5 * rate / (bins - 1)
    out = np.zeros(spec.shape[:-1] + (coefs,))
    for c in range(spec.shape[0]):
        for f in range(spec.shape[1]):
            fb = np.zeros(chans)
            for i in range(int(1.5 + lower / hz), int(upper / hz) + 1):
                m = mel(i * hz)
                ch = next((k for k, cm in enumerate(centres) if cm >= m), chans + 1) - 1
                v = math.sqrt(spec[c, f, i])
                wgt = ((centres[ch + 1] - m) / (centres[ch + 1] - centres[ch]) if ch >= 0
                       else (centres[0] - m) / (centres[0] - mel(lower)))
                if 0 <= ch < chans:
                    fb[ch] += v * wgt
                if ch + 1 < chans:
                    fb[ch + 1] += v * (1 - wgt)
            lg = np.log(np.maximum(fb, 1e-12))
            for k in range(coefs):
                out[c, f, k] = sum(lg[j] * math.cos(math.pi / chans * (j + 0.5) * k) for j in range(chans)) * \
                    math.sqrt(2.0 / chans)
    return out


def test_mfcc_op_matches_loop():
    spec = (R.uniform(0, 2, (2, 3, 65)) ** 2).astype(np.float32)
    got = _run(contrib_audio.mfcc(tf.constant(spec), 8000, upper_frequency_limit=3500.0, lower_frequency_limit=60.0,
                                  filterbank_channel_count=12, dct_coefficient_count=8))
    assert got.shape == (2, 3, 8)
    np.testing.assert_allclose(got, _mfcc_loop(spec.astype(np.float64), 8000, 3500.0, 60.0, 12, 8), atol=1e-4)


def test_speech_ops_shapes_errors_and_no_gradient():
    x = tf.placeholder(tf.float32, [16000, 1])
    spec = contrib_audio.audio_spectrogram(x, 480, 160, magnitude_squared=True)
    assert spec.shape.as_list() == [1, 98, 257]
    feats = contrib_audio.mfcc(spec, 16000, dct_coefficient_count=40)
    assert feats.shape.as_list() == [1, 98, 40]
    # TF registers no gradient for Mfcc or AudioSpectrogram: LookupError, as TF's
    with pytest.raises(LookupError, match="Mfcc"):
        tf.gradients(tf.reduce_sum(feats), x)
    with pytest.raises(ValueError, match="window size must be > 1"):
        contrib_audio.audio_spectrogram(x, 1, 1)
    with pytest.raises(ValueError, match="stride must be strictly positive"):
        contrib_audio.audio_spectrogram(x, 4, 0)
    with pytest.raises(ValueError, match="rank 2"):
        contrib_audio.audio_spectrogram(tf.zeros([10]), 4, 2)
    with pytest.raises(ValueError, match="rank 3"):
        contrib_audio.mfcc(tf.zeros([10, 3]), 16000)
    bad = contrib_audio.mfcc(tf.ones([1, 2, 129]), 16000, dct_coefficient_count=50)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Mfcc initialization failed"):
        _run(bad)


def test_contrib_signal_names():
    names = {"frame", "overlap_and_add", "hann_window", "hamming_window", "stft", "inverse_stft",
             "inverse_stft_window_fn", "linear_to_mel_weight_matrix", "mfccs_from_log_mel_spectrograms"}
    assert all(getattr(tf.contrib.signal, n) is getattr(tf.signal, n) for n in names)
    assert tf.spectral.dct is tf.signal.dct


def test_fftshift_centres_zero_frequency():
    x = np.arange(10.0).reshape(2, 5)
    np.testing.assert_array_equal(_run(tf.signal.fftshift(tf.constant(x))), np.fft.fftshift(x))
    np.testing.assert_array_equal(_run(tf.signal.fftshift(tf.constant(x), axes=1)), np.fft.fftshift(x, axes=1))
    np.testing.assert_array_equal(_run(tf.signal.ifftshift(tf.signal.fftshift(tf.constant(x), axes=[-1]), axes=-1)),
                                  x)
    freqs = np.fft.fftfreq(8)
    assert (np.diff(_run(tf.signal.fftshift(tf.constant(freqs)))) > 0).all()


def test_pipeline_on_a_simulated_gpu():
    """The tf.signal ops run where the device's generic kernels serve them; the speech ops stay on the host."""
    from collflow.kernels import gpu
    from collflow.kernels.device import Device
    from simulated_device import registered
    if gpu.setup() is not None:
        pytest.skip("a real GPU is /gpu:0 here")
    with registered(Device("/gpu:0", "GPU", 0, np)):
        pcm = tf.placeholder(tf.float32, [800, 1])
        spec = contrib_audio.audio_spectrogram(pcm, 64, 32, magnitude_squared=True)
        feats = contrib_audio.mfcc(spec, 8000, dct_coefficient_count=10, filterbank_channel_count=20)
        mags = tf.abs(tf.signal.stft(tf.transpose(pcm), 64, 32))
        mel = tf.tensordot(mags, tf.signal.linear_to_mel_weight_matrix(20, 33, 8000, 20.0, 4000.0), 1)
        ours = tf.signal.mfccs_from_log_mel_spectrograms(tf.log(mel + 1e-6))[..., :10]
        x = R.randn(800, 1).astype(np.float32)
        with tf.Session(config={"device": "/gpu:0"}) as s:
            a, b = s.run([feats, ours], {pcm: x})
            plan = s.plan_for([feats, ours], {pcm: x})
        assert a.shape == b.shape == (1, 24, 10)
        assert plan.placement[spec.op.name] == "/cpu:0" and plan.placement[feats.op.name] == "/cpu:0"
        assert plan.placement[ours.op.name] == "/gpu:0"
