"""Keras masks through layers beyond the recurrent ones (TF 1.15's and tf_keras's rules):

- the merge layers (`Add`, `Subtract`, `Multiply`, `Average`, `Maximum`, `Minimum`): the
  output's mask is the logical AND of the inputs' masks (None when no input has one);
- `Concatenate`: each input's mask (all True for an input without one) broadcast to the
  input's rank, concatenated on the layer's axis and reduced with AND over the last axis, so
  concatenating on the time axis concatenates the masks;
- `GlobalAveragePooling1D`: the mean over the unmasked steps only (no mask after it);
- `Lambda(fn, mask=...)`: `mask` a function (inputs, input mask) -> mask or a fixed mask;
- user `Layer` subclasses: `supports_masking = True` passes the mask on, `compute_mask()`
  computes another, `call(..., mask=None)` receives it; others refuse a mask (TF's TypeError).
"""
from __future__ import annotations

from typing import Any, List, Optional

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from .layers import mask_of

__all__ = ["merge_mask", "concat_mask", "masked_mean_over_steps", "refuse_mask"]


def refuse_mask(layer_name: str, mask: Any) -> None:
    """TF 1.15's error for a mask into a layer that does not support masking."""
    if mask is not None:
        raise TypeError(f"Layer {layer_name} does not support masking, but was passed an input_mask: {mask}")


def merge_mask(inputs: List[Any]) -> Optional[Any]:
    """An elementwise merge's output mask: the AND of the inputs' masks (Keras's _Merge)."""
    masks = [mask_of(t) for t in inputs]
    masks = [_a.expand_dims(m, 0) for m in masks if m is not None]
    if not masks:
        return None
    return _m.reduce_all(_a.concat(masks, 0), axis=0)


def concat_mask(inputs: List[Any], axis: int) -> Optional[Any]:
    """Concatenate's output mask (Keras's Concatenate.compute_mask, see the module doc)."""
    raw = [mask_of(t) for t in inputs]
    if all(m is None for m in raw):
        return None
    masks = []
    for t, m in zip(inputs, raw):
        t = _g.convert_to_tensor(t)
        if m is None:  # an input without a mask counts as all real steps
            masks.append(_a.ones_like(t, dtype=_dt.bool_))
        elif m.shape.rank is not None and t.shape.rank is not None and m.shape.rank < t.shape.rank:
            masks.append(_a.expand_dims(m, -1))
        else:
            masks.append(m)
    return _m.reduce_all(_a.concat(masks, axis), axis=-1)


def masked_mean_over_steps(x: Any, mask: Any) -> Any:
    """The mean of [batch, steps, features] over the steps the mask keeps (TF 1.15's
    GlobalAveragePooling1D: inputs times the mask, summed, over the count of real steps)."""
    steps = x.shape.as_list()[1]
    w = _a.reshape(_m.cast(mask, x.dtype), [-1, steps if steps is not None else -1, 1])
    return _m.reduce_sum(x * w, axis=1) / _m.reduce_sum(w, axis=1)
