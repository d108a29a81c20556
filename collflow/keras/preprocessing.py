"""tf.keras.preprocessing: sequence.pad_sequences and text.Tokenizer (with
text_to_word_sequence, one_hot), Keras's semantics, in NumPy."""
from __future__ import annotations

import collections
import json
import zlib
from typing import Any, Dict, Iterable, List, Optional

import numpy as np

__all__ = ["pad_sequences", "text_to_word_sequence", "one_hot", "Tokenizer", "tokenizer_from_json"]

_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


def pad_sequences(sequences: Iterable[Any], maxlen: Optional[int] = None, dtype: Any = "int32",
                  padding: str = "pre", truncating: str = "pre", value: Any = 0.0) -> np.ndarray:
    """A [n, maxlen, ...] array of the sequences, cut ('pre': the start dropped, 'post': the end)
    and padded with `value` ('pre': before, 'post': after) to maxlen (default: the longest)."""
    seqs = list(sequences)
    lengths = []
    for i, s in enumerate(seqs):
        if not hasattr(s, "__len__"):
            raise ValueError(f"`sequences` must be a list of iterables. Found non-iterable: {s}")
        lengths.append(len(s))
    if padding not in ("pre", "post"):
        raise ValueError(f'Padding type "{padding}" not understood')
    if truncating not in ("pre", "post"):
        raise ValueError(f'Truncating type "{truncating}" not understood')
    n = len(seqs)
    if maxlen is None:
        maxlen = max(lengths) if lengths else 0
    sample_shape: tuple = ()
    for s in seqs:
        if len(s):
            sample_shape = np.asarray(s).shape[1:]
            break
    is_str = np.issubdtype(np.dtype(dtype), np.str_) or np.dtype(dtype) == object
    if isinstance(value, str) and dtype != object and not is_str:
        raise ValueError(f"`dtype` {dtype} is not compatible with `value`'s type: {type(value)}")
    out = np.full((n, maxlen) + sample_shape, value, dtype=dtype)
    for i, s in enumerate(seqs):
        if not len(s) or maxlen == 0:
            continue
        trunc = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        trunc = np.asarray(trunc, dtype=dtype)
        if trunc.shape[1:] != sample_shape:
            raise ValueError(f"Shape of sample {trunc.shape[1:]} of sequence at position {i} is different from "
                             f"expected shape {sample_shape}")
        if padding == "post":
            out[i, :len(trunc)] = trunc
        else:
            out[i, -len(trunc):] = trunc
    return out


def text_to_word_sequence(text: str, filters: str = _FILTERS, lower: bool = True, split: str = " ") -> List[str]:
    """The words of `text`: lower-cased, the filter characters turned into `split`, split on it."""
    if lower:
        text = text.lower()
    text = text.translate(str.maketrans({c: split for c in filters}))
    return [w for w in text.split(split) if w]


def one_hot(text: str, n: int, filters: str = _FILTERS, lower: bool = True, split: str = " ") -> List[int]:
    """Each word hashed to 1..n-1 (collflow's hash: a stable CRC-32, where Keras uses Python's
    per-process salted hash)."""
    return [zlib.crc32(w.encode()) % (n - 1) + 1 for w in text_to_word_sequence(text, filters, lower, split)]


class Tokenizer:
    """Keras's Tokenizer: word (or character) indices by frequency (1 = most frequent; ties in
    order of first appearance), num_words keeping the most frequent, an oov_token at index 1."""

    def __init__(self, num_words: Optional[int] = None, filters: str = _FILTERS, lower: bool = True,
                 split: str = " ", char_level: bool = False, oov_token: Optional[str] = None,
                 document_count: int = 0, **kwargs: Any):
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
        self.word_counts: Dict[str, int] = collections.OrderedDict()
        self.word_docs: Dict[str, int] = collections.defaultdict(int)
        self.filters, self.split, self.lower = filters, split, lower
        self.num_words, self.document_count = num_words, document_count
        self.char_level, self.oov_token = char_level, oov_token
        self.index_docs: Dict[int, int] = collections.defaultdict(int)
        self.word_index: Dict[str, int] = {}
        self.index_word: Dict[int, str] = {}

    def _words(self, text: Any) -> List[str]:
        if self.char_level or isinstance(text, list):
            if self.lower:
                text = [t.lower() for t in text] if isinstance(text, list) else text.lower()
            return list(text)
        return text_to_word_sequence(text, self.filters, self.lower, self.split)

    def fit_on_texts(self, texts: Iterable[Any]) -> None:
        for text in texts:
            self.document_count += 1
            seq = self._words(text)
            for w in seq:
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
            for w in set(seq):
                self.word_docs[w] += 1
        counts = sorted(self.word_counts.items(), key=lambda kv: kv[1], reverse=True)  # stable: first seen first
        vocab = ([self.oov_token] if self.oov_token is not None else []) + [w for w, _ in counts]
        self.word_index = {w: i for i, w in enumerate(vocab, start=1)}
        self.index_word = {i: w for w, i in self.word_index.items()}
        self.index_docs = collections.defaultdict(int)
        for w, c in self.word_docs.items():
            self.index_docs[self.word_index[w]] = c

    def fit_on_sequences(self, sequences: Iterable[Any]) -> None:
        seqs = list(sequences)
        self.document_count += len(seqs)
        for seq in seqs:
            for i in set(seq):
                self.index_docs[i] += 1

    def texts_to_sequences(self, texts: Iterable[Any]) -> List[List[int]]:
        return list(self.texts_to_sequences_generator(texts))

    def texts_to_sequences_generator(self, texts: Iterable[Any]) -> Any:
        oov = self.word_index.get(self.oov_token) if self.oov_token is not None else None
        for text in texts:
            out = []
            for w in self._words(text):
                i = self.word_index.get(w)
                if i is not None and (not self.num_words or i < self.num_words):
                    out.append(i)
                elif oov is not None:
                    out.append(oov)
            yield out

    def sequences_to_texts(self, sequences: Iterable[Any]) -> List[str]:
        oov = self.word_index.get(self.oov_token) if self.oov_token is not None else None
        out = []
        for seq in sequences:
            words = []
            for i in seq:
                w = self.index_word.get(i)
                if w is not None and (not self.num_words or i < self.num_words):
                    words.append(w)
                elif oov is not None:
                    words.append(self.index_word[oov])
            out.append(" ".join(words))
        return out

    def texts_to_matrix(self, texts: Iterable[Any], mode: str = "binary") -> np.ndarray:
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences: Iterable[Any], mode: str = "binary") -> np.ndarray:
        """[n, num_words] rows: binary, count, freq or tfidf (Keras's formula)."""
        if not self.num_words:
            if self.word_index:
                num_words = len(self.word_index) + 1
            else:
                raise ValueError("Specify a dimension (`num_words` argument), or fit on some text data first.")
        else:
            num_words = self.num_words
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        if mode not in ("binary", "count", "tfidf", "freq"):
            raise ValueError(f"Unknown vectorization mode: {mode}")
        seqs = list(sequences)
        x = np.zeros((len(seqs), num_words))
        for i, seq in enumerate(seqs):
            if not seq:
                continue
            counts: Dict[int, int] = collections.defaultdict(int)
            for j in seq:
                if j < num_words:
                    counts[j] += 1
            for j, c in counts.items():
                if mode == "count":
                    x[i, j] = c
                elif mode == "freq":
                    x[i, j] = c / len(seq)
                elif mode == "binary":
                    x[i, j] = 1
                else:
                    tf = 1 + np.log(c)
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(j, 0)))
                    x[i, j] = tf * idf
        return x

    def get_config(self) -> Dict[str, Any]:
        return {"num_words": self.num_words, "filters": self.filters, "lower": self.lower, "split": self.split,
                "char_level": self.char_level, "oov_token": self.oov_token, "document_count": self.document_count,
                "word_counts": json.dumps(self.word_counts), "word_docs": json.dumps(self.word_docs),
                "index_docs": json.dumps(self.index_docs), "index_word": json.dumps(self.index_word),
                "word_index": json.dumps(self.word_index)}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()}, **kwargs)


def tokenizer_from_json(json_string: str) -> Tokenizer:
    """The Tokenizer to_json wrote."""
    cfg = json.loads(json_string)["config"]
    t = Tokenizer(**{k: cfg[k] for k in ("num_words", "filters", "lower", "split", "char_level", "oov_token",
                                          "document_count")})
    t.word_counts = collections.OrderedDict(json.loads(cfg["word_counts"]))
    t.word_docs = collections.defaultdict(int, json.loads(cfg["word_docs"]))
    t.index_docs = collections.defaultdict(int, {int(k): v for k, v in json.loads(cfg["index_docs"]).items()})
    t.index_word = {int(k): v for k, v in json.loads(cfg["index_word"]).items()}
    t.word_index = json.loads(cfg["word_index"])
    return t
