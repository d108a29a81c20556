"""Idioms from real TF1 programs that broke them (found running google-research/bert and the PTB
word-LM tutorial under collflow): a one-element axis list to expand_dims, a strided_slice whose
begin/end lists mix ints and scalar tensors, and the global step created inside a variable
scope.  Closed-form checks; no TensorFlow needed."""
import numpy as np
import pytest

import collflow.compat.v1 as tf


def _run(t, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(t, feed)


def test_expand_dims_one_element_axis_list():
    # BERT's embedding_lookup: tf.expand_dims(input_ids, axis=[-1])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [2, 3])
        y = tf.expand_dims(x, axis=[-1])
        z = tf.expand_dims(x, np.array([0]))
        assert y.shape.as_list() == [2, 3, 1] and z.shape.as_list() == [1, 2, 3]
        xv = np.arange(6, dtype=np.int32).reshape(2, 3)
        yv, zv = _run([y, z], {x: xv})
        np.testing.assert_array_equal(yv, xv[..., None])
        np.testing.assert_array_equal(zv, xv[None])
        with pytest.raises(ValueError, match="single value"):
            tf.expand_dims(x, [0, 1])


def test_strided_slice_bounds_mixing_ints_and_tensors():
    # the PTB producer: tf.strided_slice(data, [0, i * num_steps], [batch_size, (i + 1) * num_steps])
    with tf.Graph().as_default():
        data = tf.constant(np.arange(30, dtype=np.int32).reshape(3, 10))
        i = tf.placeholder(tf.int32, [])
        x = tf.strided_slice(data, [0, i * 3], [3, (i + 1) * 3])
        y = tf.strided_slice(data, [0, i * 3 + 1], [3, (i + 1) * 3 + 1], [1, 1])
        x.set_shape([3, 3])
        d = np.arange(30).reshape(3, 10)
        for k in range(3):
            xv, yv = _run([x, y], {i: k})
            np.testing.assert_array_equal(xv, d[:, 3 * k:3 * k + 3])
            np.testing.assert_array_equal(yv, d[:, 3 * k + 1:3 * k + 4])


def test_global_step_takes_the_variable_scope_not_the_name_scope():
    # TF creates it with get_variable under name_scope(None): the variable scope stays
    with tf.Graph().as_default():
        with tf.variable_scope("Model"), tf.name_scope("Train"):
            gs = tf.train.get_or_create_global_step()
        assert gs.name == "Model/global_step:0"
        assert tf.train.get_global_step() is gs and gs.dtype == tf.int64 and not gs.trainable
        assert tf.get_collection(tf.GraphKeys.GLOBAL_STEP) == [gs]
        with tf.variable_scope("Model", reuse=True):
            assert tf.train.get_or_create_global_step() is gs
        assert _run(gs) == 0
    with tf.Graph().as_default():
        with tf.control_dependencies([tf.no_op()]):
            gs = tf.train.create_global_step()
        assert gs.name == "global_step:0" and _run(gs) == 0
        with pytest.raises(ValueError):
            tf.train.create_global_step()


def test_cast_keeps_sparse_tensors_and_indexed_slices():
    # the CTC example: tf.edit_distance(tf.cast(decoded[0], tf.int32), targets)
    with tf.Graph().as_default():
        sp = tf.SparseTensor([[0, 1], [1, 0]], [1.5, -2.0], [2, 3])
        c = tf.cast(sp, tf.int32)
        assert isinstance(c, tf.SparseTensor) and c.dtype == tf.int32
        assert c.values.op.type == "Cast" and c.indices is sp.indices
        emb = tf.Variable(np.ones((4, 2), np.float32))
        g = tf.gradients(tf.reduce_sum(tf.gather(emb, [1, 3])), emb)[0]
        gc = tf.cast(g, tf.float64)
        assert isinstance(gc, tf.IndexedSlices) and gc.dtype == tf.float64
        cv, gv = _run([c, gc])
        np.testing.assert_array_equal(cv.values, [1, -2])
        np.testing.assert_array_equal(cv.indices, [[0, 1], [1, 0]])
        np.testing.assert_array_equal(cv.dense_shape, [2, 3])
        assert gv.values.dtype == np.float64
        np.testing.assert_array_equal(gv.indices, [1, 3])


def test_nested_scope_names_may_start_with_underscore():
    # the spatial transformer: with tf.variable_scope('_transform') inside 'SpatialTransformer'
    with tf.Graph().as_default():
        with tf.variable_scope("SpatialTransformer"):
            with tf.variable_scope("_transform"):
                with tf.name_scope("-x"):
                    c = tf.constant(1.0, name="c")
                v = tf.get_variable("v", [])
        assert c.name == "SpatialTransformer/_transform/-x/c:0"
        assert v.name == "SpatialTransformer/_transform/v:0"
        # at the root, and with a character TF never allows, still refused
        for bad_root in ("_root", "-root"):
            with pytest.raises(tf.errors.InvalidArgumentError, match="at the root"):
                with tf.name_scope(bad_root):
                    pass
        with tf.name_scope("outer"):
            with pytest.raises(tf.errors.InvalidArgumentError, match="not a valid scope"):
                with tf.name_scope("a b"):
                    pass
        with tf.name_scope("outer2"), tf.name_scope(None):  # reset to the root
            with pytest.raises(tf.errors.InvalidArgumentError, match="at the root"):
                with tf.name_scope("_r"):
                    pass


def test_scalar_variables_are_not_partitioned():
    # TF partitions only variables of rank >= 1: a scalar (the global step created under a
    # partitioned scope) is a plain variable
    with tf.Graph().as_default():
        with tf.variable_scope("p", partitioner=tf.fixed_size_partitioner(2)):
            gs = tf.train.get_or_create_global_step()
            s = tf.get_variable("s", [], initializer=tf.constant_initializer(3.0),
                                partitioner=tf.fixed_size_partitioner(3))
        assert gs.name == "p/global_step:0" and s.name == "p/s:0" and s.shape.as_list() == []
        assert _run([gs, s]) == [0, 3.0]


def test_init_from_checkpoint_reads_the_file_once(tmp_path):
    # BERT's fine-tuning maps ~200 variables: one Restore for all of them, not one per variable
    # (each Restore run opens and checks the whole file)
    with tf.Graph().as_default():
        with tf.variable_scope("bert"):
            ws = [tf.get_variable(f"w{i}", [2, 3], initializer=tf.constant_initializer(float(i)))
                  for i in range(5)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    with tf.Graph().as_default():
        with tf.variable_scope("bert"):
            vs = [tf.get_variable(f"w{i}", [2, 3]) for i in range(5)]
        head = tf.get_variable("head", [3], initializer=tf.ones_initializer())
        tf.train.init_from_checkpoint(path, {"bert/": "bert/", "bert/w4": vs[0]})  # a later entry wins
        restores = [op for op in tf.get_default_graph().get_operations() if op.type == "Restore"]
        assert len(restores) == 1 and len(restores[0].outputs) == 4  # bert/w0 is not read
        with tf.Session() as sess:
            sess.run(vs[2].initializer)  # one variable's initializer alone still works
            np.testing.assert_array_equal(sess.run(vs[2]), np.full((2, 3), 2.0))
            sess.run(tf.global_variables_initializer())
            got = sess.run(vs + [head])
        assert [float(v[0, 0]) for v in got[:5]] == [4.0, 1.0, 2.0, 3.0, 4.0]
        np.testing.assert_array_equal(got[5], np.ones(3))
    assert len(ws) == 5


def test_scatter_nd_and_sparse_to_dense_shapes_mixing_ints_and_tensors():
    # a pointer-generator's copy distribution: tf.scatter_nd(indices, attn, [batch_size, vocab])
    # with batch_size = tf.shape(x)[0]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2])
        b = tf.shape(x)[0]
        s = tf.scatter_nd([[0, 1], [1, 3], [0, 1]], [1.0, 2.0, 3.0], [b, 4])
        d = tf.sparse_to_dense([[0, 1], [1, 2]], [b, 3], [5.0, 6.0])
        sv, dv = _run([s, d], {x: np.zeros((2, 2), np.float32)})
        np.testing.assert_array_equal(sv, [[0, 4, 0, 0], [0, 0, 0, 2]])
        np.testing.assert_array_equal(dv, [[0, 5, 0], [0, 0, 6]])


def test_slice_with_run_time_begin_keeps_the_sizes_it_is_given():
    # TF's shape inference: a size given as an int is the dimension, whatever begin is
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, None, 4])
        i = tf.placeholder(tf.int32, [])
        a = tf.slice(x, [0, i, 0], [-1, 1, -1])
        b = tf.slice(x, [0, i, 1], [2, -1, 2])
        assert a.shape.as_list() == [None, 1, 4] and b.shape.as_list() == [2, None, 2]
        xv = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        av, bv = _run([a, b], {x: xv, i: 1})
        np.testing.assert_array_equal(av, xv[:, 1:2, :])
        np.testing.assert_array_equal(bv, xv[:2, 1:, 1:3])
