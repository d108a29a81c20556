"""The counter-based Philox stream of ops on a GPU (kernels/device_random.py), on the host.

Its words must be the Philox words of kernels/philox.py (which match TensorFlow's), continue
across draws, and its state must resume it exactly; the CUDA kernel giving the same words on
a GPU is checked in test_gpu.py."""
import types

import numpy as np
import pytest

from collflow.kernels import philox as P
from collflow.kernels.device_random import PhiloxStream


def _xp():
    """A stand-in array module that is not NumPy itself (a stream on a 'device')."""
    m = types.ModuleType("simulated_device")
    m.__dict__.update({k: v for k, v in vars(np).items() if not k.startswith("__")})
    return m


def test_words_are_philox_blocks_and_continue_across_draws():
    s = PhiloxStream(_xp(), 7, 11)
    a, b = s.words(10), s.words(5)  # 10 words use 3 calls: the next draw starts at call 3
    host = P.blocks(s.key, s.counter, np.arange(0, 5)).reshape(-1)
    np.testing.assert_array_equal(a, host[:10])
    np.testing.assert_array_equal(b, host[12:17])
    assert s.offset == 5


def test_same_seeds_same_stream_other_seeds_other_stream():
    a = PhiloxStream(_xp(), 1, 2).uniform((100,), np.float32)
    assert np.array_equal(a, PhiloxStream(_xp(), 1, 2).uniform((100,), np.float32))
    assert not np.array_equal(a, PhiloxStream(_xp(), 1, 3).uniform((100,), np.float32))
    assert not np.array_equal(PhiloxStream(_xp(), None, None).uniform((8,), np.float32),
                              PhiloxStream(_xp(), None, None).uniform((8,), np.float32))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_uniform_and_normal_draws(dtype):
    s = PhiloxStream(_xp(), 3, 0)
    u = s.uniform((200, 50), dtype)
    assert u.dtype == dtype and u.shape == (200, 50) and u.min() >= 0 and u.max() < 1
    assert abs(float(u.astype(np.float64).mean()) - 0.5) < 0.01
    z = s.normal((101, 99), dtype)  # an odd count: Box-Muller pairs, the last half dropped
    assert z.dtype == dtype and z.shape == (101, 99)
    z = z.astype(np.float64)
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    if dtype == np.float32:  # TensorFlow's conversion: the low 23 bits of each word
        t = PhiloxStream(_xp(), 3, 0)
        np.testing.assert_array_equal(t.uniform((7,), np.float32), P.uniform_f32(t.__class__(_xp(), 3, 0).words(7)))


@pytest.mark.parametrize("low,high", [(0, 10), (-5, 5), (-(2 ** 40), 2 ** 40), (0, 2 ** 32), (3, 4)])
def test_integers_cover_the_range(low, high):
    r = PhiloxStream(_xp(), 5, 5).integers(low, high, (4000,), np.int64)
    assert r.dtype == np.int64 and r.min() >= low and r.max() < high
    if high - low <= 10:
        assert set(r.tolist()) == set(range(low, high))
    else:
        assert r.max() - r.min() > (high - low) // 2


def test_permutation_is_a_permutation():
    p = PhiloxStream(_xp(), 9, 0).permutation(1000)
    assert sorted(p.tolist()) == list(range(1000))


def test_state_resumes_the_stream_exactly():
    s = PhiloxStream(_xp(), 21, 4)
    s.uniform((13,), np.float32)
    state = s.get_state()
    want = [s.normal((5, 3), np.float64), s.integers(0, 7, (9,), np.int32), s.uniform((4,), np.float32)]
    t = PhiloxStream(_xp(), 99, 99)  # other seeds: the state replaces everything
    t.set_state(dict(state))
    got = [t.normal((5, 3), np.float64), t.integers(0, 7, (9,), np.int32), t.uniform((4,), np.float32)]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="PCG64"):
        t.set_state({"bit_generator": "PCG64", "state": {}})
