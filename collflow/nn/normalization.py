"""Batch normalization as a layer (TensorFlow 1.x's tf.layers.batch_normalization).

    h = cf.layers.batch_normalization(h, training=is_training)    # a bool or a bool tensor
    update_ops = cf.get_collection(cf.GraphKeys.UPDATE_OPS)
    with cf.control_dependencies(update_ops):
        train_op = optimizer.minimize(loss)

Variables, in the layer's variable scope (batch_normalization, batch_normalization_1, ...
or `name`), made with cf.get_variable in TensorFlow's order: gamma (if scale), beta (if
center), and the non-trainable moving_mean and moving_variance.  Training normalizes with
the batch's mean and (biased) variance over every axis but `axis`, and adds to UPDATE_OPS
the two moving-average updates  moving -= (moving - batch) * (1 - momentum).  Inference
normalizes with the moving statistics and updates nothing.  With a bool tensor `training`
both are built and the tensor chooses at run time (an update under False keeps the value).

As TensorFlow's fused path (fused=None or True, a 4-D input, axis 1 or 3), the moving
variance is updated with the batch variance times n / (n - 1) (Bessel's correction; n the
number of values per channel) and epsilon is at least 1.001e-5; otherwise (fused=False, or
another rank) with the biased variance.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, UnimplementedError
from ..graph import graph as _g
from ..graph import initializers as _init
from ..graph.graph import GraphKeys
from ..graph.variables import Variable
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import nn_ops as _n
from ..graph.ops import state_ops as _s
from ..graph.ops.constant_op import constant, stop_gradient
from ..graph.ops.nn_impl import batch_normalization as _batch_norm_formula
from ..graph.variable_scope import constraint_defaults, get_variable, layer_variable_scope

__all__ = ["batch_normalization"]

_FUSED_MIN_EPSILON = 1.001e-5  # cuDNN's lower bound, which TensorFlow's fused path applies


def _axes(axis: Any, rank: int) -> List[int]:
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -rank <= a < rank:
            raise InvalidArgumentError(f"batch_normalization: axis {a} is out of range for an input of rank {rank}")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise InvalidArgumentError(f"batch_normalization: duplicate axis in {axis}")
    return sorted(out)


def _training(training: Any) -> Any:
    """A Python bool, or a bool scalar tensor (a constant one read now, as TensorFlow's smart_cond)."""
    if isinstance(training, (bool, np.bool_)):
        return bool(training)
    t = _g.convert_to_tensor(training)
    if t.dtype != _dt.bool_ or t.shape.rank not in (None, 0):
        raise InvalidArgumentError(f"batch_normalization: training must be a Python bool or a scalar bool tensor, "
                                   f"got {t.dtype.name} of shape {t.shape}")
    if t.op.type == "Const":
        return bool(np.asarray(t.op.attrs["value"]))
    return t


def _unsupported(**kw: Any) -> None:
    for k, v in kw.items():
        if v:
            raise UnimplementedError(f"batch_normalization: {k} is not supported")


def batch_normalization(inputs: Any, axis: Any = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                        center: bool = True, scale: bool = True, beta_initializer: Any = None,
                        gamma_initializer: Any = None, moving_mean_initializer: Any = None,
                        moving_variance_initializer: Any = None, beta_regularizer: Optional[Callable] = None,
                        gamma_regularizer: Optional[Callable] = None, beta_constraint: Any = None,
                        gamma_constraint: Any = None, training: Any = False, trainable: bool = True,
                        name: Optional[str] = None, reuse: Any = None, renorm: bool = False,
                        renorm_clipping: Any = None, renorm_momentum: float = 0.99, fused: Optional[bool] = None,
                        virtual_batch_size: Optional[int] = None, adjustment: Any = None) -> _g.Tensor:
    """Batch-normalizes `inputs` over every axis but `axis` (the channels; -1 by default).

    training: a Python bool or a bool scalar tensor: batch statistics plus moving-average
    updates in UPDATE_OPS when true, the moving statistics when false.  momentum: the
    moving averages' decay; epsilon: added to the variance.  center/scale: learn beta/gamma.
    Regularizers' losses go to REGULARIZATION_LOSSES.  renorm: batch renormalization (see
    _renorm).  virtual_batch_size: ghost batch norm as TF's (see _ghost_batches; the
    parameters then have the reshaped input's rank, [1, 1, ..., channels], and the kernel is
    never the fused one).  adjustment: fn(shape of the input) -> (adj_scale, adj_bias), applied
    to the normalized values in training (see _adjusted; never fused).
    """
    y, _, _ = batch_norm_layer(inputs, axis, momentum, epsilon, center, scale, beta_initializer, gamma_initializer,
                            moving_mean_initializer, moving_variance_initializer, beta_regularizer,
                            gamma_regularizer, training, trainable, name, reuse, fused,
                            renorm=renorm, renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum,
                            virtual_batch_size=virtual_batch_size, adjustment=adjustment,
                            beta_constraint=beta_constraint, gamma_constraint=gamma_constraint)
    return y


def batch_norm_layer(inputs: Any, axis: Any, momentum: float, epsilon: float, center: bool, scale: bool,
                     beta_initializer: Any, gamma_initializer: Any, moving_mean_initializer: Any,
                     moving_variance_initializer: Any, beta_regularizer: Optional[Callable],
                     gamma_regularizer: Optional[Callable], training: Any, trainable: bool, name: Optional[str],
                     reuse: Any, fused: Optional[bool], default_name: str = "batch_normalization",
                     updates_collections: Any = GraphKeys.UPDATE_OPS, fuse_rank2: bool = False,
                     renorm: bool = False, renorm_clipping: Any = None, renorm_momentum: float = 0.99,
                     **unsupported: Any) -> Any:
    """batch_normalization's body: (output, the moving-average update ops, the variables).  The updates go to
    `updates_collections` (a name or a list of them; None: into no collection, the caller
    runs them); `default_name` names the variable scope when `name` is None
    (tf.contrib.layers.batch_norm's "BatchNorm"); fuse_rank2 (contrib's rule) also runs a rank-2
    input through the fused kernel (fused not False), with its epsilon floor and its unbiased
    variance in the moving average."""
    cons = {k: unsupported.pop(k + "_constraint", None) for k in ("beta", "gamma")}
    cons = {k: c for k, c in cons.items() if c is not None}
    vbs = unsupported.pop("virtual_batch_size", None)
    adjustment = unsupported.pop("adjustment", None)
    _unsupported(**unsupported)
    if adjustment is not None and vbs is not None:
        raise ValueError("When using virtual_batch_size, adjustment cannot be specified")
    if cons:
        # beta_constraint/gamma_constraint: the variables carry them (optimizers apply them)
        with constraint_defaults(cons):
            return batch_norm_layer(inputs, axis, momentum, epsilon, center, scale, beta_initializer,
                                    gamma_initializer, moving_mean_initializer, moving_variance_initializer,
                                    beta_regularizer, gamma_regularizer, training, trainable, name, reuse, fused,
                                    default_name, updates_collections, fuse_rank2, renorm, renorm_clipping,
                                    renorm_momentum, virtual_batch_size=vbs, adjustment=adjustment,
                                    **unsupported)
    x = _g.convert_to_tensor(inputs)
    if not x.dtype.is_floating:
        raise InvalidArgumentError(f"batch_normalization needs a floating-point input, got {x.dtype.name}")
    rank = x.shape.rank
    if rank is None or rank == 0:
        raise InvalidArgumentError(f"batch_normalization needs an input of known rank >= 1, got shape {x.shape}")
    axes = _axes(axis, rank)
    undo = None
    if vbs is not None:
        x, axes, undo = _ghost_batches(x, axes, vbs, renorm)
        rank += 1
    dims = [x.shape.dims[a] for a in axes]
    if any(d is None for d in dims):
        raise InvalidArgumentError(f"batch_normalization: the normalized axis {axes} of the input must have a known "
                                   f"size, got shape {x.shape}")
    param_shape = dims if len(axes) == 1 and undo is None else [x.shape.dims[i] if i in axes else 1
                                                                 for i in range(rank)]
    # ghost batches: statistics per virtual batch (axis 1 of the reshaped input) kept apart
    reduction_axes = [i for i in range(rank) if i not in axes and (undo is None or i != 1)]
    clipping = _renorm_clipping(renorm_clipping) if renorm else {}
    if renorm and fused:
        raise ValueError("Passing both `fused=True` and `renorm=True` is not supported")
    use_fused = (fused is not False and not renorm and undo is None and adjustment is None
                 and ((rank == 4 and axes in ([1], [3])) or (fuse_rank2 and rank == 2)))
    if use_fused:
        epsilon = max(float(epsilon), _FUSED_MIN_EPSILON)
    # half-precision inputs keep float32 statistics and parameters (as TensorFlow)
    pdt = _dt.float32 if x.dtype == _dt.float16 else x.dtype
    train = _training(training)
    g = x.graph
    updates: list = []
    if updates_collections is None:
        collections: list = []
    elif isinstance(updates_collections, str):
        collections = [updates_collections]
    else:
        collections = list(updates_collections)
    with g.as_default(), layer_variable_scope(name, default_name, reuse):
        def var(nm: str, init: Any, default: Any, reg: Optional[Callable], tr: bool) -> Any:
            before = {id(v) for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES)}
            with g.control_dependencies(None):  # the initializers run on their own
                v = get_variable(nm, list(param_shape), pdt, initializer=_init.get(init) or default, trainable=tr)
            add_layer_regularization(g, nm, v, reg, id(v) not in before)
            return v

        gamma = var("gamma", gamma_initializer, _init.Ones(), gamma_regularizer, trainable) if scale else None
        beta = var("beta", beta_initializer, _init.Zeros(), beta_regularizer, trainable) if center else None
        moving_mean = var("moving_mean", moving_mean_initializer, _init.Zeros(), None, False)
        moving_var = var("moving_variance", moving_variance_initializer, _init.Ones(), None, False)
        if renorm:   # TF's order: moving_stddev, renorm_mean, renorm_stddev after the moving variance
            var_init = _init.get(moving_variance_initializer) or _init.Ones()
            moving_std = var("moving_stddev", _SqrtOf(var_init), None, None, False)
            renorm_mean = var("renorm_mean", moving_mean_initializer, _init.Zeros(), None, False)
            renorm_std = var("renorm_stddev", _SqrtOf(var_init), None, None, False)
        params = [v for v in (beta, gamma, moving_mean, moving_var) if v is not None] + \
            ([moving_std, renorm_mean, renorm_std] if renorm else [])

        def bcast(t: Any) -> Any:
            if t is None:
                return None
            t = _g.convert_to_tensor(t)
            if t.dtype != x.dtype:
                t = _m.cast(t, x.dtype)
            if len(axes) == 1 and axes[0] != rank - 1 and undo is None:  # (ghost batches: already full rank)
                shape = [1] * rank
                shape[axes[0]] = param_shape[0]
                t = _a.reshape(t, shape)
            return t

        if train is False:
            mean, variance = _g.convert_to_tensor(moving_mean), _g.convert_to_tensor(moving_var)
        else:
            xs = x if x.dtype == pdt else _m.cast(x, pdt)
            batch_mean, batch_var = _n.moments(xs, reduction_axes, keepdims=len(axes) > 1 or undo is not None)
            update_mean, update_var = batch_mean, batch_var
            if undo is not None:
                # the moving averages take the virtual batches' mean statistics in one update (TF's way)
                update_mean = _m.reduce_mean(batch_mean, axis=1, keepdims=True)
                update_var = _m.reduce_mean(batch_var, axis=1, keepdims=True)
            if use_fused:
                n = _m.cast(_a.size(xs), pdt) / _m.cast(_a.size(batch_var), pdt)
                update_var = batch_var * (n / _m.maximum(n - constant(1.0, dtype=pdt), constant(1.0, dtype=pdt)))
            if train is True:
                mean, variance = batch_mean, batch_var
            else:
                # (the moving statistics broadcast to the batch's: ghost batches give one per virtual batch)
                mean = _a.where(train, batch_mean, _g.convert_to_tensor(moving_mean) + _a.zeros_like(batch_mean))
                variance = _a.where(train, batch_var, _g.convert_to_tensor(moving_var) + _a.zeros_like(batch_var))
            decay = constant(1.0 - float(momentum), dtype=pdt, name="decay")
            if adjustment is not None:
                if renorm and len(axes) == 1 and axes[0] != rank - 1:
                    raise UnimplementedError("batch_normalization: adjustment with renorm on an axis other than "
                                             "the last is not supported")
                gamma, beta = _adjusted(adjustment, x, train, bcast(gamma), bcast(beta))
            renorm_deps: list = []
            if renorm:
                gamma_r, beta_r, renorm_deps = _renorm(g, train, batch_mean, batch_var, epsilon, renorm_mean,
                                                       renorm_std, clipping, renorm_momentum, gamma, beta, pdt)
            for v, value in ((moving_mean, update_mean), (moving_var, update_var)):
                # renorm: the moving statistics after the renorm ones (TF's control dependencies), the
                # variance through a moving standard deviation
                with g.control_dependencies(renorm_deps):
                    if renorm and v is moving_var:
                        with g.name_scope("AssignMovingAvg") as upd_scope:
                            new_std = _moving_average(g, moving_std,
                                                      _m.sqrt(batch_var + constant(epsilon, dtype=pdt)), decay, train)
                            value = _n.relu(new_std * new_std - constant(epsilon, dtype=pdt))
                            if train is not True:
                                value = _a.where(train, value, _g.convert_to_tensor(v))
                            upd = _s.assign(v, value, name=upd_scope)
                    else:
                        upd = _moving_average(g, v, value, decay, train)
                    updates.append(upd)
                    for c in collections:
                        g.add_to_collection(c, upd)
            if renorm:
                gamma, beta = gamma_r, beta_r

        y = _batch_norm_formula(x, bcast(mean), bcast(variance), bcast(beta), bcast(gamma), epsilon)
        return (y if undo is None else undo(y)), updates, params


def _adjusted(adjustment: Callable, x: _g.Tensor, train: Any, gamma: Any, beta: Any) -> Tuple[Any, Any]:
    """TF's `adjustment`: (adj_scale, adj_bias) = adjustment(shape(x)) rescale and shift the
    normalized values before gamma and beta (in training only): the output's scale becomes
    adj_scale * gamma and its offset adj_bias * gamma + beta (gamma and beta already shaped to
    broadcast against x, as TF composes them; the user's values broadcast as they are)."""
    adj_scale, adj_bias = adjustment(_a.shape(x))
    adj_scale, adj_bias = _g.convert_to_tensor(adj_scale), _g.convert_to_tensor(adj_bias)
    if train is not True:
        adj_scale = _a.where(train, adj_scale, _a.ones_like(adj_scale))
        adj_bias = _a.where(train, adj_bias, _a.zeros_like(adj_bias))
    return _compose(adj_scale, adj_bias, gamma, beta)


def _ghost_batches(x: _g.Tensor, axes: List[int], vbs: Any, renorm: bool) -> Tuple[_g.Tensor, List[int], Callable]:
    """TF's ghost batch norm: x [batch, ...] reshaped to [virtual_batch_size, batch / vbs, ...]
    (so virtual batch j holds examples j, j + n, j + 2n, ... with n = batch / vbs, as TF's
    reshape makes them), the normalized axes shifted by the new one; and the reshape back."""
    if isinstance(vbs, bool) or not isinstance(vbs, (int, np.integer)) or vbs <= 0:
        raise ValueError("virtual_batch_size must be a positive integer that divides the true batch size of the "
                         "input tensor")
    if 0 in axes:
        raise ValueError("When using virtual_batch_size, the batch dimension must be 0 and thus axis cannot "
                         "include 0")
    if renorm:
        raise UnimplementedError("batch_normalization: renorm together with virtual_batch_size is not supported")
    vbs = int(vbs)
    dims = list(x.shape.dims)
    if dims[0] is not None and dims[0] % vbs:
        raise ValueError(f"virtual_batch_size {vbs} does not divide the batch size {dims[0]} of the input "
                         f"(shape {x.shape})")
    static = all(d is not None for d in dims)
    if static:
        ghost = _a.reshape(x, [vbs, dims[0] // vbs] + dims[1:])
    else:
        rest = _a.shape(x)[1:]
        ghost = _a.reshape(x, _a.concat([constant([vbs, -1], dtype=_dt.int32), rest], 0))
        ghost.set_shape([vbs, None if dims[0] is None else dims[0] // vbs] + dims[1:])

    def undo(y: _g.Tensor) -> _g.Tensor:
        if static:
            return _a.reshape(y, dims)
        out = _a.reshape(y, _a.concat([constant([-1], dtype=_dt.int32), _a.shape(x)[1:]], 0))
        out.set_shape(x.shape)
        return out
    return ghost, [a + 1 for a in axes], undo


class _SqrtOf(_init.Initializer):
    """The square root of another initializer's values (renorm's standard deviations start at
    the square root of the moving variance's start, as TF's)."""

    def __init__(self, base: Any) -> None:
        self.base = base

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> _g.Tensor:
        return _m.sqrt(_g.convert_to_tensor(self.base(shape, dtype, partition_info)))


def _renorm_clipping(clipping: Any) -> dict:
    clipping = dict(clipping or {})
    bad = set(clipping) - {"rmax", "rmin", "dmax"}
    if bad:
        raise ValueError(f"Received invalid keys for `renorm_clipping` argument: {clipping}. Supported values: "
                         f"['rmax', 'rmin', 'dmax'].")
    return clipping


def _moving_average(g: _g.Graph, v: Variable, value: Any, decay: Any, train: Any) -> _g.Tensor:
    """v -= (v - value) * decay (decay in v's dtype; nothing under a False `train` tensor); the
    updated value.  TF1 names the update by its scope: "<layer>/AssignMovingAvg:0", "..._1:0"."""
    with g.name_scope("AssignMovingAvg") as scope:
        delta = (_g.convert_to_tensor(v) - value) * decay
        if train is not True:
            delta = _a.where(train, delta, _a.zeros_like(delta))
        return _s.assign_sub(v, delta, name=scope)


def _renorm(g: _g.Graph, train: Any, mean: Any, variance: Any, epsilon: float, renorm_mean: Variable,
            renorm_std: Variable, clipping: dict, momentum: float, gamma: Any, beta: Any, dtype: Any) -> Any:
    """Batch renormalization (Ioffe 2017) as TF's BatchNormalization computes it: with the
    batch's stddev s = sqrt(var + eps) and the renorm averages (m, sigma = max(sigma, sqrt(eps))),
    r = s / sigma and d = (mean - m) / sigma, clipped to [rmin, rmax] and [-dmax, dmax], are
    constants for the gradient (1 and 0 under a False `training`), and the output's scale and
    offset become r * gamma and d * gamma + beta.  The renorm averages then move toward the
    batch's mean and s with renorm_momentum (after r and d are read).  Returns (scale, offset,
    the update ops)."""
    eps = constant(epsilon, dtype=dtype)
    std = _m.sqrt(variance + eps)
    sigma = _m.maximum(_g.convert_to_tensor(renorm_std), _m.sqrt(eps))
    r = std / sigma
    d = (mean - _g.convert_to_tensor(renorm_mean)) / sigma
    def bound(key: str) -> Any:   # a Python number exactly in the statistics' dtype, as TF converts it
        v = clipping[key]
        return _m.cast(v, dtype) if isinstance(v, _g.Tensor) else constant(v, dtype=dtype)
    if clipping.get("rmin") is not None:
        r = _m.maximum(r, bound("rmin"))
    if clipping.get("rmax") is not None:
        r = _m.minimum(r, bound("rmax"))
    if clipping.get("dmax") is not None:
        dmax = bound("dmax")
        d = _m.minimum(_m.maximum(d, -dmax), dmax)
    if train is not True:
        r, d = _a.where(train, r, _a.ones_like(r)), _a.where(train, d, _a.zeros_like(d))
    r, d = stop_gradient(r, name="renorm_r"), stop_gradient(d, name="renorm_d")
    decay = constant(1.0 - float(momentum), dtype=dtype, name="renorm_decay")
    with g.control_dependencies([r, d]):   # the averages move after r and d read them
        updates = [_moving_average(g, renorm_mean, mean, decay, train),
                   _moving_average(g, renorm_std, std, decay, train)]
    scale, offset = _compose(r, d, gamma, beta)
    return scale, offset, updates


def _compose(scale: Any, offset: Any, gamma: Any, beta: Any) -> Tuple[Any, Any]:
    """x * scale + offset, then gamma and beta, as one scale and offset (TF's
    _compose_transforms): (scale * gamma, offset * gamma + beta), either of gamma / beta None."""
    if gamma is not None:
        g = _g.convert_to_tensor(gamma)
        scale, offset = scale * g, offset * g
    if beta is not None:
        offset = offset + _g.convert_to_tensor(beta)
    return scale, offset


def add_layer_regularization(g: _g.Graph, name: str, v: Variable, regularizer: Optional[Callable],
                             created: bool) -> None:
    """A tf.layers weight's regularizer: TF1 builds it in the layer's own name scope (where its
    ops go: "s/dense_1/kernel/Regularizer/l2_regularizer:0"), not the variable's, and only
    when the layer made the variable (a reused one adds no second loss)."""
    if regularizer is None or not created:
        return
    with g.name_scope(name + "/Regularizer"):
        loss = regularizer(v)
    if loss is not None:
        g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
