"""slim.nets' VGG, AlexNet v2, OverFeat and ResNet v1/v2 against tf_slim.nets (TF 1.x's
tf.contrib.slim.nets): with every variable given the same value in both, the variables (names,
shapes, trainable, MODEL_VARIABLES), end points, logits, input gradients, regularization losses
and batch-norm updates agree (tests/tf1/slim_nets_harness.py).  Skipped cleanly without
TensorFlow or tf_slim."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402
from slim_nets_harness import compare_net  # noqa: E402
from test_vs_tensorflow_feature_columns_layers_fuzz import tf_slim  # noqa: E402,F401  (the patched tf_slim)

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _resnet(version, depth, arg_scope=True, **kw):
    def build(tf, nets, x):
        mod = getattr(nets, f"resnet_{version}")
        fn = getattr(mod, f"resnet_{version}_{depth}")
        scope = tf.contrib.slim.arg_scope(mod.resnet_arg_scope()) if tf is cft else tf_arg_scope(mod)
        if not arg_scope:
            return fn(x, **kw)
        with scope:
            return fn(x, **kw)
    return build


def _narrow(version, **kw):
    def build(tf, nets, x):
        mod = getattr(nets, f"resnet_{version}")
        block = getattr(mod, f"resnet_{version}_block")
        blocks = [block("block1", 8, 2, 2), block("block2", 16, 3, 2), block("block3", 16, 2, 1)]
        with (tf.contrib.slim.arg_scope(mod.resnet_arg_scope()) if tf is cft else tf_arg_scope(mod)):
            return getattr(mod, f"resnet_{version}")(x, blocks, scope=f"narrow_{version}", **kw)
    return build


def tf_arg_scope(mod):
    import tf_slim
    return tf_slim.arg_scope(mod.resnet_arg_scope())


def _arg_scoped(module, net, scope_fn, **kw):
    def build(tf, nets, x):
        mod = getattr(nets, module)
        if tf is cft:
            arg_scope = cft.contrib.slim.arg_scope
        else:
            import tf_slim
            arg_scope = tf_slim.arg_scope
        with arg_scope(getattr(mod, scope_fn)()):
            return getattr(mod, net)(x, **kw)
    return build


CASES = {
    "resnet_v1_50_eval": (_resnet("v1", 50, num_classes=7, is_training=False), [2, 64, 64, 3], False),
    # training mode on narrow blocks: batch statistics over a few values amplify rounding layer by
    # layer, so a full-width ResNet-50 agrees only to ~1e-2 there (its forward to 1e-4)
    "resnet_v1_narrow_train": (_narrow("v1", num_classes=5, is_training=True), [3, 33, 33, 3], True),
    "resnet_v1_50_features": (_resnet("v1", 50, is_training=False, global_pool=False), [1, 40, 48, 3], False),
    "resnet_v1_50_output_stride_8": (_resnet("v1", 50, num_classes=3, is_training=False, global_pool=False,
                                             output_stride=8), [1, 65, 65, 3], False),
    "resnet_v2_50_eval": (_resnet("v2", 50, num_classes=7, is_training=False), [2, 64, 64, 3], False),
    "resnet_v2_narrow_train": (_narrow("v2", num_classes=4, is_training=True), [2, 32, 32, 3], True),
    "resnet_v2_narrow_train_output_stride": (_narrow("v2", num_classes=4, is_training=True, output_stride=8),
                                             [2, 32, 32, 3], True),
    "resnet_v2_50_output_stride_16": (_resnet("v2", 50, num_classes=3, is_training=False,
                                              output_stride=16), [1, 33, 33, 3], False),
    "resnet_v2_50_no_arg_scope": (_resnet("v2", 50, arg_scope=False, num_classes=3), [1, 32, 32, 3], False),
    "alexnet_v2": (_arg_scoped("alexnet", "alexnet_v2", "alexnet_v2_arg_scope", num_classes=6, is_training=False),
                   [1, 224, 224, 3], False),
    "alexnet_v2_fully_conv": (_arg_scoped("alexnet", "alexnet_v2", "alexnet_v2_arg_scope", num_classes=4,
                                          spatial_squeeze=False, dropout_keep_prob=1.0), [1, 256, 288, 3], False),
    "overfeat": (_arg_scoped("overfeat", "overfeat", "overfeat_arg_scope", num_classes=6, is_training=False),
                 [1, 231, 231, 3], False),
    "vgg_a": (_arg_scoped("vgg", "vgg_a", "vgg_arg_scope", num_classes=5, is_training=False), [1, 224, 224, 3],
              False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_net_matches_tf_slim(name, tf_slim):
    import tf_slim.nets
    build, shape, train = CASES[name]
    compare_net(tft, tf_slim.nets, cft, build, shape, seed=len(name), train_step=train)


# the deeper and wider variants: the same variables, collections and end points (built, not run)
STRUCTURE = {
    **{f"resnet_{v}_{d}": (_resnet(v, d, num_classes=10), [1, 64, 64, 3]) for v in ("v1", "v2")
       for d in (101,)},
    "resnet_v1_101_output_stride_16": (_resnet("v1", 101, output_stride=16, global_pool=False), [1, 65, 65, 3]),
    "resnet_v2_50_no_root_block": (lambda tf, nets, x: nets.resnet_v2.resnet_v2(
        x, [nets.resnet_v2.resnet_v2_block("block1", 8, 2, 2), nets.resnet_v2.resnet_v2_block("block2", 16, 2, 1)],
        num_classes=3, include_root_block=False, scope="tiny"), [2, 16, 16, 8]),
    "vgg_16": (_arg_scoped("vgg", "vgg_16", "vgg_arg_scope", num_classes=5), [1, 224, 224, 3]),
    "vgg_19": (_arg_scoped("vgg", "vgg_19", "vgg_arg_scope", num_classes=5, spatial_squeeze=False), [1, 256, 256, 3]),
}


@pytest.mark.parametrize("name", sorted(STRUCTURE))
def test_net_structure_matches_tf_slim(name, tf_slim):
    import tf_slim.nets
    build, shape = STRUCTURE[name]
    compare_net(tft, tf_slim.nets, cft, build, shape, run=False)


def test_resnet_unreachable_output_stride_raises_as_tf_slim(tf_slim):
    import tf_slim.nets
    for tf, nets in ((tft, tf_slim.nets), (cft, cft.contrib.slim.nets)):
        for stride in (6, 64):
            with tf.Graph().as_default():
                with pytest.raises(ValueError, match="output_stride"):
                    nets.resnet_v1.resnet_v1_50(tf.placeholder(tf.float32, [1, 64, 64, 3]), output_stride=stride)


def test_slim_nets_import_paths():
    import importlib
    for mod in ("alexnet", "overfeat", "vgg", "resnet_utils", "resnet_v1", "resnet_v2"):
        m = importlib.import_module(f"collflow.contrib.slim.nets.{mod}")
        assert m is getattr(cft.contrib.slim.nets, mod)
    from collflow.contrib.slim.nets import inception
    assert inception.inception_v3 is cft.contrib.slim.nets.inception.inception_v3
    vgg = cft.contrib.slim.nets.vgg
    assert vgg.vgg_d is vgg.vgg_16 and vgg.vgg_e is vgg.vgg_19
    assert cft.contrib.slim.utils.convert_collection_to_dict is cft.contrib.layers.utils.convert_collection_to_dict


def test_fine_tune_from_tensorflow_checkpoint(tf_slim, tmp_path):
    """The slim fine-tuning program: TF writes a ResNet-50 v1 checkpoint (1000 classes); collflow
    builds the net with 7 classes, restores all but the logits with assign_from_checkpoint_fn
    over get_variables_to_restore(exclude=...), and gets TF's features; a few SGD steps on the
    new logits then lower the loss."""
    import tf_slim.nets
    r = np.random.RandomState(0)
    x_val = r.uniform(-1, 1, [2, 64, 64, 3]).astype(np.float32)
    labels = np.array([1, 4])
    prefix = str(tmp_path / "resnet_v1_50.ckpt")
    with tft.Graph().as_default():
        x = tft.placeholder(tft.float32, [2, 64, 64, 3])
        with tf_slim.arg_scope(tf_slim.nets.resnet_v1.resnet_arg_scope()):
            _, ep = tf_slim.nets.resnet_v1.resnet_v1_50(x, 1000, is_training=False)
        with tft.Session() as s:
            s.run(tft.global_variables_initializer())
            want = s.run(ep["resnet_v1_50/block4"], {x: x_val})
            tft.train.Saver().save(s, prefix)
    slim = cft.contrib.slim
    with cft.Graph().as_default():
        x = cft.placeholder(cft.float32, [2, 64, 64, 3])
        with slim.arg_scope(slim.nets.resnet_v1.resnet_arg_scope()):
            logits, ep = slim.nets.resnet_v1.resnet_v1_50(x, 7, is_training=False)
        logits = cft.squeeze(logits, [1, 2])
        restore = slim.get_variables_to_restore(exclude=["resnet_v1_50/logits"])
        init_fn = slim.assign_from_checkpoint_fn(prefix, restore)
        loss = cft.losses.sparse_softmax_cross_entropy(labels, logits)
        head = slim.get_variables("resnet_v1_50/logits")
        lr = cft.placeholder(cft.float32, [])
        step = cft.train.GradientDescentOptimizer(lr).minimize(loss, var_list=head)
        with cft.Session() as s:
            s.run(cft.global_variables_initializer())
            init_fn(s)
            got = s.run(ep["resnet_v1_50/block4"], {x: x_val})
            # a step that moves the logits by less than one: the random net's features are large
            pooled = got.mean(axis=(1, 2))
            rate = 0.5 / float((pooled ** 2).sum(axis=1).max())
            losses = [s.run([loss, step], {x: x_val, lr: rate})[0] for _ in range(5)]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("depth,units", [(152, (3, 8, 36, 3)), (200, (3, 24, 36, 3))])
def test_deeper_resnets_have_tf_slims_units(depth, units):
    # 101 is compared with tf_slim above; 152 and 200 differ from it only in units per block
    for version in ("v1", "v2"):
        with cft.Graph().as_default():
            fn = getattr(getattr(cft.contrib.slim.nets, f"resnet_{version}"), f"resnet_{version}_{depth}")
            fn(cft.placeholder(cft.float32, [1, 32, 32, 3]), num_classes=2)
            names = [v.op.name for v in cft.global_variables()]
        for b, n in enumerate(units, start=1):
            got = {name.split("/")[2] for name in names if name.split("/")[1] == f"block{b}"}
            assert got == {f"unit_{i}" for i in range(1, n + 1)}, (version, depth, b)
