"""The offline character corpus (collflow/data/text.py): sources, vocabulary, splits, windows, batches."""
import numpy as np
import pytest

import collflow as cf
from collflow.data import text


def test_stdlib_source_reads_files_without_importing():
    src = text.stdlib_source("textwrap")
    assert "def wrap(" in src and "class TextWrapper" in src
    assert "def dumps" not in src
    assert "class JSONDecoder" in text.stdlib_source("json.decoder")
    # frozen in the interpreter, but its .py file is on disk
    assert "def join(" in text.stdlib_source("posixpath")
    with pytest.raises(cf.errors.NotFoundError, match="no_such_module_xyz"):
        text.stdlib_source("no_such_module_xyz")


def test_default_corpus_is_large_with_a_small_vocabulary():
    c = text.load_stdlib_corpus()
    n = len(c.train_text) + len(c.valid_text)
    assert n > 500_000
    assert abs(len(c.valid_text) - 0.1 * n) <= 1
    assert 80 <= c.vocab_size <= 120
    assert c.vocab[0] == text.UNKNOWN and list(c.vocab[1:]) == sorted(c.vocab[1:])
    for ch in "\n ()abcxyzABC0129_:=.'\"#":
        assert ch in c.vocab
    assert c.sources == text.DEFAULT_MODULES


def test_encode_decode_and_unknown_characters():
    c = text.load_stdlib_corpus(modules=("textwrap", "shlex"), valid_fraction=0.2, min_count=1)
    s = "def f(x):\n    return x + 1\n"
    ids = c.encode(s)
    assert ids.dtype == np.int32 and ids.shape == (len(s),)
    assert (ids > 0).all() and c.decode(ids) == s
    odd = c.encode("a\u2603b")  # a snowman is not in the vocabulary
    assert odd[1] == 0 and c.decode(odd) == "a" + text.UNKNOWN + "b"
    tr, va = c.ids("train"), c.ids("valid")
    assert len(tr) == len(c.train_text) and len(va) == len(c.valid_text)
    assert c.decode(tr[:200]) == c.train_text[:200]
    assert c.train_text + c.valid_text == "\n\n".join(text.stdlib_source(m) for m in ("textwrap", "shlex"))
    with pytest.raises(cf.errors.InvalidArgumentError, match="split"):
        c.ids("test")


def test_windows_hold_next_character_targets():
    c = text.load_stdlib_corpus(modules=("textwrap",), max_chars=5000)
    x, y = c.windows("train", seq_len=10)
    ids = c.ids("train")
    assert x.shape == y.shape == ((len(ids) - 11) // 10 + 1, 10)
    assert x.dtype == y.dtype == np.int32
    np.testing.assert_array_equal(x[3], ids[30:40])
    np.testing.assert_array_equal(y[3], ids[31:41])
    xo, yo = c.windows("train", seq_len=10, stride=3)
    np.testing.assert_array_equal(xo[2], ids[6:16])
    assert len(xo) == (len(ids) - 11) // 3 + 1
    ex, ey = c.windows("valid", seq_len=100_000)
    assert ex.shape == (0, 100_000)
    with pytest.raises(cf.errors.InvalidArgumentError, match="shorter than one window"):
        c.batches("valid", 4, 100_000)
    with pytest.raises(cf.errors.InvalidArgumentError, match="positive"):
        c.windows("train", 0)


def test_batches_are_full_reproducible_and_sharded():
    c = text.load_stdlib_corpus(modules=("textwrap",), max_chars=20000)
    it = c.batches("train", batch_size=8, seq_len=16, seed=3)
    got = list(it)
    assert got and all(xb.shape == (8, 16) and yb.shape == (8, 16) for xb, yb in got)
    again = list(c.batches("train", batch_size=8, seq_len=16, seed=3))
    assert all((a[0] == b[0]).all() for a, b in zip(got, again))
    x, _ = c.windows("train", 16)
    its = [c.batches("train", 4, 16, seed=1, num_shards=2, shard_index=k) for k in (0, 1)]
    idx = [set(it.epoch_indices(0).tolist()) for it in its]
    assert idx[0] and not idx[0] & idx[1] and max(idx[0] | idx[1]) < len(x)
    first = next(its[1])[0]
    np.testing.assert_array_equal(first, x[its[1].epoch_indices(0)[:4]])
    assert len(its[0]) == len(its[1])

def test_as_dataset_for_train_script():
    c = text.load_stdlib_corpus(modules=("textwrap",), max_chars=8000)
    ds = c.as_dataset(seq_len=32)
    assert ds.num_classes == c.vocab_size and ds.feature_shape == (32,)
    assert ds.x_train.dtype == np.int32 and ds.y_test.shape[1:] == (32,)
    assert len(ds.y_test) > 0 and ds.info["seq_len"] == 32


def test_bad_arguments():
    with pytest.raises(cf.errors.InvalidArgumentError, match="valid_fraction"):
        text.load_stdlib_corpus(modules=("textwrap",), valid_fraction=1.0)
    with pytest.raises(cf.errors.InvalidArgumentError, match="at least one module"):
        text.load_stdlib_corpus(modules=())
    with pytest.raises(cf.errors.InvalidArgumentError, match="max_chars"):
        text.load_stdlib_corpus(modules=("textwrap",), max_chars=1)
