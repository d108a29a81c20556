"""tf.nn.fixed_unigram_candidate_sampler and all_candidate_sampler: TF's distribution
(counts ** distortion, reserved ids, shards), expected counts, a vocab file; frequencies
checked statistically (the draws are collflow's), the deterministic parts against TF."""
import numpy as np
import pytest

import collflow.compat.v1 as cf
from tf_peer import run_in_both

TRUE = np.array([[0], [3], [5]], np.int64)


def _run(fetches):
    with cf.Session() as s:
        return s.run(fetches)


def test_fixed_unigram_frequencies_and_expected_counts(tmp_path):
    counts = [0.0, 10.0, 40.0, 30.0, 20.0]
    with cf.Graph().as_default():
        sampled, true_exp, samp_exp = cf.nn.fixed_unigram_candidate_sampler(
            TRUE, 1, 20000, False, 7, unigrams=counts, distortion=0.5, num_reserved_ids=2, seed=3)
        s, te, se = _run([sampled, true_exp, samp_exp])
    p = np.concatenate([[0, 0], np.sqrt(counts)])
    p /= p.sum()
    freq = np.bincount(s, minlength=7) / s.size
    np.testing.assert_allclose(freq, p, atol=0.01)
    assert freq[0] == freq[1] == freq[2] == 0.0                  # reserved ids and a zero count never drawn
    np.testing.assert_allclose(te[:, 0], p[[0, 3, 5]] * 20000, rtol=1e-5)
    np.testing.assert_allclose(se, p[s] * 20000, rtol=1e-5)
    vocab = tmp_path / "vocab.csv"
    vocab.write_text("a,1\nb,3\nc,0\nd,4\n")
    with cf.Graph().as_default():
        s2, _, _ = cf.nn.fixed_unigram_candidate_sampler(TRUE, 1, 2, True, 4, vocab_file=str(vocab),
                                                         num_shards=2, shard=1, seed=1)
        got = _run(s2)
        with pytest.raises(cf.errors.InvalidArgumentError, match="only 2 have a nonzero probability"):
            cf.nn.fixed_unigram_candidate_sampler(TRUE, 1, 3, True, 4, vocab_file=str(vocab), num_shards=2, shard=1)
    assert sorted(got.tolist()) == [1, 3]                       # shard 1: the odd ids only, each once
    with pytest.raises(cf.errors.InvalidArgumentError, match="range_max"):
        cf.nn.fixed_unigram_candidate_sampler(TRUE, 1, 2, False, 9, unigrams=[1, 2])


def test_all_candidate_sampler():
    def program(T):
        return list(T.nn.all_candidate_sampler(T.constant(np.array([[0], [3], [2]], np.int64)), 1, 4, True))
    with cf.Graph().as_default():
        s, te, se = _run(program(cf))
    np.testing.assert_array_equal(s, [0, 1, 2, 3])
    np.testing.assert_array_equal(te, np.ones((3, 1)))
    np.testing.assert_array_equal(se, np.ones(4))
    with cf.Graph().as_default():
        with pytest.raises(cf.errors.InvalidArgumentError, match="out of range"):
            _run(cf.nn.all_candidate_sampler(cf.constant(TRUE), 1, 4, True)[0])
    ours, theirs = run_in_both(program)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
