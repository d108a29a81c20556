"""TF1's tf.train utilities: write_graph / as_graph_def / sess.graph_def (nodes without
attributes), get_checkpoint_mtimes, remove_checkpoint, assert_global_step, basic_train_loop,
GlobalStepWaiterHook."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as cf


def test_graph_def_and_write_graph(tmp_path):
    with cf.Graph().as_default() as g:
        a = cf.constant(1.0, name="a")
        b = cf.add(a, a, name="b")
        with cf.control_dependencies([b]):
            cf.identity(a, name="c")
        gd = g.as_graph_def()
        with cf.Session() as s:
            assert s.graph_def.SerializeToString() == gd.SerializeToString()
    nodes = {n.name: n for n in gd.node}
    assert nodes["b"].op == "Add" and list(nodes["b"].input) == ["a", "a"] and "^b" in nodes["c"].input
    text = cf.train.write_graph(g, str(tmp_path), "graph.pbtxt")
    with open(text) as f:
        body = f.read()
    assert 'name: "b"' in body and 'op: "Add"' in body and 'input: "^b"' in body
    binary = cf.train.write_graph(gd, str(tmp_path / "sub"), "graph.pb", as_text=False)
    with open(binary, "rb") as f:
        assert cf.GraphDef.FromString(f.read()).SerializeToString() == gd.SerializeToString()
    with pytest.raises(TypeError):
        cf.train.write_graph(3, str(tmp_path), "x")


def test_checkpoint_mtimes_and_remove(tmp_path):
    with cf.Graph().as_default():
        v = cf.Variable(1.0)
        saver = cf.train.Saver()
        with cf.Session() as s:
            s.run(v.initializer)
            p1 = saver.save(s, str(tmp_path / "m.ckpt"), global_step=1)
            p2 = saver.save(s, str(tmp_path / "m.ckpt"), global_step=2)
    assert len(cf.train.get_checkpoint_mtimes([p1, p2, str(tmp_path / "none")])) == 2
    cf.train.remove_checkpoint(p2)
    assert not cf.train.checkpoint_exists(p2) and cf.train.checkpoint_exists(p1)
    assert cf.train.latest_checkpoint(str(tmp_path)) == p1


def test_assert_global_step_and_basic_train_loop():
    with cf.Graph().as_default():
        step = cf.train.get_or_create_global_step()
        cf.train.assert_global_step(step)
        with pytest.raises(TypeError, match="integer"):
            cf.train.assert_global_step(cf.Variable(1.0))
        with pytest.raises(TypeError, match="scalar"):
            cf.train.assert_global_step(cf.Variable([1, 2]))
        inc = cf.assign_add(step, 1)
        sv = cf.train.Supervisor(logdir=None)
        calls = []

        def train_step(sess, limit):
            calls.append(sess.run(inc))
            if calls[-1] >= limit:
                sv.request_stop()
        cf.train.basic_train_loop(sv, train_step, args=[3])
    assert calls == [1, 2, 3]


def test_global_step_waiter_hook():
    import threading
    import types
    with cf.Graph().as_default():
        step = cf.train.get_or_create_global_step()
        inc = cf.assign_add(step, 1)
        with cf.train.MonitoredSession(hooks=[cf.train.GlobalStepWaiterHook(0)]) as s:
            s.run(inc)                          # nothing to wait for
        hook = cf.train.GlobalStepWaiterHook(2)
        hook.begin()
        with cf.Session() as sess:
            sess.run(step.initializer)

            def bump():
                import time
                time.sleep(0.6)
                sess.run(inc)
                sess.run(inc)
            t = threading.Thread(target=bump)
            t.start()
            hook.before_run(types.SimpleNamespace(session=sess))   # blocks until the step reaches 2
            assert sess.run(step) >= 2
            t.join()
