"""make_saveable_from_iterator against TensorFlow's (tensorflow.compat.v1, graph mode): the same
pipelines, run some elements, saved by tf.train.Saver, restored into a new graph and Session,
then run to the end: the elements before the save and after the restore are equal to TF's
(deterministic pipelines element for element; shuffled ones, whose orders are each library's
own, by the same rule: what a restore gives equals what the saved run gave next, and every
epoch is a permutation); exhausted and uninitialized iterators; TF 1.15's Structure names (reprs,
equality, get_structure).  Skipped cleanly without TensorFlow."""
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
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]

DETERMINISTIC = {
    "range_map_batch_repeat": lambda tf: tf.data.Dataset.range(11).map(lambda x: x * x).batch(3).repeat(3),
    "take_skip_filter": lambda tf: (tf.data.Dataset.range(60).skip(5).filter(lambda x: tf.equal(x % 3, 0))
                                    .take(12).map(lambda x: (x, tf.cast(x, tf.float32) / 2))),
    "slices_padded_batch": lambda tf: (tf.data.Dataset.from_tensor_slices(np.arange(1, 9, dtype=np.int32))
                                       .map(lambda n: tf.fill([n % 4 + 1], n)).padded_batch(3, [None])),
    "zip_concatenate": lambda tf: tf.data.Dataset.zip((
        tf.data.Dataset.range(7).concatenate(tf.data.Dataset.range(100, 104)),
        tf.data.Dataset.range(20).map(lambda x: -x))),
    "interleave": lambda tf: tf.data.Dataset.range(1, 5).interleave(
        lambda n: tf.data.Dataset.range(n).map(lambda x: x + 10 * n), cycle_length=2, block_length=2),
}
SHUFFLED = {
    "shuffle_seed_repeat": (lambda tf: tf.data.Dataset.range(10).shuffle(4, seed=7).repeat(3), 10),
    "shuffle_fixed_order_repeat": (lambda tf: tf.data.Dataset.range(9).shuffle(
        9, seed=2, reshuffle_each_iteration=False).repeat(2), 9),
}


def _flat(v):
    return [np.asarray(a).tolist() for a in (v if isinstance(v, tuple) else (v,))]


def _run(tf, make, n_before, path):
    """(elements before the save, the saved run's rest, the restored run's rest)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    def build():
        g = tf.Graph()
        with g.as_default():
            it = tf.data.make_initializable_iterator(make(tf))
            nxt = it.get_next()
            tf.add_to_collection(tf.GraphKeys.SAVEABLE_OBJECTS, tf.data.experimental.make_saveable_from_iterator(it))
            saver = tf.train.Saver()
        return g, it, nxt, saver

    def rest(s, nxt):
        out = []
        while True:
            try:
                out.append(_flat(s.run(nxt)))
            except tf.errors.OutOfRangeError:
                return out
    g, it, nxt, saver = build()
    with tf.Session(graph=g) as s:
        s.run(it.initializer)
        before = [_flat(s.run(nxt)) for _ in range(n_before)]
        p = saver.save(s, path)
        saved_rest = rest(s, nxt)
    g, it, nxt, saver = build()
    with tf.Session(graph=g) as s:
        # TF 2.x restores into an initialized iterator only (TF 1.15 and collflow need not)
        s.run(it.initializer)
        s.run(nxt)
        saver.restore(s, p)
        restored_rest = rest(s, nxt)
    return before, saved_rest, restored_rest


@pytest.mark.parametrize("name", sorted(DETERMINISTIC))
@pytest.mark.parametrize("n_before", [0, 2])
def test_deterministic_pipelines_resume_as_tensorflows(tmp_path, name, n_before):
    make = DETERMINISTIC[name]
    want = _run(tft, make, n_before, str(tmp_path / "tf" / "m"))
    got = _run(cft, make, n_before, str(tmp_path / "cf" / "m"))
    assert got == want
    assert want[1] == want[2] and len(want[1]) > 0


@pytest.mark.parametrize("name", sorted(SHUFFLED))
def test_shuffled_pipelines_resume_by_tensorflows_rule(tmp_path, name):
    make, epoch = SHUFFLED[name]
    for lib, tag in ((tft, "tf"), (cft, "cf")):
        before, saved_rest, restored_rest = _run(lib, make, 6, str(tmp_path / tag / "m"))
        assert restored_rest == saved_rest, tag
        seq = [e[0] for e in before + saved_rest]
        epochs = [sorted(seq[i:i + epoch]) for i in range(0, len(seq), epoch)]
        assert epochs and all(e == list(range(epoch)) for e in epochs), tag
        if name == "shuffle_fixed_order_repeat":
            assert seq[:epoch] == seq[epoch:], tag


def test_an_exhausted_iterator_stays_at_its_end(tmp_path):
    make = lambda tf: tf.data.Dataset.range(3)  # noqa: E731
    for lib, tag in ((tft, "tf"), (cft, "cf")):
        before, saved_rest, restored_rest = _run(lib, make, 3, str(tmp_path / tag / "m"))
        assert (before, saved_rest, restored_rest) == ([[0], [1], [2]], [], []), tag


def test_structure_names_match_tensorflows():
    def specs(tf):
        e = tf.data.experimental
        ds = tf.data.Dataset.range(3).map(lambda x: {"a": x, "b": (tf.cast(x, tf.float32), tf.fill([2], x))})
        return [e.TensorStructure(tf.int32, [2, None]), e.SparseTensorStructure(tf.float64, [None, 3]),
                e.RaggedTensorStructure(tf.int32, [2, None], 1), e.TensorArrayStructure(tf.int64, [3], True, False),
                e.DatasetStructure(tf.TensorSpec([2], tf.int64)), tf.data.DatasetSpec(tf.TensorSpec([], tf.string), [4]),
                e.OptionalStructure({"a": tf.TensorSpec([2], tf.int64)}),
                e.get_structure(ds), e.get_structure(tf.data.make_one_shot_iterator(ds))]
    with tft.Graph().as_default():
        want = [repr(s) for s in specs(tft)]
        tf_eq = specs(tft)[4] == tft.data.DatasetSpec(tft.TensorSpec([2], tft.int64))
    with cft.Graph().as_default():
        got = [repr(s) for s in specs(cft)]
        cf_eq = specs(cft)[4] == cft.data.DatasetSpec(cft.TensorSpec([2], cft.int64))
    assert got == want
    assert tf_eq and cf_eq
    assert isinstance(tft.data.experimental.TensorStructure(tft.int32, []), tft.data.experimental.Structure)
    assert isinstance(cft.data.experimental.TensorStructure(cft.int32, []), cft.data.experimental.Structure)
