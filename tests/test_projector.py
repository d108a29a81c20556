"""tf.contrib.tensorboard.plugins.projector: the config messages, `embeddings.add()`, the text
file visualize_embeddings writes (TensorBoard's projector_config.pbtxt) and the word2vec
tutorial's use of it."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.contrib.tensorboard.plugins import projector
from collflow.summary.proto_text import merge


def test_config_text_format_and_round_trip(tmp_path):
    config = projector.ProjectorConfig()
    config.model_checkpoint_path = "/ckpt/model.ckpt-10"
    emb = config.embeddings.add()
    emb.tensor_name = "embeddings/w:0"
    emb.metadata_path = "meta \"data\".tsv"
    emb.sprite.image_path = "sprite.png"
    emb.sprite.single_image_dim.extend([28, 28])
    second = config.embeddings.add(tensor_name="b", tensor_shape=[10, 3])
    assert second is config.embeddings[1] and len(config.embeddings) == 2
    path = projector.visualize_embeddings(str(tmp_path), config)
    assert path == os.path.join(str(tmp_path), "projector_config.pbtxt")
    with open(path) as f:
        text = f.read()
    assert text == ('model_checkpoint_path: "/ckpt/model.ckpt-10"\n'
                    'embeddings {\n  tensor_name: "embeddings/w:0"\n  metadata_path: "meta \\"data\\".tsv"\n'
                    '  sprite {\n    image_path: "sprite.png"\n    single_image_dim: 28\n    single_image_dim: 28\n'
                    '  }\n}\n'
                    'embeddings {\n  tensor_name: "b"\n  tensor_shape: 10\n  tensor_shape: 3\n}\n')
    back = merge(text, projector.ProjectorConfig())
    assert back == config
    assert projector.ProjectorConfig.FromString(config.SerializeToString()) == config


def test_word2vec_tutorial_projector(tmp_path):
    logdir = str(tmp_path / "log")
    words = ["the", "cat", "sat", "on", "mat"]
    with tf.Graph().as_default():
        embeddings = tf.Variable(tf.random_uniform([5, 4], -1.0, 1.0), name="embeddings")
        writer = tf.summary.FileWriter(logdir)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with open(os.path.join(logdir, "metadata.tsv"), "w") as f:
                f.write("\n".join(words) + "\n")
            saver.save(sess, os.path.join(logdir, "model.ckpt"))
            config = projector.ProjectorConfig()
            embedding_conf = config.embeddings.add()
            embedding_conf.tensor_name = embeddings.name
            embedding_conf.metadata_path = os.path.join(logdir, "metadata.tsv")
            projector.visualize_embeddings(writer, config)
            want = sess.run(embeddings)
        writer.close()
    with open(os.path.join(logdir, "projector_config.pbtxt")) as f:
        conf = merge(f.read(), projector.ProjectorConfig())
    name = conf.embeddings[0].tensor_name
    assert name == "embeddings:0"
    # the projector finds the tensor in the logdir's latest checkpoint by that name
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(logdir))
    np.testing.assert_array_equal(reader.get_tensor(name.split(":")[0]), want)


def test_errors_and_repeated_add_on_other_messages(tmp_path):
    with pytest.raises(TypeError, match="ProjectorConfig"):
        projector.visualize_embeddings(str(tmp_path), {"embeddings": []})
    g = tf.GraphDef()
    node = g.node.add(name="a", op="NoOp")
    assert g.node == [node] and tf.GraphDef.FromString(g.SerializeToString()).node[0].name == "a"
    with pytest.raises(ValueError, match='has no "bogus" field'):
        projector.EmbeddingInfo(bogus=1)


def test_repeated_fields_keep_add_after_assignment_and_take_none():
    from collflow.summary.proto import NodeDef, Summary
    g = tf.GraphDef()
    g.node = [NodeDef(name="a")]
    g.node.add(name="b")
    assert [n.name for n in g.node] == ["a", "b"]
    assert Summary(value=None).value == []
    assert tf.GraphDef.FromString(g.SerializeToString()) == g
