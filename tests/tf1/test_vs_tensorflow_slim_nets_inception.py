"""slim.nets' Inception v1, v2 and v3 against tf_slim.nets (TF 1.x's tf.contrib.slim.nets): with
every variable given the same value in both, the variables (names, shapes, trainable,
MODEL_VARIABLES), end points, logits, input gradients, regularization losses and batch-norm
updates agree (tests/tf1/slim_nets_harness.py).

The options tf_slim lacks (those of the later models/research/slim nets: global_pool,
num_classes 0/None for the pooled features, inception_v2_base's use_separable_conv) are checked
against the same network assembled by hand from tf_slim's pieces; include_root_block and NCHW
against collflow's own default network.  Skipped cleanly without TensorFlow or tf_slim."""
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


def _slim(tf):
    """The slim of the library `tf` is: collflow's contrib.slim, or tf_slim for TensorFlow."""
    if tf is cft:
        return cft.contrib.slim
    import tf_slim
    return tf_slim


def _net(version, fn="", bn_training=False, **kw):
    """Builds inception_<version><fn>(x, **kw) under inception_<version>_arg_scope(); the bases
    get batch norm's is_training (bn_training) through an arg_scope, as the classifiers set it."""
    def build(tf, nets, x):
        slim = _slim(tf)
        with slim.arg_scope(getattr(nets.inception, f"inception_{version}_arg_scope")()):
            with slim.arg_scope([slim.batch_norm], is_training=bn_training):
                return getattr(nets.inception, f"inception_{version}{fn}")(x, **kw)
    return build


# name: (build, input shape, train_step, atol or None for the harness's, seed)
CASES = {
    # v1's classifier pools a fixed 7x7, so 193 is its smallest input.  Its many max pools meet
    # windows whose two largest values differ by ~1e-7 relative, below the two libraries'
    # float32 rounding (~1e-6), so an argmax (and the input gradient with it) may flip locally:
    # a looser atol here than elsewhere
    "v1_eval": (_net("v1", num_classes=5, is_training=False), [1, 193, 193, 3], False, 2e-3, 0),
    "v1_base_mixed_4b_train": (_net("v1", "_base", bn_training=True, final_endpoint="Mixed_4b"), [2, 32, 32, 3],
                               True, None, 4),
    # 64x64 leaves a 2x2 final map: the reduced AvgPool_1a_2x2
    "v2_eval": (_net("v2", num_classes=6, is_training=False), [2, 64, 64, 3], False, None, 0),
    # training-mode batch norm spreads the gradient of a ReLU whose input is within float
    # rounding of 0 (and so may flip) over its whole channel: the training cases are small, and
    # their seeds ones where no ReLU input or max-pool window's top two come closer than ~1e-5
    # (float32 rounding there is ~1e-6).  Batch norm over the few values of v2's last maps
    # (4 x 2x2 here; over 2 values float32 does not even agree with itself) magnifies rounding:
    # TF's own input gradient is 1e-4 of its largest value off float64's, hence the atol
    "v2_train_thin": (_net("v2", num_classes=5, is_training=True, dropout_keep_prob=1.0, depth_multiplier=0.25,
                           min_depth=8), [4, 64, 64, 3], True, 1e-3, 0),
    "v2_base_mixed_4a_thin": (_net("v2", "_base", final_endpoint="Mixed_4a", depth_multiplier=0.3, min_depth=20),
                              [1, 48, 56, 3], False, None, 0),
    # 107 is the smallest height AuxLogits fits in: at 107x139 its Conv2d_2a is reduced to 1x1,
    # and Logits' pool to AvgPool_1a_2x3
    "v3_eval_aux": (_net("v3", num_classes=7, is_training=False, spatial_squeeze=False), [1, 107, 139, 3], False,
                    None, 0),
    "v3_base_mixed_6a_train_thin": (_net("v3", "_base", bn_training=True, final_endpoint="Mixed_6a",
                                         depth_multiplier=0.5, min_depth=8), [2, 75, 75, 3], True, None, 5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_net_matches_tf_slim(name, tf_slim):
    import tf_slim.nets
    build, shape, train_step, atol, seed = CASES[name]
    kw = {} if atol is None else {"atol": atol}
    compare_net(tft, tf_slim.nets, cft, build, shape, seed=seed, train_step=train_step, **kw)


@pytest.mark.parametrize("version,size", [("v1", 224), ("v2", 224), ("v3", 299)])
def test_default_size_graph_matches_tf_slim(version, size, tf_slim):
    """At the default image size with 1000 classes (what released checkpoints hold): the same
    variables, collections and end points (the graphs only; the cases above run them)."""
    import tf_slim.nets
    compare_net(tft, tf_slim.nets, cft, _net(version, is_training=False), [1, size, size, 3], run=False)


# -- the options tf_slim lacks, against the network built by hand from its pieces -------------

_HEAD_NAMES = {  # pool (without global_pool), dropout and logits scopes; global pool op name
    "v1": ("MaxPool_0a_7x7", "Dropout_0b", "Conv2d_0c_1x1", "global_pool"),
    "v2": ("AvgPool_1a_%dx%d", "Dropout_1b", "Conv2d_1c_1x1", "global_pool"),
    "v3": ("AvgPool_1a_%dx%d", "Dropout_1b", "Conv2d_1c_1x1", "GlobalPool"),
}


def _hand_built(version, num_classes, global_pool=False, spatial_squeeze=True, **base_kw):
    """inception_<version>(x, num_classes, global_pool, spatial_squeeze) in eval mode, v3 without
    AuxLogits: for TensorFlow, tf_slim's base with the classifier head written out here."""
    def build(tf, nets, x):
        slim = _slim(tf)
        inception = nets.inception
        with slim.arg_scope(getattr(inception, f"inception_{version}_arg_scope")()):
            if tf is cft:
                extra = {"create_aux_logits": False} if version == "v3" else {}
                return getattr(inception, f"inception_{version}")(
                    x, num_classes=num_classes, is_training=False, global_pool=global_pool,
                    spatial_squeeze=spatial_squeeze, **extra, **base_kw)
            pool_name, dropout_name, logits_name, global_name = _HEAD_NAMES[version]
            with tf.variable_scope(f"Inception{version.upper()}", values=[x]) as sc:
                with slim.arg_scope([slim.batch_norm, slim.dropout], is_training=False):
                    net, end_points = getattr(inception, f"inception_{version}_base")(x, scope=sc, **base_kw)
                    with tf.variable_scope("Logits"):
                        if global_pool:
                            net = tf.reduce_mean(net, [1, 2], keepdims=True, name=global_name)
                            end_points["global_pool"] = net
                        elif version == "v1":
                            net = slim.avg_pool2d(net, [7, 7], stride=1, scope=pool_name)
                        else:
                            kernel = [min(d, k) for d, k in zip(net.shape.as_list()[1:3], (7, 7) if version == "v2"
                                                                else (8, 8))]
                            net = slim.avg_pool2d(net, kernel, padding="VALID", scope=pool_name % tuple(kernel))
                        if not num_classes:
                            return net, end_points
                        net = slim.dropout(net, 0.8, scope=dropout_name)
                        if version == "v3":
                            end_points["PreLogits"] = net
                        logits = slim.conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                                             scope=logits_name)
                        if spatial_squeeze:
                            logits = tf.squeeze(logits, [1, 2], name="SpatialSqueeze")
                    end_points["Logits"] = logits
                    end_points["Predictions"] = slim.softmax(logits, scope="Predictions")
            return logits, end_points
    return build


# name: (build, input shape, run): the numbers of the cheaper v2, the graphs of v1 and v3
HAND_BUILT = {
    "v2_global_pool_non_square": (_hand_built("v2", 4, global_pool=True, depth_multiplier=0.25, min_depth=8),
                                  [1, 64, 96, 3], True),
    "v1_global_pool_no_squeeze": (_hand_built("v1", 3, global_pool=True, spatial_squeeze=False),
                                  [1, 96, 160, 3], False),
    "v3_global_pool_no_aux_no_squeeze": (_hand_built("v3", 6, global_pool=True, spatial_squeeze=False),
                                         [1, 75, 140, 3], False),
    "v2_features": (_hand_built("v2", None), [1, 64, 96, 3], False),
    "v3_features_global_pool": (_hand_built("v3", 0, global_pool=True), [1, 96, 80, 3], False),
}


@pytest.mark.parametrize("name", sorted(HAND_BUILT))
def test_extension_matches_hand_built_tf_slim(name, tf_slim):
    import tf_slim.nets
    build, shape, run = HAND_BUILT[name]
    compare_net(tft, tf_slim.nets, cft, build, shape, run=run)


def test_v2_base_without_separable_conv(tf_slim, monkeypatch):
    """use_separable_conv=False: Conv2d_1a_7x7 a plain conv2d, as tf_slim's with its
    separable_conv2d swapped for one."""
    import tf_slim.nets
    import tf_slim.nets.inception_v2

    @tf_slim.add_arg_scope
    def conv_instead(inputs, num_outputs, kernel_size, depth_multiplier=1, **kw):
        return tf_slim.conv2d(inputs, num_outputs, kernel_size, **kw)

    def build(tf, nets, x):
        slim = _slim(tf)
        kw = {"use_separable_conv": False} if tf is cft else {}
        with slim.arg_scope(nets.inception.inception_v2_arg_scope()):
            with slim.arg_scope([slim.batch_norm], is_training=False):
                return nets.inception.inception_v2_base(x, final_endpoint="Mixed_3c", depth_multiplier=0.5, **kw)

    monkeypatch.setattr(tf_slim.nets.inception_v2.layers, "separable_conv2d", conv_instead)
    info = compare_net(tft, tf_slim.nets, cft, build, [2, 40, 40, 3])
    assert ("InceptionV2/Conv2d_1a_7x7/weights", (7, 7, 3, 32)) in info["vars"]


# -- collflow-only options: include_root_block and NCHW against the default network --------------

def _run(g, fetches, feed, values):
    """Runs `fetches` with every variable set to values[its name less the outer scope]."""
    with cft.Session(graph=g) as s:
        for v in g.get_collection(cft.GraphKeys.GLOBAL_VARIABLES):
            v.load(values[v.op.name.split("/", 1)[1]], s)
        return s.run(fetches, feed)


def _random_values(variables, stddev):
    r = np.random.RandomState(1)
    return {v.op.name.split("/", 1)[1]: r.normal(0, stddev, v.shape.as_list()).astype(np.float32)
            for v in variables}


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_include_root_block_false_is_the_rest_of_the_network(version):
    """The base without its root block, fed the default base's MaxPool_3a_3x3, has the default
    base's variables but the root block's, and gives its Mixed_4b."""
    base = getattr(cft.contrib.slim.nets.inception, f"inception_{version}_base")
    x_val = np.random.RandomState(0).uniform(-1, 1, [1, 32, 32, 3]).astype(np.float32)
    g = cft.Graph()
    with g.as_default():
        x = cft.placeholder(cft.float32, x_val.shape)
        _, full = base(x, final_endpoint="Mixed_4b", scope="Full")
        stem = cft.placeholder(cft.float32, full["MaxPool_3a_3x3"].shape)
        rest, rest_points = base(stem, final_endpoint="Mixed_4b", scope="Rest", include_root_block=False)
        values = _random_values(cft.global_variables(scope="Full"), 0.1)
        rest_names = [v.op.name.split("/", 1)[1] for v in cft.global_variables(scope="Rest")]
    assert rest_names == [n for n in values if n.startswith("Mixed_")]
    after_stem = list(full)[list(full).index("MaxPool_3a_3x3") + 1:]
    assert list(rest_points) == after_stem
    stem_val, want = _run(g, [full["MaxPool_3a_3x3"], full["Mixed_4b"]], {x: x_val}, values)
    got = _run(g, rest, {stem: stem_val}, values)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_v2_base_nchw_matches_nhwc():
    """data_format='NCHW' (with use_separable_conv=False) computes the NHWC network, transposed."""
    base = cft.contrib.slim.nets.inception.inception_v2_base
    x_val = np.random.RandomState(0).uniform(-1, 1, [2, 40, 40, 3]).astype(np.float32)
    g = cft.Graph()
    with g.as_default():
        x = cft.placeholder(cft.float32, x_val.shape)
        kw = dict(final_endpoint="Mixed_4a", depth_multiplier=0.25, use_separable_conv=False)
        nhwc, _ = base(x, scope="A", **kw)
        nchw, _ = base(cft.transpose(x, [0, 3, 1, 2]), data_format="NCHW", scope="B", **kw)
        values = _random_values(cft.global_variables(scope="A"), 0.2)
    a, b = _run(g, [nhwc, nchw], {x: x_val}, values)
    np.testing.assert_allclose(b.transpose(0, 2, 3, 1), a, rtol=1e-4, atol=1e-4)
    with g.as_default():
        with pytest.raises(ValueError, match="separable convolution only supports NHWC"):
            base(x, data_format="NCHW")
        with pytest.raises(ValueError, match="data_format must be either NHWC or NCHW"):
            base(x, data_format="NWHC")


# -- errors, sizes and the small-input kernel --------------------------------------------------

ERRORS = {
    "v1_base_endpoint": ("inception_v1_base", {"final_endpoint": "Mixed_9z"}),
    "v2_base_endpoint": ("inception_v2_base", {"final_endpoint": "Mixed_6a"}),
    "v3_base_endpoint": ("inception_v3_base", {"final_endpoint": "Conv2d_1a_7x7"}),
    "v2_base_depth": ("inception_v2_base", {"depth_multiplier": 0.0}),
    "v3_base_depth": ("inception_v3_base", {"depth_multiplier": -1.0}),
    "v2_depth": ("inception_v2", {"depth_multiplier": 0.0, "num_classes": 3}),
    "v3_depth": ("inception_v3", {"depth_multiplier": -0.5, "num_classes": 3}),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_tf_slim(name, tf_slim):
    import tf_slim.nets
    fn, kw = ERRORS[name]
    messages = []
    for tf, nets in ((tft, tf_slim.nets), (cft, cft.contrib.slim.nets)):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [1, 75, 75, 3])
            with pytest.raises(ValueError) as err:
                getattr(nets.inception, fn)(x, **kw)
            messages.append(str(err.value))
    assert messages[1] == messages[0]


def test_sizes_and_reduced_kernel(tf_slim):
    """default_image_size, and the small-input kernel (as given when a dimension is unknown)."""
    import tf_slim.nets.inception_v2
    import tf_slim.nets.inception_v3
    from collflow.contrib.nets import inception_v2, inception_v3
    for v, size in (("v1", 224), ("v2", 224), ("v3", 299)):
        assert getattr(cft.contrib.slim.nets.inception, f"inception_{v}").default_image_size == size
    for shape, kernel in (([1, 5, 9, 3], [7, 7]), ([2, None, 4, 3], [8, 8]), ([1, 10, 10, 3], [7, 7])):
        with tft.Graph().as_default():
            t = tft.placeholder(tft.float32, shape)
            want = [m._reduced_kernel_size_for_small_input(t, kernel)
                    for m in (tf_slim.nets.inception_v2, tf_slim.nets.inception_v3)]
        with cft.Graph().as_default():
            t = cft.placeholder(cft.float32, shape)
            got = [m._reduced_kernel_size_for_small_input(t, kernel) for m in (inception_v2, inception_v3)]
        assert got == want, shape


def test_reuse_shares_the_variables():
    """reuse=True builds the same network on the same variables (TF-Slim's scope contract)."""
    nets = cft.contrib.slim.nets
    with cft.Graph().as_default():
        x = cft.placeholder(cft.float32, [1, 64, 64, 3])
        nets.inception.inception_v2(x, num_classes=3, depth_multiplier=0.25)
        n = len(cft.global_variables())
        nets.inception.inception_v2(x, num_classes=3, depth_multiplier=0.25, reuse=True)
        assert len(cft.global_variables()) == n
