"""Dense image warping (TF 1.x's tf.contrib.image.dense_image_warp and the bilinear
interpolation it is built on), composed from gather and arithmetic so that the gradient
reaches both the image and the flow / query points, as TF's.

A query point is clamped to the image: its floor to [0, size - 2] and its fraction to
[0, 1], so points outside read the nearest border pixels and the gradient w.r.t. the point
is 0 there.  The max/min gradients choose as TF's (ties go to the first argument), so an
exact integer point has zero gradient along that axis, as in TF.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from . import array_ops as _a
from . import math_ops as _m
from .check_more_ops import assert_greater_equal
from .check_ops import assert_equal, assert_less_equal
from .math_extra_ops import floor
from .misc_ops import range as _range
from .slicing_ops import gather

__all__ = ["interpolate_bilinear", "dense_image_warp"]


def _dims(x: _g.Tensor, n: int) -> list:
    """The first n dimensions of x: static ints where known, else scalar tensors."""
    dyn = _a.shape(x)
    return [x.shape.dims[i] if x.shape.dims[i] is not None else dyn[i] for i in range(n)]


def interpolate_bilinear(grid: Any, query_points: Any, name: str = "interpolate_bilinear",
                         indexing: str = "ij") -> _g.Tensor:
    """Values [batch, N, channels] of grid [batch, height, width, channels] at query_points
    [batch, N, 2] by bilinear interpolation (Matlab's interp2): points are (row, column) for
    indexing 'ij', (x, y) for 'xy'; points outside read the border (TF's _interpolate_bilinear)."""
    if indexing != "ij" and indexing != "xy":
        raise ValueError("Indexing mode must be 'ij' or 'xy'")
    g = _g.get_default_graph()
    with g.name_scope(name):
        grid = _g.convert_to_tensor(grid)
        query_points = _g.convert_to_tensor(query_points)
        if grid.shape.rank != 4:
            raise ValueError(f"Grid must be 4 dimensional. Received size: {grid.shape}")
        if not grid.dtype.is_floating or not query_points.dtype.is_floating:
            raise TypeError(f"grid and query_points must be float tensors, got {grid.dtype.name} and "
                            f"{query_points.dtype.name}")
        batch_size, height, width, channels = _dims(grid, 4)
        query_type, grid_type = query_points.dtype, grid.dtype
        if query_points.shape.rank is None:
            raise ValueError("Query points must be 3 dimensional: their rank must be known statically")
        last = query_points.shape.dims[-1] if query_points.shape.rank else None
        if query_points.shape.rank == 3 and last is not None and last != 2:
            raise InvalidArgumentError(f"Query points must be size 2 in dim 2. Received shape: {query_points.shape}")
        with g.control_dependencies([
                assert_equal(len(query_points.shape), 3, message="Query points must be 3 dimensional."),
                assert_equal(_a.shape(query_points)[2], 2, message="Query points must be size 2 in dim 2.")]):
            num_queries = _a.shape(query_points)[1]
        with g.control_dependencies([
                assert_greater_equal(height, 2, message="Grid height must be at least 2."),
                assert_greater_equal(width, 2, message="Grid width must be at least 2.")]):
            unstacked = _a.unstack(query_points, num=2, axis=2)
        floors, ceils, alphas = [], [], []
        # rows first: the row is point[0] for 'ij', point[1] for 'xy'.  The row is clamped to
        # the height, the column to the width (TF 1.15 clamps by shape[dim + 1], mixing them up
        # for 'xy' on non-square grids; TF Addons fixed it so, as here)
        for dim, size in zip([0, 1] if indexing == "ij" else [1, 0], [height, width]):
            with g.name_scope(f"dim-{dim}"):
                queries = unstacked[dim]
                max_floor = _m.cast(size - 2, query_type)
                fl = _m.minimum(_m.maximum(_g.convert_to_tensor(0.0, dtype=query_type), floor(queries)), max_floor)
                int_floor = _m.cast(fl, _dt.int32)
                floors.append(int_floor)
                ceils.append(int_floor + 1)
                # the fraction in the grid's dtype: it weighs the grid's values
                alpha = _m.cast(queries - fl, grid_type)
                alpha = _m.minimum(_m.maximum(_g.convert_to_tensor(0.0, dtype=grid_type), alpha),
                                   _g.convert_to_tensor(1.0, dtype=grid_type))
                alphas.append(_a.expand_dims(alpha, 2))
        with g.control_dependencies([assert_less_equal(
                _m.cast(batch_size * height * width, _dt.float32), float(np.iinfo(np.int32).max / 8),
                message="The image size or batch size is sufficiently large that the linearized addresses "
                        "used by array_ops.gather may exceed the int32 limit.")]):
            flat_grid = _a.reshape(grid, _a.stack([batch_size * height * width, channels]))
            batch_offsets = _a.reshape(_range(batch_size) * height * width, _a.stack([batch_size, 1]))

        def corner(y: _g.Tensor, x: _g.Tensor, label: str) -> _g.Tensor:
            with g.name_scope("gather-" + label):
                values = gather(flat_grid, batch_offsets + y * width + x)
                return _a.reshape(values, _a.stack([batch_size, num_queries, channels]))

        top_left = corner(floors[0], floors[1], "top_left")
        top_right = corner(floors[0], ceils[1], "top_right")
        bottom_left = corner(ceils[0], floors[1], "bottom_left")
        bottom_right = corner(ceils[0], ceils[1], "bottom_right")
        with g.name_scope("interpolate"):
            top = alphas[1] * (top_right - top_left) + top_left
            bottom = alphas[1] * (bottom_right - bottom_left) + bottom_left
            return alphas[0] * (bottom - top) + top


def dense_image_warp(image: Any, flow: Any, name: str = "dense_image_warp") -> _g.Tensor:
    """image [batch, height, width, channels] warped by flow [batch, height, width, 2]:
    output[b, j, i] = image[b, j - flow[b, j, i, 0], i - flow[b, j, i, 1]], read bilinearly,
    points outside reading the nearest border pixels.  image and flow may be float16, float32
    or float64, not necessarily the same; the output has the image's dtype."""
    g = _g.get_default_graph()
    with g.name_scope(name):
        image = _g.convert_to_tensor(image)
        flow = _g.convert_to_tensor(flow)
        if image.shape.rank != 4:
            raise ValueError(f"Grid must be 4 dimensional. Received size: {image.shape}")
        if flow.shape.rank not in (None, 4) or (flow.shape.rank == 4 and flow.shape.dims[3] not in (None, 2)):
            raise ValueError(f"flow must have shape [batch, height, width, 2], got shape {flow.shape}")
        if not flow.dtype.is_floating:
            raise TypeError(f"flow must be a float tensor, got {flow.dtype.name}")
        batch_size, height, width, channels = _dims(image, 4)
        grid_y = _a.tile(_a.expand_dims(_range(height), 1), _a.stack([1, width]))
        grid_x = _a.tile(_a.expand_dims(_range(width), 0), _a.stack([height, 1]))
        grid = _a.expand_dims(_m.cast(_a.stack([grid_y, grid_x], axis=2), flow.dtype), 0)
        queries = _a.reshape(grid - flow, _a.stack([batch_size, height * width, 2]))
        out = interpolate_bilinear(image, queries)
        return _a.reshape(out, _a.stack([batch_size, height, width, channels]))
