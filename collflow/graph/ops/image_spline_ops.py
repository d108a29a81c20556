"""Polyharmonic spline interpolation and the sparse image warp built on it (TF 1.x's
tf.contrib.image.interpolate_spline and sparse_image_warp), composed from matmul, a linear
solve and elementwise ops, so both are differentiable w.r.t. every input but the order.

The interpolant is f(x) = sum_i w_i phi(|x - c_i|^2) + v^T [x, 1]: phi is r^(order/2)
(times log(r) / 2 for even orders) of the squared distance r, clamped below by 1e-10 so the
gradient at r = 0 is finite.  w and v solve [[A + lambda I, B], [B^T, 0]] [w; v] = [f; 0]
with A = phi(pairwise squared distances) and B = [c, 1].
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from .. import graph as _g
from . import array_ops as _a
from . import math_ops as _m
from .image_warp_ops import dense_image_warp
from .linalg_ops import matrix_solve
from .matrix_ops import eye, matrix_diag_part

__all__ = ["interpolate_spline", "sparse_image_warp"]

EPSILON = 1e-10


def _cross_squared_distance_matrix(x: _g.Tensor, y: _g.Tensor) -> _g.Tensor:
    """[b, n, m] squared distances between the rows of x [b, n, d] and y [b, m, d]."""
    x_norm = _a.expand_dims(_m.reduce_sum(_m.square(x), 2), 2)
    y_norm = _a.expand_dims(_m.reduce_sum(_m.square(y), 2), 1)
    return x_norm - 2 * _m.matmul(x, y, transpose_b=True) + y_norm


def _pairwise_squared_distance_matrix(x: _g.Tensor) -> _g.Tensor:
    """[b, n, n] squared distances among the rows of x [b, n, d]."""
    gram = _m.matmul(x, x, transpose_b=True)
    norm = _a.expand_dims(matrix_diag_part(gram), 2)
    return norm - 2 * gram + _a.transpose(norm, [0, 2, 1])


def _phi(r: _g.Tensor, order: Any) -> _g.Tensor:
    """The radial basis function of the squared distance r for the interpolation order."""
    g = _g.get_default_graph()
    with g.name_scope("phi"):
        eps = _g.convert_to_tensor(EPSILON, dtype=r.dtype)
        if order == 1:
            return _m.sqrt(_m.maximum(r, eps))
        if order == 2:
            return 0.5 * r * _m.log(_m.maximum(r, eps))
        if order == 4:
            return 0.5 * _m.square(r) * _m.log(_m.maximum(r, eps))
        r = _m.maximum(r, eps)
        if order % 2 == 0:
            return 0.5 * _m.pow(r, 0.5 * order) * _m.log(r)
        return _m.pow(r, 0.5 * order)


def _solve_interpolation(train_points: _g.Tensor, train_values: _g.Tensor, order: Any,
                         regularization_weight: float) -> Tuple[_g.Tensor, _g.Tensor]:
    """The spline's weights w [b, n, k] on the centres and v [b, d + 1, k] on [x, 1]."""
    g = _g.get_default_graph()
    shape = _a.shape(train_points)
    b, n = shape[0], shape[1]
    d = train_points.shape.dims[-1] if train_points.shape.rank is not None else None
    if d is None:
        raise ValueError("The dimensionality of the input points (d) must be statically-inferrable.")
    k = train_values.shape.dims[-1] if train_values.shape.rank is not None else None
    if k is None:
        raise ValueError("The dimensionality of the output values (k) must be statically-inferrable.")
    c, f = train_points, train_values
    dtype = c.dtype
    with g.name_scope("construct_linear_system"):
        matrix_a = _phi(_pairwise_squared_distance_matrix(c), order)  # [b, n, n]
        if regularization_weight > 0:
            matrix_a += regularization_weight * _a.expand_dims(eye(n, dtype=dtype), 0)
        matrix_b = _a.concat([c, _a.ones_like(c[..., :1])], 2)  # [b, n, d + 1]
        left = _a.concat([matrix_a, _a.transpose(matrix_b, [0, 2, 1])], 1)  # [b, n + d + 1, n]
        right = _a.concat([matrix_b, _a.zeros(_a.stack([b, d + 1, d + 1]), dtype)], 1)
        lhs = _a.concat([left, right], 2)  # [b, n + d + 1, n + d + 1]
        rhs = _a.concat([f, _a.zeros(_a.stack([b, d + 1, k]), dtype)], 1)  # [b, n + d + 1, k]
    with g.name_scope("solve_linear_system"):
        w_v = matrix_solve(lhs, rhs)
        return w_v[:, :n, :], w_v[:, n:, :]


def _apply_interpolation(query_points: _g.Tensor, train_points: _g.Tensor, w: _g.Tensor, v: _g.Tensor,
                         order: Any) -> _g.Tensor:
    """The spline with weights w, v evaluated at query_points [b, m, d]: [b, m, k]."""
    rbf = _m.matmul(_phi(_cross_squared_distance_matrix(query_points, train_points), order), w)
    padded = _a.concat([query_points, _a.ones_like(query_points[..., :1])], 2)
    return rbf + _m.matmul(padded, v)


def interpolate_spline(train_points: Any, train_values: Any, query_points: Any, order: Any,
                       regularization_weight: float = 0.0, name: str = "interpolate_spline") -> _g.Tensor:
    """Values [batch, m, k] at query_points [batch, m, d] of the polyharmonic spline through
    train_values [batch, n, k] at train_points [batch, n, d]: order 1 is phi = r, 2 the
    thin-plate spline r^2 log r, 3 r^3, ...; regularization_weight > 0 trades the exact fit for
    smoothness.  batch, n and m may be dynamic; d and k must be known statically."""
    g = _g.get_default_graph()
    with g.name_scope(name):
        train_points = _g.convert_to_tensor(train_points)
        train_values = _g.convert_to_tensor(train_values)
        query_points = _g.convert_to_tensor(query_points)
        for label, t in (("train_points", train_points), ("train_values", train_values),
                         ("query_points", query_points)):
            if t.shape.rank not in (None, 3):
                raise ValueError(f"{label} must be 3 dimensional [batch_size, n, d], got shape {t.shape}")
        with g.name_scope("solve"):
            w, v = _solve_interpolation(train_points, train_values, order, regularization_weight)
        with g.name_scope("predict"):
            return _apply_interpolation(query_points, train_points, w, v, order)


def _grid_locations(height: int, width: int) -> np.ndarray:
    """[height, width, 2] (row, column) of every pixel."""
    ys, xs = np.meshgrid(np.linspace(0, height - 1, height), np.linspace(0, width - 1, width), indexing="ij")
    return np.stack((ys, xs), -1)


def _boundary_locations(height: int, width: int, points_per_edge: int) -> np.ndarray:
    """[p, 2] points spaced evenly along the image's edges, the corners included."""
    ys, xs = np.meshgrid(np.linspace(0, height - 1, points_per_edge + 2),
                         np.linspace(0, width - 1, points_per_edge + 2), indexing="ij")
    edge = (xs == 0) | (xs == width - 1) | (ys == 0) | (ys == height - 1)
    return np.stack([ys[edge], xs[edge]], axis=-1)


def _batched(array: np.ndarray, batch_size: int) -> np.ndarray:
    return np.tile(array[None], [batch_size] + [1] * array.ndim)


def sparse_image_warp(image: Any, source_control_point_locations: Any, dest_control_point_locations: Any,
                      interpolation_order: int = 2, regularization_weight: float = 0.0, num_boundary_points: int = 0,
                      name: str = "sparse_image_warp") -> Tuple[_g.Tensor, _g.Tensor]:
    """(warped image, dense flow [batch, height, width, 2]): image [batch, height, width,
    channels] warped so that each source control point [batch, k, 2] (row, column) moves to
    its destination, the flow between them interpolated by a polyharmonic spline
    (interpolate_spline) and applied by dense_image_warp.  num_boundary_points n > 0 pins the
    flow to zero at the corners and n - 1 points along each edge.  The image's shape must be
    known statically."""
    image = _g.convert_to_tensor(image)
    source = _g.convert_to_tensor(source_control_point_locations)
    dest = _g.convert_to_tensor(dest_control_point_locations)
    flows = dest - source
    g = image.graph
    with g.as_default(), g.name_scope(name):
        if image.shape.rank != 4 or not image.shape.is_fully_defined():
            raise ValueError("sparse_image_warp needs image of a static shape [batch, height, width, channels], "
                             f"got {image.shape}")
        batch_size, height, width, _ = image.shape.as_list()
        grid = np.reshape(_grid_locations(height, width), [height * width, 2])
        grid = _g.convert_to_tensor(_batched(grid, batch_size).astype(image.dtype.np), dtype=image.dtype)
        if num_boundary_points > 0:
            boundary = _boundary_locations(height, width, num_boundary_points - 1)
            dtype = dest.dtype
            dest = _a.concat([dest, _g.convert_to_tensor(_batched(boundary, batch_size).astype(dtype.np))], 1)
            flows = _a.concat([flows, _g.convert_to_tensor(np.zeros((batch_size,) + boundary.shape, dtype.np))], 1)
        dense = interpolate_spline(dest, flows, grid, interpolation_order, regularization_weight)
        dense = _a.reshape(dense, [batch_size, height, width, 2])
        return dense_image_warp(image, dense), dense
