"""tf.contrib.image's labelling ops: connected_components (ImageConnectedComponents) and
the greedy bipartite_match (BipartiteMatch), both host-only and not differentiable; their
kernels are in kernels/image_label_kernels.py."""
from __future__ import annotations

from typing import Any, Tuple

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .op_util import make_op, single

__all__ = ["connected_components", "bipartite_match"]

_COMPONENT_DTYPES = (_dt.int64, _dt.int32, _dt.uint16, _dt.int16, _dt.uint8, _dt.int8, _dt.float16, _dt.float32,
                     _dt.float64, _dt.bool_, _dt.string)


def _check_dtype(image: _g.Tensor) -> None:
    if image.dtype not in _COMPONENT_DTYPES:
        raise TypeError(f"ImageConnectedComponents does not take {image.dtype.name} images; allowed: "
                        f"{', '.join(d.name for d in _COMPONENT_DTYPES)}")


def _components_spec(op: _g.Operation) -> list:
    image = op.inputs[0]
    _check_dtype(image)
    if image.shape.rank not in (None, 3):
        raise ValueError(f"ImageConnectedComponents takes images of shape (N, H, W), got {image.shape}")
    return [(_dt.int64, image.shape)]


def _match_spec(op: _g.Operation) -> list:
    dist, valid = op.inputs
    if dist.dtype != _dt.float32 or valid.dtype != _dt.float32:
        raise TypeError(f"BipartiteMatch takes float32 inputs, got {dist.dtype.name} and {valid.dtype.name}")
    if dist.shape.rank not in (None, 2):
        raise ValueError(f"Shape must be rank 2 but is rank {dist.shape.rank} for 'BipartiteMatch' "
                         f"(distance_mat: {dist.shape})")
    rows, cols = (dist.shape.dims if dist.shape.rank == 2 else (None, None))
    return [(_dt.int32, TensorShape([rows])), (_dt.int32, TensorShape([cols]))]


register_op("ImageConnectedComponents", _components_spec, host_only=True)
register_op("BipartiteMatch", _match_spec, stateful=True, host_only=True)  # stateful as TF registers it
not_differentiable("ImageConnectedComponents", "BipartiteMatch")


def connected_components(images: Any) -> _g.Tensor:
    """int64 labels of the connected components of images (H, W) or (N, H, W): pixels joined
    to the neighbours above, below, left and right with the same non-zero value share a label;
    labels run 1, 2, ... across the batch in the row-major order of each component's first
    pixel; zero pixels (False, '' for strings) are 0.  As scipy.ndimage.label per image."""
    g = _g.get_default_graph()
    with g.name_scope("connected_components"):
        x = _g.convert_to_tensor(images, name="images")
        _check_dtype(x)
        rank = x.shape.rank
        if rank == 2:
            x3 = x[None, :, :]
        elif rank == 3:
            x3 = x
        else:
            raise TypeError(f"images should have rank 2 (HW) or 3 (NHW). Static shape is {x.shape}")
        components = single("ImageConnectedComponents", [x3], name="ImageConnectedComponents")
        return components[0, :, :] if rank == 2 else components


def bipartite_match(distance_mat: Any, num_valid_rows: Any, top_k: int = -1,
                    name: str = "bipartite_match") -> Tuple[_g.Tensor, _g.Tensor]:
    """Greedy bipartite matching of the rows and columns of distance_mat [rows, columns]
    (smallest distance first): (row_to_col_match_indices [rows], col_to_row_match_indices
    [columns]), -1 for unmatched.  Only the first num_valid_rows rows take part (all when it is
    negative); top_k > 0 stops after that many matches."""
    for label, value in (("distance_mat", distance_mat), ("num_valid_rows", num_valid_rows)):
        if isinstance(value, _g.Tensor) and value.dtype != _dt.float32:
            raise TypeError(f"Input '{label}' of 'BipartiteMatch' Op has type {value.dtype.name} that does not match "
                            "expected type of float32.")
    dist = _g.convert_to_tensor(distance_mat, dtype=_dt.float32, name="distance_mat")
    valid = _g.convert_to_tensor(num_valid_rows, dtype=_dt.float32, name="num_valid_rows")
    op = make_op("BipartiteMatch", [dist, valid], {"top_k": int(top_k)}, name=name)
    return op.outputs[0], op.outputs[1]
