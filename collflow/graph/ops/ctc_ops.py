"""tf.nn.ctc_loss: the connectionist temporal classification loss (Graves et al., 2006) of
speech and handwriting models, as TF1 defines it: labels a SparseTensor of class ids per
batch entry, inputs unnormalized log-probabilities [max_time, batch, num_classes] (time-major
by default), the blank the last class, repeated labels merged by the paths
(ctc_merge_repeated=True).  The loss is -log p(labels | inputs) per batch entry; the
gradient with respect to the inputs is softmax - the labels' posterior occupancy, computed
with the loss by the forward-backward recursion in log space (kernels/ctc_kernels.py)."""
from __future__ import annotations

from typing import Any

from ... import dtypes as _dt
from ...errors import InvalidArgumentError, UnimplementedError
from .. import graph as _g
from ..registry import not_differentiable, register_gradient, register_op
from ..shape import TensorShape
from ..sparse_tensor import SparseTensor, SparseTensorValue
from . import array_ops as _a
from .op_util import make_op

__all__ = ["ctc_loss", "ctc_greedy_decoder", "ctc_beam_search_decoder"]


def _logits_batch(x: _g.Tensor, what: str) -> Any:
    """The batch size of [max_time, batch, num_classes] float logits (None if unknown)."""
    if x.dtype not in (_dt.float32, _dt.float64):
        raise ValueError(f"{what} needs float32 or float64 inputs, got {x.dtype.name}")
    if x.shape.rank not in (None, 3):
        raise ValueError(f"{what} needs inputs [max_time, batch, num_classes], got shape {x.shape}")
    return x.shape.dims[1] if x.shape.rank == 3 else None


def _ctc_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    batch = _logits_batch(x, "ctc_loss")
    return [(x.dtype, TensorShape([batch])), (x.dtype, x.shape)]


register_op("CTCLoss", _ctc_spec, doc="CTC loss and its gradient with respect to the logits")


def _greedy_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    batch = _logits_batch(x, "ctc_greedy_decoder")
    return [(_dt.int64, TensorShape([None, 2])), (_dt.int64, TensorShape([None])), (_dt.int64, TensorShape([2])),
            (x.dtype, TensorShape([batch, 1]))]


register_op("CTCGreedyDecoder", _greedy_spec, host_only=True,
            doc="best-path CTC decoding: (indices, values, shape, log_probability)")
not_differentiable("CTCGreedyDecoder")


@register_gradient("CTCLoss")
def _ctc_grad(op: _g.Operation, grad_loss: Any, _grad_grad: Any) -> list:
    # d loss_b / d inputs[t, b, :] is the op's second output; scaled by each entry's incoming gradient
    g = _g.convert_to_tensor(grad_loss)
    return [op.outputs[1] * _a.reshape(g, [1, -1, 1]), None, None, None]


def ctc_loss(labels: Any, inputs: Any = None, sequence_length: Any = None, preprocess_collapse_repeated: bool = False,
             ctc_merge_repeated: bool = True, ignore_longer_outputs_than_inputs: bool = False,
             time_major: bool = True, logits: Any = None) -> _g.Tensor:
    """[batch] losses -log p(labels[b] | inputs[:sequence_length[b], b]).  A label sequence
    that needs more time steps than it has is InvalidArgumentError, or a loss (and gradient)
    of 0 with ignore_longer_outputs_than_inputs."""
    if not ctc_merge_repeated:
        raise UnimplementedError("ctc_loss: ctc_merge_repeated=False is not implemented")
    if isinstance(labels, SparseTensorValue):
        labels = SparseTensor.from_value(labels)
    if not isinstance(labels, SparseTensor):
        raise TypeError(f"ctc_loss: labels must be a SparseTensor (of int32 class ids), got {type(labels).__name__}")
    x = _g.convert_to_tensor(inputs if inputs is not None else logits)
    if sequence_length is None:
        raise InvalidArgumentError("ctc_loss needs sequence_length (the time steps of each batch entry)")
    with x.graph.as_default(), x.graph.name_scope("CTCLoss"):
        if not time_major:
            x = _a.transpose(x, [1, 0, 2])
        vals = labels.values
        if vals.dtype not in (_dt.int32, _dt.int64):
            raise InvalidArgumentError(f"ctc_loss: labels must hold int32 class ids, got {vals.dtype.name}")
        seq = _g.convert_to_tensor(sequence_length, dtype=_dt.int32) if not isinstance(sequence_length, _g.Tensor) \
            else sequence_length
        op = make_op("CTCLoss", [x, labels.indices, vals, seq],
                     {"preprocess_collapse_repeated": bool(preprocess_collapse_repeated),
                      "ignore_longer_outputs_than_inputs": bool(ignore_longer_outputs_than_inputs)}, name="CTCLoss")
        return op.outputs[0]


def ctc_greedy_decoder(inputs: Any, sequence_length: Any, merge_repeated: bool = True,
                       blank_index: Any = None) -> Any:
    """Best-path decoding of [max_time, batch, num_classes] logits: each step's most likely
    class, repeats merged (merge_repeated), blanks (the last class, or blank_index) dropped.
    Returns ([a SparseTensor of the decoded class ids, [batch, longest]],
    log_probability [batch, 1]: minus the sum of each step's largest logit, as TF)."""
    x = _g.convert_to_tensor(inputs)
    with x.graph.as_default(), x.graph.name_scope("CTCGreedyDecoder"):
        seq = _g.convert_to_tensor(sequence_length, dtype=_dt.int32) if not isinstance(sequence_length, _g.Tensor) \
            else sequence_length
        op = make_op("CTCGreedyDecoder", [x, seq], {"merge_repeated": bool(merge_repeated),
                                                    "blank_index": None if blank_index is None else int(blank_index)},
                     name="CTCGreedyDecoder")
        return [SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])], op.outputs[3]


def _beam_spec(op: _g.Operation) -> list:
    x = op.inputs[0]
    batch = _logits_batch(x, "ctc_beam_search_decoder")
    k = op.attrs["top_paths"]
    return ([(_dt.int64, TensorShape([None, 2]))] * k + [(_dt.int64, TensorShape([None]))] * k
            + [(_dt.int64, TensorShape([2]))] * k + [(x.dtype, TensorShape([batch, k]))])


register_op("CTCBeamSearchDecoder", _beam_spec, host_only=True,  # CPU-only in TF1 too
            doc="CTC prefix beam search: top_paths (indices, values, shape) and their log-probabilities")
not_differentiable("CTCBeamSearchDecoder")


def ctc_beam_search_decoder(inputs: Any, sequence_length: Any, beam_width: int = 100, top_paths: int = 1,
                            merge_repeated: bool = True) -> Any:
    """Beam-search decoding of [max_time, batch, num_classes] logits (blank the last class),
    TF1's prefix beam search: the `top_paths` best label sequences of a beam of `beam_width`.
    Returns ([top_paths SparseTensors of class ids, each [batch, longest]],
    log_probability [batch, top_paths]).  merge_repeated (TF1's default True) also merges a
    repeated label the beam kept apart with a blank, as TF1's decoder does."""
    if int(beam_width) <= 0:
        raise ValueError(f"ctc_beam_search_decoder: beam_width must be positive, got {beam_width}")
    if not 0 < int(top_paths) <= int(beam_width):
        raise ValueError(f"ctc_beam_search_decoder: top_paths must be in [1, beam_width = {beam_width}], got "
                         f"{top_paths}")
    x = _g.convert_to_tensor(inputs)
    k = int(top_paths)
    with x.graph.as_default(), x.graph.name_scope("CTCBeamSearchDecoder"):
        seq = _g.convert_to_tensor(sequence_length, dtype=_dt.int32) if not isinstance(sequence_length, _g.Tensor) \
            else sequence_length
        op = make_op("CTCBeamSearchDecoder", [x, seq], {"beam_width": int(beam_width), "top_paths": k,
                                                        "merge_repeated": bool(merge_repeated)},
                     name="CTCBeamSearchDecoder")
        outs = op.outputs
        return [SparseTensor(outs[i], outs[k + i], outs[2 * k + i]) for i in range(k)], outs[3 * k]
