"""Object-based checkpoints (tf.train.Checkpoint, tf.Module, TF's CheckpointManager) in graph
mode, without TensorFlow: keys and object graphs as TF names them, save/restore round trips,
deferred restoration, optimizer slots, Keras models, manager retention, errors and atomic
writes.  Values are compared exactly (they are copied, not computed)."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.errors import NotFoundError
from collflow.train import object_checkpoint as oc
from collflow.train import tf_checkpoint as tfc
from collflow.train import trackable as T


def _graph_of(path):
    r = tfc.BundleReader(path)
    raw = r.read([T.OBJECT_GRAPH_KEY])[T.OBJECT_GRAPH_KEY].item()
    return r, T.TrackableObjectGraph.FromString(raw)


def _keys(path):
    return sorted(k for k in tfc.BundleReader(path).entries if k != T.OBJECT_GRAPH_KEY)


def _summary(proto):
    return [([(c.node_id, c.local_name) for c in n.children], [a.checkpoint_key for a in n.attributes],
             [(s.original_variable_node_id, s.slot_name, s.slot_variable_node_id) for s in n.slot_variables],
             n.has_checkpoint_values.value) for n in proto.nodes]


def test_variables_round_trip_keys_and_state_file(tmp_path):
    with tf.Graph().as_default():
        b = tf.Variable([1.0, 2.0], name="b")
        a = tf.Variable(np.arange(6, dtype=np.int32).reshape(2, 3), name="a")
        ck = tf.train.Checkpoint(b=b, a=a)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            p1 = ck.save(str(tmp_path / "ck"))  # the default session
            assert p1 == str(tmp_path / "ck-1")
            assert ck.save(str(tmp_path / "ck"), session=sess) == str(tmp_path / "ck-2")
            assert tfc.read_state_file(str(tmp_path)) == ["ck-2"]
            assert _keys(p1) == ["a/.ATTRIBUTES/VARIABLE_VALUE", "b/.ATTRIBUTES/VARIABLE_VALUE",
                                 "save_counter/.ATTRIBUTES/VARIABLE_VALUE"]
            _, proto = _graph_of(p1)
            # keyword order (sorted), then save_counter; full names are the graph names
            assert _summary(proto)[0] == ([(1, "a"), (2, "b"), (3, "save_counter")], [], [], True)
            assert [a.full_name for a in proto.nodes[1].attributes] == ["a"]
            assert tfc.BundleReader(p1).read(["save_counter/.ATTRIBUTES/VARIABLE_VALUE"])[
                "save_counter/.ATTRIBUTES/VARIABLE_VALUE"] == 1
            sess.run([b.assign([7.0, 7.0]), a.assign(np.zeros((2, 3), np.int32))])
            status = ck.restore(tf.train.latest_checkpoint(str(tmp_path)))
            status.assert_consumed().assert_existing_objects_matched().assert_nontrivial_match()
            status.run_restore_ops()
            np.testing.assert_array_equal(sess.run(b), [1.0, 2.0])
            np.testing.assert_array_equal(sess.run(a), np.arange(6).reshape(2, 3))
            assert sess.run(ck.save_counter) == 2


def test_escaping_nesting_lists_dicts(tmp_path):
    with tf.Graph().as_default():
        v = [tf.Variable(float(i)) for i in range(4)]
        inner = tf.train.Checkpoint(w=v[0])
        ck = tf.train.Checkpoint(inner=inner, lst=[v[1], {"y.x/w": v[2]}], d={"k": v[3]}, same=v[0])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            p = ck.write(str(tmp_path / "w"), session=sess)
            # v[0] is reached as `same` (depth 1) before inner/w (depth 2): the shortest path names it
            assert _keys(p) == ["d/k/.ATTRIBUTES/VARIABLE_VALUE", "lst/0/.ATTRIBUTES/VARIABLE_VALUE",
                                "lst/1/y..x.Sw/.ATTRIBUTES/VARIABLE_VALUE", "same/.ATTRIBUTES/VARIABLE_VALUE"]
            _, proto = _graph_of(p)
            root = [(c.node_id, c.local_name) for c in proto.nodes[0].children]
            assert root == [(1, "d"), (2, "inner"), (3, "lst"), (4, "same")]  # no save_counter: write() only
            assert [(c.node_id, c.local_name) for c in proto.nodes[2].children] == [(4, "w")]  # shortest path first
            assert not os.path.exists(tmp_path / "checkpoint")


class Net(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.w = tf.Variable([[1.0, 2.0]], name="w")
            self.b = tf.Variable([0.5], name="b", trainable=False)
        self.blocks = [Block(), Block()]
        self.sizes = [1, 2]

    @tf.Module.with_name_scope
    def __call__(self, x):
        return tf.matmul(x, self.w, transpose_b=True) + self.b


class Block(tf.Module):
    def __init__(self):
        super().__init__()
        with self.name_scope:
            self.k = tf.Variable(3.0, name="k")


def test_module_api():
    with tf.Graph().as_default():
        net = Net()
        assert net.name == "net" and Net(name="other").name == "other"
        assert [v.op.name for v in net.variables] == ["net/b", "net/w", "block/k", "block_1/k"]
        assert [v.op.name for v in net.trainable_variables] == ["net/w", "block/k", "block_1/k"]
        assert net.submodules == tuple(net.blocks)
        y = net(tf.constant([[1.0, 1.0]]))
        assert y.op.name.startswith("net/")
        with pytest.raises(ValueError, match="not a valid module name"):
            tf.Module(name="bad name")


def test_module_tree_round_trip_and_deferred(tmp_path):
    with tf.Graph().as_default():
        net = Net()
        ck = tf.train.Checkpoint(net=net)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            p = ck.save(str(tmp_path / "m"))
            assert _keys(p) == ["net/b/.ATTRIBUTES/VARIABLE_VALUE", "net/blocks/0/k/.ATTRIBUTES/VARIABLE_VALUE",
                                "net/blocks/1/k/.ATTRIBUTES/VARIABLE_VALUE", "net/w/.ATTRIBUTES/VARIABLE_VALUE",
                                "save_counter/.ATTRIBUTES/VARIABLE_VALUE"]
            _, proto = _graph_of(p)
            net_node = proto.nodes[1]
            assert [c.local_name for c in net_node.children] == ["w", "b", "blocks", "sizes"]  # assignment order
            sizes = proto.nodes[[c.node_id for c in net_node.children if c.local_name == "sizes"][0]]
            assert not sizes.children and sizes.has_checkpoint_values.value is False
    with tf.Graph().as_default():
        holder = tf.Module(name="holder")
        ck = tf.train.Checkpoint(net=holder)
        status = ck.restore(p)
        # made after restore(), before the restore runs: restored too (TF's deferred restoration)
        holder.w = tf.Variable([[0.0, 0.0]])
        holder.blocks = [Block()]
        with tf.Session() as sess:
            status.initialize_or_restore(sess)
            np.testing.assert_array_equal(sess.run(holder.w), [[1.0, 2.0]])
            assert sess.run(holder.blocks[0].k) == 3.0
            with pytest.raises(AssertionError, match="Unresolved object in checkpoint"):
                status.assert_consumed()
            status.expect_partial().assert_existing_objects_matched().assert_nontrivial_match()
            holder.extra = tf.Variable(1.0)
            with pytest.raises(AssertionError, match="extra"):
                status.assert_existing_objects_matched()


def _train_program(opt_fn):
    x = tf.Variable([1.0, -2.0], name="x")
    net = tf.Module(name="n")
    net.b = tf.Variable(0.5, name="b")
    loss = tf.reduce_sum(x * x) * net.b + net.b * net.b
    opt = opt_fn()
    return x, net, opt, opt.minimize(loss)


@pytest.mark.parametrize("make,slots,non_slot", [
    (lambda: tf.train.AdamOptimizer(0.1), ["m", "v"], ["beta1_power", "beta2_power"]),
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9), ["momentum"], []),
])
def test_optimizer_slots(tmp_path, make, slots, non_slot):
    with tf.Graph().as_default():
        x, net, opt, train = _train_program(make)
        ck = tf.train.Checkpoint(net=net, opt=opt, x=x)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            p = ck.save(str(tmp_path / "o"))
            saved = sess.run([x, net.b] + [opt.get_slot(v, s) for s in slots for v in (x, net.b)] +
                             [getattr(opt, "_non_slot")[(n, x.graph)] for n in non_slot])
            keys = _keys(p)
            for s in slots:
                assert f"x/.OPTIMIZER_SLOT/opt/{s}/.ATTRIBUTES/VARIABLE_VALUE" in keys
                assert f"net/b/.OPTIMIZER_SLOT/opt/{s}/.ATTRIBUTES/VARIABLE_VALUE" in keys
            for n in non_slot:
                assert f"opt/{n}/.ATTRIBUTES/VARIABLE_VALUE" in keys
            _, proto = _graph_of(p)
            # root: net(1) opt(2) x(3) save_counter(4); slots appended after everything else,
            # slot name by slot name, original variable by node number (x: 3 before net/b)
            refs = [(s.slot_name, s.original_variable_node_id) for s in proto.nodes[2].slot_variables]
            assert refs == [(s, o) for s in slots for o in (3, 5)]
            assert [s.slot_variable_node_id for s in proto.nodes[2].slot_variables] == \
                list(range(len(proto.nodes) - 2 * len(slots), len(proto.nodes)))
            for _ in range(2):
                sess.run(train)
            ck.restore(p).assert_consumed().run_restore_ops()
            now = sess.run([x, net.b] + [opt.get_slot(v, s) for s in slots for v in (x, net.b)] +
                           [getattr(opt, "_non_slot")[(n, x.graph)] for n in non_slot])
            for a, b in zip(saved, now):
                np.testing.assert_array_equal(a, b)


def _keras_seq(lr=0.01):
    k = tf.keras
    m = k.Sequential([k.layers.Dense(3, input_shape=(2,)), k.layers.Dropout(0.1), k.layers.Dense(1)])
    m.compile(k.optimizers.Adam(lr), "mse")
    return m


def test_keras_model_round_trip(tmp_path, caplog):
    x, y = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
    with tf.Graph().as_default():
        m = _keras_seq()
        m.fit(x, y, verbose=0)
        sess = tf.keras.backend.get_session()
        ck = tf.train.Checkpoint(model=m, optimizer=m.optimizer)
        p = ck.save(str(tmp_path / "k"))  # no session given, none default: Keras's (TF 1.x's rule)
        want = sess.run(m.weights + m.optimizer.weights)
        keys = _keys(p)
        assert "model/layer_with_weights-1/kernel/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE" in keys
        assert {"optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE", "optimizer/learning_rate/.ATTRIBUTES/VARIABLE_VALUE",
                "optimizer/beta_1/.ATTRIBUTES/VARIABLE_VALUE"} <= set(keys)
        r = tfc.BundleReader(p)
        assert r.read(["optimizer/learning_rate/.ATTRIBUTES/VARIABLE_VALUE"])[
            "optimizer/learning_rate/.ATTRIBUTES/VARIABLE_VALUE"] == np.float32(0.01)
        _, proto = _graph_of(p)
        assert [c.local_name for c in proto.nodes[1].children] == [
            "layer_with_weights-0", "layer-0", "layer-1", "layer_with_weights-1", "layer-2", "optimizer"]
    with tf.Graph().as_default():
        m = _keras_seq(lr=0.02)
        m.fit(x, 2 * y, verbose=0)  # slots and iterations made, with other values
        sess = tf.keras.backend.get_session()
        tf.train.Checkpoint(model=m, optimizer=m.optimizer).restore(p).assert_consumed().run_restore_ops(sess)
        # the learning rate is a Python number here: not assigned, and the difference is logged
        assert "optimizer/learning_rate/.ATTRIBUTES/VARIABLE_VALUE is 0.01" in caplog.text
        for a, b in zip(want, sess.run(m.weights + m.optimizer.weights)):
            np.testing.assert_array_equal(a, b)


def test_manager_retention(tmp_path):
    d = str(tmp_path / "mgr")
    with tf.Graph().as_default():
        v = tf.Variable(0.0)
        ck = tf.train.Checkpoint(v=v)
        mgr = tf.train.CheckpointManager(ck, d, max_to_keep=2)
        assert isinstance(mgr, oc.TFCheckpointManager) and mgr.latest_checkpoint is None
        with tf.Session() as sess:
            sess.run(v.initializer)
            paths = [mgr.save() for _ in range(3)]
            assert paths == [os.path.join(d, f"ckpt-{i}") for i in (1, 2, 3)]
            assert mgr.checkpoints == paths[1:] and mgr.latest_checkpoint == paths[2]
            assert not tfc.bundle_files(paths[0]) and tfc.bundle_files(paths[2])
            assert tfc.read_state_file(d) == ["ckpt-2", "ckpt-3"]
            assert tf.train.latest_checkpoint(d) == paths[2]
            assert mgr.save(checkpoint_number=100) == os.path.join(d, "ckpt-100")
            assert sess.run(ck.save_counter) == 4  # incremented even with a number given
            again = tf.train.CheckpointManager(ck, d, max_to_keep=None, checkpoint_name="other")
            assert again.checkpoints == [paths[2], os.path.join(d, "ckpt-100")]
            for _ in range(3):
                again.save()
            assert len(again.checkpoints) == 5  # max_to_keep=None keeps all
    # collflow's own manager is untouched by the dispatch
    own = tf.train.CheckpointManager(str(tmp_path / "own"), max_to_keep=1)
    assert type(own) is tf.train.CheckpointManager


def test_errors(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        ck = tf.train.Checkpoint(v=v)
        with pytest.raises(ValueError, match="trackable"):
            tf.train.Checkpoint(x=3)
        with pytest.raises(ValueError, match="needs a session"):
            ck.save(str(tmp_path / "nosess"))
        with pytest.raises(NotFoundError, match="Failed to restore from checkpoint"):
            ck.restore(str(tmp_path / "missing-1"))
        with tf.Session() as sess:
            sess.run(v.initializer)
            # a name-based (tf.train.Saver) checkpoint: restored by variable names
            tfc.write_bundle(str(tmp_path / "named"), {"v": np.array([5.0, 6.0], np.float32)})
            st = ck.restore(str(tmp_path / "named"))
            assert isinstance(st, oc.NameBasedSaverStatus)
            with pytest.raises(AssertionError, match="name-based tf.train.Saver checkpoint"):
                st.assert_consumed()
            st.run_restore_ops()
            np.testing.assert_array_equal(sess.run(v), [5.0, 6.0])
            p = ck.save(str(tmp_path / "good"))
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0, 3.0])
        with tf.Session() as sess:
            with pytest.raises(ValueError, match="incompatible tensor with shape"):
                tf.train.Checkpoint(v=w).restore(p).run_restore_ops(sess)
            st = tf.train.Checkpoint(other=w).restore(p)
            with pytest.raises(AssertionError, match="Nothing except the root object matched"):
                st.assert_nontrivial_match()
            with pytest.raises(AssertionError, match=r"Unresolved object in checkpoint \(root\)\.v"):
                st.assert_consumed()
            with pytest.raises(AssertionError, match="No checkpoint specified"):
                tf.train.Checkpoint(v=w).restore(None).assert_consumed()
            tf.train.Checkpoint(v=w).restore(None).initialize_or_restore(sess)
            np.testing.assert_array_equal(sess.run(w), [1.0, 2.0, 3.0])


def test_initialize_or_restore_initializes_the_rest(tmp_path):
    with tf.Graph().as_default():
        a = tf.Variable(1.0)
        with tf.Session() as sess:
            sess.run(a.initializer)
            p = tf.train.Checkpoint(a=a).save(str(tmp_path / "i"))
    with tf.Graph().as_default():
        a, b = tf.Variable(5.0), tf.Variable(7.0)
        with tf.Session() as sess:
            tf.train.Checkpoint(a=a, b=b).restore(p).initialize_or_restore(sess)
            assert sess.run([a, b]) == [1.0, 7.0]


def test_writes_are_atomic(tmp_path, monkeypatch):
    d = tmp_path / "at"
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        ck = tf.train.Checkpoint(v=v)
        with tf.Session() as sess:
            sess.run(v.initializer)
            first = ck.save(str(d / "ck"))
            before = sorted(os.listdir(d))
            state = (d / "checkpoint").read_bytes()
            real = os.replace

            def failing(src, dst):
                if str(dst).endswith(".index"):
                    raise OSError("disk full")
                return real(src, dst)
            monkeypatch.setattr(os, "replace", failing)
            sess.run(v.assign(2.0))
            with pytest.raises(OSError, match="disk full"):
                ck.save(str(d / "ck"))
            monkeypatch.setattr(os, "replace", real)
            # no half-written checkpoint, no temporary files, the state file still names the first
            assert sorted(n for n in os.listdir(d) if not n.startswith("ck-2.data")) == before
            assert not tfc.bundle_files(str(d / "ck-2")) or not os.path.exists(str(d / "ck-2.index"))
            assert (d / "checkpoint").read_bytes() == state
            ck.restore(tf.train.latest_checkpoint(str(d))).run_restore_ops()
            assert sess.run(v) == 1.0 and tf.train.latest_checkpoint(str(d)) == first
            # a directory that cannot be made (a file is in the way): an error, nothing written
            (tmp_path / "file").write_bytes(b"x")
            with pytest.raises(OSError):
                ck.save(str(tmp_path / "file" / "ck"))
            assert (tmp_path / "file").read_bytes() == b"x"


def test_assert_consumed_names_what_did_not_match(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        with tf.Session() as sess:
            sess.run(v.initializer)
            p = tf.train.Checkpoint(v=v).save(str(tmp_path / "c"))
    with tf.Graph().as_default():
        v, extra = tf.Variable(0.0), tf.Variable(0.0, name="extra_var")
        st = tf.train.Checkpoint(v=v, extra=extra).restore(p)
        with pytest.raises(AssertionError, match=r"not assigned a value from checkpoint: extra \(variable extra_var\)"):
            st.assert_consumed()
        with pytest.raises(AssertionError, match="extra_var"):
            st.assert_existing_objects_matched()
        st.assert_nontrivial_match()
        with tf.Session() as sess:
            st.initialize_or_restore(sess)
            assert sess.run([v, extra]) == [1.0, 0.0]
        with pytest.raises(ValueError, match="not a string"):
            tf.train.Checkpoint(d={1: v}).write(str(tmp_path / "bad"), session=tf.Session())


def test_manager_keep_every_n_hours(tmp_path):
    d = str(tmp_path / "keep")
    with tf.Graph().as_default():
        v = tf.Variable(0.0)
        ck = tf.train.Checkpoint(v=v)
        with tf.Session() as sess:
            sess.run(v.initializer)
            # every checkpoint is "hours" after the last preserved one: all stay on disk,
            # only the newest stay managed
            mgr = tf.train.CheckpointManager(ck, d, max_to_keep=1, keep_checkpoint_every_n_hours=1e-12)
            paths = [mgr.save() for _ in range(3)]
            assert mgr.checkpoints == paths[-1:]
            assert all(tfc.bundle_files(p) for p in paths)
            assert tfc.read_state_file(d) == ["ckpt-3"]
