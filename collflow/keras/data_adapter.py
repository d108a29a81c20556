"""Where Keras's fit/evaluate/predict take their batches from: NumPy arrays (cut into batches,
shuffled per epoch with np.random), a tf.data Dataset (through an iterator of the model's
graph), or a Python generator / keras.utils.Sequence (fit_generator's).  Each source gives,
per epoch, an iterator of (inputs as a list of arrays, targets or None, sample weights or None)."""
from __future__ import annotations

from typing import Any, Callable, Iterator, List, Optional, Tuple

import numpy as np

from ..errors import OutOfRangeError

__all__ = ["Sequence", "ArraySource", "DatasetSource", "GeneratorSource", "is_dataset", "is_generator"]

Batch = Tuple[List[np.ndarray], Optional[List[np.ndarray]], Any]


class Sequence:
    """tf.keras.utils.Sequence: __len__ batches, __getitem__(i) -> (x, y[, w]); on_epoch_end()."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def on_epoch_end(self) -> None:
        pass


def is_dataset(x: Any) -> bool:
    return hasattr(x, "make_initializable_iterator") and hasattr(x, "output_types")


def is_generator(x: Any) -> bool:
    return isinstance(x, Sequence) or (hasattr(x, "__next__") and hasattr(x, "__iter__") and not isinstance(x, dict))


def _split(element: Any, standardize: Callable[[Any], List[np.ndarray]], targets: Callable[[Any], Any],
           with_targets: bool) -> Batch:
    if isinstance(element, tuple) and len(element) in (2, 3):
        xs = standardize(element[0])
        y = targets(element[1]) if with_targets or element[1] is not None else None
        w = np.asarray(element[2], np.float32) if len(element) == 3 and element[2] is not None else None
        return xs, y, w
    if with_targets:
        raise ValueError("fit/evaluate need (inputs, targets) elements from the dataset or generator, got one "
                         f"{type(element).__name__}")
    return standardize(element), None, None


class ArraySource:
    """Batches of NumPy arrays (TF 1.15's loop: np.random.shuffle of the indices each epoch)."""

    def __init__(self, xs: List[np.ndarray], ys: Optional[List[np.ndarray]], w: Any, batch_size: int,
                 shuffle: bool):
        self.xs, self.ys, self.w, self.batch_size, self.shuffle = xs, ys, w, batch_size, shuffle
        # replaces each epoch's shuffled order (replicas of a strategy all take rank 0's)
        self.order_hook: Optional[Callable[[np.ndarray], np.ndarray]] = None

    def epoch(self) -> Iterator[Batch]:
        n = len(self.xs[0]) if self.xs else 0
        index = np.arange(n)
        if self.shuffle:
            np.random.shuffle(index)
            if self.order_hook is not None:
                index = self.order_hook(index)
        for start in range(0, n, self.batch_size):
            ids = index[start:start + self.batch_size]
            w = self.w
            if w is not None:  # one weight vector for every output, or one per output
                w = [wi[ids] for wi in w] if isinstance(w, list) else w[ids]
            yield ([a[ids] for a in self.xs], None if self.ys is None else [y[ids] for y in self.ys], w)


class DatasetSource:
    """Batches from a tf.data Dataset: `steps` per epoch from one iterator that goes on across
    epochs, or (steps None) the whole dataset each epoch, the iterator restarted."""

    def __init__(self, dataset: Any, steps: Optional[int], standardize: Callable[[Any], List[np.ndarray]],
                 targets: Callable[[Any], np.ndarray], with_targets: bool, session: Callable[[], Any]):
        self._it = dataset.make_initializable_iterator()
        self._next = self._it.get_next()
        self.steps, self._std, self._targets, self._with = steps, standardize, targets, with_targets
        self._session = session
        self._started = False

    def epoch(self) -> Iterator[Batch]:
        sess = self._session()
        if self.steps is None or not self._started:
            sess.run(self._it.initializer)
            self._started = True
        taken = 0
        while self.steps is None or taken < self.steps:
            try:
                element = sess.run(self._next)
            except OutOfRangeError:
                if self.steps is not None:
                    raise ValueError(f"the dataset ran out after {taken} of steps_per_epoch={self.steps} steps; "
                                     "repeat() it or lower the steps") from None
                return
            taken += 1
            yield _split(element, self._std, self._targets, self._with)


class GeneratorSource:
    """Batches from a Python generator (steps per epoch, required) or a keras Sequence."""

    def __init__(self, gen: Any, steps: Optional[int], standardize: Callable[[Any], List[np.ndarray]],
                 targets: Callable[[Any], np.ndarray], with_targets: bool, shuffle: bool = False):
        if steps is None and not isinstance(gen, Sequence):
            raise ValueError("`steps_per_epoch=None` is only valid for a generator based on the "
                             "`keras.utils.Sequence` class. Please specify `steps_per_epoch` or use the "
                             "`keras.utils.Sequence` class.")
        self.gen, self.steps, self._std, self._targets, self._with = gen, steps, standardize, targets, with_targets
        self.shuffle = shuffle

    def epoch(self) -> Iterator[Batch]:
        if isinstance(self.gen, Sequence):
            order = np.arange(len(self.gen))
            if self.shuffle:
                np.random.shuffle(order)
            for i in order[:self.steps] if self.steps is not None else order:
                yield _split(self.gen[int(i)], self._std, self._targets, self._with)
            self.gen.on_epoch_end()
            return
        for _ in range(self.steps or 0):
            try:
                element = next(self.gen)
            except StopIteration:
                return
            yield _split(element, self._std, self._targets, self._with)
