"""tf.keras.datasets: the small NumPy datasets Keras downloads on first use and caches under
~/.keras/datasets (mnist, fashion_mnist, cifar10, cifar100, boston_housing, imdb, reuters).

    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data()

Each loader takes tf_keras 2.x's arguments and returns what it returns: the same archives
(URLs, file names, hashes), the same seeded shuffles, and for imdb / reuters the same word-index
rewriting (start_char, index_from, maxlen, num_words, skip_top, oov_char).  Files are fetched
with keras.utils.get_file (data_utils.py), so a copy already in the cache is used offline.
"""
from __future__ import annotations

import json
import os
import pickle
import types
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..data import mnist_input as _mnist_input
from . import backend as _K
from . import data_utils as _data_utils
from ..platform import tf_logging as _logging

__all__ = ["mnist", "fashion_mnist", "cifar10", "cifar100", "boston_housing", "imdb", "reuters"]

_Split = Tuple[Tuple[np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray]]

_KERAS_BUCKET = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_CIFAR_SITE = "https://www.cs.toronto.edu/~kriz/"


# -- shared helpers ----------------------------------------------------------------------------

def _fetch(fname: str, origin: str, **kwargs: Any) -> str:
    # looked up on every call (not imported by name) so that a patched data_utils.get_file is used
    return _data_utils.get_file(fname, origin=origin, **kwargs)


def _cache_dir(cache_dir: Optional[str]) -> Optional[str]:
    # a cache_dir given by the caller is created up front: get_file would otherwise fall back to
    # /tmp/.keras when the folder does not exist (it tests the folder for write access)
    if cache_dir:
        cache_dir = os.path.expanduser(cache_dir)
        os.makedirs(cache_dir, exist_ok=True)
    return cache_dir


def _shuffled(rng: np.random.RandomState, *arrays: np.ndarray) -> Tuple[np.ndarray, ...]:
    """The arrays reordered by one permutation drawn from rng (inputs and labels stay paired)."""
    order = rng.permutation(len(arrays[0]))
    return tuple(a[order] for a in arrays)


def _renumber(seqs: Sequence[Sequence[int]], start_char: Optional[int], index_from: int) -> List[list]:
    """Word ranks moved up by index_from, each sequence led by start_char unless it is None."""
    head = [] if start_char is None else [start_char]
    return [head + [w + index_from for w in s] for s in seqs]


def _drop_long(seqs: List[list], labels: Sequence[Any], maxlen: int) -> Tuple[List[list], List[Any]]:
    """Only the sequences strictly shorter than maxlen (start_char counted), with their labels."""
    kept = [(s, y) for s, y in zip(seqs, labels) if len(s) < maxlen]
    return [s for s, _ in kept], [y for _, y in kept]


def _limit_vocabulary(seqs: List[list], num_words: Optional[int], skip_top: int,
                      oov_char: Optional[int]) -> List[list]:
    """Indices outside [skip_top, num_words) become oov_char, or are dropped when it is None."""
    if not num_words:
        # tf_keras takes the largest index present as the (exclusive) bound, so that one word
        # becomes OOV even with num_words=None; kept for identical outputs
        num_words = max(max(s) for s in seqs)
    lo, hi = skip_top, num_words
    if oov_char is None:
        return [[w for w in s if lo <= w < hi] for s in seqs]
    return [[w if lo <= w < hi else oov_char for w in s] for s in seqs]


def _object_array(seqs: List[list]) -> np.ndarray:
    # np.array, not an empty object array filled in: equal-length sequences give a 2-D object
    # array, as tf_keras's outputs do
    return np.array(seqs, dtype="object")


def _take_num_words(num_words: Optional[int], kwargs: Dict[str, Any]) -> Optional[int]:
    """Keras 1's nb_words is still accepted for num_words; anything else unknown is an error."""
    if "nb_words" in kwargs:
        _logging.warning("The `nb_words` argument in `load_data` has been renamed `num_words`.")
        num_words = kwargs.pop("nb_words")
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {kwargs}.")
    return num_words


def _load_json(fname: str, origin: str, md5: str) -> Dict[str, int]:
    with open(_fetch(fname, origin, file_hash=md5)) as f:
        return json.load(f)


def _cifar_batch(fpath: str, label_key: str = "labels") -> Tuple[np.ndarray, list]:
    """(images as [n, 3, 32, 32], labels) of one pickled CIFAR batch file."""
    with open(fpath, "rb") as f:
        # pickled by Python 2: encoding="bytes" keeps its str keys as bytes (decoded below)
        raw = pickle.load(f, encoding="bytes")
    batch = {k.decode("utf8") if isinstance(k, bytes) else k: v for k, v in raw.items()}
    data = batch["data"]
    return data.reshape(data.shape[0], 3, 32, 32), batch[label_key]


def _channels(x: np.ndarray) -> np.ndarray:
    """CIFAR's planes ([n, c, h, w]) moved last when Keras's image_data_format says so."""
    return x.transpose(0, 2, 3, 1) if _K.image_data_format() == "channels_last" else x


def _namespace(name: str, **functions: Any) -> types.SimpleNamespace:
    for fn in functions.values():
        fn.__qualname__ = f"{name}.{fn.__name__}"
    return types.SimpleNamespace(**functions)


# -- mnist, fashion_mnist ------------------------------------------------------------------------

def _mnist_load_data(path: str = "mnist.npz", cache_dir: Optional[str] = None) -> _Split:
    """MNIST digits: uint8 images (60000, 28, 28) / (10000, 28, 28) and uint8 labels 0-9."""
    fpath = _fetch(path, _KERAS_BUCKET + "mnist.npz",
                   file_hash="731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1",
                   cache_dir=_cache_dir(cache_dir))
    with np.load(fpath, allow_pickle=True) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])


_FASHION_FILES = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
                  "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")


def _idx(fpath: str, images: bool) -> np.ndarray:
    # gzipped IDX files, read by the MNIST tutorials' reader (magic numbers and sizes checked,
    # so a cut-off download, which Fashion-MNIST has no hash to catch, says so)
    with open(fpath, "rb") as f:
        return _mnist_input.extract_images(f)[..., 0] if images else _mnist_input.extract_labels(f)


def _fashion_mnist_load_data(cache_dir: Optional[str] = None) -> _Split:
    """Fashion-MNIST: uint8 images (60000, 28, 28) / (10000, 28, 28) and uint8 labels 0-9."""
    cache_dir = _cache_dir(cache_dir)
    subdir = os.path.join("datasets", "fashion-mnist")
    paths = [_fetch(name, _KERAS_BUCKET + name, cache_dir=cache_dir, cache_subdir=subdir) for name in _FASHION_FILES]
    y_train, y_test = _idx(paths[0], False), _idx(paths[2], False)
    x_train, x_test = _idx(paths[1], True), _idx(paths[3], True)
    return (x_train, y_train), (x_test, y_test)


# -- cifar10, cifar100 -------------------------------------------------------------------------

def _cifar10_load_data(cache_dir: Optional[str] = None) -> _Split:
    """CIFAR-10: uint8 images (50000, 32, 32, 3) / (10000, 32, 32, 3) (channels first under
    image_data_format "channels_first") and uint8 labels 0-9 of shape (n, 1)."""
    root = _fetch("cifar-10-batches-py", _CIFAR_SITE + "cifar-10-python.tar.gz", untar=True,
                  file_hash="6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
                  cache_dir=_cache_dir(cache_dir))
    train = [_cifar_batch(os.path.join(root, f"data_batch_{i}")) for i in range(1, 6)]
    # the five training batches are stacked in order; every part is cast to uint8
    x_train = np.concatenate([x for x, _ in train]).astype("uint8", copy=False)  # concatenate made it new
    y_train = np.concatenate([np.asarray(y) for _, y in train]).astype("uint8").reshape(-1, 1)
    x_test, y_test = _cifar_batch(os.path.join(root, "test_batch"))
    x_test = x_test.astype("uint8")
    y_test = np.asarray(y_test).astype("uint8").reshape(-1, 1)
    return (_channels(x_train), y_train), (_channels(x_test), y_test)


def _cifar100_load_data(label_mode: str = "fine", cache_dir: Optional[str] = None) -> _Split:
    """CIFAR-100: uint8 images as CIFAR-10's, labels of shape (n, 1): the 100 fine classes, or
    the 20 superclasses with label_mode="coarse" (int64 there: tf_keras does not cast them)."""
    if label_mode not in ("fine", "coarse"):
        raise ValueError(f'`label_mode` must be one of `"fine"`, `"coarse"`. Received: label_mode={label_mode}.')
    root = _fetch("cifar-100-python", _CIFAR_SITE + "cifar-100-python.tar.gz", untar=True,
                  file_hash="85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7",
                  cache_dir=_cache_dir(cache_dir))
    out = []
    for part in ("train", "test"):
        x, y = _cifar_batch(os.path.join(root, part), label_key=label_mode + "_labels")
        out.append((_channels(x), np.reshape(y, (len(y), 1))))
    return out[0], out[1]


# -- boston_housing ----------------------------------------------------------------------------

def _boston_housing_load_data(path: str = "boston_housing.npz", test_split: float = 0.2, seed: int = 113,
                              cache_dir: Optional[str] = None) -> _Split:
    """Boston housing: x (n, 13) and prices y (n,), shuffled with `seed`, the last test_split
    fraction held out as the test set."""
    if not 0 <= test_split < 1:
        raise AssertionError(f"test_split must be in [0, 1); got {test_split}")  # tf_keras asserts
    fpath = _fetch(path, _KERAS_BUCKET + "boston_housing.npz",
                   file_hash="f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5",
                   cache_dir=_cache_dir(cache_dir))
    with np.load(fpath, allow_pickle=True) as f:
        x, y = f["x"], f["y"]
    x, y = _shuffled(np.random.RandomState(seed), x, y)
    cut = int(len(x) * (1 - test_split))
    return (np.array(x[:cut]), np.array(y[:cut])), (np.array(x[cut:]), np.array(y[cut:]))


# -- imdb, reuters -----------------------------------------------------------------------------

_NOTHING_KEPT = "After filtering for sequences shorter than maxlen={}, no sequence was kept. Increase maxlen."


def _imdb_load_data(path: str = "imdb.npz", num_words: Optional[int] = None, skip_top: int = 0,
                    maxlen: Optional[int] = None, seed: int = 113, start_char: Optional[int] = 1,
                    oov_char: Optional[int] = 2, index_from: int = 3, cache_dir: Optional[str] = None,
                    **kwargs: Any) -> _Split:
    """IMDB reviews as object arrays of word-index lists, labels 0 / 1 (25000 each split).

    Both splits are shuffled with one RandomState(seed) (train first). Word ranks are shifted
    by index_from and led by start_char; with maxlen, sequences of maxlen or more are dropped
    (ValueError when a split is left empty); indices outside [skip_top, num_words) become
    oov_char (dropped when it is None)."""
    num_words = _take_num_words(num_words, kwargs)
    fpath = _fetch(path, _KERAS_BUCKET + "imdb.npz",
                   file_hash="69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f",
                   cache_dir=_cache_dir(cache_dir))
    with np.load(fpath, allow_pickle=True) as f:
        x_train, y_train, x_test, y_test = f["x_train"], f["y_train"], f["x_test"], f["y_test"]
    rng = np.random.RandomState(seed)
    x_train, y_train = _shuffled(rng, x_train, y_train)
    x_test, y_test = _shuffled(rng, x_test, y_test)  # the same generator, continued
    x_train, x_test = _renumber(x_train, start_char, index_from), _renumber(x_test, start_char, index_from)
    if maxlen:
        x_train, y_train = _drop_long(x_train, y_train, maxlen)
        x_test, y_test = _drop_long(x_test, y_test, maxlen)
        if not x_train or not x_test:
            raise ValueError(_NOTHING_KEPT.format(maxlen))
    # the vocabulary bound (num_words=None) is taken over both splits together
    xs = _limit_vocabulary(x_train + x_test, num_words, skip_top, oov_char)
    labels = np.concatenate([y_train, y_test])
    n = len(x_train)
    return (_object_array(xs[:n]), labels[:n]), (_object_array(xs[n:]), labels[n:])


def _imdb_get_word_index(path: str = "imdb_word_index.json") -> Dict[str, int]:
    """IMDB's {word: rank} (1 the most frequent; a sequence holds rank + index_from)."""
    return _load_json(path, _KERAS_BUCKET + "imdb_word_index.json", "bfafd718b763782e994055a2d397834f")


def _reuters_load_data(path: str = "reuters.npz", num_words: Optional[int] = None, skip_top: int = 0,
                       maxlen: Optional[int] = None, test_split: float = 0.2, seed: int = 113,
                       start_char: Optional[int] = 1, oov_char: Optional[int] = 2, index_from: int = 3,
                       cache_dir: Optional[str] = None, **kwargs: Any) -> _Split:
    """Reuters newswires as object arrays of word-index lists, topic labels 0-45.

    One pool shuffled with RandomState(seed), then imdb's rewriting (no error when maxlen drops
    everything and num_words is given), then the last test_split fraction is the test set."""
    num_words = _take_num_words(num_words, kwargs)
    fpath = _fetch(path, _KERAS_BUCKET + "reuters.npz",
                   file_hash="d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916",
                   cache_dir=_cache_dir(cache_dir))
    with np.load(fpath, allow_pickle=True) as f:
        xs, labels = f["x"], f["y"]
    xs, labels = _shuffled(np.random.RandomState(seed), xs, labels)
    xs = _renumber(xs, start_char, index_from)
    if maxlen:
        xs, labels = _drop_long(xs, labels, maxlen)
        if not xs and not num_words:  # no largest index to bound the vocabulary by
            raise ValueError(_NOTHING_KEPT.format(maxlen))
    xs = _limit_vocabulary(xs, num_words, skip_top, oov_char)
    cut = int(len(xs) * (1 - test_split))
    return ((_object_array(xs[:cut]), np.array(labels[:cut])),
            (_object_array(xs[cut:]), np.array(labels[cut:])))


def _reuters_get_word_index(path: str = "reuters_word_index.json") -> Dict[str, int]:
    """Reuters' {word: rank} (a sequence holds rank + index_from)."""
    return _load_json(path, _KERAS_BUCKET + "reuters_word_index.json", "4d44cc38712099c9e383dc6e5f11a921")


_REUTERS_TOPICS = (
    "cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing", "money-supply", "coffee",
    "sugar", "trade", "reserves", "ship", "cotton", "carcass", "crude", "nat-gas", "cpi", "money-fx",
    "interest", "gnp", "meal-feed", "alum", "oilseed", "gold", "tin", "strategic-metal", "livestock", "retail",
    "ipi", "iron-steel", "rubber", "heat", "jobs", "lei", "bop", "zinc", "orange", "pet-chem",
    "dlr", "gas", "silver", "wpi", "hog", "lead")


def _reuters_get_label_names() -> Tuple[str, ...]:
    """The 46 topic names, position i naming label i."""
    return _REUTERS_TOPICS


# -- the namespaces (tf.keras.datasets.<name>) ----------------------------------------------------

for _fn, _name in ((_mnist_load_data, "load_data"), (_fashion_mnist_load_data, "load_data"),
                   (_cifar10_load_data, "load_data"), (_cifar100_load_data, "load_data"),
                   (_boston_housing_load_data, "load_data"), (_imdb_load_data, "load_data"),
                   (_reuters_load_data, "load_data"), (_imdb_get_word_index, "get_word_index"),
                   (_reuters_get_word_index, "get_word_index"), (_reuters_get_label_names, "get_label_names")):
    _fn.__name__ = _name  # shown as tf_keras names them (help(), reprs)

mnist = _namespace("mnist", load_data=_mnist_load_data)
fashion_mnist = _namespace("fashion_mnist", load_data=_fashion_mnist_load_data)
cifar10 = _namespace("cifar10", load_data=_cifar10_load_data)
cifar100 = _namespace("cifar100", load_data=_cifar100_load_data)
boston_housing = _namespace("boston_housing", load_data=_boston_housing_load_data)
imdb = _namespace("imdb", load_data=_imdb_load_data, get_word_index=_imdb_get_word_index)
reuters = _namespace("reuters", load_data=_reuters_load_data, get_word_index=_reuters_get_word_index,
                     get_label_names=_reuters_get_label_names)
