"""tf.keras.datasets (collflow/keras/datasets.py) without TensorFlow and without a network:
small files in the datasets' on-disk formats (npz, gzipped IDX, pickled CIFAR batches, the
word-index JSON) stand in for the downloads, and the outputs are checked against expectations
worked out by hand: shapes, dtypes, the seeded shuffles keeping inputs and labels paired,
imdb/reuters' start_char / index_from / maxlen / num_words / skip_top / oov_char rules.

The writers here are shared with tests/tf1/test_vs_tensorflow_keras_datasets.py."""
import gzip
import json
import os
import pickle
import tarfile

import numpy as np
import pytest

import collflow.compat.v1 as tf
import collflow.keras.data_utils as data_utils
from collflow.keras import backend_more
from collflow.keras import datasets as ds


# -- writers of the on-disk formats (no test_ prefix: imported by the differential test) ---------

def object_array(seqs):
    """A 1-D object array of lists (np.array would make equal-length lists 2-D)."""
    out = np.empty(len(seqs), dtype=object)
    for i, s in enumerate(seqs):
        out[i] = list(s)
    return out


def write_mnist(path, r, n_train=6, n_test=3):
    np.savez(path, x_train=r.randint(0, 256, (n_train, 28, 28)).astype(np.uint8),
             y_train=r.randint(0, 10, n_train).astype(np.uint8),
             x_test=r.randint(0, 256, (n_test, 28, 28)).astype(np.uint8),
             y_test=r.randint(0, 10, n_test).astype(np.uint8))
    return path


def write_fashion(folder, r, n_train=5, n_test=4):
    """The four gzipped IDX files, headers (magic number, sizes) included; {name: path}."""
    os.makedirs(folder, exist_ok=True)
    out = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels, images = r.randint(0, 10, n).astype(np.uint8), r.randint(0, 256, (n, 28, 28)).astype(np.uint8)
        for kind, header, payload in (("labels-idx1", np.array([2049, n], ">i4"), labels),
                                      ("images-idx3", np.array([2051, n, 28, 28], ">i4"), images)):
            name = f"{prefix}-{kind}-ubyte.gz"
            out[name] = os.path.join(folder, name)
            with gzip.open(out[name], "wb") as f:
                f.write(header.tobytes() + payload.tobytes())
    return out


def _pickle_batch(path, r, n, labels, protocol=2):
    batch = {b"batch_label": b"synthetic", b"data": np.frombuffer(r.bytes(n * 3072), np.uint8).reshape(n, 3072),
             b"filenames": [b"img%d.png" % i for i in range(n)]}
    batch.update({k.encode(): v for k, v in labels.items()})
    with open(path, "wb") as f:
        # the real batches are Python 2 pickles (protocol 2, bytes keys); a later protocol reads
        # the same and ~40x faster (full-size batches in the differential test)
        pickle.dump(batch, f, protocol=protocol)
    return batch


def write_cifar10(root, r, n_batch=2, n_test=3, protocol=2):
    """cifar-10-batches-py/ under root with data_batch_1..5 and test_batch; (folder, batches)."""
    folder = os.path.join(root, "cifar-10-batches-py")
    os.makedirs(folder, exist_ok=True)
    batches = [_pickle_batch(os.path.join(folder, name), r, n, {"labels": [int(v) for v in r.randint(0, 10, n)]},
                             protocol)
               for name, n in [(f"data_batch_{i}", n_batch) for i in range(1, 6)] + [("test_batch", n_test)]]
    return folder, batches


def write_cifar100(root, r, n_train=5, n_test=3):
    folder = os.path.join(root, "cifar-100-python")
    os.makedirs(folder, exist_ok=True)
    batches = [_pickle_batch(os.path.join(folder, name), r, n, {
        "fine_labels": [int(v) for v in r.randint(0, 100, n)], "coarse_labels": [int(v) for v in r.randint(0, 20, n)]})
        for name, n in (("train", n_train), ("test", n_test))]
    return folder, batches


def write_boston(path, r, n=10):
    x = r.rand(n, 13) * 10
    x[:, 0] = np.arange(n)  # column 0 numbers the rows: pairing survives the shuffle
    np.savez(path, x=x, y=np.arange(n) * 1.5)
    return path


def write_imdb(path, train, test, y_train, y_test):
    np.savez(path, x_train=object_array(train), y_train=np.asarray(y_train), x_test=object_array(test),
             y_test=np.asarray(y_test))
    return path


def write_reuters(path, seqs, labels):
    np.savez(path, x=object_array(seqs), y=np.asarray(labels))
    return path


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


def fake_get_file(files, calls):
    """A get_file returning files[fname] (offline), appending each call's arguments to calls."""
    def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None, cache_subdir="datasets",
                 hash_algorithm="auto", extract=False, archive_format="auto", cache_dir=None):
        calls.append(dict(fname=fname, origin=origin, untar=untar, md5_hash=md5_hash, file_hash=file_hash,
                          cache_subdir=cache_subdir, hash_algorithm=hash_algorithm, extract=extract,
                          archive_format=archive_format, cache_dir=cache_dir))
        return files[fname]
    return get_file


@pytest.fixture
def serve(monkeypatch):
    """serve({fname: path}) makes collflow's get_file hand out those paths; returns the call log."""
    def install(files):
        calls = []
        monkeypatch.setattr(data_utils, "get_file", fake_get_file(files, calls))
        return calls
    return install


# -- registration ------------------------------------------------------------------------------

def test_tf_keras_datasets_namespaces():
    from collflow.keras.datasets import cifar100, mnist  # the `from ... import` style
    assert mnist is ds.mnist and cifar100.load_data is ds.cifar100.load_data
    for name in ds.__all__:
        assert getattr(tf.keras.datasets, name) is getattr(ds, name)
        assert callable(getattr(tf.keras.datasets, name).load_data)
    assert tf.keras.datasets.imdb.get_word_index.__name__ == "get_word_index"
    names = tf.keras.datasets.reuters.get_label_names()
    assert len(names) == 46 and names[:3] == ("cocoa", "grain", "veg-oil") and names[-1] == "lead"


# -- mnist, fashion_mnist ----------------------------------------------------------------------

def test_mnist_round_trip_and_download_arguments(tmp_path, serve):
    path = write_mnist(str(tmp_path / "m.npz"), np.random.RandomState(0))
    calls = serve({"mnist.npz": path})
    (xa, ya), (xb, yb) = tf.keras.datasets.mnist.load_data()
    with np.load(path) as f:
        for got, key in ((xa, "x_train"), (ya, "y_train"), (xb, "x_test"), (yb, "y_test")):
            np.testing.assert_array_equal(got, f[key])
            assert got.dtype == np.uint8
    assert xa.shape == (6, 28, 28) and yb.shape == (3,)
    assert calls[0]["origin"] == "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
    assert calls[0]["file_hash"] == "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"
    assert calls[0]["cache_dir"] is None
    cache = tmp_path / "made" / "here"
    calls = serve({"mine.npz": path})
    ds.mnist.load_data(path="mine.npz", cache_dir=str(cache))
    assert cache.is_dir() and calls[0]["cache_dir"] == str(cache) and calls[0]["fname"] == "mine.npz"


def test_mnist_and_cifar10_through_the_real_cache(tmp_path, monkeypatch):
    """A copy already in cache_dir/datasets is used (its hash accepted here: it is synthetic), and
    CIFAR's tar.gz is unpacked beside it."""
    monkeypatch.setattr(data_utils, "validate_file", lambda *a, **k: True)
    cache = tmp_path / "cache"
    (cache / "datasets").mkdir(parents=True)
    r = np.random.RandomState(1)
    write_mnist(str(cache / "datasets" / "mnist.npz"), r)
    (x, _), _ = ds.mnist.load_data(cache_dir=str(cache))
    assert x.shape == (6, 28, 28)
    folder, batches = write_cifar10(str(tmp_path / "src"), r)
    with tarfile.open(str(cache / "datasets" / "cifar-10-batches-py.tar.gz"), "w:gz") as t:
        t.add(folder, arcname="cifar-10-batches-py")
    (x, y), (xt, yt) = ds.cifar10.load_data(cache_dir=str(cache))
    assert (cache / "datasets" / "cifar-10-batches-py" / "test_batch").is_file()
    assert x.shape == (10, 32, 32, 3) and y.shape == (10, 1) and xt.shape == (3, 32, 32, 3)
    assert y[:, 0].tolist() == sum((b[b"labels"] for b in batches[:5]), [])


def test_fashion_mnist_reads_the_idx_files(tmp_path, serve):
    files = write_fashion(str(tmp_path / "f"), np.random.RandomState(2))
    calls = serve(files)
    (x, y), (xt, yt) = ds.fashion_mnist.load_data()
    assert x.shape == (5, 28, 28) and y.shape == (5,) and xt.shape == (4, 28, 28) and yt.shape == (4,)
    assert {a.dtype for a in (x, y, xt, yt)} == {np.dtype(np.uint8)}
    with gzip.open(files["train-images-idx3-ubyte.gz"]) as f:
        np.testing.assert_array_equal(x.ravel(), np.frombuffer(f.read()[16:], np.uint8))
    with gzip.open(files["t10k-labels-idx1-ubyte.gz"]) as f:
        np.testing.assert_array_equal(yt, np.frombuffer(f.read()[8:], np.uint8))
    assert [c["fname"] for c in calls] == ["train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
                                           "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"]
    assert {c["cache_subdir"] for c in calls} == {os.path.join("datasets", "fashion-mnist")}
    assert all(c["file_hash"] is None for c in calls)


# -- cifar -------------------------------------------------------------------------------------

def _pixel_check(x_nhwc, data):
    # pixel (n, h, w, c) of an image is data[n, c * 1024 + h * 32 + w] in the pickled rows
    n, h, w, c = 1, 5, 7, 2
    assert x_nhwc[n, h, w, c] == data[n, c * 1024 + h * 32 + w]


def test_cifar10_layout_labels_and_dtypes(tmp_path, serve):
    folder, batches = write_cifar10(str(tmp_path), np.random.RandomState(3))
    calls = serve({"cifar-10-batches-py": folder})
    (x, y), (xt, yt) = ds.cifar10.load_data()
    assert calls[0]["untar"] and calls[0]["origin"] == "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    assert x.shape == (10, 32, 32, 3) and xt.shape == (3, 32, 32, 3) and y.shape == (10, 1) and yt.shape == (3, 1)
    assert {a.dtype for a in (x, y, xt, yt)} == {np.dtype(np.uint8)}
    _pixel_check(x, batches[0][b"data"])
    _pixel_check(x[2:], batches[1][b"data"])  # batches stacked in order, 2 images each
    _pixel_check(xt, batches[5][b"data"])
    assert yt[:, 0].tolist() == batches[5][b"labels"]
    backend_more.set_image_data_format("channels_first")
    try:
        (xf, _), (xtf, _) = ds.cifar10.load_data()
    finally:
        backend_more.set_image_data_format("channels_last")
    assert xf.shape == (10, 3, 32, 32)
    np.testing.assert_array_equal(xf, x.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(xtf.reshape(3, -1), batches[5][b"data"])


def test_cifar100_label_modes(tmp_path, serve):
    folder, (train, test) = write_cifar100(str(tmp_path), np.random.RandomState(4))
    calls = serve({"cifar-100-python": folder})
    (x, y), (xt, yt) = ds.cifar100.load_data()
    assert calls[0]["file_hash"] == "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"
    assert x.shape == (5, 32, 32, 3) and x.dtype == np.uint8 and y.shape == (5, 1)
    assert y.dtype == np.int64  # labels are left as NumPy makes them from the pickled list
    assert y[:, 0].tolist() == train[b"fine_labels"] and yt[:, 0].tolist() == test[b"fine_labels"]
    _pixel_check(xt, test[b"data"])
    (_, y), (_, yt) = ds.cifar100.load_data(label_mode="coarse")
    assert y[:, 0].tolist() == train[b"coarse_labels"] and yt[:, 0].tolist() == test[b"coarse_labels"]
    with pytest.raises(ValueError, match="label_mode"):
        ds.cifar100.load_data(label_mode="medium")


# -- boston_housing ----------------------------------------------------------------------------

def test_boston_housing_seeded_split(tmp_path, serve):
    serve({"boston_housing.npz": write_boston(str(tmp_path / "b.npz"), np.random.RandomState(5))})
    (x, y), (xt, yt) = ds.boston_housing.load_data()
    assert x.shape == (8, 13) and xt.shape == (2, 13) and y.shape == (8,) and yt.shape == (2,)  # int(10 * 0.8)
    order = np.random.RandomState(113).permutation(10)
    np.testing.assert_array_equal(np.concatenate([x[:, 0], xt[:, 0]]), order)
    np.testing.assert_array_equal(np.concatenate([y, yt]), order * 1.5)  # still paired
    (x, _), (xt, _) = ds.boston_housing.load_data(test_split=0.5, seed=9)
    assert len(x) == 5 and x[0, 0] == np.random.RandomState(9).permutation(10)[0]
    (x, _), (xt, _) = ds.boston_housing.load_data(test_split=0.0)
    assert len(x) == 10 and xt.shape == (0, 13)
    with pytest.raises(AssertionError):
        ds.boston_housing.load_data(test_split=1.0)


# -- imdb --------------------------------------------------------------------------------------

# reviews of word ranks; each label is the review's number (so pairing is checkable)
IMDB_TRAIN = [[1, 2, 3], [4, 1], [5, 5, 5, 5, 5], [2]]
IMDB_TEST = [[6, 1], [3, 3, 3]]


@pytest.fixture
def imdb_file(tmp_path, serve):
    path = write_imdb(str(tmp_path / "imdb.npz"), IMDB_TRAIN, IMDB_TEST, [0, 1, 2, 3], [10, 11])
    return serve({"imdb.npz": path})


def _by_label(x, y):
    assert x.dtype == object and len(x) == len(y)
    return {int(label): list(seq) for seq, label in zip(x, y)}


def test_imdb_defaults(imdb_file):
    (x, y), (xt, yt) = ds.imdb.load_data()
    # start_char 1, ranks + 3; num_words=None bounds by the largest index (9) itself: 9 -> oov 2
    assert _by_label(x, y) == {0: [1, 4, 5, 6], 1: [1, 7, 4], 2: [1, 8, 8, 8, 8, 8], 3: [1, 5]}
    assert _by_label(xt, yt) == {10: [1, 2, 4], 11: [1, 6, 6, 6]}
    rng = np.random.RandomState(113)  # one generator: train's permutation, then test's
    assert y.tolist() == rng.permutation(4).tolist()
    assert yt.tolist() == (10 + rng.permutation(2)).tolist()
    assert y.dtype == np.asarray([0]).dtype and all(type(w) is int for s in x for w in s)
    (x2, y2), _ = ds.imdb.load_data()
    assert y2.tolist() == y.tolist() and [list(s) for s in x2] == [list(s) for s in x]
    orders = {tuple(ds.imdb.load_data(seed=s)[0][1]) for s in range(6)}
    assert len(orders) > 1  # the seed matters


def test_imdb_maxlen_filters_before_the_vocabulary(imdb_file):
    (x, y), (xt, yt) = ds.imdb.load_data(maxlen=4)  # strictly shorter than 4, start_char counted
    assert _by_label(x, y) == {1: [1, 7, 4], 3: [1, 5]}
    assert _by_label(xt, yt) == {10: [1, 2, 4]}
    with pytest.raises(ValueError, match="maxlen=2"):
        ds.imdb.load_data(maxlen=2)  # nothing of the training split is left
    (x, y), _ = ds.imdb.load_data(maxlen=0)  # 0 is "no maxlen"
    assert len(x) == 4


def test_imdb_num_words_skip_top_oov(imdb_file):
    (x, y), (xt, yt) = ds.imdb.load_data(num_words=6, skip_top=2)
    assert _by_label(x, y) == {0: [2, 4, 5, 2], 1: [2, 2, 4], 2: [2, 2, 2, 2, 2, 2], 3: [2, 5]}
    assert _by_label(xt, yt) == {10: [2, 2, 4], 11: [2, 2, 2, 2]}
    (x, y), (xt, yt) = ds.imdb.load_data(num_words=6, skip_top=2, oov_char=None)  # dropped instead
    assert _by_label(x, y) == {0: [4, 5], 1: [4], 2: [], 3: [5]}
    assert _by_label(xt, yt) == {10: [4], 11: []}
    (x, y), _ = ds.imdb.load_data(nb_words=6, skip_top=2)  # Keras 1's name
    assert _by_label(x, y)[0] == [2, 4, 5, 2]
    with pytest.raises(TypeError, match="Unrecognized keyword"):
        ds.imdb.load_data(num_word=6)


def test_imdb_start_char_and_index_from(imdb_file):
    (x, y), (xt, yt) = ds.imdb.load_data(start_char=None, index_from=0)  # raw ranks; 6 the bound -> oov
    assert _by_label(x, y) == {0: [1, 2, 3], 1: [4, 1], 2: [5, 5, 5, 5, 5], 3: [2]}
    assert _by_label(xt, yt) == {10: [2, 1], 11: [3, 3, 3]}
    (x, y), _ = ds.imdb.load_data(start_char=7, index_from=10, oov_char=0, num_words=13)
    assert _by_label(x, y) == {0: [7, 11, 12, 0], 1: [7, 0, 11], 2: [7, 0, 0, 0, 0, 0], 3: [7, 12]}


def test_imdb_word_index(tmp_path, serve):
    calls = serve({"imdb_word_index.json": write_json(str(tmp_path / "w.json"), {"the": 1, "and": 2})})
    assert ds.imdb.get_word_index() == {"the": 1, "and": 2}
    assert calls[0]["file_hash"] == "bfafd718b763782e994055a2d397834f" and calls[0]["cache_dir"] is None
    assert calls[0]["origin"].endswith("/tf-keras-datasets/imdb_word_index.json")


# -- reuters -----------------------------------------------------------------------------------

REUTERS = [[1, 2], [3], [2, 2, 2, 2], [4, 1, 1], [5]]


def test_reuters_split_and_rules(tmp_path, serve):
    calls = serve({"reuters.npz": write_reuters(str(tmp_path / "r.npz"), REUTERS, [0, 1, 2, 3, 4]),
                   "reuters_word_index.json": write_json(str(tmp_path / "w.json"), {"the": 1})})
    (x, y), (xt, yt) = ds.reuters.load_data()
    order = np.random.RandomState(113).permutation(5)
    assert y.tolist() == order[:4].tolist() and yt.tolist() == order[4:].tolist()  # int(5 * 0.8) = 4
    every = {**_by_label(x, y), **_by_label(xt, yt)}
    assert every == {0: [1, 4, 5], 1: [1, 6], 2: [1, 5, 5, 5, 5], 3: [1, 7, 4, 4], 4: [1, 2]}  # 8 -> oov
    assert calls[0]["file_hash"] == "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916"
    (x, y), (xt, yt) = ds.reuters.load_data(test_split=0.4, maxlen=4, num_words=7, skip_top=5, oov_char=None)
    # shorter than 4: reviews 0, 1, 4 (split 3 * 0.6 = 1 | 2); indices kept in [5, 7)
    assert len(x) == 1 and len(xt) == 2
    assert {**_by_label(x, y), **_by_label(xt, yt)} == {0: [5], 1: [6], 4: []}
    (x, y), (xt, yt) = ds.reuters.load_data(maxlen=1, num_words=10)  # nothing left: empty, no error
    assert x.shape == (0,) and xt.shape == (0,) and y.shape == (0,)
    with pytest.raises(ValueError):
        ds.reuters.load_data(maxlen=1)  # nothing left and no num_words to bound the vocabulary
    assert ds.reuters.get_word_index() == {"the": 1}
    assert calls[-1]["file_hash"] == "4d44cc38712099c9e383dc6e5f11a921"


def test_equal_length_sequences_give_a_2d_object_array(tmp_path, serve):
    # as tf_keras: np.array over lists of one length stacks them
    serve({"reuters.npz": write_reuters(str(tmp_path / "r.npz"), [[1, 2], [3, 4], [5, 6]], [0, 1, 2])})
    (x, _), (xt, _) = ds.reuters.load_data(test_split=0.0)
    assert x.dtype == object and x.shape == (3, 3) and xt.shape == (0,)
