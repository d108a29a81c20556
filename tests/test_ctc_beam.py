"""tf.nn.ctc_beam_search_decoder: TF1's CTC prefix beam search.  Without pruning it gives
the exact probabilities of label sequences (checked by enumerating every alignment);
against TensorFlow, its paths and log-probabilities on random logits."""
import itertools

import numpy as np
import pytest

import collflow.compat.v1 as cf
from tf_peer import run_in_both


def _decode(x, seq, **kw):
    with cf.Graph().as_default():
        d, lp = cf.nn.ctc_beam_search_decoder(cf.constant(x), cf.constant(seq), **kw)
        with cf.Session() as s:
            return s.run([d, lp])


def _exact(logits):
    """{label sequence: log p} over every alignment of [time, classes] logits (blank last)."""
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    blank = logits.shape[1] - 1
    out = {}
    for path in itertools.product(range(logits.shape[1]), repeat=logits.shape[0]):
        labels, prev = [], None
        for c in path:
            if c != blank and c != prev:
                labels.append(c)
            prev = c
        key = tuple(labels)
        out[key] = out.get(key, 0.0) + float(np.prod([p[t, c] for t, c in enumerate(path)]))
    return {k: np.log(v) for k, v in out.items()}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_without_pruning_the_beam_is_exact(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(5, 1, 3)).astype(np.float32) * 2
    exact = sorted(_exact(x[:, 0].astype(np.float64)).items(), key=lambda kv: -kv[1])
    decoded, log_prob = _decode(x, np.array([5], np.int32), beam_width=200, top_paths=4, merge_repeated=False)
    for i in range(4):
        assert tuple(decoded[i].values.tolist()) == exact[i][0]
        np.testing.assert_allclose(log_prob[0, i], exact[i][1], rtol=1e-5)
        np.testing.assert_array_equal(decoded[i].indices[:, 1], np.arange(len(exact[i][0])))


def test_merge_repeated_merges_labels_the_beam_kept_apart():
    # "a blank a" is the label sequence (a, a); TF1's decoder with merge_repeated=True reports (a)
    x = np.log(np.array([[0.9, 0.05, 0.05], [0.05, 0.05, 0.9], [0.9, 0.05, 0.05]], np.float32))[:, None, :]
    kept, _ = _decode(x, np.array([3], np.int32), beam_width=10, merge_repeated=False)
    merged, _ = _decode(x, np.array([3], np.int32), beam_width=10, merge_repeated=True)
    assert kept[0].values.tolist() == [0, 0] and merged[0].values.tolist() == [0]


def test_batches_and_sequence_lengths():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 3, 4)).astype(np.float32)
    decoded, log_prob = _decode(x, np.array([6, 2, 1], np.int32), beam_width=5, top_paths=2)
    assert log_prob.shape == (3, 2) and np.all(log_prob[:, 0] >= log_prob[:, 1])
    for d in decoded:
        assert d.dense_shape[0] == 3 and set(d.indices[:, 0].tolist()) <= {0, 1, 2}
    one, lp = _decode(x, np.array([6, 2, 0], np.int32), beam_width=5, top_paths=1)
    assert lp[2, 0] == 0.0 and 2 not in one[0].indices[:, 0]    # an empty sequence: the empty labelling


def test_errors():
    x = np.zeros((2, 1, 3), np.float32)
    with pytest.raises(ValueError, match="top_paths"):
        cf.nn.ctc_beam_search_decoder(cf.constant(x), [2], beam_width=2, top_paths=3)
    with pytest.raises(cf.errors.InvalidArgumentError, match="sequence_length has 2 entries"):
        _decode(x, np.array([2, 2], np.int32))
    with pytest.raises(cf.errors.InvalidArgumentError, match="Less leaves in the beam search than requested"):
        _decode(np.zeros((0, 1, 3), np.float32), np.array([0], np.int32), beam_width=5, top_paths=2)


@pytest.mark.parametrize("seed", [0, 1])
def test_same_paths_and_log_probabilities_as_tensorflow(seed):
    rng = np.random.default_rng(seed)
    for scale in (1.0, 4.0):
        x = (rng.normal(size=(12, 3, 5)) * scale).astype(np.float32)
        seq = np.array([12, 9, 5], np.int32)
        for width, k, merge in [(1, 1, True), (3, 2, True), (10, 3, False), (50, 4, True)]:
            def program(T):
                d, lp = T.nn.ctc_beam_search_decoder(T.constant(x), T.constant(seq), beam_width=width, top_paths=k,
                                                     merge_repeated=merge)
                return [lp] + [[s.indices, s.values, s.dense_shape] for s in d]
            ours, theirs = run_in_both(program)
            np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-4)
            for a, b in zip(ours[1:], theirs[1:]):
                for u, v in zip(a, b):
                    np.testing.assert_array_equal(u, v)
