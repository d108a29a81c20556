"""tf.keras.preprocessing: sequence.TimeseriesGenerator / make_sampling_table / skipgrams,
text.hashing_trick, and image (ImageDataGenerator, its iterators, array_to_img / img_to_array /
load_img / save_img with collflow's own codecs, the transforms): by hand, no TensorFlow."""
import hashlib
import os
import random

import numpy as np
import pytest

import collflow.compat.v1 as tf

keras = tf.keras
seq = keras.preprocessing.sequence
image = keras.preprocessing.image


# -- sequence ------------------------------------------------------------------------------------

def test_timeseries_generator_windows_and_targets():
    data = np.arange(20).reshape(10, 2)
    targets = np.arange(10) * 10
    g = seq.TimeseriesGenerator(data, targets, length=3, sampling_rate=1, stride=2, batch_size=2)
    # window ends (targets' steps) 3, 5 | 7, 9
    assert len(g) == 2
    x, y = g[0]
    np.testing.assert_array_equal(y, [30, 50])
    np.testing.assert_array_equal(x[1], data[2:5])
    x, y = g[1]
    np.testing.assert_array_equal(y, [70, 90])
    g = seq.TimeseriesGenerator(data, targets, length=4, sampling_rate=2, reverse=True, start_index=1, end_index=7,
                                batch_size=10)
    x, y = g[0]
    np.testing.assert_array_equal(y, [50, 60, 70])
    np.testing.assert_array_equal(x[0], data[1:5:2][::-1])
    with pytest.raises(ValueError, match="Data and targets have to be of same length"):
        seq.TimeseriesGenerator(data, targets[:5], length=2)
    with pytest.raises(ValueError, match=r"`start_index\+length=12 > end_index=9` is disallowed"):
        seq.TimeseriesGenerator(data, targets, length=12)


def test_timeseries_generator_feeds_fit():
    data = np.random.RandomState(0).rand(50, 2).astype(np.float32)
    g = seq.TimeseriesGenerator(data, data[:, :1], length=4, batch_size=8)
    with tf.Graph().as_default():
        m = keras.Sequential([keras.layers.Flatten(input_shape=(4, 2)), keras.layers.Dense(1)])
        m.compile("sgd", "mse")
        h = m.fit_generator(g, epochs=2, verbose=0)
    assert len(h.history["loss"]) == 2


def test_make_sampling_table_closed_form():
    t = seq.make_sampling_table(5, sampling_factor=1e-2)
    rank = np.array([1, 1, 2, 3, 4], dtype=float)
    f = 1e-2 * (rank * (np.log(rank) + 0.577) + 0.5 - 1 / (12 * rank))
    np.testing.assert_allclose(t, np.minimum(1.0, np.sqrt(f)))


def test_skipgrams_couples_labels_and_seed():
    couples, labels = seq.skipgrams([1, 2, 0, 3], vocabulary_size=5, window_size=1, negative_samples=0.0,
                                    shuffle=False)
    assert couples == [[1, 2], [2, 1]] and labels == [1, 1]  # index 0 is skipped (and does not pair)
    random.seed(4)
    a = seq.skipgrams([1, 2, 3, 4], 10, window_size=2, seed=7, categorical=True)
    random.seed(4)
    b = seq.skipgrams([1, 2, 3, 4], 10, window_size=2, seed=7, categorical=True)
    assert a == b
    couples, labels = a
    assert len(couples) == 20 and labels.count([0, 1]) == 10 and labels.count([1, 0]) == 10
    for (w, c), lab in zip(couples, labels):
        if lab == [0, 1]:
            assert abs(w - c) <= 2 and w != c
        else:
            assert 1 <= c <= 9
    table = np.zeros(10)  # nothing kept
    assert seq.skipgrams([1, 2, 3], 10, sampling_table=table) == ([], [])


def test_hashing_trick():
    words = ["the", "cat", "sat"]
    md5 = [int(hashlib.md5(w.encode()).hexdigest(), 16) % 9 + 1 for w in words]
    assert keras.preprocessing.text.hashing_trick("The cat, sat!", 10, hash_function="md5") == md5
    assert keras.preprocessing.text.hashing_trick("the cat sat", 10, hash_function=len) == [4, 4, 4]
    # the default: the stable hash one_hot uses
    assert keras.preprocessing.text.hashing_trick("the cat sat", 10) == keras.preprocessing.text.one_hot(
        "the cat sat", 10)


# -- image arrays and files --------------------------------------------------------------------------

def _img(h=5, w=4, c=3, seed=0):
    return np.random.RandomState(seed).randint(0, 256, (h, w, c)).astype(np.float32)


def test_array_to_img_and_back():
    x = _img()
    img = image.array_to_img(x, scale=False)
    assert img.mode == "RGB" and img.size == (4, 5)
    np.testing.assert_array_equal(image.img_to_array(img), x)
    np.testing.assert_array_equal(image.img_to_array(img, data_format="channels_first"), x.transpose(2, 0, 1))
    # scale maps min..max to 0..255 (truncated to uint8)
    y = np.array([[[-1.0], [1.0]]])
    np.testing.assert_array_equal(image.img_to_array(image.array_to_img(y)), [[[0.0], [255.0]]])
    assert image.array_to_img(np.zeros((2, 2, 4))).mode == "RGBA"
    assert image.array_to_img(np.full((2, 2, 1), 1000.0), scale=False).mode == "I"
    with pytest.raises(ValueError, match="Expected image array to have rank 3"):
        image.array_to_img(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="Unsupported channel number: 2"):
        image.array_to_img(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="Unsupported image shape"):
        image.img_to_array(np.zeros((1, 1, 1, 1)))
    assert keras.utils.img_to_array is image.img_to_array


@pytest.mark.parametrize("ext", ["png", "bmp"])
def test_save_and_load_lossless(tmp_path, ext):
    x = _img(6, 7)
    path = str(tmp_path / f"a.{ext}")
    image.save_img(path, x, scale=False)
    np.testing.assert_array_equal(image.img_to_array(image.load_img(path)), x)
    gray = image.load_img(path, color_mode="grayscale")
    c = x.astype(np.int64)
    want = (c[..., 0] * 19595 + c[..., 1] * 38470 + c[..., 2] * 7471 + 0x8000) >> 16
    np.testing.assert_array_equal(image.img_to_array(gray)[..., 0], want)
    rgba = image.img_to_array(image.load_img(path, color_mode="rgba"))
    assert rgba.shape == (6, 7, 4) and (rgba[..., 3] == 255).all()


def test_save_jpeg_and_resize(tmp_path):
    x = np.full((8, 8, 3), 120.0)
    path = str(tmp_path / "a.jpg")
    image.save_img(path, x, scale=False, quality=95)
    back = image.img_to_array(image.load_img(path))
    assert np.abs(back - 120).max() <= 2
    with pytest.warns(UserWarning, match="JPG format does not support RGBA"):
        image.save_img(str(tmp_path / "b.jpg"), np.zeros((4, 4, 4)))
    src = np.arange(16, dtype=np.float32).reshape(4, 4, 1) * 10
    image.save_img(str(tmp_path / "g.png"), src, scale=False)
    small = image.img_to_array(image.load_img(str(tmp_path / "g.png"), color_mode="grayscale", target_size=(2, 2)))
    np.testing.assert_array_equal(small[..., 0], src[1::2, 1::2, 0])  # PIL's nearest picks the later pixel
    big = image.load_img(str(tmp_path / "g.png"), color_mode="grayscale", target_size=(8, 8),
                         interpolation="bilinear")
    assert big.size == (8, 8)
    with pytest.raises(ValueError, match="Invalid interpolation method nope"):
        image.load_img(str(tmp_path / "g.png"), target_size=(3, 3), interpolation="nope")
    with pytest.raises(ValueError, match='color_mode must be "grayscale", "rgb", or "rgba"'):
        image.load_img(str(tmp_path / "g.png"), color_mode="cmyk")


# -- transforms ----------------------------------------------------------------------------------------

def test_affine_integer_shift_flip_and_rotation():
    x = np.arange(20, dtype=np.float32).reshape(4, 5, 1)
    out = image.apply_affine_transform(x, tx=1, row_axis=0, col_axis=1, channel_axis=2, fill_mode="constant",
                                       cval=-1, order=0)
    np.testing.assert_array_equal(out[:3], x[1:])  # output row i reads input row i + 1
    np.testing.assert_array_equal(out[3], -1)
    out = image.apply_affine_transform(x, ty=-2, channel_axis=2, fill_mode="nearest")
    np.testing.assert_array_equal(out[:, 2:], x[:, :3])
    np.testing.assert_array_equal(out[:, :2], np.repeat(x[:, :1], 2, 1))
    out = image.apply_affine_transform(x, tx=-1, channel_axis=2, fill_mode="reflect", order=1)
    np.testing.assert_array_equal(out[0], x[0])  # row -1 reflects to row 0
    out = image.apply_affine_transform(x, tx=2, channel_axis=2, fill_mode="wrap")
    np.testing.assert_array_equal(out[:2], x[2:])
    np.testing.assert_array_equal(out[2], x[1])  # period 3 (ndimage's wrap: the ends overlap)
    # a half-pixel shift interpolates linearly
    out = image.apply_affine_transform(x, ty=0.5, channel_axis=2, fill_mode="nearest")
    np.testing.assert_allclose(out[:, :4, 0], (x[:, :4, 0] + x[:, 1:, 0]) / 2)
    # 180 degrees about Keras's center (n/2 + 0.5 = 2 for n = 3): output (i, j) reads input
    # (4 - i, 4 - j), rows/columns 4 and 3 reflected to 1 and 2
    sq = np.arange(9, dtype=np.float32).reshape(3, 3, 1)
    out = image.apply_affine_transform(sq, theta=180, channel_axis=2, fill_mode="reflect", order=0)
    np.testing.assert_allclose(out[..., 0], sq[[1, 2, 2]][:, [1, 2, 2], 0], atol=1e-6)
    out = image.apply_affine_transform(sq, theta=180, channel_axis=2, fill_mode="constant", cval=-5, order=1)
    np.testing.assert_allclose(out[..., 0], [[-5, -5, -5], [-5, -5, -5], [-5, -5, 8]], atol=1e-5)
    np.testing.assert_array_equal(image.apply_affine_transform(sq), sq)
    np.testing.assert_array_equal(image.random_rotation(sq.transpose(2, 0, 1), 0), sq.transpose(2, 0, 1))


def test_channel_and_brightness_shift():
    x = np.array([[[0.0, 10.0], [5.0, 20.0]]])
    np.testing.assert_array_equal(image.apply_channel_shift(x, 8.0, 2), np.clip(x + 8, 0, 20))
    y = np.array([[[0.0], [100.0]], [[200.0], [255.0]]])
    np.testing.assert_array_equal(image.apply_brightness_shift(y, 0.5), [[[0.0], [50.0]], [[100.0], [127.0]]])
    with pytest.raises(ValueError, match="brightness_range should be tuple or list of two floats"):
        image.random_brightness(y, (1,))


# -- ImageDataGenerator -------------------------------------------------------------------------------

def test_standardize_rescale_samplewise_featurewise():
    x = np.random.RandomState(0).rand(8, 4, 3, 3).astype(np.float32) * 255
    g = image.ImageDataGenerator(rescale=0.5, samplewise_center=True)
    out = g.standardize(x[0].copy())
    np.testing.assert_allclose(out, x[0] * 0.5 - (x[0] * 0.5).mean(), rtol=1e-5, atol=1e-4)
    g = image.ImageDataGenerator(featurewise_center=True, featurewise_std_normalization=True)
    g.fit(x)
    mean = x.mean(axis=(0, 1, 2)).reshape(1, 1, 3)
    std = (x - mean).std(axis=(0, 1, 2)).reshape(1, 1, 3)
    np.testing.assert_allclose(g.mean, mean, rtol=1e-5)
    np.testing.assert_allclose(g.std, std, rtol=1e-5)
    np.testing.assert_allclose(g.standardize(x[1].copy()), (x[1] - mean) / (std + 1e-6), rtol=1e-4, atol=1e-4)
    with pytest.warns(UserWarning, match="hasn't been fit on any training data"):
        image.ImageDataGenerator(featurewise_center=True).standardize(x[0].copy())
    with pytest.raises(ValueError, match="should have rank 4"):
        g.fit(x[0])


def test_zca_whitening_decorrelates():
    r = np.random.RandomState(1)
    x = r.rand(200, 2, 2, 1).astype(np.float64)
    x[..., 0, 1, 0] = x[..., 0, 0, 0] * 0.8 + 0.2 * x[..., 0, 1, 0]  # correlated pixels
    with pytest.warns(UserWarning, match="overrides setting of `featurewise_center`"):
        g = image.ImageDataGenerator(zca_whitening=True, zca_epsilon=1e-9, dtype="float64")
    g.fit(x)
    flat = (x - x.mean(axis=(0, 1, 2), keepdims=True)).reshape(200, -1)
    sigma = flat.T @ flat / 200
    w, v = np.linalg.eigh(sigma)
    np.testing.assert_allclose(g.principal_components, v @ np.diag(1 / np.sqrt(w + 1e-9)) @ v.T, rtol=1e-5,
                               atol=1e-6)
    white = np.stack([g.standardize(xi.copy()) for xi in x]).reshape(200, -1)
    np.testing.assert_allclose(white.T @ white / 200, np.eye(4), atol=1e-6)


def test_flow_flips_seeded_and_labels():
    x = np.random.RandomState(2).rand(5, 3, 4, 1).astype(np.float32)
    g = image.ImageDataGenerator(horizontal_flip=True)
    it = g.flow(x, np.arange(5), batch_size=5, shuffle=False, seed=11)
    bx, by = it[0]
    np.testing.assert_array_equal(by, np.arange(5))
    np.random.seed(11)
    for i in range(5):
        flip = np.random.random() < 0.5
        np.random.random()  # the vertical flip's draw
        np.testing.assert_array_equal(bx[i], x[i][:, ::-1] if flip else x[i])
    g = image.ImageDataGenerator(vertical_flip=True, horizontal_flip=True, rescale=2.0)
    bx = g.flow(x, batch_size=5, shuffle=False, seed=1)[0]
    assert bx.shape == x.shape and np.allclose(np.sort(bx.ravel()), np.sort(2 * x.ravel()), rtol=1e-6)
    w = np.arange(5.0)
    bx, by, bw = g.flow(x, np.arange(5), sample_weight=w, batch_size=2, shuffle=True, seed=3)[1]
    np.testing.assert_array_equal(bw, by.astype(float))


def test_flow_subset_misc_and_iteration():
    x = np.random.RandomState(3).rand(10, 2, 2, 3).astype(np.float32)
    y = np.array([0, 1] * 5)
    g = image.ImageDataGenerator(validation_split=0.2)
    train = g.flow(x, y, batch_size=4, shuffle=False, subset="training")
    val = g.flow(x, y, batch_size=4, shuffle=False, subset="validation")
    assert train.n == 8 and val.n == 2 and len(train) == 2
    np.testing.assert_array_equal(val[0][0], x[:2])
    (bx, extra), by = g.flow((x, np.arange(10)), y, batch_size=3, shuffle=False)[1]
    np.testing.assert_array_equal(extra, [3, 4, 5])
    it = g.flow(x, y, batch_size=4, shuffle=False)
    sizes = [len(next(it)[0]) for _ in range(4)]
    assert sizes == [4, 4, 2, 4]  # the iterator goes round, the last batch short
    with pytest.raises(ValueError, match="different number of classes after the split"):
        g.flow(x, np.sort(y), subset="training")
    with pytest.raises(ValueError, match="`validation_split` must be strictly between 0 and 1"):
        image.ImageDataGenerator(validation_split=1.5)
    with pytest.raises(ValueError, match="`zoom_range` should be a float or a tuple or list of two floats"):
        image.ImageDataGenerator(zoom_range=[1, 2, 3])


def test_random_transform_parameters_follow_the_ranges():
    g = image.ImageDataGenerator(rotation_range=30, width_shift_range=0.2, height_shift_range=[-2, 2],
                                 shear_range=5, zoom_range=0.1, channel_shift_range=3, brightness_range=(0.5, 1.5))
    p = g.get_random_transform((10, 20, 3), seed=5)
    assert -30 <= p["theta"] <= 30 and abs(p["ty"]) <= 4 and p["tx"] in (-2, 2)
    assert 0.9 <= p["zx"] <= 1.1 and -3 <= p["channel_shift_intensity"] <= 3 and 0.5 <= p["brightness"] <= 1.5
    assert p == g.get_random_transform((10, 20, 3), seed=5)
    out = g.random_transform(np.random.RandomState(0).rand(10, 20, 3).astype(np.float32) * 255, seed=5)
    assert out.shape == (10, 20, 3)


def _tree(root, ext="png"):
    r = np.random.RandomState(4)
    for cls, n in (("b_dogs", 3), ("a_cats", 2)):
        os.makedirs(os.path.join(root, cls, "deep"))
        for i in range(n):
            image.save_img(os.path.join(root, cls, f"{i}.{ext}"), r.rand(6, 5, 3) * 255, scale=False)
        image.save_img(os.path.join(root, cls, "deep", "z.bmp"), r.rand(6, 5, 3) * 255, scale=False)
    open(os.path.join(root, "a_cats", "notes.txt"), "w").close()


def test_flow_from_directory_listing_and_batches(tmp_path, capsys):
    _tree(str(tmp_path))
    g = image.ImageDataGenerator(rescale=1 / 255.0)
    it = g.flow_from_directory(str(tmp_path), target_size=(6, 5), batch_size=4, shuffle=False)
    assert "Found 7 images belonging to 2 classes." in capsys.readouterr().out
    assert it.class_indices == {"a_cats": 0, "b_dogs": 1}
    assert it.filenames == ["a_cats/0.png", "a_cats/1.png", "a_cats/deep/z.bmp", "b_dogs/0.png", "b_dogs/1.png",
                            "b_dogs/2.png", "b_dogs/deep/z.bmp"]
    np.testing.assert_array_equal(it.classes, [0, 0, 0, 1, 1, 1, 1])
    bx, by = it[0]
    assert bx.shape == (4, 6, 5, 3) and bx.max() <= 1.0
    np.testing.assert_array_equal(by, [[1, 0], [1, 0], [1, 0], [0, 1]])
    first = image.img_to_array(image.load_img(os.path.join(str(tmp_path), "a_cats", "0.png"))) / 255.0
    np.testing.assert_allclose(bx[0], first, rtol=1e-6)
    bx, by = g.flow_from_directory(str(tmp_path), target_size=(3, 3), color_mode="grayscale", class_mode="sparse",
                                   batch_size=10, shuffle=False)[0]
    assert bx.shape == (7, 3, 3, 1) and by.tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert g.flow_from_directory(str(tmp_path), class_mode=None, target_size=(6, 5))[0].shape[1:] == (6, 5, 3)
    bx, by = g.flow_from_directory(str(tmp_path), class_mode="input", target_size=(6, 5))[0]
    np.testing.assert_array_equal(bx, by)
    only = g.flow_from_directory(str(tmp_path), classes=["b_dogs"], target_size=(6, 5))
    assert only.samples == 4 and only.class_indices == {"b_dogs": 0}


def test_flow_from_directory_subsets_and_fit(tmp_path):
    _tree(str(tmp_path))
    g = image.ImageDataGenerator(validation_split=0.5)
    train = g.flow_from_directory(str(tmp_path), target_size=(6, 5), subset="training", shuffle=False)
    val = g.flow_from_directory(str(tmp_path), target_size=(6, 5), subset="validation", shuffle=False)
    # per class: files [int(0 * n) : int(0.5 * n)] validate, the rest train
    assert val.filenames == ["a_cats/0.png", "b_dogs/0.png", "b_dogs/1.png"]
    assert train.filenames == ["a_cats/1.png", "a_cats/deep/z.bmp", "b_dogs/2.png", "b_dogs/deep/z.bmp"]
    with pytest.raises(ValueError, match="Invalid subset name: nope"):
        g.flow_from_directory(str(tmp_path), subset="nope")
    with pytest.raises(ValueError, match="Invalid class_mode"):
        g.flow_from_directory(str(tmp_path), class_mode="weird")
    with tf.Graph().as_default():
        m = keras.Sequential([keras.layers.Flatten(input_shape=(6, 5, 3)), keras.layers.Dense(2,
                                                                                             activation="softmax")])
        m.compile("sgd", "categorical_crossentropy")
        h = m.fit_generator(train, epochs=2, verbose=0)
    assert len(h.history["loss"]) == 2
