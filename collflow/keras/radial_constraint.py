"""tf.keras.constraints.RadialConstraint (tf_keras 2.x's; TF 1.15 had none): each [h, w] slice
of a 4-D kernel made constant on concentric square rings, every ring taking the value tf_keras
takes for it from the slice's diagonal."""
from __future__ import annotations

from typing import Any

import numpy as np

from .constraints import _BY_NAME, Constraint

__all__ = ["RadialConstraint", "radial_constraint"]


def _ring_source(n: int) -> np.ndarray:
    """[n, n] diagonal positions each entry copies (tf_keras's choice: the inner 1x1 or 2x2 block
    from diagonal entry start - 1, ring r from start + r - 1 (odd n) or start + r (even n))."""
    start = n // 2
    idx = np.arange(n)
    if n % 2:
        dist = np.abs(idx - start)
        ring = np.maximum(dist[:, None], dist[None, :])
        return np.where(ring == 0, start - 1, start + ring - 1)
    dist = np.where(idx <= start - 1, start - 1 - idx, idx - start)
    ring = np.maximum(dist[:, None], dist[None, :])
    return np.where(ring == 0, start - 1, start + ring)


class RadialConstraint(Constraint):
    """Radially constant [height, width] kernels of a [height, width, channels, kernels] weight."""

    def __call__(self, w: Any) -> Any:
        import collflow as cf  # the ops (on use: keras sits above them)
        w = cf.convert_to_tensor(w)
        shape = w.shape.as_list() if w.shape.rank is not None else None
        if shape is None or len(shape) != 4:
            raise ValueError(f"The weight tensor must have rank 4. Received weight tensor with shape: {w.shape}")
        n = shape[0]
        if n is None or shape[1] != n:
            raise ValueError(f"RadialConstraint needs square kernels of a static size, got {w.shape}")
        if n < 2:
            return w  # nothing to spread (tf_keras reads out of range here)
        diag = cf.gather_nd(w, np.stack([np.arange(n), np.arange(n)], 1))  # [n, channels, kernels]
        return cf.gather(diag, _ring_source(n))


radial_constraint = RadialConstraint
_BY_NAME["RadialConstraint"] = RadialConstraint
