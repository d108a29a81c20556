"""TF 1.x's MNIST reader (`tensorflow.examples.tutorials.mnist.input_data`, also
`tf.contrib.learn.datasets.mnist`): `read_data_sets(train_dir, one_hot=...)` downloads the four
IDX files into train_dir when they are not there, and returns train/validation/test `DataSet`s
whose `next_batch` walks each epoch in a shuffled order.

    mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)
    xs, ys = mnist.train.next_batch(100)        # float32 [100, 784] in [0, 1], [100, 10]

Shuffles draw from NumPy's global generator, seeded when a DataSet is made (by `seed`, else the
graph-level seed, else unseeded), as TF's did: a TF1 program that seeds gets TF's batches.
"""
from __future__ import annotations

import collections
import gzip
import os
import shutil
import tempfile
from typing import Any, List, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import NotFoundError
from ..graph.ops.random_ops import get_seed

__all__ = ["DataSet", "Datasets", "read_data_sets", "load_mnist", "maybe_download", "extract_images",
           "extract_labels", "dense_to_one_hot", "DEFAULT_SOURCE_URL", "load_dataset"]

DEFAULT_SOURCE_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
          "t10k-labels-idx1-ubyte.gz")
_IMAGES_MAGIC, _LABELS_MAGIC = 2051, 2049

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def _read32(stream: Any) -> int:
    raw = stream.read(4)
    if len(raw) != 4:
        raise ValueError("truncated MNIST header")
    return int(np.frombuffer(raw, dtype=">u4")[0])


def _read_idx(f: Any, magic_expected: int, kind: str, dims: int) -> np.ndarray:
    name = getattr(f, "name", "<stream>")
    with gzip.GzipFile(fileobj=f) as stream:
        magic = _read32(stream)
        if magic != magic_expected:
            raise ValueError(f"Invalid magic number {magic} in MNIST {kind} file: {name}")
        shape = [_read32(stream) for _ in range(dims)]
        count = int(np.prod(shape))
        data = np.frombuffer(stream.read(count), dtype=np.uint8)
    if data.size != count:  # a cut-off download: say so rather than fail in reshape
        raise ValueError(f"MNIST {kind} file {name} holds {data.size} of its {count} bytes")
    return data.reshape(shape)


def extract_images(f: Any) -> np.ndarray:
    """The images of an IDX3 gzip file object as uint8 [index, y, x, 1]."""
    return _read_idx(f, _IMAGES_MAGIC, "image", 3)[..., None]


def dense_to_one_hot(labels_dense: np.ndarray, num_classes: int) -> np.ndarray:
    """Class ids [n] to one-hot rows [n, num_classes], float64 as TF's (uint8 rows would wrap
    around under `-labels` or `1 - 2 * labels`)."""
    out = np.zeros((labels_dense.shape[0], num_classes))
    out[np.arange(labels_dense.shape[0]), labels_dense.ravel()] = 1
    return out


def extract_labels(f: Any, one_hot: bool = False, num_classes: int = 10) -> np.ndarray:
    """The labels of an IDX1 gzip file object: uint8 [index], or one-hot float64 [index, num_classes]."""
    labels = _read_idx(f, _LABELS_MAGIC, "label", 1)
    return dense_to_one_hot(labels, num_classes) if one_hot else labels


class DataSet:
    """Images and labels with TF 1.x's `next_batch`: the first epoch and each later one are
    walked in a fresh shuffled order (shuffle=True), and a batch that crosses the end of an
    epoch is the rest of that epoch followed by the start of the next."""

    def __init__(self, images: Any, labels: Any, fake_data: bool = False, one_hot: bool = False,
                 dtype: Any = _dt.float32, reshape: bool = True, seed: Optional[int] = None):
        seed1, seed2 = get_seed(seed)
        # TF seeds NumPy's global generator here (its shuffles draw from it later)
        np.random.seed(seed1 if seed is None else seed2)
        dtype = _dt.as_dtype(dtype).base_dtype
        if dtype not in (_dt.uint8, _dt.float32):
            raise TypeError(f"Invalid image dtype {dtype!r}, expected uint8 or float32")
        if fake_data:
            self._num_examples = 10000
            self.one_hot = one_hot
        else:
            images, labels = np.asarray(images), np.asarray(labels)
            if images.shape[0] != labels.shape[0]:
                raise ValueError(f"images.shape: {images.shape} labels.shape: {labels.shape}")
            self._num_examples = images.shape[0]
            if reshape:
                if images.ndim != 4 or images.shape[3] != 1:
                    raise ValueError(f"reshape=True wants images of shape [n, rows, cols, 1], got {images.shape}")
                images = images.reshape(images.shape[0], images.shape[1] * images.shape[2])
            if dtype == _dt.float32:
                images = images.astype(np.float32) * np.float32(1.0 / 255.0)
        self._images = images
        self._labels = labels
        self._epochs_completed = 0
        self._index_in_epoch = 0

    @property
    def images(self) -> np.ndarray:
        return self._images

    @property
    def labels(self) -> np.ndarray:
        return self._labels

    @property
    def num_examples(self) -> int:
        return self._num_examples

    @property
    def epochs_completed(self) -> int:
        return self._epochs_completed

    def _permute(self) -> None:
        perm = np.arange(self._num_examples)
        np.random.shuffle(perm)
        self._images, self._labels = self._images[perm], self._labels[perm]

    def next_batch(self, batch_size: int, fake_data: bool = False, shuffle: bool = True) -> Tuple[Any, Any]:
        """The next `batch_size` examples (images, labels)."""
        if fake_data:
            label = [1] + [0] * 9 if self.one_hot else 0
            return [[1] * 784 for _ in range(batch_size)], [label for _ in range(batch_size)]
        start = self._index_in_epoch
        if self._epochs_completed == 0 and start == 0 and shuffle:
            self._permute()
        if start + batch_size <= self._num_examples:
            self._index_in_epoch = start + batch_size
            return self._images[start:self._index_in_epoch], self._labels[start:self._index_in_epoch]
        # the batch crosses the epoch's end: its rest, then the next epoch's start
        self._epochs_completed += 1
        rest_images, rest_labels = self._images[start:], self._labels[start:]
        if shuffle:
            self._permute()
        self._index_in_epoch = end = batch_size - (self._num_examples - start)
        return (np.concatenate((rest_images, self._images[:end]), axis=0),
                np.concatenate((rest_labels, self._labels[:end]), axis=0))


def maybe_download(filename: str, work_directory: str, source_url: str) -> str:
    """work_directory/filename, downloaded from source_url first when it is not there (into a
    temporary file renamed into place, so an interrupted download leaves no partial file)."""
    os.makedirs(work_directory, exist_ok=True)
    path = os.path.join(work_directory, filename)
    if os.path.exists(path):
        return path
    from urllib.request import urlopen
    fd, tmp = tempfile.mkstemp(dir=work_directory, prefix=f".{filename}.")
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with urlopen(source_url) as response:  # noqa: S310  (the user's URL, as TF's)
                    shutil.copyfileobj(response, out)
            except OSError as e:
                raise NotFoundError(None, None, f"could not download {filename} from {source_url}: {e}; "
                                                f"put the file into {work_directory} by hand") from e
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    print("Successfully downloaded", filename, os.path.getsize(path), "bytes.")
    return path


def read_data_sets(train_dir: str, fake_data: bool = False, one_hot: bool = False, dtype: Any = _dt.float32,
                   reshape: bool = True, validation_size: int = 5000, seed: Optional[int] = None,
                   source_url: str = DEFAULT_SOURCE_URL) -> Datasets:
    """Datasets(train, validation, test) of MNIST from train_dir (downloaded there if missing):
    the validation set is the first `validation_size` training images, as TF's."""
    options = dict(dtype=dtype, reshape=reshape, seed=seed)
    if fake_data:
        fakes: List[DataSet] = [DataSet([], [], fake_data=True, one_hot=one_hot, **options) for _ in range(3)]
        return Datasets(*fakes)
    source_url = source_url or DEFAULT_SOURCE_URL
    arrays = []
    for i, name in enumerate(_FILES):
        with open(maybe_download(name, train_dir, source_url + name), "rb") as f:
            arrays.append(extract_images(f) if i % 2 == 0 else extract_labels(f, one_hot=one_hot))
    train_images, train_labels, test_images, test_labels = arrays
    if not 0 <= validation_size <= len(train_images):
        raise ValueError(f"Validation size should be between 0 and {len(train_images)}. "
                         f"Received: {validation_size}.")
    # made in TF's order: each one reseeds NumPy's generator
    train = DataSet(train_images[validation_size:], train_labels[validation_size:], **options)
    validation = DataSet(train_images[:validation_size], train_labels[:validation_size], **options)
    test = DataSet(test_images, test_labels, **options)
    return Datasets(train=train, validation=validation, test=test)


def load_mnist(train_dir: str = "MNIST-data") -> Datasets:
    """read_data_sets(train_dir) with its defaults."""
    return read_data_sets(train_dir)


def load_dataset(name: str, size: str = "small", test_with_fake_data: bool = False) -> Datasets:
    """tf.contrib.learn.datasets.load_dataset for "mnist": load_mnist(), as TF 1.x's (which
    passes `size` and `test_with_fake_data` to dbpedia's loader only)."""
    if name != "mnist":
        raise ValueError(f"Name of dataset is not found: {name} (collflow provides 'mnist')")
    return load_mnist()
