"""tf.string_to_hash_bucket_fast (FarmHash Fingerprint64) and the legacy
tf.string_to_hash_bucket (TF's core Hash64, seed 0xDECAFCAFFE): reference values recorded
from TensorFlow 2.21 (tf.fingerprint for the full 64 bits) for every length class of the
algorithms, and a differential test against TF on random strings when it is installed."""
import random

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.kernels.farmhash import fingerprint64, legacy_hash64
from tests.tf_peer import run_in_both

_S = "The quick brown fox jumps over the lazy dog 0123456789" * 5
_LENS = [0, 1, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 200]
# tf.fingerprint(_S[:n]) (little-endian), TensorFlow 2.21
_FP = {0: 0x9AE16A3B2F90404F, 1: 0x12F77CD62637857A, 3: 0x85887769DDCC73FD, 4: 0xF4ED8B2E41E836A5,
       7: 0xFB3B4353192E2B87, 8: 0x46D0FFB3EE9D8C07, 15: 0x7D582C15A5E865A7, 16: 0x3BF6BD3BEBD31655,
       17: 0xC7A32DA958C02DBD, 31: 0x839AB5037D8B6353, 32: 0xB65964DEE7761262, 33: 0xF25FEA09DB06B3D6,
       63: 0xAB1A4132A3E9BFD8, 64: 0xA83FE8ADB5C15392, 65: 0x24E8A3BCE146DA2B, 127: 0x4EB13C9643529322,
       128: 0x5D8089996234EC20, 129: 0x753DD91D62A1FEDD, 200: 0x5CCA574515D91D11}
# TF's string_to_hash_bucket_fast / string_to_hash_bucket of _S[:n] with 1000003 buckets
_FAST = [377723, 740147, 396929, 538906, 117156, 650604, 651476, 784130, 156564, 188545, 292266, 887537,
         445473, 445366, 75151, 378713, 533500, 425564, 355895]
_LEGACY = [598820, 631125, 515384, 325981, 495859, 5273, 326032, 853521, 524671, 772638, 1988, 210498,
           348528, 646300, 305030, 788421, 676300, 442461, 13589]


def test_fingerprint64_reference_values():
    for n in _LENS:
        assert fingerprint64(_S[:n].encode()) == _FP[n], n


def test_legacy_hash64_matches_buckets():
    for n, want in zip(_LENS, _LEGACY):
        assert legacy_hash64(_S[:n].encode()) % 1000003 == want, n


def test_ops_by_hand():
    strs = [_S[:n] for n in _LENS]
    with tf.Graph().as_default():
        x = tf.constant(strs)
        fast, legacy = tf.string_to_hash_bucket_fast(x, 1000003), tf.string_to_hash_bucket(x, 1000003)
        two_d = tf.strings.to_hash_bucket_fast(tf.reshape(x[:18], [3, 6]), 10)
        assert fast.dtype == tf.int64 and fast.shape.as_list() == [len(strs)]
        assert tf.strings.to_hash_bucket is tf.string_to_hash_bucket
        with tf.Session() as s:
            f, lg, t = s.run([fast, legacy, two_d])
    assert f.tolist() == _FAST and lg.tolist() == _LEGACY
    assert t.shape == (3, 6) and t.reshape(-1).tolist() == [_FP[n] % 10 for n in _LENS[:18]]


def test_non_ascii_and_errors():
    with tf.Graph().as_default():
        h = tf.string_to_hash_bucket_fast(["héllo", ""], 7)
        with tf.Session() as s:
            got = s.run(h)
        assert got.tolist() == [fingerprint64("héllo".encode()) % 7, 0x9AE16A3B2F90404F % 7]
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.string_to_hash_bucket_fast(["a"], 0)
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.string_to_hash_bucket(tf.constant([1, 2]), 3)


def test_differential_random_strings():
    rng = random.Random(7)
    alphabet = "abcXYZ019 -_é\u4e2d"
    lengths = list(range(0, 201)) + [rng.randrange(300) for _ in range(100)]
    strs = ["".join(rng.choice(alphabet) for _ in range(n)) for n in lengths]

    def program(T):
        x = T.constant(strs)
        return [T.string_to_hash_bucket_fast(x, 2 ** 62 + 11), T.string_to_hash_bucket(x, 2 ** 62 + 11),
                T.strings.to_hash_bucket_fast(x, 97), T.strings.to_hash_bucket(x, 97)]
    mine, theirs = run_in_both(program)
    for a, b in zip(mine, theirs):
        np.testing.assert_array_equal(a, b)
