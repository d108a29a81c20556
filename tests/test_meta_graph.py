"""tf.train.export_meta_graph / import_meta_graph and the .meta files Saver.save writes: a graph
rebuilt from its file runs, restores and trains exactly as the graph that wrote it."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import DataLossError, InvalidArgumentError, NotFoundError, UnimplementedError
from collflow.train.meta_graph_codec import decode, encode

pytestmark = pytest.mark.timeout(120)


def _mlp(seed=0):
    tf.set_random_seed(seed)
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    h = tf.layers.dense(x, 8, activation=tf.nn.relu)
    logits = tf.identity(tf.layers.dense(h, 3), name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    gs = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=gs)
    tf.add_to_collection("train_op", train)
    tf.add_to_collection("extras", (logits, "text", 3, 2.5, None, [loss, train]))
    return x, y, logits, loss, train, gs


def _data(seed=1, n=16):
    r = np.random.RandomState(seed)
    return r.rand(n, 4).astype(np.float32), r.randint(0, 3, n)


def test_save_writes_meta_that_imports_restores_and_trains_on(tmp_path):
    X, Y = _data()
    with tf.Graph().as_default() as g:
        x, y, logits, loss, train, gs = _mlp()
        saver = tf.train.Saver(max_to_keep=3)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(3):
                s.run(train, {x: X, y: Y})
            path = saver.save(s, str(tmp_path / "model.ckpt"), global_step=gs)
            at_save = s.run(logits, {x: X})
            losses = [s.run([loss, train], {x: X, y: Y})[0] for _ in range(3)]
            after = s.run(logits, {x: X})
        n_ops = len(g.get_operations())
    assert os.path.isfile(path + ".meta") and path.endswith("model.ckpt-3")
    with tf.Graph().as_default() as g2:
        saver2 = tf.train.import_meta_graph(path + ".meta")
        assert len(g2.get_operations()) == n_ops
        assert sorted(v.name for v in tf.trainable_variables()) == sorted(
            ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0"])
        train2 = tf.get_collection("train_op")[0]
        extras = tf.get_collection("extras")[0]
        assert isinstance(extras, tuple) and extras[1:5] == ("text", 3, 2.5, None)
        assert extras[0] is g2.get_tensor_by_name("logits:0") and extras[5][1] is train2
        with tf.Session() as s:
            saver2.restore(s, path)
            assert s.run(tf.train.get_global_step()) == 3
            np.testing.assert_array_equal(s.run("logits:0", {"x:0": X}), at_save)
            # the Adam slots and step came back too: training goes on exactly as before
            got = [s.run(["sparse_softmax_cross_entropy_loss/value:0", train2], {"x:0": X, "y:0": Y})[0]
                   for _ in range(3)]
            np.testing.assert_array_equal(got, losses)
            np.testing.assert_array_equal(s.run("logits:0", {"x:0": X}), after)


def test_control_flow_and_recurrent_graphs_run_after_import(tmp_path):
    r = np.random.RandomState(0)
    seq = r.rand(3, 5, 4).astype(np.float32)
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        x = tf.placeholder(tf.float32, [None, 5, 4], name="seq")
        cell = tf.nn.rnn_cell.LSTMCell(6)
        outs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        total = tf.reduce_sum(outs, name="total")

        def body(i, acc, ta):
            inner = tf.while_loop(lambda j, v: j < i, lambda j, v: (j + 1, v * 0.9 + 0.1), [0, acc])[1]
            return i + 1, tf.cond(inner > 0.5, lambda: inner - 0.25, lambda: inner + 1.0), ta.write(i, inner)
        _, acc, ta = tf.while_loop(lambda i, a, t: i < 4, body,
                                   [tf.constant(0), tf.reduce_mean(x), tf.TensorArray(tf.float32, size=4)])
        stacked = tf.identity(ta.stack(), name="stacked")
        acc = tf.identity(acc, name="acc")
        grad = tf.identity(tf.gradients(total, x)[0], name="grad")  # built before the export
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            want = s.run([total, acc, stacked, grad, state.h], {x: seq})
            tf.train.Saver().save(s, str(tmp_path / "rnn"))
            h_name = state.h.name
    with tf.Graph().as_default() as g2:
        saver = tf.train.import_meta_graph(str(tmp_path / "rnn.meta"))
        with tf.Session() as s:
            saver.restore(s, str(tmp_path / "rnn"))
            got = s.run(["total:0", "acc:0", "stacked:0", "grad:0", h_name], {"seq:0": seq})
            for a, b in zip(want, got):
                np.testing.assert_array_equal(a, b)
            # dynamic_rnn's LSTM is one fused op: a new gradient through it is built as usual
            g_new = tf.gradients(g2.get_tensor_by_name("total:0"), g2.get_tensor_by_name("seq:0"))[0]
            np.testing.assert_array_equal(s.run(g_new, {"seq:0": seq}), want[3])
        # a new gradient through an imported while_loop is refused with the reason, not built wrong
        with pytest.raises(UnimplementedError, match="imported from a meta graph"):
            tf.gradients(g2.get_tensor_by_name("acc:0"), g2.get_tensor_by_name("seq:0"))


def test_new_gradients_and_optimizer_on_imported_graph(tmp_path):
    X, Y = _data(2)
    with tf.Graph().as_default():
        x, y, logits, loss, train, gs = _mlp(1)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            tf.train.Saver().save(s, str(tmp_path / "m"))
    results = []
    for imported in (False, True):
        with tf.Graph().as_default():
            if imported:
                saver = tf.train.import_meta_graph(str(tmp_path / "m.meta"))
                g = tf.get_default_graph()
                loss_t = g.get_tensor_by_name("sparse_softmax_cross_entropy_loss/value:0")
            else:
                _, _, _, loss_t, _, _ = _mlp(1)
                saver = tf.train.Saver()
            # fine-tuning: a new optimizer over the loaded graph's loss
            step = tf.train.GradientDescentOptimizer(0.3, name="finetune").minimize(loss_t)
            with tf.Session() as s:
                saver.restore(s, str(tmp_path / "m"))
                s.run(tf.variables_initializer([v for v in tf.global_variables() if "finetune" in v.name]))
                results.append([s.run([loss_t, step], {"x:0": X, "y:0": Y})[0] for _ in range(4)])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
    assert results[1][-1] < results[1][0]


def test_import_scope_twice_keeps_two_models(tmp_path):
    X, Y = _data(3)
    with tf.Graph().as_default():
        x, y, logits, loss, train, gs = _mlp(2)
        saver = tf.train.Saver()
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            p1 = saver.save(s, str(tmp_path / "a"))
            want1 = s.run(logits, {x: X})
            s.run(train, {x: X, y: Y})
            p2 = saver.save(s, str(tmp_path / "b"), write_meta_graph=False)
            want2 = s.run(logits, {x: X})
    assert not os.path.exists(p2 + ".meta")
    with tf.Graph().as_default() as g:
        sa = tf.train.import_meta_graph(p1 + ".meta", import_scope="first")
        sb = tf.train.import_meta_graph(p1 + ".meta", import_scope="second")
        assert g.get_tensor_by_name("first/logits:0") is not g.get_tensor_by_name("second/logits:0")
        with tf.Session() as s:
            sa.restore(s, p1)
            sb.restore(s, p2)
            np.testing.assert_array_equal(s.run("first/logits:0", {"first/x:0": X}), want1)
            np.testing.assert_array_equal(s.run("second/logits:0", {"second/x:0": X}), want2)


def test_export_scope_clear_devices_and_collection_list(tmp_path):
    with tf.Graph().as_default() as g:
        with tf.device("/cpu:0"), tf.name_scope("tower"):
            a = tf.placeholder(tf.float32, [2], name="a")
            b = tf.multiply(a, 3.0, name="b")
        tf.add_to_collection("keep", b)
        tf.add_to_collection("drop", b)
        m = tf.train.export_meta_graph(str(tmp_path / "t.meta"), export_scope="tower", clear_devices=True,
                                       collection_list=["keep"])
    assert sorted(n["name"] for n in m.nodes) == sorted(op.name[len("tower/"):] for op in g.get_operations())
    assert all(n["device"] is None for n in m.nodes) and sorted(m.collection_def) == ["keep"]
    with tf.Graph().as_default() as g2:
        assert tf.train.import_meta_graph(str(tmp_path / "t.meta"), import_scope="t2") is None  # no variables
        assert tf.get_collection("keep")[0] is g2.get_tensor_by_name("t2/b:0") and not tf.get_collection("drop")
        with tf.Session() as s:
            np.testing.assert_array_equal(s.run("t2/b:0", {"t2/a:0": [1.0, 2.0]}), [3.0, 6.0])


def test_python_state_ops_become_stand_ins_that_say_so(tmp_path):
    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(2)
        nxt = tf.identity(ds.make_one_shot_iterator().get_next(), name="next")
        p = tf.placeholder(tf.float32, [None], name="p")
        pf = tf.identity(tf.py_func(lambda v: v * 2, [p], tf.float32), name="pf")
        doubled = tf.multiply(p, 2.0, name="doubled")
        tf.train.export_meta_graph(str(tmp_path / "d.meta"))
    with tf.Graph().as_default():
        tf.train.import_meta_graph(str(tmp_path / "d.meta"))
        with tf.Session() as s:
            np.testing.assert_array_equal(s.run("doubled:0", {"p:0": [1.0, 2.0]}), [2.0, 4.0])
            with pytest.raises(UnimplementedError, match="imported from a meta graph without its attribute"):
                s.run("next:0")
            with pytest.raises(UnimplementedError, match="PyFunc|py_func|func"):
                s.run("pf:0", {"p:0": [1.0]})
    del nxt, pf, doubled


def test_damaged_foreign_and_missing_files_are_clear_errors(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        tf.identity(v * 2.0, name="w")
        tf.train.export_meta_graph(str(tmp_path / "ok.meta"))
    data = (tmp_path / "ok.meta").read_bytes()
    cases = {"flipped": data[:-10] + bytes([data[-10] ^ 1]) + data[-9:], "cut": data[: len(data) // 2],
             "tensorflow": b"\n\x9a\x01\n\x0b\n\x05Const\x12\x02\x08\x01", "empty": b""}
    for name, bad in cases.items():
        (tmp_path / f"{name}.meta").write_bytes(bad)
        with tf.Graph().as_default() as g:
            with pytest.raises(DataLossError) as e:
                tf.train.import_meta_graph(str(tmp_path / f"{name}.meta"))
            assert g.get_operations() == []  # nothing half-imported
            if name in ("tensorflow", "empty"):
                assert "TensorFlow's protobuf" in str(e.value)
            else:
                assert "damaged" in str(e.value)
    with pytest.raises(NotFoundError, match="does not exist"):
        tf.train.import_meta_graph(str(tmp_path / "nope.meta"))
    (tmp_path / "file").write_text("x")
    with tf.Graph().as_default():
        tf.constant(1.0)
        with pytest.raises(InvalidArgumentError, match="cannot write meta graph"):
            tf.train.export_meta_graph(str(tmp_path / "file" / "sub.meta"))
    assert sorted(os.listdir(tmp_path)) == sorted([f"{n}.meta" for n in cases] + ["ok.meta", "file"])


def test_retention_and_remove_checkpoint_take_the_meta_files(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(0.0, name="v")
        inc = tf.assign_add(v, 1.0)
        saver = tf.train.Saver(max_to_keep=2)
        with tf.Session() as s:
            s.run(v.initializer)
            paths = []
            for step in range(4):
                s.run(inc)
                paths.append(saver.save(s, str(tmp_path / "ck"), global_step=step))
    metas = sorted(f for f in os.listdir(tmp_path) if f.endswith(".meta"))
    assert metas == ["ck-2.meta", "ck-3.meta"]
    tf.train.remove_checkpoint(paths[2])
    assert sorted(f for f in os.listdir(tmp_path) if f.startswith("ck-")) == ["ck-3.h5", "ck-3.meta"]
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_import_into_a_graph_with_the_same_names_uniquifies(tmp_path):
    with tf.Graph().as_default():
        tf.multiply(tf.placeholder(tf.float32, [], name="a"), 2.0, name="b")
        tf.train.export_meta_graph(str(tmp_path / "n.meta"))
    with tf.Graph().as_default() as g:
        tf.constant(5.0, name="b")
        tf.train.import_meta_graph(str(tmp_path / "n.meta"))
        names = sorted(op.name for op in g.get_operations())
        assert "b" in names and "b_1" in names
        with tf.Session() as s:
            assert s.run("b_1:0", {"a:0": 4.0}) == 8.0 and s.run("b:0") == 5.0


@pytest.mark.parametrize("value", [
    None, True, 3, -2.5, float("inf"), "s", b"\x00\xff", [1, 2], (1, (2, "x")), slice(None, 3, 2), Ellipsis,
    (Ellipsis, slice(1, None), None, 0), tf.float32, tf.string, tf.TensorShape(None), tf.TensorShape([None, 3]),
    np.arange(6, dtype=np.int16).reshape(2, 3), np.array([1.5, np.nan], np.float64), np.float32(0.5),
    np.array(["a", "bé"], dtype=object), np.array([b"x", b"yz"]), np.zeros((0, 2), np.float32), {"k": (1, 2)},
    [(None, True, "n", (), tf.int64)]])
def test_attribute_values_round_trip(value):
    import json
    back = decode(json.loads(json.dumps(encode(value))), lambda n: None)
    assert type(back) is type(value)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and back.shape == value.shape
        np.testing.assert_array_equal(back, value)
    elif isinstance(value, tf.TensorShape):
        assert back.as_list() == value.as_list() if value.rank is not None else back.rank is None
    elif isinstance(value, float) and np.isnan(value):
        assert np.isnan(back)
    else:
        assert back == value


def test_custom_gradient_runs_after_import_and_refuses_a_new_gradient(tmp_path):
    @tf.custom_gradient
    def clipped(x):
        return tf.identity(x * 2.0), lambda dy: tf.clip_by_value(dy, -0.5, 0.5)

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        y = tf.identity(clipped(x), name="y")
        tf.identity(tf.gradients(y * 3.0, x)[0], name="dx")
        tf.train.export_meta_graph(str(tmp_path / "c.meta"))
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(str(tmp_path / "c.meta"))
        with tf.Session() as s:
            y_v, dx_v = s.run(["y:0", "dx:0"], {"x:0": [1.0, 2.0, 3.0]})
        np.testing.assert_array_equal(y_v, [2.0, 4.0, 6.0])
        np.testing.assert_array_equal(dx_v, [0.5, 0.5, 0.5])
        with pytest.raises(UnimplementedError, match="Python gradient function"):
            tf.gradients(g.get_tensor_by_name("y:0"), g.get_tensor_by_name("x:0"))


def _conv_bn(r):
    x = tf.placeholder(tf.float32, [None, 8, 8, 2], name="in")
    training = tf.placeholder_with_default(False, [], name="training")
    h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.batch_normalization(h, training=training)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.dropout(tf.layers.flatten(h), 0.3, training=training, seed=5)
    out = tf.layers.dense(h, 3)
    up = tf.layers.conv2d_transpose(x, 2, 3, strides=2)
    return {x: r.rand(2, 8, 8, 2).astype(np.float32), training: True}, [out, up, tf.reduce_sum(out)]


def _embedding_strings(r):
    ids = tf.placeholder(tf.int64, [None], name="ids")
    words = tf.placeholder(tf.string, [None], name="words")
    emb = tf.get_variable("emb", [10, 4])
    looked = tf.nn.embedding_lookup(emb, ids)
    table = tf.contrib.lookup.index_table_from_tensor(["a", "b", "c"], default_value=-1)
    joined = tf.strings.join([words, tf.as_string(ids)], separator="-")
    sp = tf.string_split(words, delimiter="b")
    return ({ids: [1, 3, 9], words: ["ab", "cbd", "z"]},
            [looked, table.lookup(words), joined, sp.values, sp.indices, tf.strided_slice(looked, [0, 1], [2, 3])])


def _rnn_attention(r):
    x = tf.placeholder(tf.float32, [2, 4, 3], name="xs")
    cell = tf.nn.rnn_cell.GRUCell(5)
    outs, st = tf.nn.bidirectional_dynamic_rnn(cell, tf.nn.rnn_cell.BasicRNNCell(5), x, dtype=tf.float32,
                                               sequence_length=[4, 2])
    scores = tf.nn.softmax(tf.einsum("btd,bd->bt", outs[0], st[1]))
    top = tf.nn.top_k(scores, 2)
    return {x: r.rand(2, 4, 3).astype(np.float32)}, [outs[0], outs[1], scores, top.indices]


def _parsing_and_sparse(r):
    ser = tf.placeholder(tf.string, [None], name="ser")
    feats = tf.parse_example(ser, {"a": tf.FixedLenFeature([2], tf.float32), "b": tf.VarLenFeature(tf.int64)})
    ex = [tf.train.Example(features=tf.train.Features(feature={
        "a": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0 * i, 2.0])),
        "b": tf.train.Feature(int64_list=tf.train.Int64List(value=list(range(i))))})).SerializeToString()
        for i in range(3)]
    dense_b = tf.sparse_tensor_to_dense(feats["b"])
    sl = tf.placeholder(tf.float32, [None, 3], name="sl")
    return ({ser: ex, sl: r.rand(4, 3).astype(np.float32)},
            [feats["a"], dense_b, sl[1:, ::2], sl[..., None][:, 0], tf.gather_nd(sl, [[0, 1], [2, 2]])])


@pytest.mark.parametrize("build", [_conv_bn, _embedding_strings, _rnn_attention, _parsing_and_sparse])
def test_graphs_compute_the_same_after_import(tmp_path, build):
    r = np.random.RandomState(4)
    with tf.Graph().as_default():
        tf.set_random_seed(11)
        feeds, fetches = build(r)
        feeds_by_name = {t.name: v for t, v in feeds.items()}
        names = [t.name for t in fetches]
        saver = tf.train.Saver() if tf.global_variables() else None
        with tf.Session() as s:
            s.run([tf.global_variables_initializer(), tf.tables_initializer()])
            # saved first: a checkpoint holds the random streams too (a dropout mask drawn after
            # the save is drawn again after the restore)
            if saver:
                saver.save(s, str(tmp_path / "g"))
            else:
                tf.train.export_meta_graph(str(tmp_path / "g.meta"))
            want = s.run(names, feeds_by_name)
    with tf.Graph().as_default():
        saver2 = tf.train.import_meta_graph(str(tmp_path / "g.meta"))
        with tf.Session() as s:
            s.run(tf.tables_initializer())
            if saver2:
                saver2.restore(s, str(tmp_path / "g"))
            got = s.run(names, feeds_by_name)
    for n, a, b in zip(names, want, got):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=n)
