"""By-hand tests of tf.keras's layer lists, summary tables and masks beyond the recurrent layers."""
import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.keras.layers import mask_of

L = tf.keras.layers
K = tf.keras.backend


def test_functional_layers_list_input_layers_and_sequential_does_not():
    with tf.Graph().as_default():
        x = L.Input((3,), name="x")
        m = tf.keras.Model(x, L.Dense(2)(L.Dense(4)(x)))
        assert [type(la).__name__ for la in m.layers] == ["InputLayer", "Dense", "Dense"]
        assert m.get_layer(index=0).name == "x" and m.get_layer("x").output is x
        assert len(m.weights) == 4 and m.get_config()["layers"][0]["class_name"] == "InputLayer"
        s = tf.keras.Sequential([L.Dense(2, input_shape=(3,))])
        assert [type(la).__name__ for la in s.layers] == ["Dense"]
        assert s.inputs[0].op.name == s.layers[0].name + "_input"


def test_summary_tables():
    with tf.Graph().as_default():
        x = L.Input((3,), name="x")
        a, b = L.Dense(2)(x), L.Dense(2)(x)
        m = tf.keras.Model(x, L.Add()([a, b]))
        lines = []
        m.summary(print_fn=lines.append)
        assert lines[2].split() == ["Layer", "(type)", "Output", "Shape", "Param", "#", "Connected", "to"]
        assert all(len(line) == 98 for line in lines[1:-4])
        assert " ['dense[0][0]'," in "".join(lines) and lines[-4] == "Total params: 16 (64.00 Byte)"
        chain = tf.keras.Model(x, L.Dense(1)(x))
        lines = []
        chain.summary(print_fn=lines.append)
        assert "Connected" not in lines[2] and len(lines[1]) == 65


def test_merge_masks_and_masked_average():
    ids = np.array([[1, 2, 0], [3, 0, 0]], np.float32)
    with tf.Graph().as_default():
        x = L.Input((3,))
        e = L.Embedding(4, 2, mask_zero=True)(x)
        added = L.Add()([e, L.Dense(2)(e)])
        pooled = L.GlobalAveragePooling1D()(added)
        assert mask_of(pooled) is None
        sess = K.get_session()
        mask, seq, avg = sess.run([mask_of(added), added, pooled], {x: ids})
        np.testing.assert_array_equal(mask, ids != 0)
        np.testing.assert_allclose(avg[0], seq[0, :2].mean(0), rtol=1e-6)
        np.testing.assert_allclose(avg[1], seq[1, 0], rtol=1e-6)


def test_lambda_masks_and_user_layers():
    class Keep(L.Layer):
        supports_masking = True

        def call(self, inputs):
            return inputs

    class Plain(L.Layer):
        def call(self, inputs):
            return inputs * 2.0

    with tf.Graph().as_default():
        e = L.Embedding(4, 2, mask_zero=True)(L.Input((3,)))
        assert mask_of(L.Lambda(lambda t: t, mask=lambda i, m: m)(e)) is mask_of(e)
        assert mask_of(Keep()(e)) is mask_of(e)
        # a layer without mask support drops the mask (TF 1.15's __call__); compute_mask itself refuses it
        assert mask_of(Plain()(e)) is None
        assert mask_of(L.Lambda(lambda t: t * 2.0)(e)) is None
        assert mask_of(L.GlobalMaxPooling1D()(e)) is None
        with pytest.raises(TypeError, match="does not support masking"):
            Plain().compute_mask(e, mask_of(e))
