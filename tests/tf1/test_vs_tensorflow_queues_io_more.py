"""Differential tests against TensorFlow (graph mode) for TF1's queue, I/O and training
names collflow/compat/queues_io_names.py gathers: tf.PriorityQueue, tf.io.serialize_tensor /
parse_tensor (the same bytes), tf.bitcast, tf.batch_scatter_update, tf.train.warm_start,
the checkpoint state file, the saved-model constants.  Skipped cleanly without TensorFlow."""
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


def _b(x):
    """A fetched value with strings as bytes (collflow fetches str, TF bytes)."""
    if isinstance(x, (list, tuple)):
        return [_b(v) for v in x]
    if isinstance(x, dict):
        return {k: _b(v) for k, v in x.items()}
    # bytes as an object array: NumPy's bytes dtype would drop trailing NULs
    a = np.array(x, dtype=object) if isinstance(x, (bytes, str)) else np.asarray(x)
    if a.dtype == object or a.dtype.kind in "SU":
        return np.vectorize(lambda s: s if isinstance(s, bytes) else str(s).encode("utf-8", "surrogateescape"),
                            otypes=[object])(a)
    return a


def _same(want, got):
    want, got = _b(want), _b(got)
    if isinstance(want, list):
        assert len(want) == len(got)
        for w, g in zip(want, got):
            _same(w, g)
    elif isinstance(want, dict):
        assert sorted(want) == sorted(got)
        for k in want:
            _same(want[k], got[k])
    else:
        assert want.shape == got.shape, (want, got)
        if want.dtype == object:
            assert want.tolist() == got.tolist()
        else:
            assert want.dtype == got.dtype, (want.dtype, got.dtype)
            np.testing.assert_array_equal(want, got)


def _priority_program(tf):
    g = tf.Graph()
    out = []
    with g.as_default():
        q = tf.PriorityQueue(8, [tf.string, tf.float32], shapes=[(), (2,)])
        e1 = q.enqueue_many(([5, 1, 3, 1], ["e", "a", "c", "b"], np.arange(8, dtype=np.float32).reshape(4, 2)))
        e2 = q.enqueue((2, "x", [9.0, 9.5]))
        d1, dm, du = q.dequeue(), q.dequeue_many(2), q.dequeue_up_to(2)
        size, close = q.size(), q.close()
        nq = tf.queue.PriorityQueue(4, [tf.int32], shapes=[[]], names=["p", "v"])
        ne = nq.enqueue({"p": 7, "v": 3})
        nd = nq.dequeue()
        with tf.Session(graph=g) as s:
            s.run([e1])
            s.run(e2)
            s.run(e2)
            out.append(s.run(size))
            out += [s.run(d1), s.run(dm), s.run(du), s.run(size)]
            s.run(close)
            out.append(s.run(d1))
            try:
                s.run(d1)
            except tf.errors.OutOfRangeError:
                out.append("OutOfRange")
            try:
                s.run(e2)
            except tf.errors.CancelledError:
                out.append("Cancelled")
            s.run(ne)
            out.append(s.run(nd))
        out.append([t.shape.as_list() for t in dm] + [t.dtype.name for t in dm] + [du[0].shape.as_list()])
    return out


def test_priority_queue_program():
    _same(_priority_program(tft), _priority_program(cft))


def test_queue_namespaces():
    for n in ("FIFOQueue", "PaddingFIFOQueue", "PriorityQueue", "QueueBase", "RandomShuffleQueue"):
        assert hasattr(tft.queue, n) and hasattr(cft.queue, n)
    for n in ("PaddingFIFOQueue", "PriorityQueue", "QueueBase", "RandomShuffleQueue", "serialize_tensor",
              "parse_tensor", "match_filenames_once", "write_graph"):
        assert hasattr(tft.io, n) and hasattr(cft.io, n), n
    for n in dir(tft.manip):
        if not n.startswith("_"):
            assert callable(getattr(cft.manip, n)), n
    for n in dir(tft.train.queue_runner):
        if not n.startswith("_"):
            assert getattr(cft.train.queue_runner, n) is getattr(cft.train, n)


def test_priority_queue_errors_match():
    for lib in (tft, cft):
        with lib.Graph().as_default():
            with pytest.raises(TypeError):
                lib.PriorityQueue(3, [lib.float32])
            with pytest.raises(ValueError):
                lib.PriorityQueue(3, [lib.float32], shapes=[(), ()])
            with pytest.raises(ValueError):
                lib.PriorityQueue(3, [lib.float32], shapes=[()], names=["v"])


_VALUES = [
    np.array([[1.5, -2.0, np.inf]], np.float32), np.array(3.25, np.float64), np.array([1, -2], np.int32),
    np.array([[-5, 7]], np.int64), np.array([1, 255], np.uint8), np.array([-128, 3], np.int8),
    np.array([-3, 9], np.int16), np.array([65535], np.uint16), np.array([4000000000], np.uint32),
    np.array([2 ** 63 + 5], np.uint64), np.array([True, False, True]), np.array([0.5, -1.5], np.float16),
    np.array([1 + 2j], np.complex64), np.array([[3 - 4j, 0]], np.complex128), np.zeros((2, 0), np.float32),
    np.array([b"ab", b"", b"\xff\x00c"], object), np.array(b"one", object), np.zeros((0,), np.int32),
]


def _serialize(tf, vals):
    g = tf.Graph()
    with g.as_default():
        outs = [tf.io.serialize_tensor(tf.constant(v, dtype=tf.string if v.dtype == object else None))
                for v in vals]
        with tf.Session(graph=g) as s:
            return s.run(outs)


def test_serialize_tensor_bytes_equal():
    want = _b(_serialize(tft, _VALUES))
    got = _b(_serialize(cft, _VALUES))
    for v, w, g in zip(_VALUES, want, got):
        assert w.item() == g.item(), (v.dtype, v)


def test_parse_tensor_of_tensorflows_bytes():
    blobs = [x.item() for x in _b(_serialize(tft, _VALUES))]
    g = cft.Graph()
    with g.as_default():
        p = cft.placeholder(cft.string, [])
        outs = [cft.io.parse_tensor(p, cft.as_dtype(v.dtype) if v.dtype != object else cft.string) for v in _VALUES]
        with cft.Session(graph=g) as s:
            for v, blob, o in zip(_VALUES, blobs, outs):
                # an object array: NumPy's bytes dtype would drop the blob's trailing NULs
                _same(v, s.run(o, {p: np.array(blob, dtype=object)}))
            with pytest.raises(cft.errors.InvalidArgumentError, match="Type mismatch"):
                s.run(outs[0], {p: np.array(blobs[2], dtype=object)})


def _bitcast_program(tf):
    g = tf.Graph()
    with g.as_default():
        outs = [tf.bitcast(tf.constant([1.0, -2.5], tf.float32), tf.int32),
                tf.bitcast(tf.constant([[1, 2, 3, 4], [255, 0, 0, 128]], tf.uint8), tf.int32),
                tf.bitcast(tf.constant([1, 258], tf.int32), tf.uint8),
                tf.bitcast(tf.constant([1.0], tf.float64), tf.int16),
                tf.bitcast(tf.constant([[1, 2]], tf.int32), tf.complex64)]
        shapes = [o.shape.as_list() for o in outs]
        with tf.Session(graph=g) as s:
            return s.run(outs) + [shapes]


def test_bitcast():
    _same(_bitcast_program(tft), _bitcast_program(cft))
    for lib in (tft, cft):
        with lib.Graph().as_default():
            with pytest.raises(ValueError):
                lib.bitcast(lib.constant([1, 2, 3], lib.uint8), lib.int32)


def _batch_scatter_program(tf):
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
        u = tf.batch_scatter_update(v, tf.constant([[2, 0], [1, 2]]), -np.ones((2, 2, 4), np.float32))
        w = tf.Variable(np.zeros(4, np.int32))
        u1 = tf.batch_scatter_update(w, [3, 0], [7, 8])
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            return s.run([u, u1])


def test_batch_scatter_update():
    _same(_batch_scatter_program(tft), _batch_scatter_program(cft))


def _write_ckpt(path):
    g = tft.Graph()
    with g.as_default():
        tft.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="emb")
        tft.Variable(np.array([5.0, 6.0], np.float32), name="old_bias")
        tft.Variable(np.array(7.0, np.float32), name="scope/w", trainable=False)
        saver = tft.train.Saver()
        with tft.Session(graph=g) as s:
            s.run(tft.global_variables_initializer())
            return saver.save(s, path)


def _warm_program(tf, ckpt, vocab_dir):
    g = tf.Graph()
    with g.as_default():
        emb = tf.get_variable("emb", [4, 2], initializer=tf.zeros_initializer())
        bias = tf.get_variable("bias", [2], initializer=tf.ones_initializer())
        w = tf.get_variable("scope/w", [], initializer=tf.zeros_initializer(), trainable=False)
        other = tf.get_variable("other", [2], initializer=tf.constant_initializer(3.0))
        info = tf.train.VocabInfo(new_vocab=os.path.join(vocab_dir, "new.txt"), new_vocab_size=3, num_oov_buckets=1,
                                  old_vocab=os.path.join(vocab_dir, "old.txt"))
        tf.train.warm_start(ckpt, vars_to_warm_start=["emb", "bias", "scope/"],
                            var_name_to_vocab_info={"emb": info}, var_name_to_prev_var_name={"bias": "old_bias"})
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            return s.run([emb, bias, w, other])


def test_warm_start(tmp_path):
    ckpt = _write_ckpt(str(tmp_path / "model.ckpt"))
    (tmp_path / "old.txt").write_text("a\nb\nc\n")
    (tmp_path / "new.txt").write_text("c\nz\na\n")
    _same(_warm_program(tft, ckpt, str(tmp_path)), _warm_program(cft, ckpt, str(tmp_path)))


def _warm_default(tf, ckpt):
    g = tf.Graph()
    with g.as_default():
        emb = tf.get_variable("emb", [3, 2], initializer=tf.zeros_initializer())
        with tf.Session(graph=g) as s:
            tf.train.warm_start(ckpt)
            s.run(tf.global_variables_initializer())
            return s.run(emb)


def test_warm_start_default_and_errors(tmp_path):
    ckpt = _write_ckpt(str(tmp_path / "model.ckpt"))
    _same(_warm_default(tft, ckpt), _warm_default(cft, ckpt))
    for lib in (tft, cft):
        with lib.Graph().as_default():
            lib.get_variable("emb", [3, 2])
            with pytest.raises(ValueError, match="not used"):
                lib.train.warm_start(ckpt, var_name_to_prev_var_name={"nope": "emb"})
        with lib.Graph().as_default():
            lib.get_variable("missing", [3, 2])
            with pytest.raises(ValueError):
                lib.train.warm_start(ckpt)


def test_checkpoint_state_file(tmp_path):
    cases = [("rel", "rel/m-2", ["rel/m-1"], [1.5, 2.25], 1.0), ("/abs", "/abs/m-2", ["/abs/m-1", "/abs/m-2"], None,
                                                                 None),
             ("/abs", "/abs/m-3", None, None, 1700000000.25)]
    for c in cases:
        assert str(cft.train.generate_checkpoint_state_proto(*c)) == str(tft.train.generate_checkpoint_state_proto(*c))
    for lib in (tft, cft):
        with pytest.raises(ValueError):
            lib.train.generate_checkpoint_state_proto("/abs", "/abs/m-2", ["/abs/m-1"], [1.0])
    d = str(tmp_path)
    ckpt = _write_ckpt(os.path.join(d, "model.ckpt"))
    cft.train.update_checkpoint_state(d, ckpt, [ckpt])
    st = tft.train.get_checkpoint_state(d)
    assert st.model_checkpoint_path == ckpt and list(st.all_model_checkpoint_paths) == [ckpt]
    assert cft.train.latest_checkpoint(d) == ckpt
    tft.train.update_checkpoint_state(d, ckpt, [ckpt], latest_filename="tfstate")
    cft.train.update_checkpoint_state(d, ckpt, [ckpt], latest_filename="cfstate")
    with open(os.path.join(d, "tfstate")) as a, open(os.path.join(d, "cfstate")) as b:
        assert a.read() == b.read()


def test_saved_model_constants():
    for n in dir(tft.saved_model.constants):
        if n.isupper():
            assert getattr(cft.saved_model.constants, n) == getattr(tft.saved_model.constants, n), n
    for n in dir(tft.saved_model):
        if n.isupper():
            assert getattr(cft.saved_model, n) == getattr(tft.saved_model, n), n


def _match_once(tf, d):
    g = tf.Graph()
    with g.as_default():
        m = tf.io.match_filenames_once(os.path.join(d, "*.txt"))
        with tf.Session(graph=g) as s:
            s.run(tf.local_variables_initializer())
            return sorted(s.run(m)), [v.name for v in tf.local_variables()], m.name


def test_match_filenames_once(tmp_path):
    for n in ("a.txt", "b.txt", "c.dat"):
        (tmp_path / n).write_text("x")
    _same(list(_match_once(tft, str(tmp_path))), list(_match_once(cft, str(tmp_path))))


def _adagrad_da_program(tf, l1, l2, sparse):
    g = tf.Graph()
    with g.as_default():
        gs = tf.train.get_or_create_global_step()
        v = tf.Variable(np.array([[1.0, -2.0], [0.5, 0.3], [3.0, 1.0]], np.float32))
        c = tf.constant([[1.0, -1.0], [0.5, 2.0], [0.3, 0.1]])
        if sparse:  # a repeated index: TF1 sums duplicates before the update
            loss = tf.reduce_sum(tf.gather(v, [0, 2, 0]) * c ** 2) + tf.reduce_sum(tf.gather(v, [2]) ** 2)
        else:
            loss = tf.reduce_sum(v * v * c)
        opt = tf.train.AdagradDAOptimizer(0.1, gs, initial_gradient_squared_accumulator_value=0.2,
                                          l1_regularization_strength=l1, l2_regularization_strength=l2)
        train = opt.minimize(loss, global_step=gs)
        out = []
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            for _ in range(4):
                s.run(train)
                out.append(s.run(v))
            slots = [opt.get_slot(v, n) for n in sorted(opt.get_slot_names())]
            out += s.run(slots) + [s.run(gs)]
        out.append(sorted(opt.get_slot_names()) + [x.op.name for x in slots])
    return out


@pytest.mark.parametrize("l1,l2,sparse", [(0.0, 0.0, False), (0.05, 0.1, False), (0.0, 0.0, True),
                                          (0.2, 0.05, True)])
def test_adagrad_da_steps(l1, l2, sparse):
    want = _adagrad_da_program(tft, l1, l2, sparse)
    got = _adagrad_da_program(cft, l1, l2, sparse)
    assert want[-1] == got[-1]
    for w, g in zip(want[:-1], got[:-1]):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def _tensor_summaries(tf):
    g = tf.Graph()
    with g.as_default():
        outs = [tf.summary.tensor_summary("t", tf.constant([[1.5, 2.0]])),
                tf.summary.tensor_summary("s", tf.constant(["ab", "c"]), summary_description="desc",
                                          display_name="Disp"),
                tf.summary.tensor_summary("i", tf.constant(3, tf.int64), family="fam"),
                tf.summary.tensor_summary("b", tf.constant([True, False]), collections=[])]
        names = [o.op.name for o in outs]
        coll = len(tf.get_collection(tf.GraphKeys.SUMMARIES))
        with tf.Session(graph=g) as s:
            return [x if isinstance(x, bytes) else x.encode("utf-8", "surrogateescape") for x in s.run(outs)], \
                names, coll


def test_tensor_summary_bytes_equal():
    assert _tensor_summaries(tft) == _tensor_summaries(cft)


def _profiled(tf, d, steps, **kw):
    import json
    g = tf.Graph()
    with g.as_default():
        gs = tf.train.get_or_create_global_step()
        x = tf.Variable(1.0)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(x * x, global_step=gs)
        hook = tf.train.ProfilerHook(output_dir=d, **kw)
        with tf.train.MonitoredTrainingSession(hooks=[hook]) as s:
            for _ in range(steps):
                s.run(train)
    names = sorted(n for n in os.listdir(d) if n.startswith("timeline-"))
    for n in names:
        with open(os.path.join(d, n)) as f:
            assert any(e.get("ph") == "X" for e in json.load(f)["traceEvents"])
    return names


def test_profiler_hook_files(tmp_path):
    for i, kw in enumerate([{"save_steps": 2}, {"save_steps": 3}]):
        a, b = tmp_path / f"tf{i}", tmp_path / f"cf{i}"
        assert _profiled(tft, str(a), 7, **kw) == _profiled(cft, str(b), 7, **kw)
    for lib in (tft, cft):
        with lib.Graph().as_default():
            with pytest.raises(ValueError):
                # (TF opens its summary writer before it checks: keep its file out of the cwd)
                lib.train.ProfilerHook(save_steps=1, save_secs=1, output_dir=str(tmp_path / "both"))


def _partitioned(tf):
    g = tf.Graph()
    with g.as_default():
        a = tf.create_partitioned_variables([5, 2], [3, 1], tf.constant_initializer(2.5))
        b = tf.create_partitioned_variables([2, 7], [1, 2], np.arange(14, dtype=np.float32).reshape(2, 7),
                                            name="arr")
        c = tf.create_partitioned_variables([3], [1], tf.zeros_initializer(), dtype=tf.int32, trainable=False)
        names = [v.op.name for v in a + b + c] + [v.op.name for v in tf.trainable_variables()]
        with tf.Session(graph=g) as s:
            s.run(tf.global_variables_initializer())
            return s.run(a + b + c) + [names]


def test_create_partitioned_variables():
    _same(_partitioned(tft), _partitioned(cft))
    for lib in (tft, cft):
        with lib.Graph().as_default():
            with pytest.raises(ValueError):
                lib.create_partitioned_variables([4, 2], [2, 2], lib.zeros_initializer())
            with pytest.raises(ValueError):
                lib.create_partitioned_variables([4, 2], [2], lib.zeros_initializer())


@pytest.mark.parametrize("ks,st,pad", [([1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "VALID"),
                                       ([1, 2, 3, 1, 1], [1, 2, 1, 2, 1], "SAME"),
                                       ([1, 3, 2, 2, 1], [1, 2, 2, 1, 1], "SAME"),
                                       ([1, 1, 1, 1, 1], [1, 3, 2, 2, 1], "VALID")])
def test_extract_volume_patches(ks, st, pad):
    tfdiff.check_case(("evp", lambda tf, x: tf.extract_volume_patches(x, ks, st, pad), [(2, 4, 5, 3, 2)]), tft, cft)


def test_summary_messages_bytes():
    for lib in (tft, cft):
        assert lib.summary.TaggedRunMetadata(tag="step_1", run_metadata=b"\x01\x02").SerializeToString() == \
            b"\n\x06step_1\x12\x02\x01\x02"
        assert lib.summary.SummaryDescription(type_hint="image").SerializeToString() == b"\n\x05image"
        with lib.Graph().as_default():
            s = lib.summary.tensor_summary("x", lib.constant(1.0))
            with pytest.raises(ValueError, match="TensorSummaryV2"):
                lib.summary.get_summary_description(s.op.node_def if lib is tft else s.op)


_JSON = ['{"features": {"feature": {"b": {"floatList": {"value": [1.5, 2, "NaN", "-Infinity"]}}, '
         '"a": {"int64_list": {"value": ["3", -4, 9007199254740993]}}, "c": {"bytesList": {"value": ["aGk=", ""]}}}}}',
         '{}', '{"features": {}}', '{"features": {"feature": {"e": {}, "f": {"int64List": {}}}}}',
         '{"features": {"feature": {"z": {"bytes_list": {"value": ["_-8="]}}}}}']
_BAD_JSON = ['{"features": 3}', 'not json', '{"nofield": 1}',
             '{"features": {"feature": {"a": {"int64List": {"value": [1.5]}}}}}',
             '{"features": {"feature": {"a": {"int64List": {"value": [1]}, "floatList": {"value": [1]}}}}}']


def _json_program(tf, texts):
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.string, [None])
        o = tf.io.decode_json_example(p)
        parsed = tf.parse_example(tf.decode_json_example(tf.constant(texts[:1])),
                                  {"a": tf.VarLenFeature(tf.int64), "c": tf.VarLenFeature(tf.string)})
        with tf.Session(graph=g) as s:
            return [o.shape.as_list(), s.run(o, {p: np.array(texts, dtype=object)}),
                    s.run(parsed["a"]).values, s.run(parsed["c"]).values]


def test_decode_json_example_bytes_equal():
    _same(_json_program(tft, _JSON), _json_program(cft, _JSON))
    for bad in _BAD_JSON:
        for lib in (tft, cft):
            with lib.Graph().as_default():
                o = lib.decode_json_example(lib.constant([bad]))
                with lib.Session() as s:
                    with pytest.raises(lib.errors.InvalidArgumentError, match="Error while parsing JSON"):
                        s.run(o)
