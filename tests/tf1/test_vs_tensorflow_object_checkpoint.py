"""Object-based checkpoints against TensorFlow (tensorflow.compat.v1 in graph mode, tf_keras):
each program is built the same way in both libraries and saved with tf.train.Checkpoint; the
checkpoint keys and the object graphs (children, attributes, slot references,
has_checkpoint_values) must be equal.  Then each library restores the other's file into a
fresh copy of the program (other initial values, fewer steps) and writes it again: every
tensor must equal the one it restored from (exactly).  Skipped cleanly without TensorFlow."""
import importlib.util
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402
from collflow.train import tf_checkpoint as tfc  # noqa: E402
from collflow.train import trackable as T  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()
HAVE_TF_KERAS = importlib.util.find_spec("tf_keras") is not None  # TF 1.x's tf.keras (TF_USE_LEGACY_KERAS)
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]


# -- programs: fn(tf, seed, steps) -> (checkpoint, session, extra facts to compare) ------------------

def _vars(tf, seed, steps):
    r = np.random.RandomState(seed)
    step = tf.train.get_or_create_global_step()
    a = tf.Variable(r.randn(2, 3).astype(np.float32), name="a")
    b = tf.Variable(r.randint(0, 9, [4]).astype(np.int64), name="b")
    inner = tf.train.Checkpoint(w=tf.Variable(r.randn(3), name="w"))
    ck = tf.train.Checkpoint(step=step, a=a, inner=inner,
                             lst=[b, {"y.x/z": tf.Variable(np.float32(seed), name="z")}])
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    for _ in range(steps):
        sess.run(step.assign_add(1))
    return ck, sess, None


def _module(tf, seed, steps):
    r = np.random.RandomState(seed)

    class Block(tf.Module):
        def __init__(self, n):
            super().__init__()
            with self.name_scope:
                self.k = tf.Variable(r.randn(n).astype(np.float32), name="k")

    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            with self.name_scope:
                self.w = tf.Variable(r.randn(2, 2).astype(np.float32), name="w")
            self.blocks = [Block(2), Block(3)]
            self.table = {"b": Block(1), "a": tf.Variable(r.randn(1).astype(np.float32), name="a")}
            self.sizes = [1, 2]

    net = Net()
    ck = tf.train.Checkpoint(net=net)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return ck, sess, ([v.name for v in net.variables], [v.name for v in net.trainable_variables],
                      [m.name for m in net.submodules])


def _optimizers(tf, seed, steps):
    r = np.random.RandomState(seed)
    x = tf.Variable(r.randn(3).astype(np.float32), name="x")
    net = tf.Module(name="n")
    net.b = tf.Variable(np.float32(r.rand() + 0.5), name="b")
    loss = tf.reduce_sum(x * x) * net.b + net.b * net.b
    gs = tf.train.get_or_create_global_step()
    adam, mom = tf.train.AdamOptimizer(0.1), tf.train.MomentumOptimizer(0.05, 0.9)
    rms = tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True)
    train = tf.group(adam.minimize(loss, global_step=gs), mom.minimize(loss, var_list=[x]),
                     rms.minimize(loss, var_list=[net.b]))
    ck = tf.train.Checkpoint(x=x, net=net, adam=adam, mom=mom, rms=rms, global_step=gs)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    for _ in range(steps):
        sess.run(train)
    return ck, sess, None


def _keras(kind):
    def program(tf, seed, steps):
        k = tf.keras
        if kind == "sequential":
            m = k.Sequential([k.layers.Dense(4, activation="relu", input_shape=(3,)), k.layers.Dropout(0.2),
                              k.layers.Dense(2)])
        elif kind == "functional":
            x = k.Input((3,))
            h = k.layers.BatchNormalization()(k.layers.Dense(4, activation="tanh")(x))
            m = k.Model(x, k.layers.Dense(2)(k.layers.Flatten()(h)))
        else:
            class Sub(k.Model):
                def __init__(self):
                    super().__init__()
                    self.hidden = k.layers.Dense(4, activation="relu")
                    self.heads = [k.layers.Dense(2), k.layers.Dense(2)]

                def call(self, x):
                    h = self.hidden(x)
                    return self.heads[0](h) + self.heads[1](h)
            m = Sub()
        opt = {"sequential": "adam", "functional": "rmsprop"}.get(kind)
        m.compile(opt or k.optimizers.legacy.SGD(0.05, momentum=0.9), "mse")
        r = np.random.RandomState(seed)
        xs, ys = r.randn(8, 3).astype(np.float32), r.randn(8, 2).astype(np.float32)
        for _ in range(steps):
            m.fit(xs, ys, batch_size=8, epochs=1, verbose=0, shuffle=False)
        sess = k.backend.get_session()
        step = tf.train.get_or_create_global_step()
        sess.run(step.initializer)
        sess.run(step.assign(steps))
        return tf.train.Checkpoint(model=m, optimizer=m.optimizer, step=step), sess, None
    return program


def _keras_rnn(tf, seed, steps):
    k = tf.keras
    x = k.Input((4, 3))
    outs = [k.layers.LSTM(3)(x), k.layers.RNN(k.layers.GRUCell(2))(x), k.layers.Bidirectional(k.layers.SimpleRNN(2))(x)]
    m = k.Model(x, k.layers.Dense(1)(k.layers.Concatenate()(outs)))
    m.compile("adam", "mse")
    r = np.random.RandomState(seed)
    for _ in range(steps):
        m.fit(r.randn(4, 4, 3).astype(np.float32), r.randn(4, 1).astype(np.float32), batch_size=4, verbose=0)
    return tf.train.Checkpoint(model=m, optimizer=m.optimizer), k.backend.get_session(), None


PROGRAMS = [("variables", _vars), ("module_tree", _module), ("v1_optimizers", _optimizers),
            ("keras_sequential", _keras("sequential")), ("keras_functional", _keras("functional")),
            ("keras_subclassed", _keras("subclassed")), ("keras_rnn", _keras_rnn)]
# collflow names a recurrent layer's weights lstm/kernel where tf_keras has lstm/lstm_cell/kernel
# (the variables' graph names, not their checkpoint keys): full names are compared elsewhere
NO_FULL_NAMES = {"keras_rnn"}


# -- helpers ----------------------------------------------------------------------------------------

def _read(path):
    r = tfc.BundleReader(path)
    values = r.read()
    proto = T.TrackableObjectGraph.FromString(values.pop(T.OBJECT_GRAPH_KEY).item())
    return values, proto


def _structure(proto, full_names=True):
    return [([(c.node_id, c.local_name) for c in n.children],
             [(a.name, a.checkpoint_key) + ((a.full_name,) if full_names else ()) for a in n.attributes],
             [(s.original_variable_node_id, s.slot_name, s.slot_variable_node_id) for s in n.slot_variables],
             n.has_checkpoint_values.value) for n in proto.nodes]


def _save(tf, program, path, seed=0, steps=2):
    with tf.Graph().as_default():
        ck, sess, facts = program(tf, seed, steps)
        with sess.as_default():
            p = ck.save(path, session=sess)
        sess.close()
    return p, facts


def _restore_and_write(tf, program, src, dst):
    """A fresh program (other values, one step) restores `src`, then writes `dst`."""
    with tf.Graph().as_default():
        ck, sess, _ = program(tf, 1, 1)
        with sess.as_default():
            ck.restore(src).assert_consumed().run_restore_ops(sess)
            ck.write(dst, session=sess)
        sess.close()


def _assert_same_values(got, want):
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key].dtype == want[key].dtype, key
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)


@pytest.mark.parametrize("name,program", [pytest.param(
    n, p, marks=pytest.mark.skipif(n.startswith("keras") and not HAVE_TF_KERAS, reason="tf_keras is not installed"))
    for n, p in PROGRAMS], ids=[p[0] for p in PROGRAMS])
def test_object_checkpoint_matches_tensorflow(tmp_path, name, program):
    tf_path, tf_facts = _save(tft, program, str(tmp_path / "tf" / "ckpt"))
    cf_path, cf_facts = _save(cft, program, str(tmp_path / "cf" / "ckpt"))
    assert tf_facts == cf_facts  # tf.Module's variables / trainable_variables / submodules
    assert os.path.basename(tf_path) == os.path.basename(cf_path) == "ckpt-1"
    assert tfc.read_state_file(str(tmp_path / "tf")) == tfc.read_state_file(str(tmp_path / "cf")) == ["ckpt-1"]
    tf_values, tf_proto = _read(tf_path)
    cf_values, cf_proto = _read(cf_path)
    assert sorted(cf_values) == sorted(tf_values)
    full = name not in NO_FULL_NAMES
    assert _structure(cf_proto, full) == _structure(tf_proto, full)  # full names (graph names) too
    for key in tf_values:
        assert cf_values[key].dtype == tf_values[key].dtype and cf_values[key].shape == tf_values[key].shape, key

    # TensorFlow's file into collflow, collflow's into TensorFlow
    _restore_and_write(cft, program, tf_path, str(tmp_path / "cf_from_tf"))
    _assert_same_values(_read(str(tmp_path / "cf_from_tf"))[0], tf_values)
    _restore_and_write(tft, program, cf_path, str(tmp_path / "tf_from_cf"))
    _assert_same_values(_read(str(tmp_path / "tf_from_cf"))[0], cf_values)


def test_manager_files_read_by_tensorflow(tmp_path):
    """collflow's TF-form CheckpointManager: TensorFlow's manager and latest_checkpoint agree."""
    d = str(tmp_path / "m")
    with cft.Graph().as_default():
        v = cft.Variable([1.0, 2.0], name="v")
        ck = cft.train.Checkpoint(v=v)
        with cft.Session() as sess:
            sess.run(v.initializer)
            mgr = cft.train.CheckpointManager(ck, d, max_to_keep=2)
            for i in range(3):
                sess.run(v.assign_add([1.0, 1.0]))
                mgr.save()
    assert tft.train.latest_checkpoint(d) == os.path.join(d, "ckpt-3")
    with tft.Graph().as_default():
        v = tft.Variable([0.0, 0.0], name="v")
        ck = tft.train.Checkpoint(v=v)
        mgr = tft.train.CheckpointManager(ck, d, max_to_keep=2)
        assert mgr.checkpoints == [os.path.join(d, "ckpt-2"), os.path.join(d, "ckpt-3")]
        with tft.Session() as sess:
            ck.restore(mgr.latest_checkpoint).assert_consumed().run_restore_ops(sess)
            np.testing.assert_array_equal(sess.run(v), [4.0, 5.0])
