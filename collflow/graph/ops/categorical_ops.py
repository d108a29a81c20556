"""Sampling class indices from logits: TensorFlow 1.x's tf.multinomial (tf.random.categorical).

Seeded as the other random ops (graph seed, op seed: see graph/ops/random_ops.py): the op's
stream lives in the Session, so successive runs draw new samples and a new Session starts the
stream again.  Stateful, no gradient; the kernel lives in kernels/categorical_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .constant_op import constant
from .op_util import single
from .random_ops import get_seed

__all__ = ["multinomial"]


def _multinomial_spec(op: _g.Operation) -> list:
    logits, n = op.inputs
    if not logits.dtype.is_floating:
        raise ValueError(f"multinomial: logits must be floating-point, got {logits.dtype.name}")
    if logits.shape.rank not in (None, 2):
        raise ValueError(f"multinomial: logits must be 2-D [batch_size, num_classes], got shape {logits.shape}")
    if n.dtype != _dt.int32 or n.shape.rank not in (None, 0):
        raise ValueError(f"multinomial: num_samples must be an int32 scalar, got {n.dtype.name} of shape {n.shape}")
    k = int(n.op.attrs["value"]) if n.op.type == "Const" else None
    batch = logits.shape.dims[0] if logits.shape.rank == 2 else None
    return [(op.attrs["output_dtype"], TensorShape([batch, k]))]


register_op("Multinomial", _multinomial_spec, stateful=True,
            doc="num_samples class indices per row, drawn from softmax(logits)")
not_differentiable("Multinomial")


def multinomial(logits: Any, num_samples: Any, seed: Optional[int] = None, name: Optional[str] = None,
                output_dtype: Any = None) -> _g.Tensor:
    """Draws num_samples class indices per row of logits ([batch_size, num_classes], unnormalized
    log-probabilities: class j has probability softmax(logits[i])[j]).

    Returns [batch_size, num_samples] of output_dtype (int64 by default, or int32).
    """
    lg = _g.convert_to_tensor(logits)
    dt = _dt.int64 if output_dtype is None else _dt.as_dtype(output_dtype)
    if dt not in (_dt.int32, _dt.int64):
        raise InvalidArgumentError(f"multinomial: output_dtype must be int32 or int64, got {dt.name}")
    g = lg.graph
    with g.as_default():
        if isinstance(num_samples, _g.Tensor):
            n = num_samples
        else:
            if int(num_samples) < 0:
                raise InvalidArgumentError(f"multinomial: num_samples must be non-negative, got {num_samples}")
            n = constant(int(num_samples), dtype=_dt.int32, name="num_samples")
        s1, s2 = get_seed(seed, g)
        return single("Multinomial", [lg, n], {"seed": s1, "seed2": s2, "output_dtype": dt},
                      name=name or "multinomial")
