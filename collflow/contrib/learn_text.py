"""tf.contrib.learn.preprocessing: TF 1.x's text-to-ids helpers (text-classification programs).

    vocab = learn.preprocessing.VocabularyProcessor(max_document_length=56)
    x = np.array(list(vocab.fit_transform(sentences)))      # [n, 56] int64 word ids, 0 = padding/unknown
    vocab.save("runs/vocab")
    vocab = learn.preprocessing.VocabularyProcessor.restore("runs/vocab")

TF 1.15's rules: its tokenizer regex, ids in order of first appearance (or, after
`min_frequency` trimming, by falling frequency then alphabet), id 0 for `<UNK>`, documents cut
or zero-padded to max_document_length.

Saving: TF pickled the processor, and unpickling a file runs whatever code it names.  collflow
writes JSON, and `restore` reads both that and TF's pickles through an unpickler that builds
only these classes, dicts, lists and strings: a vocabulary saved by a TF 1.x program loads, a
pickle naming anything else is refused with an error.
"""
from __future__ import annotations

import collections
import copyreg
import io
import json
import pickle
import re
from typing import Any, Callable, Iterable, Iterator, List, Optional

import numpy as np

from ..platform.atomic_files import atomic_write_bytes
from ..platform.gfile import GFile

__all__ = ["TOKENIZER_RE", "tokenizer", "CategoricalVocabulary", "ByteProcessor", "VocabularyProcessor"]

TOKENIZER_RE = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z][a-z]+(?=[A-Z])|[\'\w\-]+", re.UNICODE)
_FORMAT = "collflow.VocabularyProcessor/1"


def tokenizer(iterator: Iterable[str]) -> Iterator[List[str]]:
    """Yields each document's tokens: runs of capitals, capitalised words before another
    capital (CamelCase splits), and runs of word characters, apostrophes and hyphens."""
    for value in iterator:
        yield TOKENIZER_RE.findall(value)


class CategoricalVocabulary:
    """Categories (words) to ids, id 0 for the unknown token; new categories get the next id
    until the vocabulary is frozen, after which they map to 0."""

    def __init__(self, unknown_token: str = "<UNK>", support_reverse: bool = True):
        self._unknown_token = unknown_token
        self._mapping = {unknown_token: 0}
        self._support_reverse = support_reverse
        if support_reverse:
            self._reverse_mapping = [unknown_token]
        self._freq: Any = collections.defaultdict(int)
        self._freeze = False

    def __len__(self) -> int:
        """The number of ids, the unknown token's included."""
        return len(self._mapping)

    def freeze(self, freeze: bool = True) -> None:
        """Frozen: unseen categories map to 0 instead of getting new ids."""
        self._freeze = freeze

    def get(self, category: Any) -> int:
        """The category's id, adding it when new and not frozen."""
        if category not in self._mapping:
            if self._freeze:
                return 0
            self._mapping[category] = len(self._mapping)
            if self._support_reverse:
                self._reverse_mapping.append(category)
        return self._mapping[category]

    def add(self, category: Any, count: int = 1) -> None:
        """Counts `count` more occurrences of the category (the unknown token is not counted)."""
        if self.get(category) <= 0:
            return
        self._freq[category] += count

    def trim(self, min_frequency: int, max_frequency: int = -1) -> None:
        """Keeps the categories seen more than min_frequency times (and, when max_frequency
        > 0, fewer than max_frequency times), renumbered 1..n by falling frequency, ties in
        sort order (integers before strings)."""
        ranked = sorted(sorted(self._freq.items(), key=lambda kv: (isinstance(kv[0], str), kv[0])),
                        key=lambda kv: kv[1], reverse=True)
        self._mapping = {self._unknown_token: 0}
        if self._support_reverse:
            self._reverse_mapping = [self._unknown_token]
        kept = {}
        for category, count in ranked:
            if max_frequency > 0 and count >= max_frequency:
                continue
            if count <= min_frequency:
                break  # ranked by frequency: the rest are rarer still
            self._mapping[category] = len(self._mapping)
            kept[category] = count
            if self._support_reverse:
                self._reverse_mapping.append(category)
        self._freq = kept

    def reverse(self, class_id: int) -> Any:
        """The category of an id."""
        if not self._support_reverse:
            raise ValueError("This vocabulary wasn't initalized with support_reverse to support reverse() function.")
        return self._reverse_mapping[class_id]

    def __setstate__(self, state: dict) -> None:
        # TF's pickles keep _freq as a defaultdict, a dict after trim(); either is fine here
        self.__dict__.update(state)


class ByteProcessor:
    """Documents to their UTF-8 bytes, cut or zero-padded to max_document_length."""

    def __init__(self, max_document_length: int):
        self.max_document_length = max_document_length

    def fit(self, x: Any) -> None:
        """Nothing to learn."""

    def fit_transform(self, x: Iterable[Any]) -> Iterator[np.ndarray]:
        """transform(x)."""
        return self.transform(x)

    def reverse(self, x: Iterable[np.ndarray]) -> Iterator[str]:
        """Byte ids back to text (trailing zeros dropped; '' when not valid UTF-8)."""
        for data in x:
            document = np.trim_zeros(np.asarray(data).astype(np.int8), trim="b").tobytes()
            try:
                yield document.decode("utf-8")
            except UnicodeDecodeError:
                yield ""

    def transform(self, x: Iterable[Any]) -> Iterator[np.ndarray]:
        """Yields each document's bytes as a uint8 vector of max_document_length."""
        for document in x:
            if isinstance(document, str):
                document = document.encode("utf-8")
            buff = np.frombuffer(memoryview(document)[:self.max_document_length], dtype=np.uint8)
            yield np.pad(buff, (0, self.max_document_length - len(buff)), "constant")


class VocabularyProcessor:
    """Documents to vectors of word ids (int64, max_document_length long: cut or padded with 0)."""

    def __init__(self, max_document_length: int, min_frequency: int = 0,
                 vocabulary: Optional[CategoricalVocabulary] = None,
                 tokenizer_fn: Optional[Callable[[Iterable[str]], Iterable[List[str]]]] = None):
        self.max_document_length = max_document_length
        self.min_frequency = min_frequency
        self.vocabulary_ = vocabulary if vocabulary else CategoricalVocabulary()
        self._tokenizer = tokenizer_fn if tokenizer_fn else tokenizer

    def fit(self, raw_documents: Iterable[str], unused_y: Any = None) -> "VocabularyProcessor":
        """Learns the vocabulary of the documents' tokens (then trims and freezes it)."""
        for tokens in self._tokenizer(raw_documents):
            for token in tokens:
                self.vocabulary_.add(token)
        if self.min_frequency > 0:
            self.vocabulary_.trim(self.min_frequency)
        self.vocabulary_.freeze()
        return self

    def fit_transform(self, raw_documents: Iterable[str], unused_y: Any = None) -> Iterator[np.ndarray]:
        """fit, then transform the same documents (a list, not a one-pass iterator, as in TF)."""
        self.fit(raw_documents)
        return self.transform(raw_documents)

    def transform(self, raw_documents: Iterable[str]) -> Iterator[np.ndarray]:
        """Yields each document's word ids (int64 vector of max_document_length)."""
        for tokens in self._tokenizer(raw_documents):
            word_ids = np.zeros(self.max_document_length, np.int64)
            for idx, token in enumerate(tokens):
                if idx >= self.max_document_length:
                    break
                word_ids[idx] = self.vocabulary_.get(token)
            yield word_ids

    def reverse(self, documents: Iterable[Iterable[int]]) -> Iterator[str]:
        """Yields each id vector as words joined by spaces (padding as `<UNK>`)."""
        for item in documents:
            yield " ".join(str(self.vocabulary_.reverse(class_id)) for class_id in item)

    def save(self, filename: str) -> None:
        """Writes the processor to `filename` as JSON (atomically).  A custom tokenizer_fn is
        not saved: pass it again to restore."""
        v = self.vocabulary_
        words = sorted(v._mapping.items(), key=lambda kv: kv[1])
        if any(not isinstance(w, str) for w, _ in words):
            raise TypeError("VocabularyProcessor.save writes string vocabularies; this one has non-string categories")
        state = {"format": _FORMAT, "max_document_length": self.max_document_length,
                 "min_frequency": self.min_frequency, "unknown_token": v._unknown_token,
                 "support_reverse": v._support_reverse, "frozen": v._freeze,
                 "words": [w for w, _ in words], "freq": dict(v._freq),
                 "custom_tokenizer": self._tokenizer is not tokenizer}
        atomic_write_bytes(filename, json.dumps(state, ensure_ascii=False).encode("utf-8"), durable=False)

    @classmethod
    def restore(cls, filename: str,
                tokenizer_fn: Optional[Callable[[Iterable[str]], Iterable[List[str]]]] = None
                ) -> "VocabularyProcessor":
        """Reads a processor written by save() or by TF 1.x's VocabularyProcessor.save (a
        pickle, read without running code).  tokenizer_fn: the custom tokenizer it was made
        with, which neither file can carry safely."""
        with GFile(filename, "rb") as f:
            data = f.read()
        if data[:1] == b"{":
            proc = _from_json(data, filename, cls)
            custom = proc._tokenizer is None
        else:
            proc, custom = _from_tf_pickle(data, filename)
        if tokenizer_fn is not None:
            proc._tokenizer = tokenizer_fn
        elif custom:
            raise ValueError(f"{filename} was saved with a custom tokenizer_fn, which is not stored in the file; "
                             f"pass it: VocabularyProcessor.restore({filename!r}, tokenizer_fn=...)")
        return proc


def _from_json(data: bytes, filename: str, cls: type) -> VocabularyProcessor:
    try:
        state = json.loads(data.decode("utf-8"))
        if state.get("format") != _FORMAT:
            raise ValueError(f"unknown format {state.get('format')!r}")
        vocab = CategoricalVocabulary(state["unknown_token"], state["support_reverse"])
        words = state["words"]
        vocab._mapping = {w: i for i, w in enumerate(words)}
        if vocab._support_reverse:
            vocab._reverse_mapping = list(words)
        vocab._freq = collections.defaultdict(int, state["freq"])
        vocab._freeze = bool(state["frozen"])
        proc = cls(state["max_document_length"], state["min_frequency"], vocab)
        if state["custom_tokenizer"]:
            proc._tokenizer = None  # the caller must supply it
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
        raise ValueError(f"{filename} is not a saved VocabularyProcessor ({type(e).__name__}: {e})") from None
    return proc


# what TF 1.x's pickles of a VocabularyProcessor name (Python 3 and Python 2 module paths)
_TF_TEXT = "tensorflow.contrib.learn.python.learn.preprocessing.text"
_TF_VOCAB = "tensorflow.contrib.learn.python.learn.preprocessing.categorical_vocabulary"


class _Named:
    """Stands in for a global a pickle names that is not on the list (say, a program's own
    tokenizer function): never called, only recognised afterwards."""

    def __init__(self, module: str, name: str):
        self.where = f"{module}.{name}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise pickle.UnpicklingError(f"refusing to call {self.where} while loading a pickle")


class _SafeUnpickler(pickle.Unpickler):
    """Builds only the processor's own classes and plain containers: any other global a
    pickle names becomes an inert _Named, so a crafted file cannot run code."""

    _ALLOWED = {(_TF_TEXT, "VocabularyProcessor"): VocabularyProcessor,
                (_TF_TEXT, "ByteProcessor"): ByteProcessor,
                (_TF_TEXT, "tokenizer"): tokenizer,
                (_TF_VOCAB, "CategoricalVocabulary"): CategoricalVocabulary,
                ("collections", "defaultdict"): collections.defaultdict,
                ("builtins", "int"): int, ("__builtin__", "int"): int, ("__builtin__", "long"): int,
                ("builtins", "object"): object, ("__builtin__", "object"): object,
                ("copyreg", "_reconstructor"): copyreg._reconstructor,
                ("copy_reg", "_reconstructor"): copyreg._reconstructor}

    def find_class(self, module: str, name: str) -> Any:
        return self._ALLOWED.get((module, name)) or _Named(module, name)


def _plain(x: Any) -> bool:
    """Only strings, numbers and containers of them (no stand-ins hidden inside)."""
    if isinstance(x, (str, bytes, int, float, bool)) or x is None:
        return True
    if isinstance(x, collections.defaultdict) and x.default_factory not in (int, None):
        return False
    if isinstance(x, dict):
        return all(_plain(k) and _plain(v) for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return all(_plain(v) for v in x)
    return False


def _from_tf_pickle(data: bytes, filename: str) -> Any:
    try:
        obj = _SafeUnpickler(io.BytesIO(data), encoding="utf-8").load()
    except Exception as e:  # noqa: BLE001 - any failure of an untrusted file is one clear error
        raise ValueError(f"{filename} is not a VocabularyProcessor saved by collflow or by TensorFlow 1.x "
                         f"({type(e).__name__}: {e})") from None
    vocab = getattr(obj, "vocabulary_", None)
    if not isinstance(obj, VocabularyProcessor) or not isinstance(vocab, CategoricalVocabulary):
        raise ValueError(f"{filename} holds a {type(obj).__name__}, not a VocabularyProcessor")
    state = {k: v for k, v in obj.__dict__.items() if k not in ("vocabulary_", "_tokenizer")}
    if not _plain(state) or not _plain(vocab.__dict__):
        raise ValueError(f"{filename}: the pickled VocabularyProcessor holds objects other than its vocabulary")
    tok = obj.__dict__.get("_tokenizer", tokenizer)
    if tok is not tokenizer and not isinstance(tok, _Named):
        raise ValueError(f"{filename}: the pickled tokenizer is not a function")
    return obj, isinstance(tok, _Named)
