"""tf.nn.ctc_loss_v2 and tf.nn.ctc_beam_search_decoder_v2 (TF 1.15's v1 names of TF2's CTC).

Both are built on collflow's TF1 CTC ops (ctc_ops.py), whose blank is the last class:
ctc_loss_v2 moves the `blank_index` column of the logits to the end and renumbers the
labels above it one down (TF's own reduction for SparseTensor labels), and takes dense
labels with their lengths as well (turned into a SparseTensor of each row's first
label_length entries).  The loss is the same -log p(labels | logits) as TF's dense path;
its gradient is the CTC op's, through the column shuffle.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..sparse_tensor import SparseTensor, SparseTensorValue
from . import array_ops as _a
from . import math_ops as _m
from .ctc_ops import ctc_beam_search_decoder, ctc_loss
from .index_ops import gather_nd
from .string_ops import sequence_mask

__all__ = ["ctc_loss_v2", "ctc_beam_search_decoder_v2"]


def _num_classes(logits: _g.Tensor) -> int:
    if logits.shape.rank != 3 or logits.shape.dims[2] is None:
        raise ValueError("ctc_loss_v2 needs logits [frames, batch, num_labels] (or batch-major) with a known "
                         f"num_labels; got shape {logits.shape}")
    return int(logits.shape.dims[2])


def _blank_last(logits: _g.Tensor, labels: _g.Tensor, blank: int) -> Any:
    """(logits with column `blank` moved last, labels renumbered to match)."""
    n = _num_classes(logits)
    if blank < 0:
        blank += n
    if not 0 <= blank < n:
        raise ValueError(f"ctc_loss_v2: blank_index must be in [-{n}, {n}), got {blank}")
    if blank == n - 1:
        return logits, labels
    logits = _a.concat([logits[:, :, :blank], logits[:, :, blank + 1:], logits[:, :, blank:blank + 1]], axis=2)
    return logits, _a.where(labels < blank, labels, labels - 1)


def _dense_to_sparse(labels: _g.Tensor, label_length: Any) -> SparseTensor:
    """Each row's first label_length[b] labels, as a SparseTensor [batch, max_label_length]."""
    lengths = _m.cast(_g.convert_to_tensor(label_length), _dt.int32)
    mask = sequence_mask(lengths, maxlen=_a.shape(labels)[1])
    idx = _a.where(mask)
    return SparseTensor(idx, gather_nd(labels, idx), _a.shape(labels, out_type=_dt.int64))


def ctc_loss_v2(labels: Any, logits: Any, label_length: Any, logit_length: Any, logits_time_major: bool = True,
                unique: Any = None, blank_index: Optional[int] = None, name: Optional[str] = None) -> _g.Tensor:
    """[batch] CTC losses -log p(labels[b] | logits[:logit_length[b], b]).

    labels: int [batch, max_label_length] with label_length [batch], blank_index defaulting
    to 0; or a SparseTensor (label_length unused), blank_index then required.  A negative
    blank_index counts from the last class.  `unique` (TF's speed-up for the dense path)
    does not change the value and is ignored."""
    del unique
    x = _g.convert_to_tensor(logits, name="logits")
    with x.graph.as_default(), _g.name_scope(name, "ctc_loss_dense"):
        if isinstance(labels, SparseTensorValue):
            labels = SparseTensor.from_value(labels)
        if isinstance(labels, SparseTensor):
            if blank_index is None:
                raise ValueError("blank_index must be given when using SparseTensor labels.")
            sparse = labels
        else:
            dense = _g.convert_to_tensor(labels, name="labels")
            if not dense.dtype.is_integer:
                raise TypeError(f"ctc_loss_v2: labels must be int32 or int64 class ids, got {dense.dtype.name}")
            if label_length is None:
                raise ValueError("ctc_loss_v2: dense labels need label_length (the number of labels in each row)")
            sparse = _dense_to_sparse(dense, label_length)
            blank_index = 0 if blank_index is None else blank_index
        # the class axis is the last one in both layouts
        x, values = _blank_last(x, _m.cast(sparse.values, _dt.int32), int(blank_index))
        sparse = SparseTensor(sparse.indices, values, sparse.dense_shape)
        return ctc_loss(labels=sparse, inputs=x, sequence_length=logit_length, time_major=logits_time_major)


def ctc_beam_search_decoder_v2(inputs: Any, sequence_length: Any, beam_width: int = 100, top_paths: int = 1,
                               name: Optional[str] = None) -> Any:
    """TF2's beam search (blank the last class) without TF1's merge of repeated labels:
    ([top_paths SparseTensors of class ids], log_probability [batch, top_paths])."""
    x = _g.convert_to_tensor(inputs)
    with x.graph.as_default(), _g.name_scope(name, "ctc_beam_search_decoder"):
        return ctc_beam_search_decoder(x, sequence_length, beam_width=beam_width, top_paths=top_paths,
                                       merge_repeated=False)
