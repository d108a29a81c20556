"""collflow's tf.import_graph_def of GraphDefs TensorFlow froze (its convert_variables_to_constants)
against TensorFlow running the same GraphDef: an MLP, a CNN with batch norm, depthwise and
transposed convolutions and resizes, an embedding model with top_k, a model of strided slices,
pads, splits and concats, unrolled LSTM/GRU cells with batch matmuls and control inputs, and an
NCHW conv net with EXPLICIT padding (checked against TF's run of its NHWC twin: TF's CPU
kernels do not run NCHW).  Each GraphDef reaches collflow as TF's serialized bytes, as TF's
GraphDef object, and as a .pb file tf.io.write_graph wrote."""
import os
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow.compat.v1")
tf.disable_eager_execution()

import collflow.compat.v1 as cf  # noqa: E402

# TF's tf.layers and rnn_cell warn that they are deprecated (the models are TF1 code on purpose)
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tf_frozen_models as models  # noqa: E402


def _tf_run(gd, feeds, outs):
    with tf.Graph().as_default():
        tf.import_graph_def(gd, name="")
        with tf.Session() as s:
            return s.run(outs, feeds)


def _cf_run(gd, feeds, outs, name="import"):
    with cf.Graph().as_default() as g:
        res = cf.import_graph_def(gd, return_elements=outs, name=name)
        pre = name + "/" if name else ""
        with cf.Session(graph=g) as s:
            return s.run(res, {pre + k: v for k, v in feeds.items()})


def _close(got, want):
    for a, b in zip(got, want):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_frozen_model_bytes(name):
    if name == "keras":
        pytest.importorskip("tf_keras")
    gd, feeds, outs = models.MODELS[name](tf)
    want = _tf_run(gd, feeds, outs)
    parsed = cf.GraphDef.FromString(gd.SerializeToString())
    _close(_cf_run(parsed, feeds, outs), want)


def test_nchw_and_explicit_padding():
    gd, feeds, outs, nhwc = models.nchw(tf)
    want = _tf_run(nhwc, feeds, outs)
    _close(_cf_run(cf.GraphDef.FromString(gd.SerializeToString()), feeds, outs, name=""), want)


def test_tf_graph_def_object_and_written_pb(tmp_path):
    gd, feeds, outs = models.mlp(tf)
    want = _tf_run(gd, feeds, outs)
    _close(_cf_run(gd, feeds, outs), want)  # TF's own GraphDef message, handed over as is
    tf.io.write_graph(gd, str(tmp_path), "frozen.pb", as_text=False)
    read = cf.GraphDef()
    with cf.gfile.GFile(str(tmp_path / "frozen.pb"), "rb") as f:
        read.ParseFromString(f.read())
    _close(_cf_run(read, feeds, outs, name="net"), want)
    # collflow's parse serializes TF's nodes back byte for byte
    back = tf.GraphDef.FromString(read.SerializeToString())
    assert list(back.node) == list(gd.node)


def test_input_map_like_tensorflow():
    gd, feeds, outs = models.embedding(tf)
    ids = feeds["ids:0"][::-1].copy()
    with tf.Graph().as_default():
        (t,) = tf.import_graph_def(gd, input_map={"ids:0": tf.constant(ids)}, return_elements=["logits:0"])
        with tf.Session() as s:
            want = s.run(t)
    with cf.Graph().as_default():
        (c,) = cf.import_graph_def(cf.GraphDef.FromString(gd.SerializeToString()),
                                   input_map={"ids:0": cf.constant(ids)}, return_elements=["logits:0"])
        assert c.name == t.name
        with cf.Session() as s:
            got = s.run(c)
    _close([got], [want])


def test_text_graph_def(tmp_path):
    # write_graph(as_text=True)'s .pbtxt read by collflow's text-format reader: TF's nodes exactly
    from collflow.summary.proto_text import merge
    gd, feeds, outs = models.cnn(tf)
    want = _tf_run(gd, feeds, outs)
    tf.io.write_graph(gd, str(tmp_path), "frozen.pbtxt", as_text=True)
    with cf.gfile.GFile(str(tmp_path / "frozen.pbtxt"), "r") as f:
        read = merge(f.read(), cf.GraphDef())
    back = tf.GraphDef.FromString(read.SerializeToString())
    for a, b in zip(back.node, gd.node):
        b.ClearField("experimental_type")  # a NodeDef field collflow's messages do not keep
        assert a == b
    _close(_cf_run(read, feeds, outs), want)
