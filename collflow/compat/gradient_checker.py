"""TF1's `tf.test.compute_gradient` / `compute_gradient_error`: a tensor's Jacobian by
backpropagation (one one-hot `grad_ys` per element of y) next to its central-difference
estimate, both run in the default session, with TF1's argument order and result layout
(x_size rows, y_size columns, a complex element's real and imaginary parts interleaved as
two; a list of (theoretical, numerical) pairs for a list of x).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from collflow.graph import graph as _g
from collflow.graph.gradients import gradients as _gradients
from collflow.graph.indexed_slices import IndexedSlicesValue
from collflow.graph.ops import constant_op as _constant_op
from collflow.runtime.session import get_default_session

__all__ = ["compute_gradient", "compute_gradient_error"]

Pair = Tuple[np.ndarray, np.ndarray]


def _size(shape: Sequence[int]) -> int:
    return int(np.prod([int(d) for d in shape], dtype=np.int64))


def _session() -> Any:
    sess = get_default_session()
    if sess is None:
        raise ValueError("compute_gradient needs a default session: call it inside `with sess.as_default():` "
                         "or a tf.test.TestCase's `with self.cached_session():`")
    return sess


def _real_dtype(t: _g.Tensor) -> Any:
    return t.dtype.real_dtype.as_numpy_dtype


def _count(t: _g.Tensor, shape: Sequence[int]) -> int:
    """Real numbers in t: a complex element counts twice (its real and imaginary parts, interleaved)."""
    return _size(shape) * (2 if t.dtype.is_complex else 1)


def _dense(v: Any) -> np.ndarray:
    if isinstance(v, IndexedSlicesValue):
        out = np.zeros(tuple(int(d) for d in v.dense_shape), np.asarray(v.values).dtype)
        np.add.at(out, np.asarray(v.indices), np.asarray(v.values))
        return out
    return np.asarray(v)


def _theoretical(x: _g.Tensor, x_shape: Sequence[int], x_data: np.ndarray, y: _g.Tensor,
                 y_shape: Sequence[int], dx: Any, dy: _g.Tensor, feeds: Dict[Any, Any]) -> np.ndarray:
    x_size, y_size = _count(x, x_shape), _count(y, y_shape)
    jac = np.zeros((x_size, y_size), _real_dtype(x))
    if dx is None or x_size == 0 or y_size == 0:  # y does not depend on x: a zero Jacobian
        return jac
    sess = _session()
    dy_data = np.zeros([int(d) for d in y_shape], y.dtype.as_numpy_dtype)
    dy_flat = dy_data.reshape(-1).view(_real_dtype(y))  # a complex dy's parts, interleaved
    for col in range(y_size):
        dy_flat[col] = 1
        got = _dense(sess.run(dx, {**feeds, x: x_data, dy: dy_data}))
        jac[:, col] = np.ascontiguousarray(got, x.dtype.as_numpy_dtype).reshape(-1).view(jac.dtype)
        dy_flat[col] = 0
    return jac


def _numeric(x: _g.Tensor, x_shape: Sequence[int], x_data: np.ndarray, y: _g.Tensor,
             y_shape: Sequence[int], delta: float, feeds: Dict[Any, Any]) -> np.ndarray:
    x_size, y_size = _count(x, x_shape), _count(y, y_shape)
    x_dt, y_dt = _real_dtype(x), _real_dtype(y)
    jac = np.zeros((x_size, y_size), x_dt)
    scale = np.asarray(2 * delta, y_dt)[()]
    sess = _session()
    for row in range(x_size):
        # perturbed in x's own dtype, as TF (float32 inputs see float32 rounding of delta)
        x_pos, x_neg = x_data.copy(), x_data.copy()
        x_pos.reshape(-1).view(x_dt)[row] += delta
        x_neg.reshape(-1).view(x_dt)[row] -= delta
        y_pos = np.asarray(sess.run(y, {**feeds, x: x_pos}))
        y_neg = np.asarray(sess.run(y, {**feeds, x: x_neg}))
        jac[row, :] = np.ascontiguousarray((y_pos - y_neg) / scale).reshape(-1).view(y_dt)
    return jac


def _dx_dy(x: _g.Tensor, y: _g.Tensor, y_shape: Sequence[int]) -> Tuple[Any, _g.Tensor]:
    """d(y)/d(x) for a fed `grad_ys`: an Identity of a constant, so that it can be fed even where
    the gradient passes it straight through (Add's dx is dy)."""
    with x.graph.as_default():
        dy_orig = _constant_op.constant(1.0, shape=[int(d) for d in y_shape], dtype=y.dtype)
        dy = _constant_op.identity(dy_orig)
        grad = _gradients(y, x, dy)[0]
    return grad, dy_orig


def _init_value(x: _g.Tensor, x_shape: Sequence[int], x_init_value: Any) -> np.ndarray:
    dt = x.dtype.as_numpy_dtype
    if x_init_value is None:
        data = np.random.random_sample([int(d) for d in x_shape]).astype(dt)
        if x.dtype.is_complex:
            data.imag = np.random.random_sample([int(d) for d in x_shape])
        return data
    data = np.asarray(x_init_value, dt)
    if tuple(data.shape) != tuple(int(d) for d in x_shape):
        raise ValueError(f"x_init_value has shape {data.shape}, x_shape is {tuple(x_shape)}")
    return data.copy()


def _one(x: _g.Tensor, x_shape: Sequence[int], y: _g.Tensor, y_shape: Sequence[int], x_init_value: Any,
         delta: float, feeds: Dict[Any, Any]) -> Pair:
    dx, dy = _dx_dy(x, y, y_shape)
    x_data = _init_value(x, x_shape, x_init_value)
    return (_theoretical(x, x_shape, x_data, y, y_shape, dx, dy, feeds),
            _numeric(x, x_shape, x_data, y, y_shape, delta, feeds))


def compute_gradient(x: Any, x_shape: Any, y: Any, y_shape: Sequence[int], x_init_value: Any = None,
                     delta: float = 1e-3, init_targets: Any = None,
                     extra_feed_dict: Optional[Dict[Any, Any]] = None) -> Union[Pair, List[Pair]]:
    """(theoretical, numerical) Jacobians of y w.r.t. x, each [x_size, y_size]; for a list of
    x, one pair per x (the other x held at their init values).  Runs in the default session."""
    feeds = dict(extra_feed_dict or {})
    if init_targets is not None:
        _session().run(init_targets)
    if not isinstance(x, list):
        return _one(x, x_shape, y, y_shape, x_init_value, delta, feeds)
    if x_init_value is None:
        x_init_value = [None] * len(x)
    datas = [_init_value(xi, si, vi) for xi, si, vi in zip(x, x_shape, x_init_value)]
    out: List[Pair] = []
    for i, (xi, si, di) in enumerate(zip(x, x_shape, datas)):
        others = {xj: dj for j, (xj, dj) in enumerate(zip(x, datas)) if j != i}
        out.append(_one(xi, si, y, y_shape, di, delta, {**feeds, **others}))
    return out


def compute_gradient_error(x: Any, x_shape: Any, y: Any, y_shape: Sequence[int], x_init_value: Any = None,
                           delta: float = 1e-3, init_targets: Any = None,
                           extra_feed_dict: Optional[Dict[Any, Any]] = None) -> float:
    """The largest |theoretical - numerical| over every Jacobian compute_gradient gives."""
    grad = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets, extra_feed_dict)
    pairs = [grad] if isinstance(grad, tuple) else grad
    err = 0
    for jt, jn in pairs:
        if jt.size or jn.size:
            err = np.maximum(err, np.fabs(jt - jn).max())
    return err
