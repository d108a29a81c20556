"""tf.keras.layers names that only tf_keras 2.x has (optional in a TF 1.15 port), in graph
mode: Identity and the preprocessing layers Rescaling, CenterCrop, Resizing, CategoryEncoding,
Hashing, Discretization and Normalization (with adapt), also under
tf.keras.layers.experimental.preprocessing; and TF 1.15's enable_v2_dtype_behavior /
disable_v2_dtype_behavior (a recorded switch: collflow's layers compute in their inputs'
dtype, TF1's V1 behaviour, either way)."""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.constant_op import identity
from ..graph.ops.image_ops import resize_bilinear, resize_nearest_neighbor
from ..graph.variable_scope import get_variable
from .layers_attention import ShapeProbe
from .layers_more import _Weighted
from .layers_other import _StatelessProbe
from . import backend as K

__all__ = ["Identity", "Rescaling", "CenterCrop", "Resizing", "CategoryEncoding", "Hashing", "Discretization",
           "Normalization", "enable_v2_dtype_behavior", "disable_v2_dtype_behavior"]

_V2_DTYPE = {"on": False}


def enable_v2_dtype_behavior() -> None:
    """Records that V2 dtype behaviour was asked for (see the module doc)."""
    _V2_DTYPE["on"] = True


def disable_v2_dtype_behavior() -> None:
    _V2_DTYPE["on"] = False


class Identity(_StatelessProbe):
    """The input as it is (a placeholder layer)."""
    _base = "identity"
    _supports_masking = True

    def _fn(self, x: Any) -> Any:
        return identity(x)


def _float(x: Any) -> Any:
    return x if x.dtype.is_floating else _m.cast(x, _dt.as_dtype(K.floatx()))


class Rescaling(_StatelessProbe):
    """x * scale + offset (as floatx)."""
    _base = "rescaling"

    def __init__(self, scale: float, offset: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def _fn(self, x: Any) -> Any:
        x = _float(x)
        return x * _m.cast(self.scale, x.dtype) + _m.cast(self.offset, x.dtype)


class CenterCrop(_StatelessProbe):
    """The central height x width window of [batch, h, w, c] images (as floatx); an image smaller
    than the window is not supported (tf_keras resizes it)."""
    _base = "center_crop"

    def __init__(self, height: int, width: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.height, self.width = int(height), int(width)

    def _fn(self, x: Any) -> Any:
        h, w = x.shape.dims[-3], x.shape.dims[-2]
        if h is None or w is None:
            raise NotImplementedError("CenterCrop: collflow needs the images' height and width known")
        if h < self.height or w < self.width:
            raise NotImplementedError("CenterCrop of images smaller than the crop (tf_keras resizes them) is not "
                                      "supported by collflow")
        top, left = (h - self.height) // 2, (w - self.width) // 2
        return _float(x[..., top:top + self.height, left:left + self.width, :])


class Resizing(_StatelessProbe):
    """Images [batch, h, w, c] resized to height x width ("bilinear" or "nearest", TF2's
    half-pixel centers), as floatx."""
    _base = "resizing"

    def __init__(self, height: int, width: int, interpolation: str = "bilinear", crop_to_aspect_ratio: bool = False,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if interpolation not in ("bilinear", "nearest"):
            raise NotImplementedError(f"Resizing(interpolation={interpolation!r}) is not supported by collflow "
                                      "(bilinear and nearest are)")
        if crop_to_aspect_ratio:
            raise NotImplementedError("Resizing(crop_to_aspect_ratio=True) is not supported by collflow")
        self.height, self.width = int(height), int(width)
        self.interpolation, self.crop_to_aspect_ratio = interpolation, False

    def _fn(self, x: Any) -> Any:
        fn = resize_bilinear if self.interpolation == "bilinear" else resize_nearest_neighbor
        y = fn(_float(x), [self.height, self.width], half_pixel_centers=True)
        return _float(y)


class CategoryEncoding(_StatelessProbe):
    """Integer ids in [0, num_tokens) as "one_hot" rows, or per sample "multi_hot" / "count"
    vectors [batch, num_tokens] (floatx)."""
    _base = "category_encoding"

    def __init__(self, num_tokens: Optional[int] = None, output_mode: str = "multi_hot", sparse: bool = False,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if num_tokens is None:
            raise ValueError("num_tokens must be set to use this layer. If the number of tokens is not known "
                             "beforehand, use the IntegerLookup layer instead.")
        if output_mode not in ("one_hot", "multi_hot", "count"):
            raise ValueError(f"Unknown arg for output_mode: {output_mode}")
        if sparse:
            raise NotImplementedError("CategoryEncoding(sparse=True) is not supported by collflow")
        self.num_tokens, self.output_mode, self.sparse = int(num_tokens), output_mode, False

    def _fn(self, x: Any) -> Any:
        ids = _m.cast(x, _dt.int64)
        if ids.shape.rank == 0 or ids.shape.rank is None:
            raise ValueError(f"CategoryEncoding needs inputs of rank 1 or more, got {x.shape}")
        if self.output_mode == "one_hot" and ids.shape.rank > 1 and ids.shape.dims[-1] == 1:
            ids = _a.squeeze(ids, [-1])
        if self.output_mode == "one_hot":
            return _a.one_hot(ids, self.num_tokens, dtype=_dt.as_dtype(K.floatx()))
        if ids.shape.rank == 1:
            ids = _a.expand_dims(ids, -1)
        hot = _a.one_hot(ids, self.num_tokens, dtype=_dt.as_dtype(K.floatx()))
        return _m.reduce_max(hot, axis=-2) if self.output_mode == "multi_hot" else _m.reduce_sum(hot, axis=-2)


class Hashing(_StatelessProbe):
    """Each value (a string, or an integer as its decimal string) to a bin in [0, num_bins) by
    FarmHash Fingerprint64, as tf_keras's unsalted Hashing; with mask_value that value goes to
    bin 0 and the others to 1 + hash mod (num_bins - 1).  int64 out."""
    _base = "hashing"

    def __init__(self, num_bins: int, mask_value: Any = None, salt: Any = None, output_mode: str = "int",
                 sparse: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if salt is not None:
            raise NotImplementedError("Hashing(salt=...) (keyed SipHash) is not supported by collflow")
        if output_mode != "int" or sparse:
            raise NotImplementedError("Hashing supports output_mode='int' (dense) only in collflow")
        self.num_bins, self.mask_value, self.salt = int(num_bins), mask_value, None
        self.output_mode, self.sparse = "int", False

    def _fn(self, x: Any) -> Any:
        from ..graph.ops.string_more_ops import as_string, string_to_hash_bucket_fast
        strings = x if x.dtype == _dt.string else as_string(x)
        if self.mask_value is None:
            return string_to_hash_bucket_fast(strings, self.num_bins)
        bins = string_to_hash_bucket_fast(strings, self.num_bins - 1) + 1
        masked = _m.equal(x, _g.convert_to_tensor(self.mask_value, dtype=x.dtype))
        return _a.where(masked, _a.zeros_like(bins), bins)


class Discretization(_StatelessProbe):
    """The bucket of each value: i with bin_boundaries[i-1] <= v < bin_boundaries[i] (int64).
    adapt (num_bins from data's quantiles) is not supported."""
    _base = "discretization"

    def __init__(self, bin_boundaries: Any = None, num_bins: Optional[int] = None, epsilon: float = 0.01,
                 output_mode: str = "int", sparse: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if bin_boundaries is None:
            raise NotImplementedError("Discretization without bin_boundaries (adapt) is not supported by collflow")
        if output_mode != "int" or sparse:
            raise NotImplementedError("Discretization supports output_mode='int' (dense) only in collflow")
        self.bin_boundaries = [float(b) for b in bin_boundaries]
        self.num_bins, self.epsilon, self.output_mode, self.sparse = num_bins, epsilon, "int", False

    def _fn(self, x: Any) -> Any:
        from ..nn.feature_column.columns import bucketize
        return _m.cast(bucketize(_float(x), self.bin_boundaries), _dt.int64)


class Normalization(ShapeProbe, _Weighted):
    """(x - mean) / max(sqrt(variance), epsilon) per feature along `axis`: the given mean and
    variance, or non-trainable weights mean / variance / count that adapt(data) sets."""
    _base = "normalization"
    _supports_masking = True

    def __init__(self, axis: Any = -1, mean: Any = None, variance: Any = None, invert: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if (mean is None) != (variance is None):
            raise ValueError("When setting values directly, both `mean` and `variance` must be set. "
                             f"Received: mean={mean} and variance={variance}")
        self.axis = (axis,) if isinstance(axis, int) else tuple(axis or ())
        self.mean, self.variance, self.invert = mean, variance, bool(invert)
        self._adapted: Optional[List[np.ndarray]] = None

    def _kept(self, rank: int) -> List[int]:
        return sorted(a % rank for a in self.axis)

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> None:
        """Mean and variance of `data` (a NumPy array) over the axes not kept; set into the
        weights now when the layer is built, else when it is built."""
        arr = np.asarray(data, dtype=np.float64)
        kept = self._kept(arr.ndim)
        red = tuple(a for a in range(arr.ndim) if a not in kept)
        mean, var = arr.mean(axis=red), arr.var(axis=red)
        count = int(np.prod([arr.shape[a] for a in red]))
        self._adapted = [mean.astype(np.float32), var.astype(np.float32), np.int64(count)]
        if self.built:
            K.batch_set_value(list(zip(self.weights, self._adapted)))

    def _build_call(self, x: Any) -> Any:
        from ..graph.initializers import Constant
        x = _float(x)
        rank = x.shape.rank
        kept = self._kept(rank)
        shape = [int(x.shape.dims[a]) for a in kept]
        bshape = [int(x.shape.dims[a]) if a in kept else 1 for a in range(rank)]
        if self.mean is not None:
            mean = _a.reshape(_m.cast(np.broadcast_to(np.asarray(self.mean, np.float32), shape), x.dtype), bshape)
            var = _a.reshape(_m.cast(np.broadcast_to(np.asarray(self.variance, np.float32), shape), x.dtype), bshape)
        else:
            init = self._adapted or [np.zeros(shape, np.float32), np.ones(shape, np.float32), np.int64(0)]
            mv = get_variable("mean", shape, x.dtype, Constant(init[0]), trainable=False)
            vv = get_variable("variance", shape, x.dtype, Constant(init[1]), trainable=False)
            get_variable("count", [], _dt.int64, Constant(init[2]), trainable=False)
            mean, var = _a.reshape(mv, bshape), _a.reshape(vv, bshape)
        if self.invert:
            return mean + x * _m.maximum(_m.sqrt(var), K.epsilon())
        return (x - mean) / _m.maximum(_m.sqrt(var), K.epsilon())

