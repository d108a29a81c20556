"""tf.contrib.learn.preprocessing (VocabularyProcessor, CategoricalVocabulary, ByteProcessor,
the tokenizer) and datasets.base's CSV loaders, by TF 1.15's rules; VocabularyProcessor files
written by TF 1.x (pickles) restore without running code, and a crafted pickle is refused."""
import os
import pickle
import sys
import types

import numpy as np
import pytest

import collflow.compat.v1 as tf
from collflow.contrib import learn_text

VP = tf.contrib.learn.preprocessing.VocabularyProcessor


def test_tokenizer_splits_as_tf():
    got = list(tf.contrib.learn.preprocessing.tokenizer(["I'm SUCH a CamelCase-guy, HTTPServer 42"]))
    assert got == [["I'm", "SUCH", "a", "Camel", "Case-guy", "HTTP", "Server", "42"]]


def test_ids_by_first_appearance_cut_and_padded():
    vp = VP(4)
    x = np.array(list(vp.fit_transform(["a b c", "a a d", "e", "b c d e a b"])))
    assert x.dtype == np.int64
    np.testing.assert_array_equal(x, [[1, 2, 3, 0], [1, 1, 4, 0], [5, 0, 0, 0], [2, 3, 4, 5]])
    assert len(vp.vocabulary_) == 6
    # frozen after fit: unseen words are 0 and the vocabulary does not grow
    np.testing.assert_array_equal(list(vp.transform(["a zz e"])), [[1, 0, 5, 0]])
    assert len(vp.vocabulary_) == 6
    assert list(vp.reverse([[1, 2, 0]])) == ["a b <UNK>"]


def test_min_frequency_trims_and_ranks_by_count_then_name():
    vp = VP(3, min_frequency=1)
    vp.fit(["b a c", "c b a", "c d"])  # c:3, a:2, b:2, d:1
    assert vp.vocabulary_._mapping == {"<UNK>": 0, "c": 1, "a": 2, "b": 3}
    np.testing.assert_array_equal(list(vp.transform(["d a c"])), [[0, 2, 1]])
    v = tf.contrib.learn.preprocessing.CategoricalVocabulary()
    for w, n in (("x", 5), ("y", 3), ("z", 2), ("w", 3)):
        v.add(w, n)
    v.trim(1, max_frequency=5)  # x (5) is too frequent, the rest are kept by count then name
    assert [v.reverse(i) for i in range(len(v))] == ["<UNK>", "w", "y", "z"]
    v.add("<UNK>")  # the unknown token is never counted
    assert "<UNK>" not in v._freq
    with pytest.raises(ValueError, match="support_reverse"):
        tf.contrib.learn.preprocessing.CategoricalVocabulary(support_reverse=False).reverse(0)


def test_byte_processor():
    bp = tf.contrib.learn.preprocessing.ByteProcessor(5)
    x = list(bp.transform(["ab", "abcdefg", "é"]))
    np.testing.assert_array_equal(x, [[97, 98, 0, 0, 0], [97, 98, 99, 100, 101], [195, 169, 0, 0, 0]])
    assert list(bp.reverse(x)) == ["ab", "abcde", "é"]


def test_save_restore_round_trip(tmp_path):
    vp = VP(5, min_frequency=0)
    vp.fit(["the cat sat", "the dog ran"])
    path = str(tmp_path / "vocab")
    vp.save(path)
    back = VP.restore(path)
    docs = ["the dog sat", "a cat"]
    np.testing.assert_array_equal(list(back.transform(docs)), list(vp.transform(docs)))
    assert back.max_document_length == 5 and back.vocabulary_._freeze
    assert not [n for n in os.listdir(tmp_path) if n != "vocab"], "no temporary file is left behind"


def test_custom_tokenizer_must_be_given_again(tmp_path):
    def split(docs):
        return (d.split("|") for d in docs)
    vp = VP(3, tokenizer_fn=split)
    vp.fit(["a|b", "b|c"])
    path = str(tmp_path / "vocab")
    vp.save(path)
    with pytest.raises(ValueError, match="custom tokenizer_fn"):
        VP.restore(path)
    back = VP.restore(path, tokenizer_fn=split)
    np.testing.assert_array_equal(list(back.transform(["c|a"])), [[3, 1, 0]])


def _tf_modules(monkeypatch):
    """Module objects under TF 1.x's paths with classes of TF's attribute layout, so that
    pickle writes exactly what TF's VocabularyProcessor.save wrote."""
    text = types.ModuleType(learn_text._TF_TEXT)
    vocab = types.ModuleType(learn_text._TF_VOCAB)

    class CategoricalVocabulary:
        pass

    class VocabularyProcessor:
        pass

    def tokenizer(it):
        raise AssertionError("never called")

    for obj, mod in ((CategoricalVocabulary, vocab), (VocabularyProcessor, text), (tokenizer, text)):
        obj.__module__ = mod.__name__
        obj.__qualname__ = obj.__name__
        setattr(mod, obj.__name__, obj)
    monkeypatch.setitem(sys.modules, text.__name__, text)
    monkeypatch.setitem(sys.modules, vocab.__name__, vocab)
    # pickle imports the module path: its parent packages must import too (TF 2.x has no
    # tensorflow.contrib, and the suite runs without TensorFlow at all)
    parts = text.__name__.split(".")
    for i in range(1, len(parts)):
        parent = ".".join(parts[:i])
        if parent not in sys.modules:
            monkeypatch.setitem(sys.modules, parent, types.ModuleType(parent))
    return text, vocab


def _tf_pickle(monkeypatch, words, protocol, tok_fn=None):
    import collections
    text, vocab = _tf_modules(monkeypatch)
    v = vocab.CategoricalVocabulary()
    v.__dict__.update(_unknown_token="<UNK>", _mapping={w: i for i, w in enumerate(["<UNK>"] + words)},
                      _support_reverse=True, _reverse_mapping=["<UNK>"] + words,
                      _freq=collections.defaultdict(int, {w: 1 for w in words}), _freeze=True)
    p = text.VocabularyProcessor()
    p.__dict__.update(max_document_length=4, min_frequency=0, vocabulary_=v,
                      _tokenizer=tok_fn if tok_fn is not None else text.tokenizer)
    return pickle.dumps(p, protocol=protocol)


@pytest.mark.parametrize("protocol", [0, 2, 4])
def test_restores_tensorflows_pickles_without_running_code(tmp_path, monkeypatch, protocol):
    data = _tf_pickle(monkeypatch, ["hello", "world", "again"], protocol)
    monkeypatch.undo()  # TF's modules are gone again, as they are for a collflow user
    path = tmp_path / "vocab"
    path.write_bytes(data)
    back = VP.restore(str(path))
    assert isinstance(back, VP) and back._tokenizer is learn_text.tokenizer
    np.testing.assert_array_equal(list(back.transform(["again hello there"])), [[3, 1, 0, 0]])


def test_tf_pickle_with_a_custom_tokenizer(tmp_path, monkeypatch):
    mine = types.ModuleType("my_program")

    def my_tokenizer(docs):
        raise AssertionError("never called")
    my_tokenizer.__module__, my_tokenizer.__qualname__ = "my_program", "my_tokenizer"
    mine.my_tokenizer = my_tokenizer
    monkeypatch.setitem(sys.modules, "my_program", mine)
    data = _tf_pickle(monkeypatch, ["x", "y"], 2, tok_fn=my_tokenizer)
    monkeypatch.undo()
    path = tmp_path / "vocab"
    path.write_bytes(data)
    with pytest.raises(ValueError, match="custom tokenizer_fn"):
        VP.restore(str(path))
    back = VP.restore(str(path), tokenizer_fn=lambda docs: (d.split() for d in docs))
    np.testing.assert_array_equal(list(back.transform(["y x"])), [[2, 1, 0, 0]])


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_a_crafted_pickle_is_refused(tmp_path):
    marker = str(tmp_path / "pwned")
    for payload in (_Evil(marker), {"vocabulary_": _Evil(marker)}):
        path = tmp_path / "vocab"
        path.write_bytes(pickle.dumps(payload, protocol=2))
        with pytest.raises(ValueError, match="not a VocabularyProcessor"):
            VP.restore(str(path))
        assert not os.path.exists(marker)
    (tmp_path / "junk").write_bytes(b"\x80\x04garbage")
    with pytest.raises(ValueError, match="not a VocabularyProcessor"):
        VP.restore(str(tmp_path / "junk"))
    (tmp_path / "bad.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="not a saved VocabularyProcessor"):
        VP.restore(str(tmp_path / "bad.json"))
    good = VP(3)
    good.fit(["a b"])
    good.save(str(tmp_path / "cut.json"))
    import json
    state = json.loads((tmp_path / "cut.json").read_text())
    del state["custom_tokenizer"]
    (tmp_path / "cut.json").write_text(json.dumps(state))
    with pytest.raises(ValueError, match="not a saved VocabularyProcessor.*custom_tokenizer"):
        VP.restore(str(tmp_path / "cut.json"))


def test_load_csv_with_and_without_header(tmp_path):
    base = tf.contrib.learn.datasets.base
    f = tmp_path / "iris_training.csv"
    f.write_text("3,4,setosa,versicolor,virginica\n5.1,3.5,1.4,0.2,0\n7.0,3.2,4.7,1.4,1\n6.3,3.3,6.0,2.5,2\n")
    ds = base.load_csv_with_header(filename=str(f), target_dtype=np.int32, features_dtype=np.float32)
    assert isinstance(ds, base.Dataset) and ds.data.dtype == np.float32 and ds.target.dtype == np.int32
    np.testing.assert_array_equal(ds.target, [0, 1, 2])
    np.testing.assert_allclose(ds.data[1], [7.0, 3.2, 4.7, 1.4])
    first = base.load_csv_with_header(str(f), np.float64, np.float32, target_column=0)
    np.testing.assert_array_equal(first.target, [5.1, 7.0, 6.3])
    np.testing.assert_allclose(first.data[0], [3.5, 1.4, 0.2, 0])
    g = tmp_path / "plain.csv"
    g.write_text("1,2,a\n3,4,b\n")
    ds = base.load_csv_without_header(str(g), target_dtype=str, features_dtype=np.int64)
    np.testing.assert_array_equal(ds.data, [[1, 2], [3, 4]])
    assert list(ds.target) == ["a", "b"]
    bad = tmp_path / "bad.csv"
    bad.write_text("2,2\n1,2,0\n1,x,1\n")
    with pytest.raises(ValueError, match="bad.csv, line 3"):
        base.load_csv_with_header(str(bad), np.int32, np.float32)
    bad.write_text("two,2\n1,2,0\n")
    with pytest.raises(ValueError, match="n_samples,n_features"):
        base.load_csv_with_header(str(bad), np.int32, np.float32)


def test_shrink_csv_and_retry(tmp_path):
    base = tf.contrib.learn.datasets.base
    f = tmp_path / "d.v1" / "rows.csv"
    f.parent.mkdir()
    f.write_text("".join(f"{i},{i * i}\n" for i in range(7)))
    base.shrink_csv(str(f), 3)
    assert (tmp_path / "d.v1" / "rows_small.csv").read_text().split() == ["0,0", "3,9", "6,36"]
    calls = []

    @base.retry(initial_delay=0.001, max_delay=0.004, is_retriable=lambda e: isinstance(e, IOError))
    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise IOError("again")
        return "ok"
    assert flaky() == "ok" and len(calls) == 3

    @base.retry(initial_delay=0.001, max_delay=0.004, is_retriable=lambda e: isinstance(e, IOError))
    def broken():
        raise KeyError("no")
    with pytest.raises(KeyError):
        broken()


def test_import_paths_and_mode_keys():
    from collflow.contrib.learn.python.learn.preprocessing import VocabularyProcessor
    from collflow.contrib.learn.datasets import base
    assert VocabularyProcessor is VP and base.load_csv_with_header is tf.contrib.learn.datasets.base.load_csv_with_header
    assert tf.contrib.learn.ModeKeys.INFER == "infer"
