"""tf.contrib.image.single_image_random_dot_stereograms: the SingleImageRandomDotStereograms
op (kernel in kernels/image_sirds_kernels.py), a uint8 autostereogram of a depth map.  Not
differentiable, as TF's."""
from __future__ import annotations

from typing import Any, Optional

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .op_util import single

__all__ = ["single_image_random_dot_stereograms"]

_DEPTH_DTYPES = (_dt.float64, _dt.float32, _dt.int64, _dt.int32)

# the op's attributes and TF's defaults
_DEFAULTS = {"hidden_surface_removal": True, "convergence_dots_size": 8, "dots_per_inch": 72, "eye_separation": 2.5,
             "mu": 0.3333, "normalize": True, "normalize_max": -100.0, "normalize_min": 100.0, "border_level": 0.0,
             "number_colors": 256, "output_image_shape": (1024, 768, 1), "output_data_window": (1022, 757)}


def _spec(op: _g.Operation) -> list:
    depth = op.inputs[0]
    if depth.dtype not in _DEPTH_DTYPES:
        raise TypeError(f"SingleImageRandomDotStereograms takes {', '.join(d.name for d in _DEPTH_DTYPES)} "
                        f"depth_values, got {depth.dtype.name}")
    x, y = op.attrs["output_image_shape"][:2]
    return [(_dt.uint8, TensorShape([y, x, 3 if op.attrs["number_colors"] > 256 else 1]))]


register_op("SingleImageRandomDotStereograms", _spec, stateful=True, host_only=True)  # random dots per run
not_differentiable("SingleImageRandomDotStereograms")


def _dims(value: Any, n: int, label: str) -> tuple:
    dims = tuple(TensorShape(value).as_list()) if value is not None else ()
    if len(dims) != n or any(d is None or d < 0 for d in dims):
        raise ValueError(f"{label} must be {n} known non-negative sizes, got {value!r}")
    return dims


def single_image_random_dot_stereograms(depth_values: Any, hidden_surface_removal: Optional[bool] = None,
                                        convergence_dots_size: Optional[int] = None,
                                        dots_per_inch: Optional[int] = None, eye_separation: Optional[float] = None,
                                        mu: Optional[float] = None, normalize: Optional[bool] = None,
                                        normalize_max: Optional[float] = None, normalize_min: Optional[float] = None,
                                        border_level: Optional[float] = None, number_colors: Optional[int] = None,
                                        output_image_shape: Any = None, output_data_window: Any = None,
                                        name: Optional[str] = None) -> _g.Tensor:
    """A uint8 random-dot stereogram [Y, X, channels] encoding the 2-D depth_values (0 far, 1
    near after normalisation) in the centred output_data_window [X, Y] of output_image_shape
    [X, Y, channels] (channels 3 when number_colors > 256), with two convergence dots drawn
    below.  None takes TF's default for each argument (see the op's attributes)."""
    given = {"hidden_surface_removal": hidden_surface_removal, "convergence_dots_size": convergence_dots_size,
             "dots_per_inch": dots_per_inch, "eye_separation": eye_separation, "mu": mu, "normalize": normalize,
             "normalize_max": normalize_max, "normalize_min": normalize_min, "border_level": border_level,
             "number_colors": number_colors, "output_image_shape": output_image_shape,
             "output_data_window": output_data_window}
    attrs = {k: _DEFAULTS[k] if v is None else v for k, v in given.items()}
    for k in ("hidden_surface_removal", "normalize"):
        attrs[k] = bool(attrs[k])
    for k in ("convergence_dots_size", "dots_per_inch", "number_colors"):
        attrs[k] = int(attrs[k])
    for k in ("eye_separation", "mu", "normalize_max", "normalize_min", "border_level"):
        attrs[k] = float(attrs[k])
    attrs["output_image_shape"] = _dims(attrs["output_image_shape"], 3, "output_image_shape")
    attrs["output_data_window"] = _dims(attrs["output_data_window"], 2, "output_data_window")
    depth = _g.convert_to_tensor(depth_values, name="depth_values")
    if depth.dtype not in _DEPTH_DTYPES:
        raise TypeError(f"depth_values must be one of {', '.join(d.name for d in _DEPTH_DTYPES)}, "
                        f"got {depth.dtype.name}")
    if depth.shape.rank not in (None, 2):
        raise ValueError(f"depth_values must be a 2-D tensor, got shape {depth.shape}")
    return single("SingleImageRandomDotStereograms", [depth], attrs, name=name or "SingleImageRandomDotStereograms")
