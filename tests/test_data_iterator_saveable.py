"""tf.data.experimental.make_saveable_from_iterator and CheckpointInputPipelineHook: an
iterator's position saved by tf.train.Saver and restored in a new graph and Session continues
with exactly the elements the saved run would have given next (shuffles seeded and unseeded,
repeat, batch, map, filter, take/skip, interleave, sample_from_datasets, fed placeholders);
the hook resumes an Estimator's input; the errors; TF 1.15's Structure names, StatsAggregator
and MapVectorizationOptions.  No TensorFlow needed."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import DataLossError, FailedPreconditionError, InvalidArgumentError, NotFoundError

X = tf.data.experimental

PIPELINES = {
    "shuffle_seed_repeat_batch": lambda: tf.data.Dataset.range(23).shuffle(7, seed=3).repeat(3).batch(4),
    "map_filter_take_skip": lambda: (tf.data.Dataset.range(50).map(lambda x: x * 3 + 1)
                                     .filter(lambda x: tf.equal(x % 2, 0)).skip(3).take(15)),
    "unseeded_shuffle_reshuffled": lambda: tf.data.Dataset.range(12).shuffle(12).repeat(4),
    "unseeded_shuffle_fixed_order": lambda: tf.data.Dataset.range(12).shuffle(5, reshuffle_each_iteration=False).repeat(3),
    "interleave_padded_batch": lambda: (tf.data.Dataset.range(1, 6)
                                        .interleave(lambda n: tf.data.Dataset.range(n).map(lambda x: x + 10 * n),
                                                    cycle_length=2)
                                        .map(lambda x: tf.fill([x % 3 + 1], x)).padded_batch(3, [None])),
    "sample_unseeded_zip": lambda: tf.data.Dataset.zip((
        X.sample_from_datasets([tf.data.Dataset.range(40), tf.data.Dataset.range(100, 140)], [0.3, 0.7]),
        tf.data.Dataset.range(1000).shuffle(10, seed=9))),
}


def _flat(v):
    return [a.tolist() for a in (v if isinstance(v, tuple) else (v,))]


def _build(make, kind="initializable"):
    g = tf.Graph()
    with g.as_default():
        ds = make()
        it = ds.make_one_shot_iterator() if kind == "one_shot" else ds.make_initializable_iterator()
        nxt = it.get_next()
        tf.add_to_collection(tf.GraphKeys.SAVEABLE_OBJECTS, X.make_saveable_from_iterator(it))
        saver = tf.train.Saver()
    return g, it, nxt, saver


def _take(sess, nxt, n):
    out = []
    for _ in range(n):
        try:
            out.append(_flat(sess.run(nxt)))
        except tf.errors.OutOfRangeError:
            out.append("end")
            break
    return out


@pytest.mark.parametrize("name", sorted(PIPELINES))
@pytest.mark.parametrize("kind", ["initializable", "one_shot"])
def test_restore_continues_with_the_next_element(tmp_path, name, kind):
    make = PIPELINES[name]
    g, it, nxt, saver = _build(make, kind)
    with tf.Session(graph=g) as s:
        if kind == "initializable":
            s.run(it.initializer)
        before = _take(s, nxt, 5)
        path = saver.save(s, str(tmp_path / "m"))
        expect = _take(s, nxt, 60)  # the rest, through the end of the finite ones
    g, it, nxt, saver = _build(make, kind)
    with tf.Session(graph=g) as s:
        saver.restore(s, path)
        got = _take(s, nxt, 60)
    assert len(before) == 5 and "end" not in before
    assert got == expect
    # restoring discards the state a Session's iterator had (TF's DeserializeIterator)
    with tf.Session(graph=g) as s:
        if kind == "initializable":
            s.run(it.initializer)
        _take(s, nxt, 9)
        saver.restore(s, path)
        assert _take(s, nxt, 60) == expect


def test_a_fresh_run_of_an_unseeded_shuffle_differs_but_a_restore_repeats_it(tmp_path):
    make = PIPELINES["unseeded_shuffle_reshuffled"]
    g, it, nxt, saver = _build(make)
    with tf.Session(graph=g) as s:
        s.run(it.initializer)
        _take(s, nxt, 3)
        path = saver.save(s, str(tmp_path / "m"))
        expect = _take(s, nxt, 30)
        s.run(it.initializer)
        fresh = [_take(s, nxt, 33)[3:] for _ in range(1)][0]
    assert fresh != expect  # a new initialization draws a new order (1 in 12! * ... to collide)
    g, it, nxt, saver = _build(make)
    with tf.Session(graph=g) as s:
        saver.restore(s, path)
        assert _take(s, nxt, 30) == expect
        # saved before the first element (before the shuffle's first draw)
        s.run(it.initializer)
        p0 = saver.save(s, str(tmp_path / "zero"))
        whole = _take(s, nxt, 50)
        saver.restore(s, p0)
        assert _take(s, nxt, 50) == whole


def test_fed_placeholders_are_kept_in_the_checkpoint(tmp_path):
    data = np.arange(30, dtype=np.float32).reshape(10, 3)

    def build():
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, [None, 3])
            n = tf.placeholder(tf.int64, [])
            ds = tf.data.Dataset.from_tensor_slices(x).shuffle(4, seed=1).repeat(n).batch(3)
            it = tf.data.make_initializable_iterator(ds)
            saveable = X.make_saveable_from_iterator(it)
            saver = tf.train.Saver([saveable])  # an explicit var_list of the saveable alone
        return g, it, it.get_next(), saver, x, n
    g, it, nxt, saver, x, n = build()
    with tf.Session(graph=g) as s:
        s.run(it.initializer, {x: data, n: 2})
        _take(s, nxt, 2)
        path = saver.save(s, str(tmp_path / "m"))
        expect = _take(s, nxt, 10)
    assert expect[-1] == "end" and len(expect) == 6
    g, it, nxt, saver, x, n = build()
    with tf.Session(graph=g) as s:
        res = saver.restore(s, path)  # nothing fed: the values come from the checkpoint
        assert _take(s, nxt, 10) == expect
    assert res.restored == ["Iterator:0"]


def test_exhausted_and_uninitialized_iterators(tmp_path):
    make = lambda: tf.data.Dataset.range(3)  # noqa: E731
    g, it, nxt, saver = _build(make)
    with tf.Session(graph=g) as s:
        p_uninit = saver.save(s, str(tmp_path / "u"))
        s.run(it.initializer)
        assert _take(s, nxt, 5) == [[0], [1], [2], "end"]
        p_end = saver.save(s, str(tmp_path / "e"))
    g, it, nxt, saver = _build(make)
    with tf.Session(graph=g) as s:
        saver.restore(s, p_end)
        assert _take(s, nxt, 2) == ["end"]
        saver.restore(s, p_uninit)
        with pytest.raises(FailedPreconditionError, match="not been initialized"):
            s.run(nxt)
        s.run(it.initializer)
        assert _take(s, nxt, 1) == [[0]]


def test_reinitializable_iterator_restores_onto_the_dataset_it_ran(tmp_path):
    def build():
        g = tf.Graph()
        with g.as_default():
            a = tf.data.Dataset.range(10)
            b = tf.data.Dataset.range(100, 110).map(lambda v: v * 2)
            it = tf.data.Iterator.from_structure(a.output_types, a.output_shapes)
            inits = [it.make_initializer(a), it.make_initializer(b)]
            saver = tf.train.Saver([X.make_saveable_from_iterator(it)])
        return g, inits, it.get_next(), saver
    g, inits, nxt, saver = build()
    with tf.Session(graph=g) as s:
        s.run(inits[1])
        _take(s, nxt, 4)
        path = saver.save(s, str(tmp_path / "m"))
    g, inits, nxt, saver = build()
    with tf.Session(graph=g) as s:
        s.run(inits[0])
        saver.restore(s, path)
        assert _take(s, nxt, 2) == [[208], [210]]


def test_errors(tmp_path):
    g, it, nxt, saver = _build(lambda: tf.data.Dataset.range(5))
    with g.as_default():
        with pytest.raises(TypeError, match="Iterator"):
            X.make_saveable_from_iterator(tf.data.Dataset.range(3))
        h = tf.placeholder(tf.string, [])
        feedable = tf.data.Iterator.from_string_handle(h, tf.int64, [])
        with pytest.raises(ValueError, match="does not support checkpointing"):
            X.make_saveable_from_iterator(feedable)
    with tf.Session(graph=g) as s:
        s.run(it.initializer)
        s.run(nxt)
        path = saver.save(s, str(tmp_path / "m"))
    # another pipeline under the same iterator name
    g2, it2, nxt2, saver2 = _build(lambda: tf.data.Dataset.range(6))
    with tf.Session(graph=g2) as s:
        with pytest.raises(InvalidArgumentError, match="pipeline"):
            saver2.restore(s, path)
    # a checkpoint without the iterator's entry
    g3 = tf.Graph()
    with g3.as_default():
        v = tf.Variable(1.0, name="v")
        plain = tf.train.Saver([v])
    with tf.Session(graph=g3) as s:
        s.run(v.initializer)
        p3 = plain.save(s, str(tmp_path / "plain"))
    g4, it4, nxt4, saver4 = _build(lambda: tf.data.Dataset.range(5))
    with tf.Session(graph=g4) as s:
        with pytest.raises(NotFoundError, match="Iterator:0"):
            saver4.restore(s, p3)
    # a damaged state
    from collflow.data.iterator_state import IteratorSaveable
    sv = IteratorSaveable(it4._handle)
    with tf.Session(graph=g4) as s:
        with pytest.raises(DataLossError, match="iterator state"):
            sv.restore_state(s, np.frombuffer(b"not a state at all", np.uint8))
        with pytest.raises(DataLossError, match="uint8"):
            sv.restore_state(s, np.zeros(3, np.float32))
    # a pipeline reading a tensor whose value is not what it was when saved
    def build_var():
        g = tf.Graph()
        with g.as_default():
            n = tf.Variable(np.int64(8), name="n")
            it = tf.data.make_initializable_iterator(tf.data.Dataset.range(n.read_value()))
            saver = tf.train.Saver([X.make_saveable_from_iterator(it)])
        return g, n, it, it.get_next(), saver
    g5, n5, it5, nxt5, saver5 = build_var()
    with tf.Session(graph=g5) as s:
        s.run(n5.initializer)
        s.run(it5.initializer)
        s.run(nxt5)
        p5 = saver5.save(s, str(tmp_path / "var"))
    g5, n5, it5, nxt5, saver5 = build_var()
    with tf.Session(graph=g5) as s:
        s.run(n5.initializer)
        saver5.restore(s, p5)
        assert _take(s, nxt5, 1) == [[1]]
        s.run(n5.assign(9))
        with pytest.raises(InvalidArgumentError, match="differs"):
            saver5.restore(s, p5)


# -- the hook ---------------------------------------------------------------------------------------------

SEEN = []


class _Record(tf.train.SessionRunHook):
    def __init__(self, tensor_name):
        self._name = tensor_name

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(tf.get_default_graph().get_tensor_by_name(self._name))

    def after_run(self, run_context, run_values):
        SEEN.append(int(run_values.results))


def _model_fn(features, labels, mode):
    w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
    tf.identity(features, name="seen_x")
    loss = tf.square(w - tf.cast(features, tf.float32))
    train_op = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _input_fn():
    return tf.data.Dataset.range(40).shuffle(10, seed=4).repeat()


def test_hook_resumes_an_estimators_input(tmp_path):
    cfg = tf.estimator.RunConfig(save_checkpoints_steps=2, log_step_count_steps=None)
    est = tf.estimator.Estimator(_model_fn, model_dir=str(tmp_path), config=cfg)
    SEEN.clear()
    est.train(_input_fn, steps=5, hooks=[X.CheckpointInputPipelineHook(est), _Record("seen_x:0")])
    first = list(SEEN)
    SEEN.clear()
    est.train(_input_fn, steps=4, hooks=[X.CheckpointInputPipelineHook(est), _Record("seen_x:0")])
    resumed = list(SEEN)
    # the uninterrupted sequence: 9 elements of one run of the pipeline
    SEEN.clear()
    est2 = tf.estimator.Estimator(_model_fn, model_dir=str(tmp_path / "other"), config=cfg)
    est2.train(_input_fn, steps=9, hooks=[_Record("seen_x:0")])
    assert first + resumed == SEEN
    # without the hook the second call would have started the data again
    assert resumed != SEEN[:4]
    names = sorted(os.listdir(tmp_path))
    assert "input.ckpt-9.h5" in names and "input.ckpt-5.h5" in names and "input.ckpt-0.h5" not in names
    assert all(not n.startswith("input.ckpt") or n.endswith(".h5") for n in names)  # no meta graphs
    assert os.path.basename(est.latest_checkpoint()) == "model.ckpt-9"
    # the newest 5 are kept (TF's Saver default)
    assert len([n for n in names if n.startswith("input.ckpt-")]) == 5
    with pytest.raises(ValueError, match="Estimator"):
        X.CheckpointInputPipelineHook(object())


def test_hook_file_names_per_worker(tmp_path):
    class Cfg:
        num_worker_replicas, task_type, task_id = 3, "worker", 1
        save_checkpoints_steps, save_checkpoints_secs = 10, None
    fake = type("FakeEstimator", (), {"config": Cfg(), "model_dir": str(tmp_path)})()
    assert X.CheckpointInputPipelineHook(fake).checkpoint_prefix == str(tmp_path / "input_worker_1.ckpt")
    Cfg.num_worker_replicas = 1
    assert X.CheckpointInputPipelineHook(fake).checkpoint_prefix == str(tmp_path / "input.ckpt")
    Cfg.save_checkpoints_steps = None  # neither steps nor seconds: TF's ValueError
    with pytest.raises(ValueError, match="every_secs or every_steps"):
        X.CheckpointInputPipelineHook(fake)


# -- TF 1.15's names ------------------------------------------------------------------------------------

def test_structure_names():
    assert X.Structure is tf.TypeSpec
    assert X.DatasetStructure is tf.data.DatasetSpec
    assert repr(X.TensorStructure(tf.int32, [2])) == "TensorSpec(shape=(2,), dtype=tf.int32, name=None)"
    assert repr(X.SparseTensorStructure(tf.int32, [2, 3])) == "SparseTensorSpec(TensorShape([2, 3]), tf.int32)"
    assert repr(X.RaggedTensorStructure(tf.int32, [2, None], 1)) == \
        "RaggedTensorSpec(TensorShape([2, None]), tf.int32, 1, tf.int64)"
    assert repr(X.TensorArrayStructure(tf.int32, [2], True, False)) == \
        "TensorArraySpec(TensorShape([2]), tf.int32, True, False)"
    spec = tf.data.DatasetSpec(tf.TensorSpec([2], tf.int64))
    assert repr(spec) == "DatasetSpec(TensorSpec(shape=(2,), dtype=tf.int64, name=None), TensorShape([]))"
    assert spec == tf.data.DatasetSpec(tf.TensorSpec([2], tf.int64))
    assert hash(spec) == hash(tf.data.DatasetSpec(tf.TensorSpec([2], tf.int64)))
    assert spec != tf.data.DatasetSpec(tf.TensorSpec([2], tf.int64), [3])
    assert spec.is_compatible_with(tf.data.DatasetSpec(tf.TensorSpec([None], tf.int64)))
    assert not spec.is_compatible_with(tf.data.DatasetSpec(tf.TensorSpec([2], tf.int32)))
    assert spec.most_specific_compatible_type(tf.data.DatasetSpec(tf.TensorSpec([3], tf.int64))) == \
        tf.data.DatasetSpec(tf.TensorSpec([None], tf.int64))
    opt = X.OptionalStructure({"a": tf.TensorSpec([2], tf.int64)})
    assert repr(opt) == "OptionalSpec({'a': TensorSpec(shape=(2,), dtype=tf.int64, name=None)},)"
    ds = tf.data.Dataset.range(3).map(lambda x: (x, tf.cast(x, tf.float32)))
    assert X.get_structure(ds) == ds.element_spec == X.get_structure(ds.make_one_shot_iterator())
    assert tf.data.DatasetSpec.from_value(ds) == tf.data.DatasetSpec(ds.element_spec)
    with pytest.raises(TypeError, match="dataset_or_iterator"):
        X.get_structure(3)


def test_stats_aggregator_and_map_vectorization_options():
    agg = X.StatsAggregator()
    opts = tf.data.Options()
    opts.experimental_stats.aggregator = agg
    ds = tf.data.Dataset.range(3).apply(X.latency_stats("lat")).with_options(opts)
    nxt = ds.make_one_shot_iterator().get_next()
    summary = agg.get_summary()
    with tf.Session() as s:
        assert [s.run(nxt) for _ in range(3)] == [0, 1, 2]
        assert len(s.run(summary)) == 0  # an empty Summary: nothing recorded
    mv = opts.experimental_optimization.map_vectorization
    assert isinstance(mv, X.MapVectorizationOptions) and mv.enabled is None
    mv.enabled = True
    with pytest.raises(AttributeError):
        mv.other = 1
    assert ds.options().experimental_optimization.map_vectorization == X.MapVectorizationOptions()
