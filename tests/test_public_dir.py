"""dir() of the TF1 API modules lists their public names only (TF 1.x stripped what a module
imported for itself): no typing names, no standard-library or NumPy modules, no collflow
op modules, no implementation submodules; names attached later still show."""
import functools
import types

import collflow.compat.v1 as tf
from collflow.platform.public_dir import install_public_dir, public_names

_NOISE = {"Any", "Optional", "List", "Dict", "Tuple", "Callable", "Sequence", "Type", "Union", "annotations",
          "np", "os", "re", "json", "math", "numbers", "functools", "threading", "OrderedDict", "array_ops",
          "math_ops", "nn_ops", "random_ops", "nn_impl", "atomic_write_bytes", "fsync_directory"}


def _ns(path):
    o = tf
    for p in path.split("."):
        o = getattr(o, p)
    return o


def test_api_modules_hide_their_imports():
    for path in ("saved_model", "losses", "metrics", "gfile", "contrib.layers", "contrib.training", "contrib.opt",
                 "contrib.framework", "contrib.crf", "contrib.losses", "contrib.metrics", "contrib.slim",
                 "contrib.learn.preprocessing", "keras", "data"):
        shown = set(dir(_ns(path)))
        assert not shown & _NOISE, (path, sorted(shown & _NOISE))
    assert not {"Any", "List", "annotations"} & set(dir(tf))
    assert "math" in dir(tf)  # tf.math is API, not the math module


def test_public_names_stay():
    assert {"create_train_op", "evaluate_once", "bucket", "HParams"} <= set(dir(tf.contrib.training))
    assert {"fully_connected", "utils", "optimize_loss"} <= set(dir(tf.contrib.layers))
    assert {"applications", "datasets", "layers", "Model"} <= set(dir(tf.keras))
    assert {"simple_save", "builder", "loader", "tag_constants"} <= set(dir(tf.saved_model))
    assert "input_layer_of" not in dir(tf.keras.layers) and "Dense" in dir(tf.keras.layers)
    # still reachable as attributes: only dir() is trimmed
    assert tf.contrib.layers.math_ops is not None


def test_rules_on_a_module():
    m = types.ModuleType("collflow.fake_api")
    m.__all__ = ["exported"]
    m.exported = lambda: None
    m.Optional = __import__("typing").Optional
    m.np = __import__("numpy")
    m.OrderedDict = __import__("collections").OrderedDict
    m.relu = functools.partial(max, 0)  # a layer made with functools.partial is the module's own
    m.attached_later = 3
    install_public_dir(m)
    assert dir(m) == ["attached_later", "exported", "relu"]
    assert public_names(["_x", "y"], {"_x": 1, "y": 2}) == ["y"]


def test_names_attached_by_other_modules_stay():
    # keras/__init__.py attaches these to backend and saving: API, not imports
    assert {"conv2d", "bias_add", "learning_phase_scope"} <= set(dir(tf.keras.backend))
    assert "get_custom_objects" in dir(tf.keras.saving)


def test_no_tensorflow_name_is_hidden():
    """Every name TF's module lists that collflow's module has is in its dir()."""
    import pytest
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    tft = tensorflow.compat.v1
    lost = {}
    for path in ("nn", "train", "losses", "metrics", "layers", "saved_model", "summary", "data", "image", "keras",
                 "keras.backend", "keras.layers", "keras.callbacks", "keras.initializers", "keras.saving",
                 "keras.constraints", "keras.utils", "keras.optimizers", "keras.models", "gfile", "io", "sparse"):
        ours, theirs = _ns(path), tft
        for p in path.split("."):
            theirs = getattr(theirs, p)
        hidden = [n for n in dir(theirs) if not n.startswith("_") and hasattr(ours, n) and n not in dir(ours)]
        if hidden:
            lost[path] = hidden
    assert not lost, lost
