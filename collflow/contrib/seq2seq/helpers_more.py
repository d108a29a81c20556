"""tf.contrib.seq2seq's other helpers: InferenceHelper and the scheduled-sampling helpers.

ScheduledEmbeddingTrainingHelper: at each step, with probability sampling_probability per
entry, the next input is the embedding of an id sampled from softmax(outputs) instead of the
ground truth; sample ids are -1 where no sampling took place.
ScheduledOutputTrainingHelper: with that probability the next input is the output itself
(through next_inputs_fn, with the auxiliary inputs appended); sample ids are True there.
The draws are collflow's (seeded by `seed`/`scheduling_seed`), not TensorFlow's numbers.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

from ... import dtypes as _dt
from ...graph import graph as _g
from ...graph.ops import array_ops as _a
from ...graph.ops import math_ops as _m
from ...graph.ops.categorical_ops import multinomial
from ...graph.ops.constant_op import constant
from ...graph.ops.random_ops import random_uniform
from ...graph.shape import TensorShape, as_shape
from ...graph.tensor_array import TensorArray
from .decoder import (Helper, TrainingHelper, _embedding_fn, batch_dim, map_structure, transpose_batch_time,
                      zeros_of_size)

__all__ = ["InferenceHelper", "ScheduledEmbeddingTrainingHelper", "ScheduledOutputTrainingHelper"]


class InferenceHelper(Helper):
    """Inference without embeddings: sample_fn(outputs) -> sample ids, the next inputs are the
    ids (or next_inputs_fn(ids)), end_fn(ids) -> finished [batch] bool."""

    def __init__(self, sample_fn: Callable, sample_shape: Any, sample_dtype: Any, start_inputs: Any,
                 end_fn: Callable, next_inputs_fn: Optional[Callable] = None):
        self._sample_fn, self._end_fn, self._next_inputs_fn = sample_fn, end_fn, next_inputs_fn
        self._sample_shape = as_shape(sample_shape)
        self._sample_dtype = _dt.as_dtype(sample_dtype)
        self._start_inputs = _g.convert_to_tensor(start_inputs, name="start_inputs")
        self._batch_size = batch_dim(self._start_inputs)

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    @property
    def sample_ids_shape(self) -> TensorShape:
        return self._sample_shape

    @property
    def sample_ids_dtype(self) -> _dt.DType:
        return self._sample_dtype

    def initialize(self, name: Optional[str] = None) -> Tuple[Any, Any]:
        finished = _m.cast(zeros_of_size(self._batch_size, TensorShape([]), _dt.int32), _dt.bool_)
        return finished, self._start_inputs

    def sample(self, time: Any, outputs: Any, state: Any, name: Optional[str] = None) -> Any:
        return self._sample_fn(outputs)

    def next_inputs(self, time: Any, outputs: Any, state: Any, sample_ids: Any,
                    name: Optional[str] = None) -> Tuple[Any, Any, Any]:
        next_inputs = sample_ids if self._next_inputs_fn is None else self._next_inputs_fn(sample_ids)
        return self._end_fn(sample_ids), next_inputs, state


def _bernoulli(probability: Any, batch: Any, seed: Optional[int]) -> _g.Tensor:
    """[batch] bools, True with `probability` (a scalar or a [batch] vector)."""
    p = _g.convert_to_tensor(probability, dtype=_dt.float32, name="sampling_probability")
    if p.shape.rank not in (None, 0, 1):
        raise ValueError(f"sampling_probability must be either a scalar or a vector. saw shape: {p.shape}")
    shape = [batch] if isinstance(batch, int) else _a.stack([batch])
    return _m.less(random_uniform(shape, seed=seed), p)


class ScheduledEmbeddingTrainingHelper(TrainingHelper):
    """TrainingHelper with scheduled sampling of embedded ids (see the module doc)."""

    def __init__(self, inputs: Any, sequence_length: Any, embedding: Any, sampling_probability: Any,
                 time_major: bool = False, seed: Optional[int] = None, scheduling_seed: Optional[int] = None,
                 name: Optional[str] = None):
        self._embedding_fn = _embedding_fn(embedding)
        p = _g.convert_to_tensor(sampling_probability, dtype=_dt.float32, name="sampling_probability")
        if p.shape.rank not in (None, 0, 1):
            raise ValueError(f"sampling_probability must be either a scalar or a vector. saw shape: {p.shape}")
        self._sampling_probability = p
        self._seed, self._scheduling_seed = seed, scheduling_seed
        super().__init__(inputs, sequence_length, time_major=time_major,
                         name=name or "ScheduledEmbeddingSamplingWrapper")

    def sample(self, time: Any, outputs: Any, state: Any, name: Optional[str] = None) -> Any:
        select = _bernoulli(self._sampling_probability, self.batch_size, self._scheduling_seed)
        drawn = _a.reshape(multinomial(outputs, 1, seed=self._seed, output_dtype=_dt.int32), [-1])
        return _a.where(select, drawn, _a.zeros_like(drawn) - constant(1, dtype=_dt.int32))

    def next_inputs(self, time: Any, outputs: Any, state: Any, sample_ids: Any = None,
                    name: Optional[str] = None) -> Tuple[Any, Any, Any]:
        finished, base_next_inputs, state = super().next_inputs(time, outputs, state, sample_ids)
        sampling = _m.greater(sample_ids, constant(-1, dtype=_dt.int32))
        embedded = self._embedding_fn(_m.maximum(sample_ids, constant(0, dtype=_dt.int32)))
        return finished, _a.where(sampling, embedded, base_next_inputs), state


class ScheduledOutputTrainingHelper(TrainingHelper):
    """TrainingHelper with scheduled sampling of the outputs themselves (see the module doc).
    auxiliary_inputs [batch, time, n] (time-major with time_major) are appended to the inputs
    and to the fed-back outputs."""

    def __init__(self, inputs: Any, sequence_length: Any, sampling_probability: Any, time_major: bool = False,
                 seed: Optional[int] = None, next_inputs_fn: Optional[Callable] = None, auxiliary_inputs: Any = None,
                 name: Optional[str] = None):
        p = _g.convert_to_tensor(sampling_probability, dtype=_dt.float32, name="sampling_probability")
        if p.shape.rank not in (None, 0, 1):
            raise ValueError(f"sampling_probability must be either a scalar or a vector. saw shape: {p.shape}")
        self._sampling_probability = p
        self._seed, self._next_inputs_fn = seed, next_inputs_fn
        if auxiliary_inputs is None:
            full_inputs, self._aux_tas = inputs, None
        else:
            full_inputs = map_structure(lambda x, a: _a.concat([_g.convert_to_tensor(x), _g.convert_to_tensor(a)], -1),
                                        inputs, auxiliary_inputs)
            aux_tm = map_structure(lambda a: _g.convert_to_tensor(a) if time_major else
                                   transpose_batch_time(_g.convert_to_tensor(a)), auxiliary_inputs)
            self._aux_tas = map_structure(
                lambda a: TensorArray(a.dtype, _a.shape(a)[0], element_shape=list(a.shape.dims[1:])).unstack(a),
                aux_tm)
        super().__init__(full_inputs, sequence_length, time_major=time_major,
                         name=name or "ScheduledOutputTrainingHelper")

    @property
    def sample_ids_dtype(self) -> _dt.DType:
        return _dt.bool_

    def sample(self, time: Any, outputs: Any, state: Any, name: Optional[str] = None) -> Any:
        return _bernoulli(self._sampling_probability, self.batch_size, self._seed)

    def next_inputs(self, time: Any, outputs: Any, state: Any, sample_ids: Any = None,
                    name: Optional[str] = None) -> Tuple[Any, Any, Any]:
        finished, base_next_inputs, state = super().next_inputs(time, outputs, state, sample_ids)
        fed = outputs if self._next_inputs_fn is None else self._next_inputs_fn(outputs)
        if self._aux_tas is not None:
            next_time = time + constant(1, dtype=_dt.int32)
            last = self._n_time - constant(1, dtype=_dt.int32)
            idx = _m.minimum(next_time, last)
            fed = map_structure(lambda o, ta: _a.concat([o, ta.read(idx)], -1), fed, self._aux_tas)
        return finished, map_structure(lambda f, b: _a.where(sample_ids, f, b), fed, base_next_inputs), state
