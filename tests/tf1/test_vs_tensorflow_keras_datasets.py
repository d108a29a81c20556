"""tf.keras.datasets against tf_keras (TF 2's Keras 2, the TF1 programs' tf.keras): both loaders
read the same synthetic files (tests/test_keras_datasets.py writes them; no network) through a
patched get_file, and must agree on the get_file calls (names, URLs, hashes, cache folders), the
signatures, and every output: dtypes, shapes, values, the contents and element types of the
object arrays, and the exceptions.  Skipped cleanly without tf_keras."""
import importlib
import inspect
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
importlib.import_module("tfdiff")  # sets TensorFlow's environment first

pytest.importorskip("tf_keras", reason="tf_keras is not installed (the conformance extra)")

import collflow.keras.data_utils as cf_data_utils  # noqa: E402
from collflow.keras import backend_more as cf_backend  # noqa: E402
from collflow.keras import datasets as cf_ds  # noqa: E402
from tf_keras.src import backend as tk_backend  # noqa: E402
from tf_keras.src.datasets import (boston_housing, cifar10, cifar100, fashion_mnist, imdb, mnist,  # noqa: E402
                                   reuters)
from test_keras_datasets import (fake_get_file, write_boston, write_cifar10, write_cifar100,  # noqa: E402
                                 write_fashion, write_imdb, write_json, write_mnist, write_reuters)

TK = {"mnist": mnist, "fashion_mnist": fashion_mnist, "cifar10": cifar10, "cifar100": cifar100,
      "boston_housing": boston_housing, "imdb": imdb, "reuters": reuters}


def _same(a, b, where="out"):
    """a (collflow's) and b (tf_keras's) equal all the way down, NumPy dtypes and element types too."""
    assert type(a) is type(b), f"{where}: {type(a)} vs {type(b)}"
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b), where
        for i, (u, v) in enumerate(zip(a, b)):
            _same(u, v, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        if a.dtype == object:
            for i, (u, v) in enumerate(zip(a.ravel(), b.ravel())):
                _same(u, v, f"{where}[{i}]")
        else:  # (np.testing's comparison takes seconds on the transposed 150 MB CIFAR arrays)
            assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), where
    elif isinstance(a, dict):
        assert a == b, where
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def _outcome(fn, kwargs):
    try:
        return "ok", fn(**kwargs)
    except Exception as e:  # noqa: BLE001  (compared: both loaders must fail alike)
        return "raised", type(e)


@pytest.fixture
def both(monkeypatch):
    """both(name, files, fn_name, **kwargs): runs tf_keras's and collflow's `name.fn_name(**kwargs)`
    with get_file serving `files`; asserts equal outcomes and get_file calls.  tk_extra: more
    arguments for tf_keras's call only."""
    def run(name, files, fn_name="load_data", tk_extra=None, **kwargs):
        tk_calls, cf_calls = [], []
        monkeypatch.setattr(TK[name], "get_file", fake_get_file(files, tk_calls))
        monkeypatch.setattr(cf_data_utils, "get_file", fake_get_file(files, cf_calls))
        want = _outcome(getattr(TK[name], fn_name), dict(kwargs, **(tk_extra or {})))
        got = _outcome(getattr(getattr(cf_ds, name), fn_name), kwargs)
        assert got[0] == want[0], f"{name}.{fn_name}({kwargs}): {got} vs {want}"
        _same(got[1], want[1], f"{name}.{fn_name}({kwargs})")
        assert cf_calls == tk_calls
        return got[1]
    return run


@pytest.fixture(autouse=True)
def _channels_last():
    yield
    tk_backend.set_image_data_format("channels_last")
    cf_backend.set_image_data_format("channels_last")


def _set_format(fmt):
    tk_backend.set_image_data_format(fmt)
    cf_backend.set_image_data_format(fmt)


@pytest.mark.parametrize("name", sorted(TK))
def test_signatures(name):
    for fn_name in ("load_data", "get_word_index", "get_label_names"):
        if not hasattr(TK[name], fn_name):
            assert not hasattr(getattr(cf_ds, name), fn_name)
            continue
        want = inspect.signature(getattr(TK[name], fn_name)).parameters.values()
        got = inspect.signature(getattr(getattr(cf_ds, name), fn_name)).parameters.values()
        assert [(p.name, p.kind, p.default) for p in got] == [(p.name, p.kind, p.default) for p in want]


def test_mnist_and_fashion_mnist(tmp_path, both):
    r = np.random.RandomState(0)
    path = write_mnist(str(tmp_path / "m.npz"), r)
    both("mnist", {"mnist.npz": path})
    both("mnist", {"other.npz": path}, path="other.npz", cache_dir=str(tmp_path / "cache"))
    both("fashion_mnist", write_fashion(str(tmp_path / "f"), r))
    both("fashion_mnist", write_fashion(str(tmp_path / "f"), r), cache_dir=str(tmp_path / "cache2"))


def test_cifar10(tmp_path, both):
    # tf_keras reads exactly five 10000-image batches and a test batch; channels_first is left
    # to cifar100 below (the same transpose) and to tests/test_keras_datasets.py
    folder, _ = write_cifar10(str(tmp_path), np.random.RandomState(1), n_batch=10000, n_test=10000, protocol=4)
    both("cifar10", {"cifar-10-batches-py": folder}, cache_dir=str(tmp_path / "cache"))


@pytest.mark.parametrize("kwargs", [{}, {"label_mode": "coarse"}, {"label_mode": "fine"}, {"label_mode": "bad"},
                                    {"label_mode": "coarse", "cache_dir": "CACHE"}])
@pytest.mark.parametrize("fmt", ["channels_last", "channels_first"])
def test_cifar100(tmp_path, both, kwargs, fmt):
    folder, _ = write_cifar100(str(tmp_path), np.random.RandomState(2), n_train=7, n_test=4)
    _set_format(fmt)
    if kwargs.get("cache_dir"):
        kwargs = dict(kwargs, cache_dir=str(tmp_path / "cache"))
    both("cifar100", {"cifar-100-python": folder}, **kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"test_split": 0.0}, {"test_split": 0.5, "seed": 1}, {"test_split": 0.33},
                                    {"seed": 0}, {"test_split": 1.0}, {"test_split": -0.1}])
def test_boston_housing(tmp_path, both, kwargs):
    both("boston_housing", {"boston_housing.npz": write_boston(str(tmp_path / "b.npz"), np.random.RandomState(3), 23)},
         **kwargs)


def _sequences(r, n, vocab=60, longest=25):
    return [[int(w) for w in r.randint(1, vocab, r.randint(1, longest))] for _ in range(n)]


SEQUENCE_CASES = [
    {}, {"num_words": 20}, {"num_words": 20, "skip_top": 5}, {"maxlen": 10}, {"maxlen": 10, "seed": 5},
    {"maxlen": 12, "num_words": 15, "skip_top": 3, "oov_char": None}, {"start_char": None},
    {"start_char": None, "index_from": 0}, {"start_char": None, "index_from": 0, "oov_char": None},
    {"oov_char": None}, {"seed": 7}, {"seed": 0}, {"index_from": 5, "start_char": 2, "oov_char": 3},
    {"index_from": 0, "num_words": 30, "skip_top": 2}, {"nb_words": 12}, {"bogus": 1}, {"maxlen": 2},
    {"maxlen": 2, "num_words": 10}, {"maxlen": 0}, {"path": "mine.npz"}, {"cache_dir": "CACHE"},
    {"num_words": 1000, "skip_top": 0}, {"num_words": 25, "skip_top": 30},
]


def _with_cache(kwargs, tmp_path):
    return dict(kwargs, cache_dir=str(tmp_path / "cache")) if kwargs.get("cache_dir") else kwargs


def _imdb_file(tmp_path, n_train=40, n_test=30):
    r = np.random.RandomState(4)
    labels = r.randint(0, 2, n_train + n_test)
    return write_imdb(str(tmp_path / "imdb.npz"), _sequences(r, n_train), _sequences(r, n_test), labels[:n_train],
                      labels[n_train:])


def _untouched_sequences(kwargs):
    # start_char=None, index_from=0 and no maxlen: tf_keras leaves the splits as NumPy object
    # arrays, and its `x_train + x_test` then adds them elementwise (a broadcast ValueError, or
    # with equal split sizes, as the real imdb's, each train review joined to a test review);
    # collflow concatenates the splits as on every other path
    return kwargs.get("start_char", 1) is None and not kwargs.get("index_from", 3) and not kwargs.get("maxlen")


@pytest.mark.parametrize("kwargs", SEQUENCE_CASES)
def test_imdb(tmp_path, both, kwargs):
    files = {kwargs.get("path", "imdb.npz"): _imdb_file(tmp_path)}
    kwargs = _with_cache(kwargs, tmp_path)
    if _untouched_sequences(kwargs):
        # compared with tf_keras taking its list path: a maxlen no sequence reaches
        both("imdb", files, tk_extra={"maxlen": 10 ** 9}, **kwargs)
        with pytest.raises(ValueError):
            imdb.load_data(**kwargs)  # (get_file is still patched)
        return
    both("imdb", files, **kwargs)


def test_imdb_tf_keras_joins_equal_size_splits(tmp_path, both, monkeypatch):
    """The deliberate difference above, with splits of one size: tf_keras's x_test comes back empty."""
    files = {"imdb.npz": _imdb_file(tmp_path, 20, 20)}
    monkeypatch.setattr(imdb, "get_file", fake_get_file(files, []))
    (x, y), (xt, yt) = imdb.load_data(start_char=None, index_from=0)
    assert len(x) == 20 and len(xt) == 0 and len(yt) == 20
    (x, y), (xt, yt) = both("imdb", files, tk_extra={"maxlen": 10 ** 9}, start_char=None, index_from=0)
    assert len(x) == 20 and len(xt) == 20


@pytest.mark.parametrize("kwargs", SEQUENCE_CASES + [{"test_split": 0.0}, {"test_split": 0.37, "seed": 3},
                                                     {"test_split": 0.5, "maxlen": 9, "num_words": 40}])
def test_reuters(tmp_path, both, kwargs):
    r = np.random.RandomState(5)
    path = write_reuters(str(tmp_path / "reuters.npz"), _sequences(r, 50), r.randint(0, 46, 50))
    both("reuters", {kwargs.get("path", "reuters.npz"): path}, **_with_cache(kwargs, tmp_path))


def test_equal_length_sequences(tmp_path, both):
    r = np.random.RandomState(6)
    seqs = [[int(w) for w in r.randint(1, 9, 4)] for _ in range(6)]
    both("imdb", {"imdb.npz": write_imdb(str(tmp_path / "i.npz"), seqs, seqs[:3], [0, 1] * 3, [1, 0, 1])})
    both("reuters", {"reuters.npz": write_reuters(str(tmp_path / "r.npz"), seqs, list(range(6)))}, test_split=0.5)


def test_word_indexes_and_label_names(tmp_path, both):
    words = {"the": 1, "and": 2, "a": 3, "of": 4}
    both("imdb", {"imdb_word_index.json": write_json(str(tmp_path / "i.json"), words)}, "get_word_index")
    both("imdb", {"mine.json": write_json(str(tmp_path / "m.json"), words)}, "get_word_index", path="mine.json")
    both("reuters", {"reuters_word_index.json": write_json(str(tmp_path / "r.json"), words)}, "get_word_index")
    both("reuters", {}, "get_label_names")
