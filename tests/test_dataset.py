"""tf.data.Dataset and its iterators: element order and values, static types and shapes,
the end of data, initialization with fed values, and TensorFlow's error messages."""
import numpy as np
import pytest

import collflow as cf

Dataset = cf.data.Dataset


def drain(get_next, sess=None, graph=None, limit=1000):
    """Every element get_next yields until OutOfRangeError."""
    out = []
    own = sess is None
    sess = sess or cf.Session(graph=graph)
    try:
        for _ in range(limit):
            try:
                out.append(sess.run(get_next))
            except cf.errors.OutOfRangeError:
                return out
        raise AssertionError("no OutOfRangeError")
    finally:
        if own:
            sess.close()


def elements(make_ds):
    g = cf.Graph()
    with g.as_default():
        ds = make_ds()
        nxt = ds.make_one_shot_iterator().get_next()
    return drain(nxt, graph=g)


def test_from_tensor_slices_of_arrays_tuples_and_dicts():
    x = np.arange(12, dtype=np.float64).reshape(4, 3)
    y = np.array([0, 1, 0, 1])
    g = cf.Graph()
    with g.as_default():
        ds = Dataset.from_tensor_slices((x, {"label": y, "w": [0.5, 1.0, 1.5, 2.0]}))
        assert ds.output_types == (cf.float64, {"label": cf.int64, "w": cf.float32})
        assert ds.output_shapes[0].as_list() == [3] and ds.output_shapes[1]["w"].rank == 0
        nxt = ds.make_one_shot_iterator().get_next()
        assert nxt[0].shape.as_list() == [3] and nxt[1]["label"].dtype == cf.int64
    got = drain(nxt, graph=g)
    assert len(got) == 4
    for i, (xi, d) in enumerate(got):
        np.testing.assert_array_equal(xi, x[i])
        assert d["label"] == y[i] and d["w"] == np.float32(0.5 * (i + 1))


def test_from_tensors_range_and_their_types():
    assert [v.tolist() for v in elements(lambda: Dataset.from_tensors([[1, 2], [3, 4]]))] == [[[1, 2], [3, 4]]]
    assert elements(lambda: Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert elements(lambda: Dataset.range(2, 9, 3)) == [2, 5, 8]
    assert elements(lambda: Dataset.range(3, 0, -1)) == [3, 2, 1]
    assert Dataset.range(3).output_types == cf.int64
    with pytest.raises(cf.errors.InvalidArgumentError, match="rank >= 1"):
        Dataset.from_tensor_slices(3.0)
    with pytest.raises(cf.errors.InvalidArgumentError, match="different sizes in dimension 0"):
        Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))


def test_batch_keeps_or_drops_the_remainder():
    got = elements(lambda: Dataset.range(7).batch(3))
    assert [b.tolist() for b in got] == [[0, 1, 2], [3, 4, 5], [6]]
    assert Dataset.range(7).batch(3).output_shapes.as_list() == [None]
    dropped = Dataset.range(7).batch(3, drop_remainder=True)
    assert dropped.output_shapes.as_list() == [3]
    assert [b.tolist() for b in elements(lambda: Dataset.range(7).batch(3, drop_remainder=True))] == [
        [0, 1, 2], [3, 4, 5]]
    with pytest.raises(cf.errors.InvalidArgumentError, match="batch_size must be greater than zero"):
        Dataset.range(3).batch(0)


def test_batching_unequal_shapes_is_tensorflows_error():
    def gen():
        yield np.zeros(2)
        yield np.zeros(3)
    g = cf.Graph()
    with g.as_default():
        nxt = Dataset.from_generator(gen, cf.float64, [None]).batch(2).make_one_shot_iterator().get_next()
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.errors.InvalidArgumentError,
                           match=r"Cannot batch tensors with different shapes in component 0. First element had "
                                 r"shape \[2\] and element 1 had shape \[3\]"):
            s.run(nxt)


def test_repeat_take_skip():
    assert elements(lambda: Dataset.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert elements(lambda: Dataset.range(3).repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert elements(lambda: Dataset.range(3).repeat(0)) == []
    assert elements(lambda: Dataset.range(5).skip(2).take(2)) == [2, 3]
    assert elements(lambda: Dataset.range(5).take(-1)) == [0, 1, 2, 3, 4]
    assert elements(lambda: Dataset.range(5).skip(-1)) == []
    assert elements(lambda: Dataset.range(0).repeat()) == []  # an empty dataset repeated forever is empty


def test_shuffle_permutes_within_the_buffer_and_follows_seeds():
    n = 50
    order = elements(lambda: Dataset.range(n).shuffle(10, seed=3))
    assert sorted(order) == list(range(n)) and order != list(range(n))
    # the k-th output is drawn from the first k + buffer_size elements
    assert all(v < k + 10 for k, v in enumerate(order))
    assert elements(lambda: Dataset.range(n).shuffle(10, seed=3)) == order  # same seeds, same order
    assert elements(lambda: Dataset.range(n).shuffle(1, seed=3)) == list(range(n))
    two = elements(lambda: Dataset.range(n).shuffle(n, seed=3).repeat(2))
    assert sorted(two[:n]) == sorted(two[n:]) == list(range(n)) and two[:n] != two[n:]  # reshuffled per epoch
    same = elements(lambda: Dataset.range(n).shuffle(n, seed=3, reshuffle_each_iteration=False).repeat(2))
    assert same[:n] == same[n:]


def test_a_seeded_shuffle_replays_when_its_iterator_is_initialized_again():
    g = cf.Graph()
    with g.as_default():
        it = Dataset.range(30).shuffle(30, seed=4).repeat(2).make_initializable_iterator()
        nxt = it.get_next()
    with cf.Session(graph=g) as s:
        s.run(it.initializer)
        first = drain(nxt, s)
        s.run(it.initializer)
        assert drain(nxt, s) == first and first[:30] != first[30:]  # as TensorFlow: same passes again


def test_shuffle_with_the_graph_seed_is_deterministic():
    def run():
        g = cf.Graph()
        with g.as_default():
            cf.set_random_seed(7)
            nxt = Dataset.range(20).shuffle(20).make_one_shot_iterator().get_next()
        return drain(nxt, graph=g)
    assert run() == run()


def test_map_unpacks_tuples_passes_dicts_and_traces_once():
    calls = []

    def f(a, b):
        calls.append(1)
        return {"sum": a + b, "prod": a * b}
    got = elements(lambda: Dataset.from_tensor_slices(([1.0, 2.0], [3.0, 4.0])).map(f, num_parallel_calls=4)
                   .map(lambda d: [d["sum"], cf.cast(d["prod"], cf.int32)]))
    assert len(calls) == 1  # traced once, run per element by the pipeline
    assert [(float(s), int(p)) for s, p in got] == [(4.0, 3), (6.0, 8)]
    ds = Dataset.range(3).map(lambda x: (x, cf.cast(x, cf.float32) * 0.5))
    assert ds.output_types == (cf.int64, cf.float32)


def test_map_with_random_ops_and_captured_outer_tensors():
    """A map function may use tensors of the outer graph (TF's captured inputs): their values
    are read when the iterator is initialized (a placeholder: fed then)."""
    g = cf.Graph()
    with g.as_default():
        cf.set_random_seed(1)
        ds = Dataset.range(4).map(lambda x: cf.random_uniform(()) + cf.cast(x, cf.float32))
        nxt = ds.make_one_shot_iterator().get_next()
        outer = cf.constant(2.0)
        scaled = Dataset.range(3).map(lambda x: cf.cast(x, cf.float32) * outer).make_one_shot_iterator().get_next()
        scale = cf.placeholder(cf.float32, [])
        it = Dataset.range(3).filter(lambda x: cf.cast(x, cf.float32) < scale).map(
            lambda x: (scale, cf.cast(x, cf.float32) + scale)).make_initializable_iterator()
    vals = drain(nxt, graph=g)
    frac = [v - i for i, v in enumerate(vals)]
    assert all(0 <= f < 1 for f in frac) and len(set(frac)) == 4
    with cf.Session(graph=g) as s:
        assert drain(scaled, s) == [0.0, 2.0, 4.0]
        s.run(it.initializer, {scale: 2.0})
        assert [tuple(map(float, e)) for e in drain(it.get_next(), s)] == [(2.0, 2.0), (2.0, 3.0)]
        s.run(it.initializer, {scale: 10.0})
        assert len(drain(it.get_next(), s)) == 3


def test_filter_and_its_predicate_check():
    assert elements(lambda: Dataset.range(10).filter(lambda x: cf.equal(x % 3, 0))) == [0, 3, 6, 9]
    with pytest.raises(cf.errors.InvalidArgumentError, match="must be convertible to a scalar boolean"):
        Dataset.range(3).filter(lambda x: x)


def test_zip_concatenate_shard():
    got = elements(lambda: Dataset.zip((Dataset.range(3), Dataset.range(10, 20))))
    assert got == [(0, 10), (1, 11), (2, 12)]
    got = elements(lambda: Dataset.zip({"a": Dataset.range(2), "b": Dataset.from_tensor_slices([5.0, 6.0])}))
    assert got == [{"a": 0, "b": 5.0}, {"a": 1, "b": 6.0}]
    assert elements(lambda: Dataset.range(2).concatenate(Dataset.range(5, 7))) == [0, 1, 5, 6]
    with pytest.raises(cf.errors.InvalidArgumentError, match="different types"):
        Dataset.range(2).concatenate(Dataset.from_tensor_slices([1.0]))
    assert elements(lambda: Dataset.range(10).shard(3, 1)) == [1, 4, 7]
    assert elements(lambda: Dataset.range(4).prefetch(2)) == [0, 1, 2, 3]


def test_from_generator_converts_and_checks_shapes():
    def gen(n):
        for i in range(int(n)):
            yield i, [float(i)] * 2
    got = elements(lambda: Dataset.from_generator(gen, (cf.int32, cf.float32), ((), (2,)), args=(3,)))
    assert [(int(a), b.tolist()) for a, b in got] == [(0, [0.0, 0.0]), (1, [1.0, 1.0]), (2, [2.0, 2.0])]
    g = cf.Graph()
    with g.as_default():
        nxt = Dataset.from_generator(lambda: iter([[1.0, 2.0, 3.0]]), cf.float32, (2,)) \
            .make_one_shot_iterator().get_next()
    with cf.Session(graph=g) as s, pytest.raises(cf.errors.InvalidArgumentError, match=r"shape \(3,\), expected"):
        s.run(nxt)


def test_initializable_iterator_with_fed_values_and_reinitialization():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 2))
        n = cf.placeholder(cf.int64, ())
        it = Dataset.from_tensor_slices(x).batch(n).make_initializable_iterator()
        nxt = it.get_next()
        assert nxt.shape.as_list() == [None, 2]
        with pytest.raises(cf.errors.InvalidArgumentError, match="use make_initializable_iterator"):
            Dataset.from_tensor_slices(x).make_one_shot_iterator()
    data = np.arange(10, dtype=np.float32).reshape(5, 2)
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.errors.FailedPreconditionError, match="iterator has not been initialized"):
            s.run(nxt)
        s.run(it.initializer, {x: data, n: 2})
        data[:] = -1  # the pipeline holds its own copy
        got = drain(nxt, s)
        np.testing.assert_array_equal(np.concatenate(got), np.arange(10).reshape(5, 2))
        with pytest.raises(cf.errors.OutOfRangeError):  # stays at the end
            s.run(nxt)
        s.run(it.initializer, {x: np.ones((3, 2)), n: 3})
        np.testing.assert_array_equal(s.run(nxt), np.ones((3, 2)))


def test_reinitializable_iterator_from_structure():
    g = cf.Graph()
    with g.as_default():
        train = Dataset.range(3)
        val = Dataset.range(10, 12)
        it = cf.data.Iterator.from_structure(train.output_types, train.output_shapes)
        nxt = it.get_next()
        init_train, init_val = it.make_initializer(train), it.make_initializer(val)
        with pytest.raises(cf.errors.InvalidArgumentError, match="types"):
            it.make_initializer(Dataset.from_tensor_slices([1.0]))
        with pytest.raises(ValueError, match="does not have an initializer"):
            it.initializer
    with cf.Session(graph=g) as s:
        s.run(init_val)
        assert drain(nxt, s) == [10, 11]
        s.run(init_train)
        assert drain(nxt, s) == [0, 1, 2]


def test_each_session_has_its_own_iterator_state_and_fetches_are_private():
    g = cf.Graph()
    with g.as_default():
        nxt = Dataset.from_tensor_slices(np.arange(6.0).reshape(3, 2)).make_one_shot_iterator().get_next()
    with cf.Session(graph=g) as s1, cf.Session(graph=g) as s2:
        a = s1.run(nxt)
        a[:] = 100
        np.testing.assert_array_equal(s1.run(nxt), [2.0, 3.0])
        np.testing.assert_array_equal(s2.run(nxt), [0.0, 1.0])


def test_a_dataset_is_not_a_python_iterable():
    with pytest.raises(TypeError, match="not iterable in graph mode"):
        iter(Dataset.range(2))


def test_training_from_a_dataset_reaches_the_least_squares_fit():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    w_true = np.array([[1.0], [-2.0], [0.5]], np.float32)
    y = x @ w_true
    g = cf.Graph()
    with g.as_default():
        xb, yb = Dataset.from_tensor_slices((x, y)).shuffle(64, seed=1).repeat(40).batch(16) \
            .make_one_shot_iterator().get_next()
        w = cf.Variable(np.zeros((3, 1), np.float32))
        loss = cf.reduce_mean(cf.square(cf.matmul(xb, w) - yb))
        train = cf.train.GradientDescentOptimizer(0.2).minimize(loss)
    with cf.Session(graph=g) as s:
        s.run(w.initializer)
        steps = 0
        try:
            while True:
                s.run(train)
                steps += 1
        except cf.errors.OutOfRangeError:
            pass
        assert steps == 160
        np.testing.assert_allclose(s.run(w), w_true, atol=1e-3)


def test_text_line_dataset_reads_files_in_order(tmp_path):
    import gzip
    import zlib
    a, b, c = tmp_path / "a.txt", tmp_path / "b.txt.gz", tmp_path / "c.z"
    a.write_bytes(b"one\n\ntwo\r\nthree")          # an empty line, a CRLF, no final newline
    with gzip.open(b, "wb") as f:
        f.write(b"x\ny\n")
    c.write_bytes(zlib.compress(b"z1\nz2\n"))

    def read(build, feed=None):
        g = cf.Graph()
        with g.as_default():
            ds, init_feed = build()
            it = ds.make_initializable_iterator()
            nxt = it.get_next()
        out = []
        with cf.Session(graph=g) as s:
            s.run(it.initializer, init_feed or {})
            try:
                while True:
                    out.append(s.run(nxt))
            except cf.errors.OutOfRangeError:
                pass
        return out
    assert read(lambda: (cf.data.TextLineDataset(str(a)), None)) == [b"one", b"", b"two", b"three"]
    assert read(lambda: (cf.data.TextLineDataset([str(b)], compression_type="GZIP").concatenate(
        cf.data.TextLineDataset(str(c), "ZLIB")), None)) == [b"x", b"y", b"z1", b"z2"]

    def fed():
        names = cf.placeholder(cf.string, [None])
        return cf.data.TextLineDataset(names), {names: [str(a), str(a)]}   # names read at initialization
    assert len(read(fed)) == 8
    with pytest.raises(cf.errors.NotFoundError, match="TextLineDataset: cannot read"):
        read(lambda: (cf.data.TextLineDataset(str(tmp_path / "missing.txt")), None))
    with pytest.raises(cf.errors.InvalidArgumentError, match="compression_type"):
        cf.data.TextLineDataset(str(a), compression_type="BZ2")
