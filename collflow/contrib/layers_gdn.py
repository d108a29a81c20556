"""The last of tf.contrib.layers (TF 1.15, as tf_slim has them): gdn / GDN (generalized divisive
normalization), poincare_normalize, pool, the activation partials elu / relu / relu6 / linear
(fully_connected with that activation_fn, arg_scope-able as fully_connected is) and the old
legacy_fully_connected with its legacy_relu / legacy_linear, with TF1's variable names
("reparam_beta", "reparam_gamma"; "weights", "bias") and collections.  Re-exported by
contrib/layers.py."""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..graph import graph as _g
from ..graph import initializers as _init
from ..graph.custom_gradient import custom_gradient
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops, math_ops, nn_extra_ops, nn_ops
from ..graph.ops.conv_dispatch_ops import pool as _nn_pool
from ..graph.variable_scope import get_variable, layer_variable_scope, variable_scope
from ..nn.layer_classes import Layer
from ..nn.layer_extras import add_activity_loss
from . import layers as _layers
from .framework import add_arg_scope

__all__ = ["elu", "relu", "relu6", "linear", "legacy_fully_connected", "legacy_relu", "legacy_linear", "gdn",
           "GDN", "poincare_normalize", "pool"]
# the ones tf_slim also has at its top level (slim.relu, slim.gdn, ...)
SLIM_NAMES = tuple(n for n in __all__ if n != "poincare_normalize")

# fully_connected with its activation fixed (TF's functools.partial of the arg-scoped layer)
elu = functools.partial(_layers.fully_connected, activation_fn=nn_extra_ops.elu)
relu = functools.partial(_layers.fully_connected, activation_fn=nn_ops.relu)
relu6 = functools.partial(_layers.fully_connected, activation_fn=nn_extra_ops.relu6)
linear = functools.partial(_layers.fully_connected, activation_fn=None)


def legacy_fully_connected(x: Any, num_output_units: int, activation_fn: Optional[Callable] = None,
                           weight_init: Any = None, bias_init: Any = _init.Zeros(), name: Optional[str] = None,
                           weight_collections: Sequence[str] = (GraphKeys.WEIGHTS,),
                           bias_collections: Sequence[str] = (GraphKeys.BIASES,),
                           output_collections: Sequence[str] = (GraphKeys.ACTIVATIONS,), trainable: bool = True,
                           weight_regularizer: Optional[Callable] = None,
                           bias_regularizer: Optional[Callable] = None) -> _g.Tensor:
    """TF 0.x's fully connected layer: activation_fn(x @ weights + bias) over the last axis, in
    variable scope `name` (default "fully_connected"), variables "weights" (xavier by default,
    also in weight_collections) and "bias" (none when bias_init is None; in bias_collections),
    the output added to output_collections and ACTIVATIONS.  No MODEL_VARIABLES, no arg_scope."""
    t = _g.convert_to_tensor(x)
    with t.graph.as_default(), variable_scope(name, default_name="fully_connected"):
        dims = t.shape.dims
        if dims is None:
            raise ValueError("dims of x must be known but is None")
        if len(dims) < 2:
            raise ValueError(f"rank of x must be at least 2 not: {len(dims)}")
        n_in = dims[-1]
        if n_in is None:
            raise ValueError("last dimension of x must be known but is None")
        n_in, n_out = int(n_in), int(num_output_units)
        w = get_variable("weights", [n_in, n_out], t.dtype, initializer=weight_init or _layers.xavier_initializer(),
                         collections=sorted(set(list(weight_collections or []) + [GraphKeys.GLOBAL_VARIABLES])),
                         regularizer=weight_regularizer, trainable=trainable)
        y = math_ops.matmul(t if len(dims) <= 2 else array_ops.reshape(t, [-1, n_in]), w)
        if bias_init is not None:
            b = get_variable("bias", [n_out], t.dtype, initializer=bias_init,
                             collections=sorted(set(list(bias_collections or []) + [GraphKeys.GLOBAL_VARIABLES])),
                             regularizer=bias_regularizer, trainable=trainable)
            y = nn_ops.bias_add(y, b)
        if len(dims) > 2:
            y = array_ops.reshape(y, array_ops.concat([array_ops.shape(t)[:-1], [n_out]], 0))
            y.set_shape(list(dims[:-1]) + [n_out])
        if activation_fn is not None:
            y = activation_fn(y)
        for c in dict.fromkeys(list(output_collections or []) + [GraphKeys.ACTIVATIONS]):
            t.graph.add_to_collection(c, y)
        return y


legacy_relu = functools.partial(legacy_fully_connected, activation_fn=nn_ops.relu)
legacy_linear = functools.partial(legacy_fully_connected, activation_fn=None)


def poincare_normalize(x: Any, axis: Any = 1, epsilon: float = 1e-5, name: Optional[str] = None) -> _g.Tensor:
    """x scaled into the Poincare ball: x * (1 - epsilon) / ||x|| along `axis` where the norm
    exceeds 1 - epsilon, x elsewhere."""
    with _g.name_scope(name, "poincare_normalize", [x]) as sc:
        t = _g.convert_to_tensor(x, name="x")
        inv = math_ops.rsqrt(math_ops.reduce_sum(math_ops.square(t), axis, keepdims=True))
        return math_ops.multiply(t, math_ops.minimum((1.0 - epsilon) * inv, 1.0), name=sc)


def _n_ints(n: int, v: Any, what: str) -> list:
    vals = [v] * n if isinstance(v, (int, np.integer)) else list(v)
    if len(vals) != n or not all(isinstance(i, (int, np.integer)) and i > 0 for i in vals):
        raise ValueError(f"pool: {what} must be a positive int or {n} positive ints, got {v!r}")
    return [int(i) for i in vals]


@add_arg_scope
def pool(inputs: Any, kernel_size: Any, pooling_type: str, padding: str = "VALID", data_format: Optional[str] = None,
         dilation_rate: Any = 1, stride: Any = 1, outputs_collections: Any = None,
         scope: Optional[str] = None) -> _g.Tensor:
    """N-d "MAX" or "AVG" pooling of [batch, *spatial, channels] (or channels first: "NC..."),
    N = rank - 2, in name scope `scope` (default "<type>_pool")."""
    with _g.name_scope(scope, f"{pooling_type.lower()}_pool", [inputs]) as sc:
        x = _g.convert_to_tensor(inputs)
        rank = x.shape.rank
        if rank is None:
            raise ValueError("Rank of inputs must be known")
        if rank < 3:
            raise ValueError("Rank of inputs must be >= 3")
        n = rank - 2
        out = _nn_pool(x, _n_ints(n, kernel_size, "kernel_size"), pooling_type, padding,
                       dilation_rate=_n_ints(n, dilation_rate, "dilation_rate"),
                       strides=_n_ints(n, stride, "stride"), data_format=data_format, name=sc)
        return _layers.collect_named_outputs(outputs_collections, sc, out)


# -- GDN --------------------------------------------------------------------------------------


@custom_gradient
def _lower_bound(x: _g.Tensor, bound: _g.Tensor) -> Any:
    """max(x, bound), whose gradient still flows where x is below the bound if it pushes x up
    (so a parameter stuck at the bound can leave it); none to the bound."""
    def grad(dy: _g.Tensor) -> Any:
        keep = math_ops.logical_or(math_ops.greater_equal(x, bound), math_ops.less(dy, 0))
        return math_ops.cast(keep, dy.dtype) * dy, array_ops.zeros_like(bound)
    return math_ops.maximum(x, bound), grad


def _channel_axis(data_format: str) -> int:
    try:
        return {"channels_first": 1, "channels_last": -1}[data_format]
    except KeyError:
        raise ValueError(f"Unsupported `data_format` for GDN layer: {data_format}.") from None


def _gdn_params(num_channels: int, dtype: Any, gamma_init: float, beta_min: float, reparam_offset: float,
                trainable: bool) -> tuple:
    """beta [C] and gamma [C, C] through their reparameterization: each stored as the square
    root of (value + offset^2), read back bounded below and squared."""
    npd = dtype.as_numpy_dtype
    pedestal = npd(reparam_offset ** 2)
    beta_init = np.sqrt(np.ones([num_channels], npd) + pedestal)
    gamma_init_v = np.sqrt(npd(gamma_init) * np.eye(num_channels, dtype=npd) + pedestal)
    rb = get_variable("reparam_beta", [num_channels], dtype, initializer=_init.Constant(beta_init),
                      trainable=trainable)
    rg = get_variable("reparam_gamma", [num_channels, num_channels], dtype,
                      initializer=_init.Constant(gamma_init_v), trainable=trainable)
    beta = math_ops.square(_lower_bound(rb, np.asarray((beta_min + reparam_offset ** 2) ** 0.5, npd))) - pedestal
    gamma = math_ops.square(_lower_bound(rg, np.asarray(reparam_offset, npd))) - pedestal
    return beta, gamma


def _gdn_apply(x: _g.Tensor, beta: _g.Tensor, gamma: _g.Tensor, data_format: str, inverse: bool) -> _g.Tensor:
    """x / sqrt(beta + x^2 @ gamma) over the channel axis (x * ... when inverse)."""
    rank = x.shape.rank
    perm = None
    xs = math_ops.square(x)
    if data_format == "channels_first":  # the channels last for the matmul, then back
        perm = [0] + list(range(2, rank)) + [1]
        xs = array_ops.transpose(xs, perm)
    c = int(gamma.shape.dims[0])
    norm = math_ops.matmul(array_ops.reshape(xs, [-1, c]), gamma) + beta
    norm = math_ops.sqrt(array_ops.reshape(norm, array_ops.shape(xs)))
    if perm is not None:
        norm = array_ops.transpose(norm, [0, rank - 1] + list(range(1, rank - 1)))
    out = x * norm if inverse else x / norm
    out.set_shape(x.shape)
    return out


def _gdn_input(inputs: Any, data_format: str) -> tuple:
    x = _g.convert_to_tensor(inputs)
    axis = _channel_axis(data_format)
    if x.shape.rank is None or not 3 <= x.shape.rank <= 5:
        raise ValueError(f"Input 0 of layer gdn is incompatible with the layer: expected rank 3 to 5, "
                         f"found shape {x.shape}")
    c = x.shape.dims[axis]
    if c is None:
        raise ValueError("The channel dimension of the inputs to `GDN` must be defined.")
    return x, int(c)


class GDN(Layer):
    """Generalized divisive normalization (Balle et al.): y[i] = x[i] / sqrt(beta[i] +
    sum_j gamma[j, i] x[j]^2) over the channels at each position; inverse=True (IGDN)
    multiplies instead.  beta starts at 1, gamma at gamma_init * I; both are kept >= their
    bounds (beta >= beta_min) through the square-root reparameterization with reparam_offset."""

    _base = "gdn"

    def __init__(self, inverse: bool = False, beta_min: float = 1e-6, gamma_init: float = .1,
                 reparam_offset: float = 2 ** -18, data_format: str = "channels_last",
                 activity_regularizer: Optional[Callable] = None, trainable: bool = True,
                 name: Optional[str] = None, **kwargs: Any):
        super().__init__(trainable, name, activity_regularizer=activity_regularizer, **kwargs)
        self.inverse = bool(inverse)
        self._beta_min, self._gamma_init, self._reparam_offset = beta_min, gamma_init, reparam_offset
        self.data_format = data_format
        _channel_axis(data_format)  # a bad data_format fails now
        self.beta: Any = None
        self.gamma: Any = None

    def _call(self, x: Any, name: Any, reuse: Any) -> Any:
        x, c = _gdn_input(x, self.data_format)
        with layer_variable_scope(name, "gdn", reuse):
            if self.beta is None:
                self.beta, self.gamma = _gdn_params(c, x.dtype, self._gamma_init, self._beta_min,
                                                    self._reparam_offset, self.trainable)
            return _gdn_apply(x, self.beta, self.gamma, self.data_format, self.inverse)


def gdn(inputs: Any, inverse: bool = False, beta_min: float = 1e-6, gamma_init: float = .1,
        reparam_offset: float = 2 ** -18, data_format: str = "channels_last",
        activity_regularizer: Optional[Callable] = None, trainable: bool = True, name: Optional[str] = None,
        reuse: Any = None) -> _g.Tensor:
    """The GDN layer applied once (variables in scope `name`, default "gdn" made unique;
    reuse shares them)."""
    _channel_axis(data_format)
    x, c = _gdn_input(inputs, data_format)
    with x.graph.as_default(), layer_variable_scope(name, "gdn", reuse) as vs:
        beta, gamma = _gdn_params(c, x.dtype, gamma_init, beta_min, reparam_offset, trainable)
        out = _gdn_apply(x, beta, gamma, data_format, inverse)
    if activity_regularizer is not None:
        add_activity_loss(activity_regularizer, out, vs.name)
    return out
