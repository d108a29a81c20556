"""tf.data.experimental's transformation functions, Dataset.list_files, unbatch, enumerate,
tf.data.Options and get_single_element (collflow/data/dataset_experimental.py,
dataset_grouping.py): TF's element orders, static shapes, types and errors written out (run
without TensorFlow), the same pipelines against TensorFlow where it is installed, and the
random ones' permutations, statistics and seed reproducibility."""
import collections

import numpy as np
import pytest

import collflow as cf
import collflow.compat.v1 as v1
from test_dataset import drain
from tf_peer import tensorflow_v1

Dataset = cf.data.Dataset


def _case_programs():
    """name -> program(T) giving a Dataset, written once against TF1's API."""
    return {
        "unbatch": lambda T: T.data.Dataset.range(7).batch(3).apply(T.data.experimental.unbatch()),
        "unbatch_tuple": lambda T: T.data.Dataset.from_tensor_slices(
            (np.arange(12).reshape(4, 3), np.ones((4, 3, 2)))).unbatch(),
        "map_and_batch": lambda T: T.data.Dataset.range(7).apply(T.data.experimental.map_and_batch(lambda x: x * 2, 3)),
        "map_and_batch_drop": lambda T: T.data.Dataset.range(7).apply(T.data.experimental.map_and_batch(
            lambda x: (x, T.cast(x, T.float32)), 3, drop_remainder=True)),
        "parallel_interleave": lambda T: T.data.Dataset.range(1, 6).apply(T.data.experimental.parallel_interleave(
            lambda x: T.data.Dataset.from_tensors(x).repeat(x), cycle_length=2, block_length=2)),
        "parallel_interleave_wide": lambda T: T.data.Dataset.range(3).apply(T.data.experimental.parallel_interleave(
            lambda x: T.data.Dataset.range(x, 9 + x, 3), cycle_length=4)),
        "enumerate": lambda T: T.data.Dataset.range(3, 6).apply(T.data.experimental.enumerate_dataset(5)),
        "choose": lambda T: T.data.experimental.choose_from_datasets(
            [T.data.Dataset.range(3), T.data.Dataset.range(10, 13)],
            T.data.Dataset.from_tensor_slices(np.array([0, 1, 1, 0, 0, 0, 1, 1, 1, 0], np.int64))),
        "scan": lambda T: T.data.Dataset.range(5).apply(
            T.data.experimental.scan(np.int64(0), lambda s, x: (s + x, s * 10))),
        "scan_nested": lambda T: T.data.Dataset.from_tensor_slices(
            (np.arange(4., dtype=np.float32), np.arange(4))).apply(T.data.experimental.scan(
                (0.0, np.int64(1)), lambda s, x: ((s[0] + x[0], s[1] * 2), (x[1], s[0])))),
        "group_by_window": lambda T: T.data.Dataset.range(11).apply(T.data.experimental.group_by_window(
            lambda x: x % 3, lambda k, w: w.batch(4), window_size=2)),
        "group_by_window_func": lambda T: T.data.Dataset.range(13).apply(T.data.experimental.group_by_window(
            lambda x: x % 3, lambda k, w: w.map(lambda y: y + 100 * k), window_size_func=lambda k: k + 2)),
        "bucket": lambda T: T.data.Dataset.range(1, 12).map(lambda x: T.fill([x], x)).apply(
            T.data.experimental.bucket_by_sequence_length(lambda e: T.shape(e)[0], [3, 6], [2, 2, 3])),
        "bucket_to_boundary": lambda T: T.data.Dataset.range(1, 12).map(lambda x: T.fill([x], x)).apply(
            T.data.experimental.bucket_by_sequence_length(lambda e: T.shape(e)[0], [3, 6, 12], [2, 2, 3, 1],
                                                          pad_to_bucket_boundary=True, drop_remainder=True)),
        "bucket_no_padding": lambda T: T.data.Dataset.range(1, 12).map(lambda x: (T.fill([2], x), x)).apply(
            T.data.experimental.bucket_by_sequence_length(lambda a, b: T.cast(b, T.int32), [3, 6], [2, 2, 3],
                                                          no_padding=True)),
        "ignore_errors": lambda T: T.data.Dataset.from_tensor_slices(np.array([1., 2., np.nan, 3., np.inf, 4.])).map(
            lambda x: T.debugging.check_numerics(x, "bad")).apply(T.data.experimental.ignore_errors()),
        "shuffle_and_repeat_multiset": lambda T: T.data.Dataset.range(5).apply(
            T.data.experimental.shuffle_and_repeat(3, 2, seed=1)).batch(10).map(lambda x: T.sort(x)),
        "choose_stop_on_empty": lambda T: T.data.experimental.choose_from_datasets(
            [T.data.Dataset.range(2), T.data.Dataset.range(10, 13)],
            T.data.Dataset.from_tensor_slices(np.array([1, 0, 0, 1, 0, 1], np.int64)), stop_on_empty_dataset=True),
        "group_by_window_concat": lambda T: T.data.Dataset.range(6).apply(T.data.experimental.group_by_window(
            lambda x: x % 2, lambda k, w: T.data.Dataset.from_tensors(-k).concatenate(w), window_size=2)),
        "ignore_errors_batch": lambda T: T.data.Dataset.range(1, 9).map(lambda x: T.fill([x // 3 + 1], x)).batch(
            2).apply(T.data.experimental.ignore_errors()),
        "ignore_errors_filter": lambda T: T.data.Dataset.from_tensor_slices(np.array([1., np.nan, 3.])).filter(
            lambda x: T.debugging.check_numerics(x, "bad") > 0).apply(T.data.experimental.ignore_errors(True)),
        "with_options": lambda T: T.data.Dataset.range(3).with_options(T.data.Options()),
        "bucket_padded_shapes": lambda T: T.data.Dataset.range(1, 8).map(lambda x: (T.fill([x], x), x)).apply(
            T.data.experimental.bucket_by_sequence_length(lambda a, b: T.shape(a)[0], [4], [2, 2],
                                                          padded_shapes=([9], []), padding_values=(np.int64(-1),
                                                                                                   np.int64(0)))),
        "group_by_reducer": lambda T: T.data.Dataset.range(10).map(lambda x: (x, T.cast(x, T.float32))).apply(
            T.data.experimental.group_by_reducer(lambda a, b: (a * 7) % 3, T.data.experimental.Reducer(
                lambda k: (k * 100, np.float32(0.0)), lambda s, e: (s[0] + e[0], s[1] + e[1] * 0.5),
                lambda s0, s1: (s0, s1 * 2.0, T.stack([s0, s0]))))),
        "group_by_reducer_growing": lambda T: T.data.Dataset.range(7).apply(
            T.data.experimental.group_by_reducer(lambda x: x % 2, T.data.experimental.Reducer(
                lambda k: T.zeros([0], T.int64), lambda s, e: T.concat([s, [e]], 0), lambda s: s))),
    }


EXPECTED = {  # TF's elements (checked against TensorFlow 2.21's compat.v1 below)
    "unbatch": ([0, 1, 2, 3, 4, 5, 6], [[]], ["int64"]),
    "map_and_batch": ([[0, 2, 4], [6, 8, 10], [12]], [[None]], ["int64"]),
    "map_and_batch_drop": ([[[0, 1, 2], [0.0, 1.0, 2.0]], [[3, 4, 5], [3.0, 4.0, 5.0]]], [[3], [3]],
                           ["int64", "float32"]),
    "parallel_interleave": ([1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 4, 4, 5, 5, 5], [[]], ["int64"]),
    "parallel_interleave_wide": ([0, 1, 2, 3, 4, 5, 6, 7, 8], [[]], ["int64"]),
    "enumerate": ([[5, 3], [6, 4], [7, 5]], [[], []], ["int64", "int64"]),
    "choose": ([0, 10, 11, 1, 2, 12], [[]], ["int64"]),
    "scan": ([0, 0, 10, 30, 60], [[]], ["int64"]),
    "scan_nested": ([[0, 0.0], [1, 0.0], [2, 1.0], [3, 3.0]], [[], []], ["int64", "float32"]),
    "group_by_window": ([[0, 3], [1, 4], [2, 5], [6, 9], [7, 10], [8]], [[None]], ["int64"]),
    "group_by_window_func": ([0, 3, 1, 4, 7, 6, 9, 2, 5, 8, 11, 12, 10], None, ["int64"]),
    "ignore_errors": ([1.0, 2.0, 3.0, 4.0], [[]], ["float64"]),
    "shuffle_and_repeat_multiset": ([[0, 0, 1, 1, 2, 2, 3, 3, 4, 4]], [[None]], ["int64"]),
    "with_options": ([0, 1, 2], [[]], ["int64"]),
    "ignore_errors_batch": ([[[1], [2]], [[3, 3], [4, 4]], [[7, 7, 7], [8, 8, 8]]], [[None, None]], ["int64"]),
    "ignore_errors_filter": ([1.0, 3.0], [[]], ["float64"]),
    "group_by_window_concat": ([0, 0, 2, -1, 1, 3, 0, 4, -1, 5], [[]], ["int64"]),
    "choose_stop_on_empty": ([10, 0, 1, 11], [[]], ["int64"]),
}
EXPECTED["group_by_reducer"] = ([[18, 18.0, [18, 18]], [112, 12.0, [112, 112]], [215, 15.0, [215, 215]]],
                                [[], [], [2]], ["int64", "float32", "int64"])  # keys in the order they came
EXPECTED["group_by_reducer_growing"] = ([[0, 2, 4, 6], [1, 3, 5]], [[None]], ["int64"])
EXPECTED["bucket_padded_shapes"] = ([[[[1] + [-1] * 8, [2, 2] + [-1] * 7], [1, 2]],
                                     [[[4] * 4 + [-1] * 5, [5] * 5 + [-1] * 4], [4, 5]],
                                     [[[6] * 6 + [-1] * 3, [7] * 7 + [-1] * 2], [6, 7]],
                                     [[[3, 3, 3] + [-1] * 6], [3]]], [[None, 9], [None]], ["int64", "int64"])
EXPECTED["group_by_window_func"] = ([0, 3, 101, 104, 107, 6, 9, 202, 205, 208, 211, 12, 110], [[]], ["int64"])


def _plain(x):
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in sorted(x.items())}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return np.asarray(x).tolist()


def _drain_program(T, make, limit=50):
    """(elements, static shapes as lists, dtype names) of the Dataset make(T) builds."""
    with T.Graph().as_default():
        ds = make(T)
        shapes = T.data.get_output_shapes(ds)
        types = T.data.get_output_types(ds)
        nxt = T.data.make_one_shot_iterator(ds).get_next()
        out = []
        with T.Session() as s:
            for _ in range(limit):
                try:
                    out.append(s.run(nxt))
                except T.errors.OutOfRangeError:
                    break

    def flat(x):
        return [y for v in x for y in flat(v)] if isinstance(x, (tuple, list)) else [x]
    shapes = [None if s.ndims is None else s.as_list() for s in flat(shapes)] if isinstance(shapes, tuple) else \
        [None if shapes.ndims is None else shapes.as_list()]
    types = [t.name for t in flat(types)]
    return _plain(out), shapes, types


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_elements_shapes_and_types_written_out(name):
    got, shapes, types = _drain_program(v1, _case_programs()[name])
    want, want_shapes, want_types = EXPECTED[name]
    assert got == want
    assert types == want_types
    if want_shapes is not None:
        assert shapes == want_shapes


@pytest.mark.parametrize("name", sorted(_case_programs()))
def test_same_as_tensorflow(name):
    tft = tensorflow_v1()
    make = _case_programs()[name]
    assert _drain_program(v1, make) == _drain_program(tft, make)


def test_bucket_by_sequence_length_values():
    got, shapes, _ = _drain_program(v1, _case_programs()["bucket"])
    # buckets [<3], [3, 6), [>=6] of batch sizes 2, 2, 3; what is left comes out by bucket
    assert got[:2] == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    assert got[2] == [[6] * 6 + [0] * 2, [7] * 7 + [0], [8] * 8]
    assert got[3] == [[9] * 9 + [0] * 2, [10] * 10 + [0], [11] * 11]
    assert got[4] == [[5, 5, 5, 5, 5]]  # the partial batch at the end
    assert len(got) == 5 and shapes == [[None, None]]
    bound, shapes, _ = _drain_program(v1, _case_programs()["bucket_to_boundary"])
    # padded to boundary - 1; drop_remainder leaves out the partial batches
    assert [np.shape(b) for b in bound] == [(2, 2), (2, 5), (3, 11), (3, 11)]
    assert bound[1][0] == [3, 3, 3, 0, 0]
    nopad, shapes, _ = _drain_program(v1, _case_programs()["bucket_no_padding"])
    assert nopad[0] == [[[1, 1], [2, 2]], [1, 2]] and shapes == [[None, 2], [None]]


def test_list_files_sorted_shuffled_and_errors(tmp_path):
    names = ["b.txt", "a.txt", "d.txt", "c.csv"]
    for n in names:
        (tmp_path / n).write_text(n)
    pat = str(tmp_path / "*.txt")
    with cf.Graph().as_default():
        plain = Dataset.list_files(pat, shuffle=False)
        assert plain.output_types == cf.string and plain.output_shapes.as_list() == []
        got = drain(plain.make_one_shot_iterator().get_next())
        several = drain(Dataset.list_files([str(tmp_path / "*.csv"), str(tmp_path / "[ab].txt")],
                                           shuffle=False).make_one_shot_iterator().get_next())
        fed = cf.placeholder(cf.string, [None])
        it = Dataset.list_files(fed, shuffle=False).make_initializable_iterator()
        nxt = it.get_next()
        with cf.Session() as s:
            s.run(it.initializer, {fed: [str(tmp_path / "d.*"), str(tmp_path / "a.*")]})
            from_tensor = drain(nxt, s)
            s.run(it.initializer, {fed: [str(tmp_path / "*.zzz")]})
            with pytest.raises(cf.errors.InvalidArgumentError, match="No files matched pattern"):
                s.run(nxt)
    assert got == [str(tmp_path / n).encode() for n in ("a.txt", "b.txt", "d.txt")]
    assert several == [str(tmp_path / n).encode() for n in ("a.txt", "b.txt", "c.csv")]
    assert from_tensor == [str(tmp_path / "a.txt").encode(), str(tmp_path / "d.txt").encode()]


def test_list_files_shuffles_by_default_with_tfs_seed_rules(tmp_path):
    files = [str(tmp_path / f"f{i:02d}") for i in range(12)]
    for f in files:
        open(f, "w").close()
    orders = []
    for seed in (1, 1, 2):
        with cf.Graph().as_default():
            ds = Dataset.list_files(str(tmp_path / "f*"), seed=seed).repeat(2)
            orders.append(drain(ds.make_one_shot_iterator().get_next()))
    for o in orders:  # each epoch a permutation of all the files, each epoch a new one
        want = [f.encode() for f in files]  # fetched strings are bytes, as TF's
        assert sorted(o[:12]) == want and sorted(o[12:]) == want and o[:12] != o[12:]
    assert orders[0] == orders[1] and orders[0] != orders[2]
    firsts = collections.Counter()
    for _ in range(60):  # unseeded: differs from run to run, every file may come first
        with cf.Graph().as_default():
            firsts[drain(Dataset.list_files(str(tmp_path / "f*")).take(1).make_one_shot_iterator().get_next())[0]] += 1
    assert len(firsts) >= 8


def test_options_kept_and_merged():
    o = cf.data.Options()
    assert o.experimental_deterministic is None and o.experimental_optimization.map_parallelization is None
    o.experimental_deterministic = False
    o.experimental_optimization.map_parallelization = True
    o.experimental_threading.private_threadpool_size = 4
    with pytest.raises(AttributeError, match="Cannot set the property"):
        o.no_such_option = 1
    with cf.Graph().as_default():
        ds = Dataset.range(3).with_options(o)
        o.experimental_deterministic = True  # with_options keeps its own copy
        o2 = v1.data.Options()
        o2.experimental_slack = True
        both = ds.map(lambda x: x + 1).with_options(o2)
        got = both.options()
        assert got.experimental_deterministic is False and got.experimental_slack is True
        assert got.experimental_optimization.map_parallelization is True
        assert got.experimental_threading.private_threadpool_size == 4
        assert Dataset.range(2).options() == cf.data.Options()
        assert drain(both.make_one_shot_iterator().get_next()) == [1, 2, 3]
        with pytest.raises(TypeError):
            Dataset.range(2).with_options({"experimental_deterministic": False})
    assert v1.data.experimental.Options is cf.data.Options


def test_get_single_element():
    with cf.Graph().as_default():
        n = cf.placeholder(cf.int64, [])
        e = v1.data.experimental.get_single_element(
            Dataset.range(n).map(lambda x: (x * 2, cf.cast(x, cf.float32))).skip(2))
        b = v1.data.experimental.get_single_element(Dataset.range(5).batch(5))
        assert e[0].shape.as_list() == [] and e[1].dtype == cf.float32 and b.shape.as_list() == [None]
        with cf.Session() as s:
            assert s.run(e, {n: 3}) == (4, 2.0)
            assert s.run(e, {n: 3}) == (4, 2.0)  # the pipeline runs anew at each run
            assert s.run(b).tolist() == [0, 1, 2, 3, 4]
            with pytest.raises(cf.errors.InvalidArgumentError, match="Dataset was empty"):
                s.run(e, {n: 2})
            with pytest.raises(cf.errors.InvalidArgumentError, match="more than one element"):
                s.run(e, {n: 5})
    with pytest.raises(TypeError):
        v1.data.experimental.get_single_element([1])


def test_shuffle_and_repeat_epochs_and_seeds():
    def run(seed, graph_seed=None):
        with cf.Graph().as_default() as g:
            if graph_seed is not None:
                g.seed = graph_seed
            ds = Dataset.range(10).apply(v1.data.experimental.shuffle_and_repeat(10, 3, seed=seed))
            return drain(ds.make_one_shot_iterator().get_next())
    a, b, c = run(5), run(5), run(6)
    assert len(a) == 30 and all(sorted(a[i:i + 10]) == list(range(10)) for i in (0, 10, 20))
    assert a == b and a != c and a[:10] != a[10:20]
    with cf.Graph().as_default():
        forever = Dataset.range(3).apply(v1.data.experimental.shuffle_and_repeat(2)).take(30)
        assert sorted(drain(forever.make_one_shot_iterator().get_next())) == [0] * 10 + [1] * 10 + [2] * 10


def test_sample_from_datasets_weights_seeds_and_the_end():
    def run(weights, seed, n=3000):
        with cf.Graph().as_default():
            dss = [Dataset.from_tensors(np.int64(i)).repeat() for i in range(3)]
            ds = v1.data.experimental.sample_from_datasets(dss, weights, seed=seed).take(n)
            return drain(ds.make_one_shot_iterator().get_next(), limit=n + 1)
    a = run([0.2, 0.3, 0.5], 4)
    counts = np.bincount(a, minlength=3) / len(a)
    assert np.allclose(counts, [0.2, 0.3, 0.5], atol=0.04)
    assert a == run([0.2, 0.3, 0.5], 4) and a != run([0.2, 0.3, 0.5], 5)
    uniform = np.bincount(run(None, 1), minlength=3) / 3000
    assert np.allclose(uniform, 1 / 3, atol=0.04)
    with cf.Graph().as_default():  # a finite input ends; the others go on until all have
        ds = v1.data.experimental.sample_from_datasets([Dataset.range(5), Dataset.range(100, 120)], [0.9, 0.1], seed=2)
        got = drain(ds.make_one_shot_iterator().get_next())
        w = cf.placeholder(cf.float32, [2])
        it = v1.data.experimental.sample_from_datasets([Dataset.range(3), Dataset.range(10, 13)], w,
                                                       seed=3).make_initializable_iterator()
        nxt = it.get_next()
        with cf.Session() as s:
            s.run(it.initializer, {w: [0.0, 1.0]})
            fed = drain(nxt, s)
            s.run(it.initializer, {w: [-1.0, 1.0]})
            with pytest.raises(cf.errors.InvalidArgumentError, match="non-negative"):
                s.run(nxt)
    assert sorted(got) == list(range(5)) + list(range(100, 120))
    assert [x for x in got if x < 100] == list(range(5))
    assert fed == [10, 11, 12]
    with cf.Graph().as_default():  # stop_on_empty_dataset: the first input that ends ends them all
        ds = v1.data.experimental.sample_from_datasets([Dataset.range(3), Dataset.range(10, 100)], [0.5, 0.5],
                                                       seed=1, stop_on_empty_dataset=True)
        got = drain(ds.make_one_shot_iterator().get_next())
    assert [x for x in got if x < 10] == [0, 1, 2] and len(got) < 40
    with pytest.raises(ValueError, match="one weight per dataset"):
        v1.data.experimental.sample_from_datasets([Dataset.range(2)], [0.5, 0.5])


def test_construction_errors():
    with cf.Graph().as_default():
        with pytest.raises(ValueError, match="scalar components"):
            Dataset.range(3).unbatch()
        with pytest.raises(ValueError, match="mutually exclusive"):
            v1.data.experimental.map_and_batch(lambda x: x, 2, num_parallel_batches=1, num_parallel_calls=1)
        with pytest.raises(TypeError, match="scalar `tf.int64`"):
            v1.data.experimental.choose_from_datasets([Dataset.range(2)], Dataset.range(2).map(
                lambda x: cf.cast(x, cf.int32)))
        with pytest.raises(TypeError, match="same types"):
            v1.data.experimental.choose_from_datasets([Dataset.range(2), Dataset.from_tensors(1.0)],
                                                      Dataset.range(2))
        with pytest.raises(ValueError, match="window_size"):
            Dataset.range(3).apply(v1.data.experimental.group_by_window(lambda x: x, lambda k, w: w))
        with pytest.raises(ValueError, match="tf.int64 scalar"):
            Dataset.range(3).apply(v1.data.experimental.group_by_window(
                lambda x: cf.cast(x, cf.int32), lambda k, w: w, 2))
        with pytest.raises(ValueError, match="len\\(bucket_batch_sizes\\)"):
            v1.data.experimental.bucket_by_sequence_length(lambda x: x, [3], [1])(Dataset.range(3))
        with pytest.raises(TypeError, match="new state must match"):
            Dataset.range(3).apply(v1.data.experimental.scan(np.int64(0), lambda s, x: ((s, s), x)))
        with pytest.raises(TypeError, match="types for the new state"):
            Dataset.range(3).apply(v1.data.experimental.scan(0.0, lambda s, x: (x, x)))
        bad = v1.data.experimental.choose_from_datasets([Dataset.range(4)], Dataset.from_tensors(np.int64(2)))
        with cf.Session() as s:
            with pytest.raises(cf.errors.InvalidArgumentError, match="Selector index out of range"):
                s.run(bad.make_one_shot_iterator().get_next())
        long_ = Dataset.range(1, 6).map(lambda x: cf.fill([x], x)).apply(v1.data.experimental.bucket_by_sequence_length(
            lambda e: cf.shape(e)[0], [3], [1, 1], pad_to_bucket_boundary=True))
        nxt = long_.make_one_shot_iterator().get_next()
        with cf.Session() as s:
            assert s.run(nxt).tolist() == [[1, 0]]
            s.run(nxt)
            with pytest.raises(cf.errors.InvalidArgumentError, match="max\\(bucket_boundaries\\)"):
                s.run(nxt)


def test_group_by_reducer_errors():
    with cf.Graph().as_default():
        with pytest.raises(TypeError, match="Reducer"):
            Dataset.range(3).apply(v1.data.experimental.group_by_reducer(lambda x: x, lambda s, x: s))
        with pytest.raises(TypeError, match="types for the new state"):
            Dataset.range(3).apply(v1.data.experimental.group_by_reducer(lambda x: x, v1.data.experimental.Reducer(
                lambda k: 0.0, lambda s, x: x, lambda s: s)))


def test_scan_relaxes_the_state_shape_and_captures():
    with cf.Graph().as_default():
        k = cf.constant(np.int64(3))
        ds = Dataset.range(4).apply(v1.data.experimental.scan(
            np.zeros([0], np.int64), lambda s, x: (cf.concat([s, [x * k]], 0), cf.size(s))))
        assert ds.output_shapes.as_list() == []
        assert drain(ds.make_one_shot_iterator().get_next()) == [0, 1, 2, 3]


def test_ignore_errors_skips_bad_batches_and_filters():
    with cf.Graph().as_default():
        ds = Dataset.range(1, 7).map(lambda x: cf.fill([x // 3 + 1], x)).batch(2).apply(
            v1.data.experimental.ignore_errors())
        got = drain(ds.make_one_shot_iterator().get_next())
    # [1, 2] batch; [3, 4] and [5, 6] elements of shapes (2,) (2,) (2,) (3,)
    assert [g.tolist() for g in got] == [[[1], [2]], [[3, 3], [4, 4]]]


def test_group_by_window_reads_outer_tensors_and_key_in_reduce():
    with cf.Graph().as_default():
        scale = cf.placeholder(cf.int64, [])
        ds = Dataset.range(8).apply(v1.data.experimental.group_by_window(
            lambda x: x % 2, lambda key, w: w.map(lambda y: y * scale + key * 1000).batch(10), window_size=3))
        it = ds.make_initializable_iterator()
        nxt = it.get_next()
        with cf.Session() as s:
            s.run(it.initializer, {scale: 10})
            got = [g.tolist() for g in drain(nxt, s)]
    assert got == [[0, 20, 40], [1010, 1030, 1050], [60], [1070]]


def test_namespace():
    names = ["shuffle_and_repeat", "map_and_batch", "parallel_interleave", "unbatch", "ignore_errors",
             "get_single_element", "choose_from_datasets", "sample_from_datasets", "enumerate_dataset",
             "group_by_window", "bucket_by_sequence_length", "scan", "AUTOTUNE", "Options", "Reducer",
             "group_by_reducer"]
    for n in names:
        assert hasattr(v1.data.experimental, n), n
    assert callable(v1.data.Dataset.list_files) and v1.data.Options is cf.data.Options


def test_nested_function_reads_an_outer_placeholder():
    """A map inside flat_map's function using a tensor of the outer graph (fed at initialization)."""
    with cf.Graph().as_default():
        scale = cf.placeholder(cf.int64, [])
        ds = Dataset.range(3).flat_map(lambda x: Dataset.range(2).map(lambda y: y * scale + x))
        it = ds.make_initializable_iterator()
        nxt = it.get_next()
        with cf.Session() as s:
            s.run(it.initializer, {scale: 10})
            assert drain(nxt, s) == [0, 10, 1, 11, 2, 12]
            s.run(it.initializer, {scale: 100})
            assert drain(nxt, s) == [0, 100, 1, 101, 2, 102]
