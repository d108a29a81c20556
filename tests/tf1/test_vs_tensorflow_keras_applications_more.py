"""Differential tests of tf.keras.applications' InceptionResNetV2 and NASNet (Mobile, Large)
against tf_keras (TF1 graph mode), as test_vs_tensorflow_keras_applications.py checks the
other models (its helpers are reused).  Built with weights=None in both libraries: the same
layers, weight names and shapes in the same order, the same model name and output shape, and
with the same random weights (batch norms' statistics too) the same predictions; a weights file
tf_keras saved loads; the ImageNet files asked for, preprocess_input and the ValueErrors match.

These nets are big and tf_keras builds graphs slowly, so tf_keras builds each net once:
InceptionResNetV2 at its smallest input (75x75) with a 3-way classifier, which also gives the
headless model's reference (the classifier's input layer) and the saved file; NASNet through its
shared builder at 32x32 in small configurations (every cell and adjustment kind, both
skip_reduction settings), NASNetMobile/NASNetLarge checked to call that builder with tf_keras's
arguments, and built full size in collflow only (tf_keras's layer and parameter counts).
Skipped cleanly without TensorFlow."""
import importlib
import inspect
import logging
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
pytest.importorskip("tf_keras", reason="tf_keras is not installed")

import collflow.compat.v1 as cft  # noqa: E402
from collflow.keras import data_utils as cf_data_utils  # noqa: E402
from test_vs_tensorflow_keras_applications import _close, cf_apps, tf_apps, tft  # noqa: E402

tf_irv2 = importlib.import_module("tf_keras.src.applications.inception_resnet_v2")
tf_nasnet = importlib.import_module("tf_keras.src.applications.nasnet")
import tf_keras  # noqa: E402
from tf_keras.src import backend as tf_backend  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.timeout(300)]

S75 = (75, 75, 3)
S32 = (32, 32, 3)


def _random_weights(model, r):
    """Random values for the model's weights, from their names and shapes: Glorot-scaled
    kernels, small biases, batch norms far from the identity.  (tf_keras's own initial values
    would cost a slow initializer run first.)"""
    out = []
    for v in model.weights:
        shape = tuple(v.shape.as_list())
        name = v.name.split("/")[-1]
        if name.startswith(("gamma", "moving_variance")):
            w = r.uniform(0.5, 1.5, shape)
        elif name.startswith(("beta", "moving_mean", "bias")):
            w = r.normal(0.0, 0.1, shape)
        else:
            receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
            limit = np.sqrt(6.0 / (receptive * (shape[-2] + shape[-1])))
            w = r.uniform(-limit, limit, shape)
        out.append(w.astype(np.float32))
    return out


def _summary(model):
    return {"layers": [layer.name for layer in model.layers], "wnames": [v.name for v in model.weights],
            "shapes": [tuple(v.shape.as_list()) for v in model.weights], "name": model.name,
            "out": tuple(model.output.shape.as_list())}


def _tf_reference(fn, kw, weights, x, inner=None, save=None):
    """tf_keras's model fn(**kw) with `weights` assigned (no initializer run): its summary, its
    predictions on x and the output of layer `inner`; saved to `save` when given."""
    with tft.Graph().as_default():
        model = fn(weights=None, **kw)
        for v in model.weights:
            v._keras_initialized = True   # assigned next: tf_keras need not initialize them first
        model.set_weights(weights)
        out = _summary(model)
        fetches = [model.output] + ([model.get_layer(inner).output] if inner else [])
        values = tf_backend.get_session().run(fetches, {model.input: x})
        out["pred"], out["inner"] = values[0], values[-1]
        if save:
            # tf_keras's h5 writer reads each layer's weights by its own session run (minutes on
            # this graph): it is given the values read here, all in one run
            session = tf_backend.get_session()
            read = dict(zip(map(id, model.weights), session.run(model.weights)))
            batch_get_value = tf_backend.batch_get_value
            tf_backend.batch_get_value = lambda ws: [read[id(w)] for w in ws]
            try:
                model.save_weights(save)
            finally:
                tf_backend.batch_get_value = batch_get_value
    return out


def _cf_model(fn, kw, x, weights=None, set_weights=None):
    with cft.Graph().as_default():
        model = fn(weights=weights, **kw)
        if set_weights is not None:
            model.set_weights(set_weights)
        out = _summary(model)
        out["pred"] = model.predict(x, batch_size=2)
    return out


def _same(got, want, keys=("layers", "wnames", "shapes", "name", "out")):
    for key in keys:
        assert got[key] == want[key], key


# -- InceptionResNetV2: one tf_keras build ----------------------------------------------------

IRV2_TOP = dict(input_shape=S75, classes=3, classifier_activation=None)


@pytest.fixture(scope="module")
def irv2(tmp_path_factory):
    """tf_keras's 75x75 InceptionResNetV2 with a 3-way classifier and random weights: its
    summary, predictions, the features before the classifier (conv_7b_ac), a saved h5 file."""
    r = np.random.RandomState(0)
    x = r.uniform(-1.0, 1.0, (2,) + S75).astype(np.float32)
    path = str(tmp_path_factory.mktemp("irv2") / "irv2.h5")
    with cft.Graph().as_default():   # the weights' shapes, from collflow's model (fast to build)
        weights = _random_weights(cf_apps.InceptionResNetV2(weights=None, **IRV2_TOP), r)
    want = _tf_reference(tf_apps.InceptionResNetV2, IRV2_TOP, weights, x, inner="conv_7b_ac", save=path)
    return {"x": x, "weights": weights, "want": want, "path": path}


def test_inception_resnet_v2_top_matches_tensorflow_keras(irv2):
    got = _cf_model(cf_apps.InceptionResNetV2, IRV2_TOP, irv2["x"], set_weights=irv2["weights"])
    _same(got, irv2["want"])
    _close(got["pred"], irv2["want"]["pred"])


def test_inception_resnet_v2_headless_matches_tensorflow_keras(irv2):
    """include_top=False: tf_keras's layers and weights up to the classifier, and its features."""
    want = irv2["want"]
    got = _cf_model(cf_apps.inception_resnet_v2.InceptionResNetV2, dict(include_top=False, input_shape=S75),
                    irv2["x"], set_weights=irv2["weights"][:-2])
    assert got["layers"] == want["layers"][:-2] and got["wnames"] == want["wnames"][:-2]
    assert got["shapes"] == want["shapes"][:-2] and got["out"] == (None, 1, 1, 1536)
    _close(got["pred"], want["inner"])
    with cft.Graph().as_default():
        pooled = cf_apps.InceptionResNetV2(weights=None, include_top=False, input_shape=S75, pooling="max")
        assert pooled.layers[-1].name == "global_max_pooling2d" and pooled.output.shape.as_list() == [None, 1536]


def test_inception_resnet_v2_weights_file_from_tensorflow_keras(irv2):
    """The h5 file tf_keras saved loads by weights=<path> (which calls load_weights)."""
    got = _cf_model(cf_apps.InceptionResNetV2, IRV2_TOP, irv2["x"], weights=irv2["path"])
    _close(got["pred"], irv2["want"]["pred"])


# -- NASNet: the shared builder in small configurations ---------------------------------------

# penultimate_filters 96 is the smallest multiple of 24 * 2**2; both configurations reach the
# adjustment by projection as well as by reduction (the test checks it)
NASNET_CASES = [
    ("mobile_like_top", dict(input_shape=S32, penultimate_filters=96, num_blocks=2, stem_block_filters=8,
                             skip_reduction=False, classes=3)),
    ("large_like_avg", dict(input_shape=(33, 35, 3), penultimate_filters=192, num_blocks=1, stem_block_filters=12,
                            skip_reduction=True, include_top=False, pooling="avg")),
]


@pytest.mark.parametrize("case", NASNET_CASES, ids=[c[0] for c in NASNET_CASES])
def test_nasnet_matches_tensorflow_keras(case):
    _, kw = case
    r = np.random.RandomState(1)
    x = r.uniform(-1.0, 1.0, (2,) + kw["input_shape"]).astype(np.float32)
    with cft.Graph().as_default():
        weights = _random_weights(cf_apps.nasnet.NASNet(weights=None, **kw), r)
    want = _tf_reference(tf_nasnet.NASNet, kw, weights, x)
    got = _cf_model(cf_apps.nasnet.NASNet, kw, x, set_weights=weights)
    _same(got, want)
    assert any("adjust_conv_projection_" in n for n in got["layers"])
    assert any(n.startswith("cropping2d") for n in got["layers"])
    _close(got["pred"], want["pred"])


@pytest.mark.parametrize("fn", ["NASNetMobile", "NASNetLarge"])
def test_nasnet_models_call_the_builder_as_tensorflow_keras(fn, monkeypatch):
    """NASNetMobile/NASNetLarge pass tf_keras's configuration and their arguments to NASNet."""
    def params(f):
        return [(p.name, p.default) for p in inspect.signature(f).parameters.values()]
    assert params(cf_apps.nasnet.NASNet) == params(tf_nasnet.NASNet)
    assert params(getattr(cf_apps.nasnet, fn)) == params(getattr(tf_nasnet, fn))
    calls = []

    def record(*args, **kwargs):
        calls.append((args, kwargs))
    for mod in (tf_nasnet, cf_apps.nasnet):
        monkeypatch.setattr(mod, "NASNet", record)
    kw = dict(include_top=False, weights=None, input_tensor=None, pooling="avg", classes=7,
              classifier_activation="linear")
    for args, kwargs in (((40, 40, 3),), kw), ((), {}):
        getattr(tf_nasnet, fn)(*args, **kwargs)
        getattr(cf_apps.nasnet, fn)(*args, **kwargs)
        assert calls[-1] == calls[-2]
    assert len(calls) == 4


# tf_keras's NASNetMobile / NASNetLarge at 32x32 without the classifier: (layers, parameters)
# and the cells: the last normal one, the reductions between the stacks; the output's width
FULL_SIZE = {"NASNetMobile": (769, 4269716, 12, (4, 8), 1056), "NASNetLarge": (1039, 84916818, 18, (6, 12), 4032)}


@pytest.mark.parametrize("fn", sorted(FULL_SIZE))
def test_nasnet_full_size_counts(fn):
    """The full-size models (collflow only, for time): tf_keras's layer and parameter counts
    and its cell names."""
    n_layers, n_params, last, reduces, width = FULL_SIZE[fn]
    with cft.Graph().as_default():
        model = getattr(cf_apps, fn)(weights=None, include_top=False, input_shape=S32)
        names = {layer.name for layer in model.layers}
        assert model.name == "NASNet" and model.output.shape.as_list() == [None, 1, 1, width]
        assert len(model.layers) == n_layers and model.count_params() == n_params
    assert f"normal_concat_{last}" in names and f"normal_concat_{last + 1}" not in names
    assert {f"reduction_concat_reduce_{b}" for b in reduces} | {"reduction_concat_stem_1"} <= names


# -- files, preprocessing, errors ------------------------------------------------------------

# (module, function, include_top, tf_keras's URL constant, or None: its base URL + the file name)
IMAGENET_FILES = [
    ("inception_resnet_v2", "InceptionResNetV2", True, None),
    ("inception_resnet_v2", "InceptionResNetV2", False, None),
    ("nasnet", "NASNetMobile", True, "NASNET_MOBILE_WEIGHT_PATH"),
    ("nasnet", "NASNetMobile", False, "NASNET_MOBILE_WEIGHT_PATH_NO_TOP"),
    ("nasnet", "NASNetLarge", True, "NASNET_LARGE_WEIGHT_PATH"),
    ("nasnet", "NASNetLarge", False, "NASNET_LARGE_WEIGHT_PATH_NO_TOP"),
]


def test_imagenet_files_match_tensorflow_keras(monkeypatch):
    """weights='imagenet' asks get_file for tf_keras's file name, URL and hash (all literals of
    tf_keras's module), in the models cache folder."""
    calls = []

    def get_file(fname, origin, **kwargs):
        calls.append((fname, origin, kwargs.get("cache_subdir"), kwargs.get("file_hash")))
        raise RuntimeError("no download here")
    monkeypatch.setattr(cf_data_utils, "get_file", get_file)
    for module, fn, top, const in IMAGENET_FILES:
        tf_mod = tf_irv2 if module == "inception_resnet_v2" else tf_nasnet
        with cft.Graph().as_default():
            with pytest.raises(RuntimeError, match="no download"):
                getattr(getattr(cf_apps, module), fn)(weights="imagenet", include_top=top,
                                                      input_shape=None if top else S75)
        fname, origin, subdir, file_hash = calls[-1]
        source = inspect.getsource(tf_mod)
        assert subdir == "models", calls[-1]
        if const is None:
            assert origin == tf_mod.BASE_WEIGHT_URL + fname
            assert fname == f"inception_resnet_v2_weights_tf_dim_ordering_tf_kernels{'' if top else '_notop'}.h5"
        else:
            assert origin == getattr(tf_mod, const) and f'"{fname}"' in source
        assert len(file_hash) == 32 and f'"{file_hash}"' in source, calls[-1]
        assert ("no_top" in fname or "notop" in fname) != top
    assert len(calls) == len(IMAGENET_FILES) and len({c[3] for c in calls}) == len(calls)
    # the builder with another default size has no ImageNet file (checked after building, as tf_keras)
    kw = dict(input_shape=S32, penultimate_filters=96, num_blocks=1, stem_block_filters=8, include_top=False,
              weights="imagenet", default_size=100)
    msgs = []
    for tf, builder in ((tft, tf_nasnet.NASNet), (cft, cf_apps.nasnet.NASNet)):
        with tf.Graph().as_default():
            with pytest.raises(ValueError) as e:
                builder(**kw)
            msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


def test_namespace_and_preprocessing_match_tensorflow_keras():
    for name in ("InceptionResNetV2", "NASNetMobile", "NASNetLarge"):
        assert callable(getattr(cf_apps, name)) and name in cf_apps.__all__
    for module, names in (("inception_resnet_v2", ["InceptionResNetV2"]), ("nasnet", ["NASNetMobile", "NASNetLarge"])):
        assert module in cf_apps.__all__
        for n in names + ["preprocess_input", "decode_predictions"]:
            assert hasattr(getattr(tf_apps, module), n) and callable(getattr(getattr(cf_apps, module), n)), (module, n)
    x = np.random.RandomState(2).uniform(0, 255, (2, 3, 4, 3)).astype(np.float32)
    for module in ("inception_resnet_v2", "nasnet"):
        np.testing.assert_allclose(getattr(cf_apps, module).preprocess_input(x.copy()),
                                   getattr(tf_apps, module).preprocess_input(x.copy()), rtol=1e-6, atol=1e-6)
        with cft.Graph().as_default():
            p = cft.placeholder(cft.float32, x.shape)
            with cft.Session() as sess:
                y = sess.run(getattr(cf_apps, module).preprocess_input(p), {p: x})
        np.testing.assert_allclose(y, x / 127.5 - 1.0, rtol=1e-6, atol=1e-6)


def test_custom_scale_layer_matches_tensorflow_keras():
    """The Inception-ResNet blocks' scaled sum: its config and registered name, and its value."""
    from collflow.keras.generic_utils import get_registered_name
    cf_layer, tf_layer = cf_apps.inception_resnet_v2.CustomScaleLayer, tf_irv2.CustomScaleLayer
    assert get_registered_name(cf_layer) == tf_keras.utils.get_registered_name(tf_layer) == "Custom>CustomScaleLayer"
    with cft.Graph().as_default():
        layer = cf_layer(0.17)
        config = layer.get_config()
        a = cft.constant([[1.0, 2.0]])
        b = cft.constant([[10.0, -20.0]])
        with cft.Session() as sess:
            np.testing.assert_allclose(sess.run(layer([a, b])), [[2.7, -1.4]], rtol=1e-6)
    assert config == {"name": "custom_scale_layer", "trainable": True, "dtype": "float32", "scale": 0.17}
    assert cf_layer.from_config(config).scale == 0.17


ERROR_CASES = [
    ("inception_resnet_v2", "InceptionResNetV2", dict(weights="imagenet", classes=10)),
    ("inception_resnet_v2", "InceptionResNetV2", dict(weights="nope")),
    ("inception_resnet_v2", "InceptionResNetV2", dict(weights=None, include_top=False, input_shape=(74, 80, 3))),
    ("inception_resnet_v2", "InceptionResNetV2", dict(weights="imagenet", input_shape=(150, 150, 3))),
    ("inception_resnet_v2", "InceptionResNetV2", dict(weights=None, bogus=1)),
    ("nasnet", "NASNetMobile", dict(weights="imagenet", classes=10)),
    ("nasnet", "NASNetMobile", dict(weights="nope")),
    ("nasnet", "NASNetMobile", dict(weights="imagenet", include_top=False, input_shape=(None, None, 3))),
    ("nasnet", "NASNetMobile", dict(weights=None, include_top=False, input_shape=(31, 40, 3))),
    ("nasnet", "NASNetMobile", dict(weights="imagenet", input_shape=(331, 331, 3))),
    ("nasnet", "NASNetLarge", dict(weights="imagenet", include_top=False, input_shape=(64, None, 3))),
    ("nasnet", "NASNetLarge", dict(weights=None, input_shape=(None, None, 3))),
    ("nasnet", "NASNet", dict(weights=None, include_top=False, input_shape=S32, penultimate_filters=100)),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: f"{c[1]}-{'-'.join(map(str, c[2].values()))}")
def test_value_errors_match_tensorflow_keras(case):
    module, fn, kw = case
    msgs = []
    for tf, mod in ((tft, importlib.import_module(f"tf_keras.src.applications.{module}")),
                    (cft, getattr(cf_apps, module))):
        with tf.Graph().as_default():
            with pytest.raises(ValueError) as e:
                getattr(mod, fn)(**kw)
            msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


def test_nasnet_channels_first_builds_channels_last(caplog):
    """Under channels_first NASNet warns, builds channels_last (as tf_keras) and restores the
    data format, also when building fails."""
    from collflow.keras import backend as K
    kw = dict(input_tensor=None, penultimate_filters=96, num_blocks=1, stem_block_filters=8, include_top=False,
              weights=None)
    K.set_image_data_format("channels_first")
    try:
        with cft.Graph().as_default(), caplog.at_level(logging.WARNING):
            t = cft.keras.Input(shape=S32)
            model = cf_apps.nasnet.NASNet(**dict(kw, input_tensor=t))
            assert model.output.shape.as_list() == [None, 1, 1, 96]
            assert K.image_data_format() == "channels_first"
            with pytest.raises(ValueError, match="multiple of 24"):
                cf_apps.nasnet.NASNet(**dict(kw, input_tensor=t, penultimate_filters=100))
            assert K.image_data_format() == "channels_first"
        assert "only available for the input data format" in caplog.text
    finally:
        K.set_image_data_format("channels_last")
