"""Writes tests/data/tf_graph_defs/: GraphDefs TensorFlow froze (tf_frozen_models.py) as the
binary .pb files tf.train.write_graph(as_text=False) writes (and mlp.pbtxt, a text one), each
with an .npz of its feeds and of TensorFlow's outputs on them (tests/test_import_tf_graph_def.py
checks collflow against those without TensorFlow).  Run from the repository root with
TensorFlow installed:

    TF_USE_LEGACY_KERAS=1 python tests/tf1/make_tf_graph_def_data.py
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "data", "tf_graph_defs")


def _run(tf, gd, feeds, outs):
    with tf.Graph().as_default():
        tf.import_graph_def(gd, name="")
        with tf.Session() as s:
            return s.run(outs, feeds)


def main():
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    sys.path.insert(0, HERE)
    import tf_frozen_models as models
    os.makedirs(OUT, exist_ok=True)
    cases = {name: fn(tf) + (None,) for name, fn in models.MODELS.items()}
    cases["nchw"] = models.nchw(tf)
    for name, (gd, feeds, outs, ref) in cases.items():
        values = _run(tf, ref if ref is not None else gd, feeds, outs)
        tf.io.write_graph(gd, OUT, name + ".pb", as_text=False)
        if name == "mlp":  # one text GraphDef, as write_graph(as_text=True) writes it
            tf.io.write_graph(gd, OUT, name + ".pbtxt", as_text=True)
        arrays = {"feed_names": np.array(list(feeds)), "out_names": np.array(outs)}
        arrays.update({f"feed{i}": v for i, v in enumerate(feeds.values())})
        arrays.update({f"out{i}": np.asarray(v) for i, v in enumerate(values)})
        np.savez(os.path.join(OUT, name + ".npz"), **arrays)
        print(name, os.path.getsize(os.path.join(OUT, name + ".pb")), "bytes")


if __name__ == "__main__":
    main()
