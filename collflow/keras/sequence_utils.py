"""tf.keras.preprocessing.sequence's TimeseriesGenerator, make_sampling_table and skipgrams,
and preprocessing.text.hashing_trick, with Keras's semantics.  skipgrams draws from Python's
`random` in Keras's order, so random.seed / seed= give Keras's couples."""
from __future__ import annotations

import hashlib
import random
import zlib
from typing import Any, Callable, List, Optional, Tuple, Union

import numpy as np

from .data_adapter import Sequence
from .preprocessing import _FILTERS, text_to_word_sequence

__all__ = ["TimeseriesGenerator", "make_sampling_table", "skipgrams", "hashing_trick"]


class TimeseriesGenerator(Sequence):
    """Batches of (windows of `length` steps of `data` taken every sampling_rate, the target of
    the step after each window), windows starting every `stride` steps between start_index and
    end_index; shuffle draws the window ends at random (np.random) instead."""

    def __init__(self, data: Any, targets: Any, length: int, sampling_rate: int = 1, stride: int = 1,
                 start_index: int = 0, end_index: Optional[int] = None, shuffle: bool = False, reverse: bool = False,
                 batch_size: int = 128):
        if len(data) != len(targets):
            raise ValueError(f"Data and targets have to be of same length. Data length is {len(data)} while target "
                             f"length is {len(targets)}")
        self.data, self.targets, self.length = data, targets, length
        self.sampling_rate, self.stride = sampling_rate, stride
        self.start_index = start_index + length  # the first window's target step
        self.end_index = len(data) - 1 if end_index is None else end_index
        self.shuffle, self.reverse, self.batch_size = shuffle, reverse, batch_size
        if self.start_index > self.end_index:
            raise ValueError("`start_index+length=%i > end_index=%i` is disallowed, as no part of the sequence would "
                             "be left to be used as current step." % (self.start_index, self.end_index))

    def __len__(self) -> int:
        span = self.batch_size * self.stride
        return (self.end_index - self.start_index + span) // span

    def __getitem__(self, index: int) -> Tuple[np.ndarray, np.ndarray]:
        if self.shuffle:
            rows = np.random.randint(self.start_index, self.end_index + 1, size=self.batch_size)
        else:
            first = self.start_index + self.batch_size * self.stride * index
            rows = np.arange(first, min(first + self.batch_size * self.stride, self.end_index + 1), self.stride)
        samples = np.array([self.data[r - self.length:r:self.sampling_rate] for r in rows])
        targets = np.array([self.targets[r] for r in rows])
        if self.reverse:
            return samples[:, ::-1, ...], targets
        return samples, targets

    def get_config(self) -> dict:
        return {"length": self.length, "sampling_rate": self.sampling_rate, "stride": self.stride,
                "start_index": self.start_index - self.length, "end_index": self.end_index,
                "shuffle": self.shuffle, "reverse": self.reverse, "batch_size": self.batch_size}


def make_sampling_table(size: int, sampling_factor: float = 1e-5) -> np.ndarray:
    """p[i], the probability of keeping the i-th most frequent word (word2vec's subsampling,
    Zipf's law for the frequencies: rank * (log(rank) + gamma) approximates 1 / frequency)."""
    euler_gamma = 0.577
    rank = np.arange(size)
    rank[0] = 1
    inv_freq = rank * (np.log(rank) + euler_gamma) + 0.5 - 1.0 / (12.0 * rank)
    f = sampling_factor * inv_freq
    return np.minimum(1.0, f / np.sqrt(f))


def skipgrams(sequence: Any, vocabulary_size: int, window_size: int = 4, negative_samples: float = 1.0,
              shuffle: bool = True, categorical: bool = False, sampling_table: Any = None,
              seed: Optional[int] = None) -> Tuple[List[List[int]], List[Any]]:
    """(couples, labels): [word, context word] pairs within window_size (label 1) and
    negative_samples times as many [word, random word] pairs (label 0); index 0 is skipped,
    words dropped with sampling_table's probabilities; shuffled together with `seed`."""
    couples: List[List[int]] = []
    labels: List[Any] = []
    positive, negative = ([0, 1], [1, 0]) if categorical else (1, 0)
    for i, wi in enumerate(sequence):
        if not wi:
            continue
        if sampling_table is not None and sampling_table[wi] < random.random():
            continue
        for j in range(max(0, i - window_size), min(len(sequence), i + window_size + 1)):
            if j == i or not sequence[j]:
                continue
            couples.append([wi, sequence[j]])
            labels.append(positive)
    if negative_samples > 0:
        count = int(len(labels) * negative_samples)
        words = [c[0] for c in couples]
        random.shuffle(words)
        couples += [[words[k % len(words)], random.randint(1, vocabulary_size - 1)] for k in range(count)]
        labels += [negative] * count
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(10e6))  # Keras's draw (its float bound is an int to Python)
        # the same seed shuffles both lists alike, keeping each couple with its label
        random.seed(seed)
        random.shuffle(couples)
        random.seed(seed)
        random.shuffle(labels)
    return couples, labels


def _md5(word: str) -> int:
    return int(hashlib.md5(word.encode()).hexdigest(), 16)


def _stable(word: str) -> int:
    return zlib.crc32(word.encode())


def hashing_trick(text: str, n: int, hash_function: Union[None, str, Callable[[str], int]] = None,
                  filters: str = _FILTERS, lower: bool = True, split: str = " ") -> List[int]:
    """Each word of `text` hashed to 1..n-1: hash_function "md5" (stable, Keras's values), a
    callable, or None (collflow: the stable CRC-32 one_hot uses, where Keras uses Python's
    salted per-process hash)."""
    if hash_function is None:
        hash_function = _stable
    elif hash_function == "md5":
        hash_function = _md5
    return [hash_function(w) % (n - 1) + 1 for w in text_to_word_sequence(text, filters, lower, split)]
