"""TF 1.x's MNIST tutorial reader (`collflow.examples.tutorials.mnist.input_data`, also
`tf.contrib.learn.datasets.mnist`) on small IDX files written here: parsing, dtypes, one-hot,
the validation split, next_batch's epochs and TF's seeding of NumPy's generator, downloads and
bad files."""
import gzip
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.examples.tutorials.mnist import input_data

N_TRAIN, N_TEST, ROWS, COLS = 23, 7, 4, 3


def _idx(path, magic, arr):
    header = np.array([magic, *arr.shape], dtype=">u4").tobytes()
    with gzip.open(path, "wb") as f:
        f.write(header + arr.astype(np.uint8).tobytes())


@pytest.fixture
def mnist_dir(tmp_path):
    r = np.random.RandomState(0)
    data = {"train_x": r.randint(0, 256, (N_TRAIN, ROWS, COLS)), "train_y": r.randint(0, 10, N_TRAIN),
            "test_x": r.randint(0, 256, (N_TEST, ROWS, COLS)), "test_y": r.randint(0, 10, N_TEST)}
    _idx(tmp_path / "train-images-idx3-ubyte.gz", 2051, data["train_x"])
    _idx(tmp_path / "train-labels-idx1-ubyte.gz", 2049, data["train_y"])
    _idx(tmp_path / "t10k-images-idx3-ubyte.gz", 2051, data["test_x"])
    _idx(tmp_path / "t10k-labels-idx1-ubyte.gz", 2049, data["test_y"])
    return str(tmp_path), data


def test_read_data_sets_splits_scales_and_one_hots(mnist_dir):
    path, d = mnist_dir
    m = input_data.read_data_sets(path, one_hot=True, validation_size=5)
    assert m._fields == ("train", "validation", "test")
    assert (m.train.num_examples, m.validation.num_examples, m.test.num_examples) == (18, 5, 7)
    assert m.train.images.dtype == np.float32 and m.train.images.shape == (18, ROWS * COLS)
    np.testing.assert_array_equal(m.validation.images, d["train_x"][:5].reshape(5, -1).astype(np.float32)
                                  * np.float32(1 / 255))
    np.testing.assert_array_equal(m.train.labels, np.eye(10)[d["train_y"][5:]])
    assert m.train.labels.dtype == np.float64 and m.test.labels.shape == (7, 10)   # TF's one-hot dtype
    assert m.train.images.max() <= 1.0 and m.train.epochs_completed == 0

    raw = input_data.read_data_sets(path, dtype=tf.uint8, reshape=False, validation_size=0)
    np.testing.assert_array_equal(raw.train.images, d["train_x"][..., None])
    np.testing.assert_array_equal(raw.test.labels, d["test_y"])
    assert raw.validation.num_examples == 0

    with pytest.raises(ValueError, match="Validation size should be between 0 and 23. Received: 24"):
        input_data.read_data_sets(path, validation_size=24)
    with pytest.raises(TypeError, match="Invalid image dtype"):
        input_data.read_data_sets(path, dtype=tf.float64, validation_size=0)


def _epoch_batches(ds, n_batches, batch, shuffle=True):
    return [ds.next_batch(batch, shuffle=shuffle) for _ in range(n_batches)]


def test_next_batch_walks_shuffled_epochs_as_tf(mnist_dir):
    path, d = mnist_dir
    m = input_data.read_data_sets(path, reshape=False, dtype=tf.uint8, validation_size=3, seed=11)
    ds = m.train                                    # 20 examples
    images = d["train_x"][3:][..., None]
    # TF's contract: the first epoch's order is NumPy's global generator, seeded by `seed` when the
    # DataSet was made (the test set, made last, reseeded it the same), shuffling arange(n)
    r = np.random.RandomState(11)          # what np.random.seed(11) makes the global one
    perm = np.arange(20)
    r.shuffle(perm)
    x, y = ds.next_batch(8)
    np.testing.assert_array_equal(x, images[perm[:8]])
    np.testing.assert_array_equal(y, d["train_y"][3:][perm[:8]])
    x2, _ = ds.next_batch(8)
    np.testing.assert_array_equal(x2, images[perm[8:16]])
    # crossing the epoch's end: its last 4, then the first 4 of a new shuffled order
    x3, y3 = ds.next_batch(8)
    assert ds.epochs_completed == 1 and x3.shape == (8, ROWS, COLS, 1)
    np.testing.assert_array_equal(x3[:4], images[perm[16:]])
    perm2 = np.arange(20)
    r.shuffle(perm2)
    np.testing.assert_array_equal(x3[4:], images[perm[perm2[:4]]])
    # every epoch is a permutation: the next 16 complete epoch 2 with no repeats
    rest = np.concatenate([x3[4:]] + [ds.next_batch(4)[0] for _ in range(4)])
    flat = sorted(map(bytes, rest.reshape(20, -1)))
    assert flat == sorted(map(bytes, images.astype(np.uint8).reshape(20, -1)))


def test_seeding_matches_tf_rules(mnist_dir):
    path, _ = mnist_dir

    def first_batch(**kw):
        return input_data.read_data_sets(path, validation_size=0, **kw).train.next_batch(5)[0]

    np.testing.assert_array_equal(first_batch(seed=3), first_batch(seed=3))
    assert not np.array_equal(first_batch(seed=3), first_batch(seed=4))
    with tf.Graph().as_default():          # no seed: the graph-level seed seeds NumPy
        tf.set_random_seed(3)
        a = first_batch()
    np.testing.assert_array_equal(a, first_batch(seed=3))
    plain = input_data.read_data_sets(path, validation_size=0, seed=1).train
    xs = np.concatenate([plain.next_batch(10, shuffle=False)[0] for _ in range(3)])
    full = plain.images
    np.testing.assert_array_equal(xs, np.concatenate([full[:23], full[:7]]))


def test_fake_data():
    m = input_data.read_data_sets("unused", fake_data=True, one_hot=True)
    assert m.train.num_examples == 10000
    x, y = m.train.next_batch(3, fake_data=True)
    assert np.asarray(x).shape == (3, 784) and y[0] == [1] + [0] * 9
    assert not os.path.exists("unused")


def test_download_from_url_and_no_partial_file(mnist_dir, tmp_path):
    src, d = mnist_dir
    dest = tmp_path / "fresh"
    m = input_data.read_data_sets(str(dest), source_url="file://" + src + "/", validation_size=2)
    assert m.train.num_examples == N_TRAIN - 2
    assert sorted(os.listdir(dest)) == sorted(f for f in os.listdir(src) if f.endswith(".gz"))
    empty = tmp_path / "empty"
    with pytest.raises(tf.errors.NotFoundError, match="could not download train-images-idx3-ubyte.gz"):
        input_data.read_data_sets(str(empty), source_url="file://" + str(tmp_path / "nowhere") + "/")
    assert os.listdir(empty) == []


def test_bad_files_raise_clear_errors(mnist_dir):
    path, d = mnist_dir
    _idx(os.path.join(path, "t10k-labels-idx1-ubyte.gz"), 2051, d["test_y"])
    with pytest.raises(ValueError, match="Invalid magic number 2051 in MNIST label file"):
        input_data.read_data_sets(path)
    _idx(os.path.join(path, "t10k-labels-idx1-ubyte.gz"), 2049, d["test_y"])
    with gzip.open(os.path.join(path, "train-images-idx3-ubyte.gz"), "wb") as f:
        f.write(np.array([2051, N_TRAIN, ROWS, COLS], dtype=">u4").tobytes() + b"\0" * 10)
    with pytest.raises(ValueError, match="holds 10 of its 276 bytes"):
        input_data.read_data_sets(path)


def test_contrib_learn_names():
    from collflow.contrib.learn.python.learn.datasets import mnist
    assert mnist.read_data_sets is input_data.read_data_sets
    assert tf.contrib.learn.datasets.mnist is mnist
    assert tf.contrib.learn.datasets.base.Datasets is input_data.Datasets
    with pytest.raises(ValueError, match="Name of dataset is not found: iris"):
        tf.contrib.learn.datasets.load_dataset("iris")
    with pytest.raises(AttributeError, match="tf.contrib.learn.TensorFlowEstimator is not provided"):
        tf.contrib.learn.TensorFlowEstimator


def test_softmax_tutorial_program_learns(tmp_path):
    """mnist_softmax.py's program, unchanged but for the import line, on 28x28 images whose class
    is written into them: the accuracy on the test set ends near 1."""
    r = np.random.RandomState(1)

    def images(labels):
        x = r.randint(0, 60, (len(labels), 28, 28))
        for i, k in enumerate(labels):
            x[i, 2 * k:2 * k + 3, 5:20] = 255
        return x
    ytr, yte = r.randint(0, 10, 600), r.randint(0, 10, 100)
    _idx(tmp_path / "train-images-idx3-ubyte.gz", 2051, images(ytr))
    _idx(tmp_path / "train-labels-idx1-ubyte.gz", 2049, ytr)
    _idx(tmp_path / "t10k-images-idx3-ubyte.gz", 2051, images(yte))
    _idx(tmp_path / "t10k-labels-idx1-ubyte.gz", 2049, yte)
    mnist = input_data.read_data_sets(str(tmp_path), one_hot=True, validation_size=100, seed=0)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 784])
        W = tf.Variable(tf.zeros([784, 10]))
        b = tf.Variable(tf.zeros([10]))
        y = tf.matmul(x, W) + b
        y_ = tf.placeholder(tf.float32, [None, 10])
        cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y))
        train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
        sess = tf.InteractiveSession()
        tf.global_variables_initializer().run()
        for _ in range(60):
            batch_xs, batch_ys = mnist.train.next_batch(50)
            sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})
        correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        acc = sess.run(accuracy, feed_dict={x: mnist.test.images, y_: mnist.test.labels})
        sess.close()
    assert mnist.train.epochs_completed == 5   # TF counts an epoch when a batch crosses its end
    assert acc > 0.95
