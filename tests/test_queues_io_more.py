"""By-hand tests (no TensorFlow) of TF1's queue, I/O and training names from
collflow/compat/queues_io_names.py: tf.PriorityQueue, tf.io.serialize_tensor/parse_tensor,
tf.bitcast, tf.batch_scatter_update, the checkpoint state file, tf.train.warm_start, and
the namespaces (tf.queue, tf.manip, tf.io, tf.train.queue_runner, tf.saved_model)."""
import os
import threading

import numpy as np
import pytest

import collflow.compat.v1 as tf


def test_priority_queue_order_ties_and_close():
    with tf.Graph().as_default():
        q = tf.PriorityQueue(10, [tf.string, tf.float32], shapes=[(), (2,)])
        assert q.dtypes == [tf.int64, tf.string, tf.float32]
        assert [s.as_list() for s in q.shapes] == [[], [], [2]]
        e = q.enqueue_many(([4, 1, 3, 1, 0], list("abcde"), np.arange(10, dtype=np.float32).reshape(5, 2)))
        d, dm, du = q.dequeue(), q.dequeue_many(2), q.dequeue_up_to(5)
        assert dm[1].shape.as_list() == [2] and dm[2].shape.as_list() == [2, 2]
        assert du[0].shape.as_list() == [None]
        with tf.Session() as s:
            s.run(e)
            assert s.run(q.size()) == 5
            p, v, x = s.run(d)
            assert (p, v) == (0, b"e") and x.tolist() == [8, 9]
            p, v, x = s.run(dm)
            assert p.tolist() == [1, 1] and v.tolist() == [b"b", b"d"]  # ties: insertion order
            s.run(q.close())
            p, v, _ = s.run(du)  # after close: what is left, a smaller batch
            assert p.tolist() == [3, 4] and v.tolist() == [b"c", b"a"]
            with pytest.raises(tf.errors.OutOfRangeError):
                s.run(d)
            with pytest.raises(tf.errors.CancelledError):
                s.run(q.enqueue((1, "z", [0.0, 0.0])))


def test_priority_queue_blocks_then_serves_lowest():
    with tf.Graph().as_default():
        q = tf.queue.PriorityQueue(2, [tf.int32], shapes=[[]], names=["p", "v"])
        p = tf.placeholder(tf.int64, [])
        e = q.enqueue({"p": p, "v": tf.cast(p, tf.int32) * 10})
        d = q.dequeue()
        assert sorted(d) == ["p", "v"]
        with tf.Session() as s:
            s.run(e, {p: 9})
            s.run(e, {p: 5})
            t = threading.Thread(target=lambda: s.run(e, {p: 1}))  # waits: the queue is full
            t.start()
            assert s.run(d) == {"p": 5, "v": 50}
            t.join(10)
            assert s.run(d)["p"] == 1 and s.run(d)["p"] == 9


def test_priority_queue_build_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError):
            tf.PriorityQueue(3, [tf.float32])  # shapes are required, as TF's
        with pytest.raises(ValueError):
            tf.PriorityQueue(3, [tf.float32], shapes=[(), ()])
        with pytest.raises(ValueError):
            tf.PriorityQueue(3, [tf.float32], shapes=[()], names=["only_one"])
        q = tf.PriorityQueue(3, [tf.float32], shapes=[()])
        with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
            q.enqueue((tf.constant(1.5), 2.0))  # the priority must be int64
        with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
            q.enqueue(([1, 2], 2.0))  # ... and a scalar


def test_serialize_tensor_known_bytes_and_round_trip():
    with tf.Graph().as_default():
        s1 = tf.io.serialize_tensor(tf.constant([1, 2], tf.int32))
        s2 = tf.serialize_tensor(tf.constant(["ab", "c"]))
        vals = [np.array([[1.5, -2.0]], np.float32), np.array(7, np.int64), np.array([True, False]),
                np.array([0.5], np.float16), np.array([1 - 2j], np.complex128), np.zeros((0, 3), np.uint8),
                np.array([2 ** 32 - 1], np.uint32)]
        rts = [tf.io.parse_tensor(tf.io.serialize_tensor(tf.constant(v)), tf.as_dtype(v.dtype)) for v in vals]
        with tf.Session() as s:
            b1 = s.run(s1)
            b1 = b1 if isinstance(b1, bytes) else b1.encode("utf-8", "surrogateescape")
            # dtype 3 (int32), shape [2], tensor_content: two little-endian int32s
            assert b1 == b'\x08\x03\x12\x04\x12\x02\x08\x02"\x08\x01\x00\x00\x00\x02\x00\x00\x00'
            b2 = s.run(s2)
            b2 = b2 if isinstance(b2, bytes) else b2.encode("utf-8", "surrogateescape")
            # strings go in string_val (field 8), one entry each
            assert b2 == b"\x08\x07\x12\x04\x12\x02\x08\x02B\x02abB\x01c"
            for v, r in zip(vals, s.run(rts)):
                assert r.dtype == v.dtype and r.shape == v.shape
                np.testing.assert_array_equal(r, v)
            with pytest.raises(tf.errors.InvalidArgumentError, match="Type mismatch"):
                s.run(tf.io.parse_tensor(s1, tf.float32))
            with pytest.raises(tf.errors.InvalidArgumentError):
                s.run(tf.io.parse_tensor(tf.constant("\x08\x03\x12\xff"), tf.int32))


def test_bitcast_shapes_and_values():
    with tf.Graph().as_default():
        a = tf.bitcast(tf.constant([1.0, -2.0], tf.float32), tf.int32)
        b = tf.bitcast(tf.constant([[1, 0, 0, 0], [0, 1, 0, 0]], tf.uint8), tf.int32)
        c = tf.bitcast(tf.constant([258], tf.int32), tf.uint16)
        assert a.shape.as_list() == [2] and b.shape.as_list() == [2] and c.shape.as_list() == [1, 2]
        with pytest.raises(ValueError):
            tf.bitcast(tf.constant([1, 2], tf.uint8), tf.int32)
        with pytest.raises(TypeError):
            tf.bitcast(tf.constant([True]), tf.uint8)
        with tf.Session() as s:
            av, bv, cv = s.run([a, b, c])
        np.testing.assert_array_equal(av, np.array([1.0, -2.0], np.float32).view(np.int32))
        assert bv.tolist() == [1, 256] and cv.tolist() == [[258, 0]]


def test_batch_scatter_update():
    with tf.Graph().as_default():
        v = tf.Variable(np.zeros((2, 3), np.float32))
        u = tf.batch_scatter_update(v, [[0, 2], [1, 0]], [[1.0, 2.0], [3.0, 4.0]])
        w = tf.Variable(np.zeros((2, 2, 3), np.float32))
        uw = tf.batch_scatter_update(w, [[1], [0]], np.ones((2, 1, 3), np.float32))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            assert s.run(u).tolist() == [[1, 0, 2], [4, 3, 0]]
            want = np.zeros((2, 2, 3), np.float32)
            want[0, 1] = 1
            want[1, 0] = 1
            np.testing.assert_array_equal(s.run(uw), want)


def test_checkpoint_state_file(tmp_path):
    p = tf.train.generate_checkpoint_state_proto("rel", "rel/m-2", ["rel/m-1"], [1.5, 2.0], 3.0)
    assert str(p) == ('model_checkpoint_path: "m-2"\nall_model_checkpoint_paths: "m-1"\n'
                      'all_model_checkpoint_paths: "m-2"\nall_model_checkpoint_timestamps: 1.5\n'
                      'all_model_checkpoint_timestamps: 2\nlast_preserved_timestamp: 3\n')
    assert tf.train.generate_checkpoint_state_proto("/a", "/a/m").all_model_checkpoint_paths == ["/a/m"]
    with pytest.raises(ValueError):
        tf.train.generate_checkpoint_state_proto("/a", "/a/m-2", ["/a/m-1"], [1.0])
    d = str(tmp_path)
    p1 = os.path.join(d, "m-1")
    tf.train.update_checkpoint_state(d, p1, [p1])
    with open(os.path.join(d, "checkpoint")) as f:
        assert f.read() == f'model_checkpoint_path: "{p1}"\nall_model_checkpoint_paths: "{p1}"\n'
    tf.train.update_checkpoint_state(d, p1, latest_filename="other")
    assert os.path.exists(os.path.join(d, "other"))


def test_warm_start_plain_graph(tmp_path):
    ckpt = str(tmp_path / "ck")
    with tf.Graph().as_default():
        tf.Variable(np.array([1.0, 2.0], np.float32), name="w")
        tf.Variable(np.array([[1.0], [2.0], [3.0]], np.float32), name="emb_old")
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            path = saver.save(s, ckpt)
    (tmp_path / "old.txt").write_text("a\nb\nc\n")
    (tmp_path / "new.txt").write_text("c\nq\n")
    with tf.Graph().as_default():
        w = tf.get_variable("w", [2], initializer=tf.zeros_initializer())
        emb = tf.get_variable("emb", [3, 1], initializer=tf.zeros_initializer())
        other = tf.get_variable("other", [1], initializer=tf.ones_initializer())
        info = tf.train.VocabInfo(str(tmp_path / "new.txt"), 2, 1, str(tmp_path / "old.txt"))
        tf.train.warm_start(path, ["w", "emb"], var_name_to_vocab_info={"emb": info},
                            var_name_to_prev_var_name={"emb": "emb_old"})
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            wv, ev, ov = s.run([w, emb, other])
    assert wv.tolist() == [1, 2] and ev.ravel().tolist() == [3, 0, 0] and ov.tolist() == [1]
    with tf.Graph().as_default():
        tf.get_variable("w", [2])
        with pytest.raises(ValueError, match="not used"):
            tf.train.warm_start(path, var_name_to_vocab_info={"nothing": info})


def test_namespaces():
    assert tf.queue.FIFOQueue is tf.FIFOQueue and tf.queue.PriorityQueue is tf.PriorityQueue
    assert tf.io.RandomShuffleQueue is tf.RandomShuffleQueue and tf.io.QueueBase is tf.QueueBase
    assert tf.io.write_graph is tf.train.write_graph
    assert tf.io.match_filenames_once is tf.train.match_filenames_once
    assert tf.train.queue_runner.QueueRunner is tf.train.QueueRunner
    assert tf.train.queue_runner.start_queue_runners is tf.train.start_queue_runners
    assert tf.saved_model.constants.SAVED_MODEL_FILENAME_PB == "saved_model.pb"
    assert tf.saved_model.CLASSIFY_OUTPUT_SCORES == "scores" and tf.saved_model.ASSETS_KEY == "saved_model_assets"
    with tf.Graph().as_default():
        x = tf.constant([[1, 2], [3, 4]])
        outs = [tf.manip.reverse(x, [1]), tf.manip.roll(x, 1, 0), tf.manip.tile(x, [1, 2]),
                tf.manip.reshape(x, [4]), tf.manip.gather_nd(x, [[1, 0]])]
        with tf.Session() as s:
            r, ro, t, re, g = s.run(outs)
    assert r.tolist() == [[2, 1], [4, 3]] and ro.tolist() == [[3, 4], [1, 2]]
    assert t.shape == (2, 4) and re.tolist() == [1, 2, 3, 4] and g.tolist() == [3]
    with pytest.raises(AttributeError):
        tf.queue.NoSuchQueue  # noqa: B018


def _da_reference(v0, grads, lr, l1, l2, init=0.1):
    """TF1's ApplyAdagradDA by hand, t = the global step + 1 at each update."""
    v, g, gg, out = np.array(v0, np.float64), np.zeros_like(v0, np.float64), np.full(np.shape(v0), init), []
    for step, grad in enumerate(grads):
        t = step + 1
        g += grad
        gg += np.square(grad)
        den = l2 * t * lr + np.sqrt(gg)
        if l1 > 0:
            v = lr * np.sign(-g) * np.maximum(np.abs(g) - l1 * t, 0) / den
        else:
            v = -lr * g / den
        out.append(v.copy())
    return out


@pytest.mark.parametrize("l1,l2", [(0.0, 0.0), (0.3, 0.2)])
def test_adagrad_da_closed_form(l1, l2):
    c = np.array([1.0, -2.0, 0.5], np.float32)
    with tf.Graph().as_default():
        gs = tf.train.get_or_create_global_step()
        v = tf.Variable(np.array([1.0, 1.0, 1.0], np.float32))
        opt = tf.train.AdagradDAOptimizer(0.5, gs, l1_regularization_strength=l1, l2_regularization_strength=l2)
        train = opt.minimize(tf.reduce_sum(v * c), global_step=gs)  # a constant gradient c
        assert sorted(opt.get_slot_names()) == ["gradient_accumulator", "gradient_squared_accumulator"]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got = []
            for _ in range(3):
                s.run(train)
                got.append(s.run(v))
            assert s.run(gs) == 3
    for w, g in zip(_da_reference([1, 1, 1], [c] * 3, 0.5, l1, l2), got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_adagrad_da_sparse_touches_only_its_rows():
    with tf.Graph().as_default():
        gs = tf.train.get_or_create_global_step()
        v = tf.Variable(np.ones((3, 2), np.float32))
        loss = tf.reduce_sum(tf.gather(v, [2, 2]))  # duplicate index: gradient 2 on row 2
        train = tf.train.AdagradDAOptimizer(0.1, gs).minimize(loss, global_step=gs)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            s.run(train)
            out = s.run(v)
    want = _da_reference(np.ones(2), [np.full(2, 2.0)], 0.1, 0.0, 0.0)[0]
    np.testing.assert_allclose(out[2], want, rtol=1e-6)
    assert out[:2].tolist() == [[1, 1], [1, 1]]


def test_tensor_summary_holds_the_tensor(tmp_path):
    from collflow.summary import proto
    from collflow.kernels.tensor_proto_wire import decode_tensor_proto
    with tf.Graph().as_default():
        a = tf.summary.tensor_summary("t", tf.constant([[1.5, 2.0]]), summary_description="d", display_name="D")
        b = tf.summary.tensor_summary("s", tf.constant(["x", "yz"]))
        merged = tf.summary.merge_all()
        with tf.Session() as s:
            av, mv = s.run([a, merged])
    raw = av if isinstance(av, bytes) else av.encode("utf-8", "surrogateescape")
    (val,) = proto.Summary.FromString(raw).value
    assert val.tag == "t" and val.metadata.display_name == "D" and val.metadata.summary_description == "d"
    enum, arr = decode_tensor_proto(val.tensor.SerializeToString())
    assert enum == 1 and arr.tolist() == [[1.5, 2.0]]
    mraw = mv if isinstance(mv, bytes) else mv.encode("utf-8", "surrogateescape")
    vals = proto.Summary.FromString(mraw).value
    assert [v.tag for v in vals] == ["t", "s"]
    assert decode_tensor_proto(vals[0].tensor.SerializeToString())[1].tolist() == [[1.5, 2.0]]  # kept by merge
    assert vals[1].tensor.string_val == [b"x", b"yz"]
    assert b.op.name == "s"


def test_profiler_hook_writes_timelines(tmp_path):
    import json
    with tf.Graph().as_default():
        gs = tf.train.get_or_create_global_step()
        x = tf.Variable(1.0)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(x * x, global_step=gs)
        hook = tf.train.ProfilerHook(save_steps=2, output_dir=str(tmp_path / "prof"))
        with tf.train.MonitoredTrainingSession(hooks=[hook]) as s:
            for _ in range(5):
                s.run(train)
    names = sorted(os.listdir(tmp_path / "prof"))
    assert names == ["timeline-2.json", "timeline-4.json"]  # the first step is never traced, as TF
    with open(tmp_path / "prof" / names[0]) as f:
        events = json.load(f)["traceEvents"]
    assert any(e.get("ph") == "X" and e["args"]["op"] for e in events)
    with tf.Graph().as_default():
        with pytest.raises(RuntimeError, match="Global step"):
            tf.train.ProfilerHook(save_steps=1).begin()


def _volume_patches_np(x, k, s, pad):
    b, n = x.shape[0], x.shape[1:4]
    outs, pads = [], []
    for i in range(3):
        if pad == "SAME":
            o = -(-n[i] // s[i])
            t = max((o - 1) * s[i] + k[i] - n[i], 0)
            pads.append((t // 2, t - t // 2))
        else:
            o = (n[i] - k[i]) // s[i] + 1
            pads.append((0, 0))
        outs.append(o)
    xp = np.pad(x, [(0, 0)] + pads + [(0, 0)])
    out = np.zeros((b, *outs, k[0] * k[1] * k[2] * x.shape[4]), x.dtype)
    for p in range(outs[0]):
        for r in range(outs[1]):
            for c in range(outs[2]):
                patch = xp[:, p * s[0]:p * s[0] + k[0], r * s[1]:r * s[1] + k[1], c * s[2]:c * s[2] + k[2], :]
                out[:, p, r, c, :] = patch.reshape(b, -1)
    return out


@pytest.mark.parametrize("k,s,pad", [((2, 2, 2), (1, 1, 1), "VALID"), ((2, 3, 1), (2, 1, 2), "SAME")])
def test_extract_volume_patches_numpy(k, s, pad):
    x = np.random.default_rng(0).normal(size=(2, 4, 5, 3, 2)).astype(np.float32)
    with tf.Graph().as_default():
        y = tf.extract_volume_patches(tf.constant(x), [1, *k, 1], [1, *s, 1], pad)
        want = _volume_patches_np(x, k, s, pad)
        assert y.shape.as_list() == list(want.shape)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(y), want, rtol=1e-6)
        with pytest.raises(ValueError):
            tf.extract_volume_patches(tf.constant(x), [1, 2, 2, 2], [1, 1, 1, 1, 1], "VALID")


def test_create_partitioned_variables_parts():
    with tf.Graph().as_default():
        parts = tf.create_partitioned_variables([5, 2], [2, 1], np.arange(10, dtype=np.float32).reshape(5, 2))
        assert [p.op.name for p in parts] == ["PartitionedVariable/part_0", "PartitionedVariable/part_1"]
        assert [p.shape.as_list() for p in parts] == [[3, 2], [2, 2]]
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            a, b = s.run(parts)
        assert np.concatenate([a, b]).ravel().tolist() == list(range(10))
        with pytest.raises(ValueError):
            tf.create_partitioned_variables([4, 4], [2, 2], tf.zeros_initializer())


def test_summary_description_messages():
    d = tf.summary.SummaryDescription(type_hint="image")
    assert tf.summary.SummaryDescription.FromString(d.SerializeToString()).type_hint == "image"
    t = tf.summary.TaggedRunMetadata(tag="step_1", run_metadata=b"\x01\x02")
    assert t.SerializeToString() == b"\n\x06step_1\x12\x02\x01\x02"
    with tf.Graph().as_default():
        s = tf.summary.tensor_summary("x", tf.constant(1.0))
        with pytest.raises(ValueError, match="TensorSummaryV2"):
            tf.summary.get_summary_description(s.op)


def test_decode_json_example_known_bytes_and_errors():
    text = ('{"features": {"feature": {"b": {"floatList": {"value": [1.5, 2]}}, '
            '"a": {"int64_list": {"value": ["3", -4]}}, "c": {"bytesList": {"value": ["aGk="]}}}}}')
    # map entries in the JSON's order, numeric lists one field per value (unpacked)
    want = (b"\n6\n\x11\n\x01b\x12\x0c\x12\n\r\x00\x00\xc0?\r\x00\x00\x00@\n\x14\n\x01a\x12\x0f\x1a\r\x08\x03"
            b"\x08\xfc\xff\xff\xff\xff\xff\xff\xff\xff\x01\n\x0b\n\x01c\x12\x06\n\x04\n\x02hi")
    with tf.Graph().as_default():
        o = tf.decode_json_example(tf.constant([[text, "{}"]]))
        assert o.shape.as_list() == [1, 2]
        parsed = tf.parse_single_example(tf.io.decode_json_example(text),
                                         {"b": tf.FixedLenFeature([2], tf.float32)})
        bad = tf.decode_json_example(tf.constant('{"features": {"feature": {"a": {"int64List": {"value": [0.5]}}}}}'))
        with tf.Session() as s:
            got = s.run(o)
            assert s.run(parsed["b"]).tolist() == [1.5, 2.0]
            with pytest.raises(tf.errors.InvalidArgumentError, match="Error while parsing JSON"):
                s.run(bad)
    raw = [g if isinstance(g, bytes) else g.encode("utf-8", "surrogateescape") for g in got.ravel()]
    assert raw == [want, b""]
