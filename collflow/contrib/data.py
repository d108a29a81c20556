"""tf.contrib.data: TF 1.4-1.12's home of the tf.data transformations that became
tf.data.experimental (the same functions here), plus the ones TF deprecated before moving:
batch_and_drop_remainder, padded_batch_and_drop_remainder, sliding_window_batch,
assert_element_shape, reduce_dataset, read_batch_features and sloppy_interleave.

    dataset = dataset.apply(tf.contrib.data.map_and_batch(parse, 32))
    dataset = dataset.apply(tf.contrib.data.batch_and_drop_remainder(32))
"""
from __future__ import annotations

import types
from typing import Any, Callable, Optional

from ..data import experimental as _experimental
from ..graph import graph as _g
from ..graph import nest
from ..graph.ops.check_more_ops import ensure_shape
from ..graph.shape import as_shape

__all__ = ["batch_and_drop_remainder", "padded_batch_and_drop_remainder", "sliding_window_batch",
           "assert_element_shape", "reduce_dataset", "read_batch_features", "sloppy_interleave", "namespace"]


def batch_and_drop_remainder(batch_size: Any) -> Callable[[Any], Any]:
    """dataset.batch(batch_size, drop_remainder=True) as a transformation (every batch full)."""
    return lambda dataset: dataset.batch(batch_size, drop_remainder=True)


def padded_batch_and_drop_remainder(batch_size: Any, padded_shapes: Any, padding_values: Any = None
                                    ) -> Callable[[Any], Any]:
    """dataset.padded_batch(..., drop_remainder=True) as a transformation."""
    return lambda dataset: dataset.padded_batch(batch_size, padded_shapes, padding_values, drop_remainder=True)


def sliding_window_batch(window_size: int, stride: Optional[int] = None, window_shift: Optional[int] = None,
                         window_stride: int = 1) -> Callable[[Any], Any]:
    """Batches of window_size consecutive elements (every window_stride-th), each window
    window_shift (TF1's older `stride`) elements after the last; partial windows dropped."""
    if stride is not None and window_shift is not None:
        raise ValueError("Cannot specify both `stride` and `window_shift`")
    shift = stride if stride is not None else (window_shift if window_shift is not None else 1)

    def apply(dataset: Any) -> Any:
        windows = dataset.window(window_size, shift=shift, stride=window_stride, drop_remainder=True)

        def batch_window(*parts: Any) -> Any:
            from ..data.dataset import Dataset
            if len(parts) == 1:
                return parts[0].batch(window_size)
            return Dataset.zip(tuple(p.batch(window_size) for p in parts))
        return windows.flat_map(batch_window)
    return apply


def assert_element_shape(expected_shapes: Any) -> Callable[[Any], Any]:
    """Each element checked against expected_shapes (the structure of the dataset's shapes):
    an incompatible static shape is a ValueError now, a run-time mismatch fails the run; the
    element's static shapes become the more specific ones."""
    def apply(dataset: Any) -> Any:
        current = dataset.output_shapes
        flat_expected = [as_shape(s) for s in nest.flatten_up_to(current, expected_shapes)]
        for have, want in zip(nest.flatten(current), flat_expected):
            if not as_shape(have).is_compatible_with(want):
                raise ValueError(f"Invalid expected shape: {want} is not compatible with {have}")

        def check(*parts: Any) -> Any:
            element = parts[0] if len(parts) == 1 else parts
            flat = [ensure_shape(_g.convert_to_tensor(t), s) for t, s in zip(nest.flatten(element), flat_expected)]
            return nest.pack_sequence_as(element, flat)
        return dataset.map(check)
    return apply


def reduce_dataset(dataset: Any, reducer: Any) -> Any:
    """Every element folded by `reducer` (a tf.data.experimental.Reducer): one value."""
    from ..graph.ops.constant_op import constant
    from .. import dtypes as _dt
    grouped = dataset.apply(_experimental.group_by_reducer(lambda *x: constant(0, dtype=_dt.int64), reducer))
    return _experimental.get_single_element(grouped)


def read_batch_features(file_pattern: Any, batch_size: int, features: Any, reader: Any = None,
                        reader_args: Any = None, randomize_input: bool = True, num_epochs: Optional[int] = None,
                        capacity: int = 10000) -> Any:
    """The next batch of parsed features ({name: tensor}) from files of tf.train.Examples: a
    one-shot iterator over make_batched_features_dataset."""
    from ..data.iterator_ops import make_one_shot_iterator
    ds = _experimental.make_batched_features_dataset(file_pattern, batch_size, features, reader=reader, reader_args=reader_args,
                                       shuffle=randomize_input, num_epochs=num_epochs, shuffle_buffer_size=capacity)
    return make_one_shot_iterator(ds).get_next()


def sloppy_interleave(map_func: Callable[..., Any], cycle_length: Any, block_length: Any = 1) -> Callable[[Any], Any]:
    """parallel_interleave with sloppy=True."""
    return _experimental.parallel_interleave(map_func, cycle_length, block_length, sloppy=True)


def _build_namespace() -> types.SimpleNamespace:
    names = {n: getattr(_experimental, n) for n in dir(_experimental) if not n.startswith("_")}
    names.update({n: globals()[n] for n in __all__ if n != "namespace"})
    ns = types.SimpleNamespace(**names)
    ns.__doc__ = ("tf.contrib.data: tf.data.experimental's functions and classes under their TF 1.x contrib "
                  "names, plus batch_and_drop_remainder, padded_batch_and_drop_remainder, sliding_window_batch, "
                  "assert_element_shape, reduce_dataset, read_batch_features and sloppy_interleave.")
    return ns


namespace = _build_namespace()
