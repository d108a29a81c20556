"""Differential tests against tf_keras (TF1 graph mode) for tf.keras.utils / callbacks / models /
preprocessing: Progbar's text (times masked), clone_model's structure and weights,
TimeseriesGenerator's batches, make_sampling_table, skipgrams under one seed, hashing_trick's md5,
ImageDataGenerator's seeded transform parameters, its deterministic transforms (rescale, flips,
sample- and feature-wise normalization, channel shift) through flow(), and
flow_from_directory's listing.  tf_keras's image code needs SciPy and PIL, absent here: its
identity affine step is let through and only the listing of flow_from_directory is compared.
Skipped cleanly without TensorFlow."""
import contextlib
import io
import os
import random
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
tf_keras = pytest.importorskip("tf_keras", reason="tf_keras is not installed")

import collflow.compat.v1 as cft  # noqa: E402

tft = tensorflow.compat.v1
tft.disable_eager_execution()

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.timeout(300)]


def _text(fn):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()
    return buf.getvalue()


_TIMES = re.compile(r" - ETA: [0-9:]+s?| - \d+s( \d+[mu]?s/\w+)?| - \d+[mu]?s/epoch - \d+[mu]?s/\w+")


def _progbar(cls, target, verbose, steps, stateful):
    def run():
        bar = cls(target, verbose=verbose, interval=0, stateful_metrics=stateful)
        for i, (n, vals) in enumerate(steps):
            bar.update(n, vals)
    return _TIMES.sub("", _text(run))


@pytest.mark.parametrize("verbose", [1, 2])
@pytest.mark.parametrize("target", [7, 120])
def test_progbar_text(verbose, target):
    steps = [(max(1, target * k // 5), [("loss", 1.0 / k), ("acc", 0.1 * k), ("tiny", 1e-5 * k)]) for k in range(1, 6)]
    ours = _progbar(cft.keras.utils.Progbar, target, verbose, steps, ["acc"])
    theirs = _progbar(tft.keras.utils.Progbar, target, verbose, steps, ["acc"])
    assert ours == theirs


def _fit_text(tf, verbose, epochs, **kw):
    r = np.random.RandomState(0)
    x, y = r.rand(40, 3).astype(np.float32), r.rand(40, 1).astype(np.float32)
    with tf.Graph().as_default():
        m = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,)), tf.keras.layers.Dense(1)])
        m.compile(tf.keras.optimizers.SGD(0.1), "mse")
        text = _text(lambda: m.fit(x, y, batch_size=16, epochs=epochs, verbose=verbose, shuffle=False, **kw))
    return re.sub(r"\d+\.\d{4}(e[-+]\d+)?", "V", _TIMES.sub("", text))


@pytest.mark.parametrize("verbose,epochs,kw", [(1, 2, dict(validation_split=0.25)), (2, 1, {}), (2, 2, {}),
                                               (1, 1, {})])
def test_fit_progress_text(verbose, epochs, kw):
    assert _fit_text(cft, verbose, epochs, **kw) == _fit_text(tft, verbose, epochs, **kw)


def _clone_case(tf, functional):
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        k = tf.keras
        if functional:
            a, b = k.Input((3,)), k.Input((2,))
            shared = k.layers.Dense(4, activation="tanh", name="shared")
            h = k.layers.Concatenate()([shared(a), k.layers.Dense(4, name="side")(b)])
            out = k.layers.Dense(2, activation="softmax", name="head")(k.layers.Dropout(0.3)(h))
            m = k.Model([a, b], out)
            xs = [np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3), np.ones((5, 2), np.float32)]
        else:
            m = k.Sequential([k.layers.Dense(5, input_shape=(3,), activation="relu", name="d1"),
                              k.layers.BatchNormalization(name="bn"), k.layers.Dense(1, name="d2")])
            xs = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
        w = [np.random.RandomState(i).randn(*v.shape).astype(np.float32) for i, v in enumerate(m.get_weights())]
        m.set_weights(w)
        c = k.models.clone_model(m)
        fresh = c.get_weights()
        c.set_weights(w)
        return dict(types=[type(la).__name__ for la in c.layers], names=[la.name for la in c.layers],
                    shapes=[x.shape for x in fresh], same_as_source=[bool(np.allclose(f, x)) for f, x in zip(fresh, w)],
                    shared_vars=bool(set(map(id, c.weights)) & set(map(id, m.weights))), out=c.predict(xs),
                    out_shapes=[t.shape.as_list() for t in c.outputs])


@pytest.mark.parametrize("functional", [False, True])
def test_clone_model(functional):
    ours, theirs = _clone_case(cft, functional), _clone_case(tft, functional)
    theirs["types"] = [t.replace("Functional", "Model") for t in theirs["types"]]
    for key in ("types", "names", "shapes", "same_as_source", "shared_vars", "out_shapes"):
        assert ours[key] == theirs[key], key
    np.testing.assert_allclose(ours["out"], theirs["out"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [dict(length=3), dict(length=4, sampling_rate=2, stride=3, batch_size=2),
                                dict(length=2, start_index=3, end_index=15, reverse=True, batch_size=5),
                                dict(length=5, shuffle=True, batch_size=4)])
def test_timeseries_generator(kw):
    data = np.arange(40, dtype=np.float32).reshape(20, 2)
    targets = np.arange(20) * 3
    ours = cft.keras.preprocessing.sequence.TimeseriesGenerator(data, targets, **kw)
    theirs = tft.keras.preprocessing.sequence.TimeseriesGenerator(data, targets, **kw)
    assert len(ours) == len(theirs)
    for i in range(len(ours)):
        np.random.seed(i)
        a = ours[i]
        np.random.seed(i)
        b = theirs[i]
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


def test_make_sampling_table_and_hashing_trick():
    for size, factor in ((10, 1e-5), (1000, 1e-3)):
        np.testing.assert_allclose(cft.keras.preprocessing.sequence.make_sampling_table(size, factor),
                                   tft.keras.preprocessing.sequence.make_sampling_table(size, factor), rtol=1e-12)
    text = "The quick brown fox, jumps over the lazy dog!"
    for n in (5, 1000):
        assert cft.keras.preprocessing.text.hashing_trick(text, n, hash_function="md5") == \
            tft.keras.preprocessing.text.hashing_trick(text, n, hash_function="md5")


@pytest.mark.parametrize("kw", [dict(), dict(categorical=True, negative_samples=0.5, window_size=2),
                                dict(shuffle=False), dict(sampling_table="table")])
def test_skipgrams_same_random_stream(kw):
    sequence = [1, 4, 0, 2, 7, 3, 3, 9, 5]
    kw = dict(kw)
    if kw.get("sampling_table") == "table":
        kw["sampling_table"] = np.linspace(0.2, 1.0, 10)
    random.seed(123)
    ours = cft.keras.preprocessing.sequence.skipgrams(sequence, 10, seed=5, **kw)
    random.seed(123)
    theirs = tft.keras.preprocessing.sequence.skipgrams(sequence, 10, seed=5, **kw)
    assert ours == theirs


_GEN_KW = [dict(rotation_range=20, width_shift_range=0.2, height_shift_range=[-1, 2], shear_range=10,
                zoom_range=[0.8, 1.2], horizontal_flip=True, vertical_flip=True, channel_shift_range=5.0,
                brightness_range=(0.5, 1.5)),
           dict(width_shift_range=3, zoom_range=0.3, horizontal_flip=True)]


@pytest.mark.parametrize("kw", _GEN_KW)
def test_random_transform_parameters_under_a_seed(kw):
    for seed in range(5):
        ours = cft.keras.preprocessing.image.ImageDataGenerator(**kw).get_random_transform((8, 9, 3), seed=seed)
        theirs = tft.keras.preprocessing.image.ImageDataGenerator(**kw).get_random_transform((8, 9, 3), seed=seed)
        assert set(ours) == set(theirs)
        for k in ours:
            assert ours[k] == pytest.approx(theirs[k]) or ours[k] == theirs[k], k


@pytest.fixture
def tf_keras_without_scipy(monkeypatch):
    """tf_keras's apply_affine_transform refuses to run without SciPy even for the identity:
    let it through (no transform matrix, so SciPy is never called)."""
    from tf_keras.src.preprocessing import image as tk_image
    monkeypatch.setattr(tk_image, "scipy", object(), raising=False)
    return tk_image


_DETERMINISTIC = [dict(horizontal_flip=True, vertical_flip=True, rescale=1 / 255.0),
                  dict(samplewise_center=True, samplewise_std_normalization=True, horizontal_flip=True),
                  dict(featurewise_center=True, featurewise_std_normalization=True, vertical_flip=True),
                  dict(channel_shift_range=30.0, rescale=0.5),
                  dict(horizontal_flip=True, data_format="channels_first")]


@pytest.mark.parametrize("kw", _DETERMINISTIC)
def test_flow_deterministic_transforms(tf_keras_without_scipy, kw):
    r = np.random.RandomState(7)
    x = r.rand(9, 6, 5, 3).astype(np.float32) * 255
    if kw.get("data_format") == "channels_first":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    y = np.arange(9)
    batches = []
    for lib in (cft, tft):
        g = lib.keras.preprocessing.image.ImageDataGenerator(**kw)
        if kw.get("featurewise_center"):
            g.fit(x)
        it = g.flow(x, y, batch_size=4, shuffle=True, seed=21)
        batches.append([it[i] for i in range(len(it))] + [next(it), next(it)])
    for (xa, ya), (xb, yb) in zip(*batches):
        np.testing.assert_array_equal(ya, yb)
        np.testing.assert_allclose(xa, xb, rtol=1e-5, atol=1e-4)


def test_flow_from_directory_listing(tmp_path):
    root = str(tmp_path)
    for cls, names in (("zebra", ["b.png", "a.jpg", "c.txt"]), ("ant", ["x.bmp", "sub/y.png", "sub/deeper/w.jpeg"]),
                       ("moth", ["q.PNG", "r.tiff"])):
        for n in names:
            path = os.path.join(root, cls, n)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "wb").close()
    os.makedirs(os.path.join(root, "empty"))
    for kw in (dict(), dict(subset="training"), dict(subset="validation"), dict(classes=["moth", "ant"])):
        its = []
        for lib in (cft, tft):
            g = lib.keras.preprocessing.image.ImageDataGenerator(validation_split=0.4)
            its.append(_quiet(lambda: g.flow_from_directory(root, shuffle=False, **kw)))
        a, b = its
        assert a.filenames == b.filenames and a.class_indices == b.class_indices
        np.testing.assert_array_equal(a.classes, b.classes)
        assert a.samples == b.samples and len(a) == len(b)


def _quiet(fn):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn()


def test_apply_channel_shift_and_standardize_match():
    x = np.random.RandomState(3).rand(5, 4, 3).astype(np.float32) * 100
    np.testing.assert_allclose(cft.keras.preprocessing.image.apply_channel_shift(x, 17.0, 2),
                               tft.keras.preprocessing.image.apply_channel_shift(x, 17.0, 2))
    kw = dict(rescale=0.01, samplewise_center=True, samplewise_std_normalization=True,
              preprocessing_function=lambda v: v + 1)
    np.testing.assert_allclose(cft.keras.preprocessing.image.ImageDataGenerator(**kw).standardize(x.copy()),
                               tft.keras.preprocessing.image.ImageDataGenerator(**kw).standardize(x.copy()),
                               rtol=1e-5, atol=1e-6)
