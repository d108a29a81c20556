"""The rest of tf.contrib.layers that TF1 models call: instance_norm, group_norm, the 1-D/3-D
convolutions (`convolution` of any rank), the 3-D pools and transposed convolution, maxout,
unit_norm, spatial_softmax, dense_to_sparse, scale_gradient, conv2d_in_plane, the
image/sequence reshapes and the summarize_* helpers, with contrib's scope names, defaults
and variable names (checked against tf_slim, TF1 contrib's layers for TF 2).  Re-exported
by contrib/layers.py, which makes them arg_scope-able."""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph import initializers as _init
from ..graph.custom_gradient import custom_gradient
from ..graph.ops.constant_op import identity
from ..graph.graph import GraphKeys
from ..graph.ops import array_ops, math_ops, nn_impl, nn_ops
from ..graph.ops.conv3d_ops import avg_pool3d as _avg_pool3d, conv3d_transpose as _conv3d_transpose
from ..graph.ops.conv3d_ops import max_pool3d as _max_pool3d
from ..graph.ops.conv_dispatch_ops import convolution as _convolution
from ..graph.ops.depthwise_ops import depthwise_conv2d
from ..graph.ops.index_ops import gather_nd
from ..graph.ops.math_extra_ops import lin_space
from ..graph.ops.matrix_ops import meshgrid
from ..graph.ops.nn_composites import normalize_moments, sufficient_statistics
from ..graph.sparse_tensor import SparseTensor
from ..graph.variable_scope import variable_scope
from ..summary import summary_ops as _summary
from .layers import _finish, _model_variable, collect_named_outputs, conv2d, xavier_initializer

__all__ = ["instance_norm", "group_norm", "convolution", "convolution1d", "convolution3d", "conv1d", "conv3d",
           "max_pool3d", "avg_pool3d", "conv3d_transpose", "convolution3d_transpose", "maxout", "unit_norm",
           "spatial_softmax", "dense_to_sparse", "scale_gradient", "conv2d_in_plane", "convolution2d_in_plane",
           "images_to_sequence", "sequence_to_images", "summarize_tensor", "summarize_tensors",
           "summarize_activation", "summarize_activations", "summarize_collection", "summarize_variables",
           "summarize_weights", "summarize_biases"]


def _rank(x: _g.Tensor) -> int:
    if x.shape.rank is None:
        raise ValueError(f"Inputs {x.name} has undefined rank.")
    return x.shape.rank


# -- normalization ------------------------------------------------------------------------


def _norm_params(g: _g.Graph, shape: List[int], dtype: Any, center: bool, scale: bool,
                 param_initializers: Optional[dict], trainable: bool, collections: Any) -> tuple:
    inits = param_initializers or {}
    beta = _model_variable(g, "beta", shape, dtype, inits.get("beta", _init.Zeros()), None, trainable, collections,
                           "beta") if center else None
    gamma = _model_variable(g, "gamma", shape, dtype, inits.get("gamma", _init.Ones()), None, trainable,
                            collections, "gamma") if scale else None
    return beta, gamma


def instance_norm(inputs: Any, center: bool = True, scale: bool = True, epsilon: float = 1e-6,
                  activation_fn: Optional[Callable] = None, param_initializers: Optional[dict] = None,
                  reuse: Any = None, variables_collections: Any = None, outputs_collections: Any = None,
                  trainable: bool = True, data_format: str = "NHWC", scope: Optional[str] = None) -> _g.Tensor:
    """Each example's each channel normalised over its other axes (Ulyanov et al.), then
    gamma and beta [channels] (scope "InstanceNorm")."""
    x = _g.convert_to_tensor(inputs)
    rank = _rank(x)
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    g = x.graph
    with g.as_default(), variable_scope(scope, default_name="InstanceNorm", reuse=reuse) as sc:
        channel = 1 if data_format == "NCHW" else rank - 1
        axes = [a for a in range(1, rank) if a != channel]
        n = x.shape.dims[channel]
        if n is None:
            raise ValueError(f"Inputs {x.name} has undefined channels dimension {x.shape.dims[channel:channel + 1]}.")
        beta, gamma = _norm_params(g, [int(n)], x.dtype, center, scale, param_initializers, trainable,
                                   variables_collections)
        if channel == 1:  # the parameters broadcast over the axes after the channels
            bshape = [1, int(n)] + [1] * (rank - 2)
            beta = array_ops.reshape(beta, bshape) if beta is not None else None
            gamma = array_ops.reshape(gamma, bshape) if gamma is not None else None
        mean, variance = nn_ops.moments(x, axes, keep_dims=True)
        y = nn_impl.batch_normalization(x, mean, variance, beta, gamma, epsilon, name="instancenorm")
        return _finish(sc, y, None, None, activation_fn, outputs_collections)


def group_norm(inputs: Any, groups: int = 32, channels_axis: int = -1, reduction_axes: Sequence[int] = (-3, -2),
               center: bool = True, scale: bool = True, epsilon: float = 1e-6,
               activation_fn: Optional[Callable] = None, param_initializers: Optional[dict] = None,
               reuse: Any = None, variables_collections: Any = None, outputs_collections: Any = None,
               trainable: bool = True, scope: Optional[str] = None, mean_close_to_zero: bool = False) -> _g.Tensor:
    """Channels split into `groups`, each normalised over reduction_axes and its own channels
    (Wu & He), then gamma and beta [channels] (scope "GroupNorm").  mean_close_to_zero takes
    the variance in one pass (E[x^2] - E[x]^2)."""
    x = _g.convert_to_tensor(inputs)
    rank = _rank(x)
    if channels_axis > rank - 1:
        raise ValueError("Axis is out of bounds.")
    dyn = array_ops.shape(x)
    dims: List[Any] = [d if d is not None else dyn[i] for i, d in enumerate(x.shape.dims)]
    if channels_axis < 0:
        channels_axis += rank
    channels = x.shape.dims[channels_axis]
    if channels is None:
        raise ValueError(f"Inputs {x.name} has undefined channel dimension: {channels_axis}.")
    axes = [a + rank if a < 0 else a for a in reduction_axes]
    for a in axes:
        if a > rank:
            raise ValueError("Axis is out of bounds.")
        if x.shape.dims[a] is None:
            raise ValueError(f"Inputs {x.name} has undefined dimensions {a}.")
        if a == channels_axis:
            raise ValueError("reduction_axis must be mutually exclusive with channels_axis")
    if groups > channels:
        raise ValueError(f"Invalid groups {groups} for {channels} channels.")
    if channels % groups:
        raise ValueError(f"{channels} channels is not commensurate with {groups} groups.")
    before, after = dims[:channels_axis], dims[channels_axis + 1:]
    grouped = before + [groups, channels // groups] + after
    bshape = [1] * len(before) + [groups, channels // groups] + [1] * len(after)
    dynamic = any(isinstance(d, _g.Tensor) for d in grouped)
    xg = array_ops.reshape(x, array_ops.stack(grouped) if dynamic else grouped)
    moments_axes = [channels_axis + 1] + [a + 1 if a > channels_axis else a for a in axes]
    g = x.graph
    with g.as_default(), variable_scope(scope, default_name="GroupNorm", reuse=reuse) as sc:
        beta, gamma = _norm_params(g, [channels], x.dtype, center, scale, param_initializers, trainable,
                                   variables_collections)
        if mean_close_to_zero:
            counts, m_ss, v_ss, _ = sufficient_statistics(xg, moments_axes, keep_dims=True)
            mean, variance = normalize_moments(counts, m_ss, v_ss, shift=None)
        else:
            mean, variance = nn_ops.moments(xg, moments_axes, keep_dims=True)
        gain = math_ops.rsqrt(variance + epsilon)
        offset = -mean * gain
        if gamma is not None:
            gamma = array_ops.reshape(gamma, bshape)
            gain, offset = gain * gamma, offset * gamma
        if beta is not None:
            offset = offset + array_ops.reshape(beta, bshape)
        y = xg * gain + offset
        y = array_ops.reshape(y, array_ops.stack(dims) if any(isinstance(d, _g.Tensor) for d in dims) else dims)
        return _finish(sc, y, None, None, activation_fn, outputs_collections)


# -- convolutions and pools of any rank ---------------------------------------------------

_FORMATS = (None, "NWC", "NCW", "NHWC", "NCHW", "NDHWC", "NCDHW")


def _tuple(v: Any, n: int, what: str) -> List[int]:
    vals = [int(v)] * n if isinstance(v, int) else [int(x) for x in v]
    if len(vals) != n:
        raise ValueError(f"The `{what}` argument must be a tuple of {n} integers. Received: {v}")
    return vals


def convolution(inputs: Any, num_outputs: int, kernel_size: Any, stride: Any = 1, padding: str = "SAME",
                data_format: Optional[str] = None, rate: Any = 1, activation_fn: Optional[Callable] = nn_ops.relu,
                normalizer_fn: Optional[Callable] = None, normalizer_params: Optional[dict] = None,
                weights_initializer: Any = None, weights_regularizer: Optional[Callable] = None,
                biases_initializer: Any = _init.Zeros(), biases_regularizer: Optional[Callable] = None,
                reuse: Any = None, variables_collections: Any = None, outputs_collections: Any = None,
                trainable: bool = True, scope: Optional[str] = None, conv_dims: Optional[int] = None) -> _g.Tensor:
    """A 1-, 2- or 3-D convolution by the input's rank (3, 4 or 5), weights [k..., in, out]
    (scope "Conv"), then biases (unless a normalizer_fn) and activation_fn."""
    if data_format not in _FORMATS:
        raise ValueError(f"Invalid data_format: {data_format!r}")
    x = _g.convert_to_tensor(inputs)
    rank = _rank(x)
    if conv_dims is not None and conv_dims + 2 != rank:
        raise ValueError(f"Convolution expects input with rank {conv_dims + 2}, got {rank}")
    if rank not in (3, 4, 5):
        raise ValueError(f"Convolution not supported for input with rank {rank}")
    first = data_format is not None and data_format.startswith("NC")
    if rank == 4:
        return conv2d(x, num_outputs, kernel_size, stride, padding, "NCHW" if first else "NHWC", rate, activation_fn,
                      normalizer_fn, normalizer_params, weights_initializer, weights_regularizer, biases_initializer,
                      biases_regularizer, reuse, variables_collections, outputs_collections, trainable, scope)
    n_sp = rank - 2
    fmt = {(1, False): "NWC", (1, True): "NCW", (3, False): "NDHWC", (3, True): "NCDHW"}[(n_sp, first)]
    channel = 1 if first else -1
    if x.shape.dims[channel] is None:
        raise ValueError(f"The channel dimension of the inputs should be defined. Found `None` (shape {x.shape}).")
    k = _tuple(kernel_size, n_sp, "kernel_size")
    n = int(num_outputs)
    g = x.graph
    with g.as_default(), variable_scope(scope, default_name="Conv", reuse=reuse) as sc:
        w = _model_variable(g, "weights", k + [int(x.shape.dims[channel]), n], x.dtype,
                            weights_initializer or xavier_initializer(), weights_regularizer, trainable,
                            variables_collections, "weights", "kernel")
        y = _convolution(x, w, padding.upper(), strides=_tuple(stride, n_sp, "strides"),
                         dilation_rate=_tuple(rate, n_sp, "dilation_rate"), data_format=fmt)
        if normalizer_fn is None and biases_initializer is not None:
            b = _model_variable(g, "biases", [n], x.dtype, biases_initializer, biases_regularizer, trainable,
                                variables_collections, "biases", "bias")
            y = nn_ops.bias_add(y, b, data_format="NCHW" if first else "NHWC")
        return _finish(sc, y, normalizer_fn, normalizer_params, activation_fn, outputs_collections)


def convolution1d(inputs: Any, num_outputs: int, kernel_size: Any, **kwargs: Any) -> _g.Tensor:
    """convolution of a rank-3 input ([batch, width, channels])."""
    return convolution(inputs, num_outputs, kernel_size, conv_dims=1, **kwargs)


def convolution3d(inputs: Any, num_outputs: int, kernel_size: Any, **kwargs: Any) -> _g.Tensor:
    """convolution of a rank-5 input ([batch, depth, height, width, channels])."""
    return convolution(inputs, num_outputs, kernel_size, conv_dims=3, **kwargs)


conv1d = convolution1d
conv3d = convolution3d


def _pool3d(fn: Callable, default: str, inputs: Any, kernel_size: Any, stride: Any, padding: str,
            data_format: str, outputs_collections: Any, scope: Optional[str]) -> _g.Tensor:
    if data_format not in ("NCDHW", "NDHWC"):
        raise ValueError("data_format has to be either NCDHW or NDHWC.")
    x = _g.convert_to_tensor(inputs)
    with x.graph.as_default(), x.graph.name_scope(scope or default) as sc:
        k = [1] + _tuple(kernel_size, 3, "pool_size")
        s = [1] + _tuple(stride, 3, "strides")
        if data_format == "NCDHW":
            k, s = [1, 1] + k[1:], [1, 1] + s[1:]
        else:
            k, s = k + [1], s + [1]
        y = fn(x, k, s, padding.upper(), data_format=data_format)
        return collect_named_outputs(outputs_collections, sc.rstrip("/"), y)


def max_pool3d(inputs: Any, kernel_size: Any, stride: Any = 2, padding: str = "VALID", data_format: str = "NDHWC",
               outputs_collections: Any = None, scope: Optional[str] = None) -> _g.Tensor:
    """3-D max pooling (name scope "MaxPool3D")."""
    return _pool3d(_max_pool3d, "MaxPool3D", inputs, kernel_size, stride, padding, data_format, outputs_collections,
                   scope)


def avg_pool3d(inputs: Any, kernel_size: Any, stride: Any = 2, padding: str = "VALID", data_format: str = "NDHWC",
               outputs_collections: Any = None, scope: Optional[str] = None) -> _g.Tensor:
    """3-D average pooling (name scope "AvgPool3D")."""
    return _pool3d(_avg_pool3d, "AvgPool3D", inputs, kernel_size, stride, padding, data_format, outputs_collections,
                   scope)


def conv3d_transpose(inputs: Any, num_outputs: int, kernel_size: Any, stride: Any = 1, padding: str = "SAME",
                     data_format: str = "NDHWC", activation_fn: Optional[Callable] = nn_ops.relu,
                     normalizer_fn: Optional[Callable] = None, normalizer_params: Optional[dict] = None,
                     weights_initializer: Any = None, weights_regularizer: Optional[Callable] = None,
                     biases_initializer: Any = _init.Zeros(), biases_regularizer: Optional[Callable] = None,
                     reuse: Any = None, variables_collections: Any = None, outputs_collections: Any = None,
                     trainable: bool = True, scope: Optional[str] = None) -> _g.Tensor:
    """The gradient of a 3-D convolution as a layer: weights [kd, kh, kw, num_outputs, in]
    (scope "Conv3d_transpose"); each spatial size times the stride (SAME) or
    (size - 1) * stride + kernel (VALID)."""
    if data_format not in ("NCDHW", "NDHWC"):
        raise ValueError("data_format has to be either NCDHW or NDHWC.")
    x = _g.convert_to_tensor(inputs)
    if _rank(x) != 5:
        raise ValueError(f"Inputs should have rank 5. Received input shape: {x.shape}")
    first = data_format == "NCDHW"
    channel = 1 if first else 4
    if x.shape.dims[channel] is None:
        raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
    k, s = _tuple(kernel_size, 3, "kernel_size"), _tuple(stride, 3, "strides")
    n = int(num_outputs)
    g = x.graph
    with g.as_default(), variable_scope(scope, default_name="Conv3d_transpose", reuse=reuse) as sc:
        w = _model_variable(g, "weights", k + [n, int(x.shape.dims[channel])], x.dtype,
                            weights_initializer or xavier_initializer(), weights_regularizer, trainable,
                            variables_collections, "weights", "kernel")
        dyn = array_ops.shape(x)
        spatial = [1, 2, 3] if not first else [2, 3, 4]
        sizes = []
        for i, a in enumerate(spatial):
            d: Any = x.shape.dims[a] if x.shape.dims[a] is not None else dyn[a]
            sizes.append(d * s[i] if padding.upper() == "SAME" else d * s[i] + max(k[i] - s[i], 0))
        batch: Any = x.shape.dims[0] if x.shape.dims[0] is not None else dyn[0]
        out = [batch, n] + sizes if first else [batch] + sizes + [n]
        out_shape = array_ops.stack(out) if any(isinstance(d, _g.Tensor) for d in out) else out
        strides = [1, 1] + s if first else [1] + s + [1]
        y = _conv3d_transpose(x, w, out_shape, strides, padding.upper(), data_format=data_format)
        if normalizer_fn is None and biases_initializer is not None:
            b = _model_variable(g, "biases", [n], x.dtype, biases_initializer, biases_regularizer, trainable,
                                variables_collections, "biases", "bias")
            y = nn_ops.bias_add(y, b, data_format="NCHW" if first else "NHWC")
        return _finish(sc, y, normalizer_fn, normalizer_params, activation_fn, outputs_collections)


convolution3d_transpose = conv3d_transpose


def conv2d_in_plane(inputs: Any, kernel_size: Any, stride: Any = 1, padding: str = "SAME",
                    activation_fn: Optional[Callable] = nn_ops.relu, normalizer_fn: Optional[Callable] = None,
                    normalizer_params: Optional[dict] = None, weights_initializer: Any = None,
                    weights_regularizer: Optional[Callable] = None, biases_initializer: Any = _init.Zeros(),
                    biases_regularizer: Optional[Callable] = None, reuse: Any = None,
                    variables_collections: Any = None, outputs_collections: Any = None, trainable: bool = True,
                    scope: Optional[str] = None) -> _g.Tensor:
    """One [kh, kw] filter applied to every channel on its own (scope "ConvInPlane"): a
    depthwise convolution of the shared kernel, then biases [channels]."""
    x = _g.convert_to_tensor(inputs)
    if _rank(x) != 4 or x.shape.dims[3] is None:
        raise ValueError(f"conv2d_in_plane needs an NHWC input with known channels, got shape {x.shape}")
    kh, kw = _tuple(kernel_size, 2, "kernel_size")
    sh, sw = _tuple(stride, 2, "stride")
    c = int(x.shape.dims[3])
    g = x.graph
    with g.as_default(), variable_scope(scope, default_name="ConvInPlane", reuse=reuse) as sc:
        w = _model_variable(g, "weights", [kh, kw, 1, 1], x.dtype, weights_initializer or xavier_initializer(),
                            weights_regularizer, trainable, variables_collections, "weights")
        depthwise = array_ops.tile(w, [1, 1, c, 1])
        y = depthwise_conv2d(x, depthwise, [1, sh, sw, 1], padding.upper())
        if normalizer_fn is None and biases_initializer is not None:
            b = _model_variable(g, "biases", [c], x.dtype, biases_initializer, biases_regularizer, trainable,
                                variables_collections, "biases")
            y = nn_ops.bias_add(y, b)
        return _finish(sc, y, normalizer_fn, normalizer_params, activation_fn, outputs_collections)


convolution2d_in_plane = conv2d_in_plane


# -- small layers -------------------------------------------------------------------------


def maxout(inputs: Any, num_units: int, axis: int = -1, scope: Optional[str] = None) -> _g.Tensor:
    """The maximum over each of num_units groups of the features on `axis` (Goodfellow et al.):
    that axis becomes num_units and the group members a new last axis that is reduced."""
    x = _g.convert_to_tensor(inputs)
    with x.graph.as_default(), variable_scope(scope, default_name="MaxOut"):
        shape: List[Any] = list(x.shape.dims)
        channels = shape[axis]
        if channels is None or channels % num_units:
            raise ValueError(f"number of features({channels}) is not a multiple of num_units({num_units})")
        shape[axis] = num_units
        shape.append(channels // num_units)
        if any(d is None for d in shape):
            dyn = array_ops.shape(x)
            shape = [dyn[i] if d is None else d for i, d in enumerate(shape)]
            return math_ops.reduce_max(array_ops.reshape(x, array_ops.stack(shape)), -1, keepdims=False)
        return math_ops.reduce_max(array_ops.reshape(x, shape), -1, keepdims=False)


def unit_norm(inputs: Any, dim: int, epsilon: float = 1e-7, scope: Optional[str] = None) -> _g.Tensor:
    """inputs / sqrt(epsilon + sum over `dim` of inputs^2) (scope "UnitNorm")."""
    x = _g.convert_to_tensor(inputs)
    with x.graph.as_default(), variable_scope(scope, default_name="UnitNorm"):
        if x.shape.rank is None:
            raise ValueError("The input rank must be known.")
        if dim < 0 or dim >= x.shape.rank:
            raise ValueError("dim must be positive but smaller than the input rank.")
        lengths = math_ops.sqrt(epsilon + math_ops.reduce_sum(math_ops.square(x), dim, keepdims=True))
        return math_ops.divide(x, lengths)


def spatial_softmax(features: Any, temperature: Optional[float] = None, name: Optional[str] = None,
                    variables_collections: Any = None, trainable: bool = True, data_format: str = "NHWC") -> _g.Tensor:
    """Each channel's softmax over its positions (divided by a learned `temperature`, starting
    at 1 or the value given), reduced to its expected coordinates in [-1, 1]: [batch,
    2 * channels], (row, column) per channel (Levine et al.)."""
    x = _g.convert_to_tensor(features)
    with x.graph.as_default(), variable_scope(name, default_name="spatial_softmax"):
        dyn = array_ops.shape(x)
        if data_format == "NHWC":
            height, width, channels = dyn[1], dyn[2], x.shape.dims[3]
        elif data_format == "NCHW":
            channels, height, width = x.shape.dims[1], dyn[2], dyn[3]
        else:
            raise ValueError("data_format has to be either NCHW or NHWC.")
        if channels is None:
            raise ValueError("The num_channels dimension of the inputs to `spatial_softmax` should be defined. "
                             "Found `None`.")
        g = x.graph
        with g.name_scope("spatial_softmax_op"):
            lo, hi = (_g.convert_to_tensor(v, dtype=x.dtype) for v in (-1.0, 1.0))
            rows, cols = meshgrid(lin_space(lo, hi, height), lin_space(lo, hi, width), indexing="ij")
            rows = array_ops.reshape(rows, array_ops.stack([height * width]))
            cols = array_ops.reshape(cols, array_ops.stack([height * width]))
            init = _init.Ones() if temperature is None else _init.Constant(temperature)
            # float32 in TF, which then refuses float64 features; collflow takes their dtype
            temp = _model_variable(g, "temperature", [], x.dtype, init, None, trainable,
                                   variables_collections if trainable else None, "temperature")
            flat = array_ops.reshape(x if data_format == "NCHW" else array_ops.transpose(x, [0, 3, 1, 2]),
                                     array_ops.stack([-1, height * width]))
            attention = nn_ops.softmax(flat / temp)
            expected = array_ops.concat([math_ops.reduce_sum(rows * attention, [1], keepdims=True),
                                         math_ops.reduce_sum(cols * attention, [1], keepdims=True)], 1)
            keypoints = array_ops.reshape(expected, [-1, int(channels) * 2])
            keypoints.set_shape([None, int(channels) * 2])
    return keypoints


def dense_to_sparse(tensor: Any, eos_token: Any = 0, outputs_collections: Any = None,
                    scope: Optional[str] = None) -> SparseTensor:
    """The entries of `tensor` other than eos_token as a SparseTensor of its shape."""
    t = _g.convert_to_tensor(tensor)
    with t.graph.as_default(), variable_scope(scope, default_name="dense_to_sparse") as sc:
        indices = array_ops.where(math_ops.not_equal(t, _g.convert_to_tensor(eos_token, dtype=t.dtype)))
        values = gather_nd(t, indices)
        out = SparseTensor(indices, values, array_ops.shape(t, out_type=_dt.int64))
        return collect_named_outputs(outputs_collections, sc.name, out)


def scale_gradient(inputs: Any, gradient_multiplier: Any) -> _g.Tensor:
    """inputs unchanged; their gradient times gradient_multiplier."""
    x = _g.convert_to_tensor(inputs)

    @custom_gradient
    def _scaled(t: _g.Tensor) -> Any:
        def grad(dy: _g.Tensor) -> _g.Tensor:
            return dy * math_ops.cast(gradient_multiplier, dy.dtype)
        return identity(t), grad
    return _scaled(x)


def images_to_sequence(inputs: Any, data_format: str = "NHWC", outputs_collections: Any = None,
                       scope: Optional[str] = None) -> _g.Tensor:
    """Images [batch, height, width, depth] as sequences over the width: [width, batch * height, depth]."""
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    x = _g.convert_to_tensor(inputs)
    with x.graph.as_default(), x.graph.name_scope(scope or "ImagesToSequence") as sc:
        if data_format == "NCHW":
            x = array_ops.transpose(x, [0, 2, 3, 1])
        width, depth = x.shape.dims[2], x.shape.dims[3]
        dyn = array_ops.shape(x)
        rows = dyn[0] * dyn[1]
        out = array_ops.reshape(array_ops.transpose(x, [2, 0, 1, 3]), array_ops.stack([width, rows, depth]))
        return collect_named_outputs(outputs_collections, sc.rstrip("/"), out)


def sequence_to_images(inputs: Any, height: int, output_data_format: str = "channels_last",
                       outputs_collections: Any = None, scope: Optional[str] = None) -> _g.Tensor:
    """images_to_sequence's inverse: [width, batch * height, depth] to images."""
    x = _g.convert_to_tensor(inputs)
    with x.graph.as_default(), x.graph.name_scope(scope or "SequenceToImages") as sc:
        width, rows, depth = x.shape.dims
        batches = -1 if rows is None else rows // height
        y = array_ops.reshape(x, [width, batches, height, depth])
        perm = [1, 3, 2, 0] if output_data_format == "channels_first" else [1, 2, 0, 3]
        return collect_named_outputs(outputs_collections, sc.rstrip("/"), array_ops.transpose(y, perm))


# -- summaries ----------------------------------------------------------------------------


def summarize_tensor(tensor: Any, tag: Optional[str] = None) -> Optional[_g.Tensor]:
    """A scalar summary of a scalar tensor, else a histogram, tagged `tag` or
    "<op name>_summary"; None for strings and bools."""
    t = _g.convert_to_tensor(tensor)
    if t.dtype in (_dt.string, _dt.bool_):
        return None
    tag = tag or f"{getattr(tensor, 'op', t.op).name}_summary"  # a variable: its own name, not its read's
    if t.shape.rank == 0:
        return _summary.scalar(tag, t)
    return _summary.histogram(tag, t)


def summarize_tensors(tensors: Sequence[Any], summarizer: Callable = summarize_tensor) -> List[Any]:
    """summarizer(t) for each tensor."""
    return [summarizer(t) for t in tensors]


def summarize_activation(op: Any) -> _g.Tensor:
    """The activation's histogram ("<op>/activation"); after a Relu, Softplus or Relu6 also the
    fraction of its inputs below 0 ("<op>/zeros"), after a Relu6 the fraction above 6 ("<op>/sixes")."""
    t = _g.convert_to_tensor(op)
    name = t.op.name
    if t.op.type in ("Relu", "Softplus", "Relu6"):
        pre = t.op.inputs[0]
        _summary.scalar(f"{name}/zeros", math_ops.reduce_mean(math_ops.cast(
            math_ops.less(pre, math_ops.cast(0.0, pre.dtype)), _dt.float32)))
        if t.op.type == "Relu6":
            _summary.scalar(f"{name}/sixes", math_ops.reduce_mean(math_ops.cast(
                math_ops.greater(pre, math_ops.cast(6.0, pre.dtype)), _dt.float32)))
    return _summary.histogram(f"{name}/activation", t)


def summarize_collection(collection: str, name_filter: Optional[str] = None,
                         summarizer: Callable = summarize_tensor) -> List[Any]:
    """summarizer over the tensors of a collection whose op names match `name_filter` (a regex)."""
    import re
    tensors = [t for t in _g.get_default_graph().get_collection(collection)
               if name_filter is None or re.match(name_filter, t.op.name)]  # a variable's op: its own
    return summarize_tensors(tensors, summarizer)


def summarize_activations(name_filter: Optional[str] = None,
                          summarizer: Callable = summarize_activation) -> List[Any]:
    """summarize_activation over the ACTIVATIONS collection."""
    return summarize_collection(GraphKeys.ACTIVATIONS, name_filter, summarizer)


def summarize_variables(name_filter: Optional[str] = None, summarizer: Callable = summarize_tensor) -> List[Any]:
    """summarize_tensor over the global variables."""
    return summarize_collection(GraphKeys.GLOBAL_VARIABLES, name_filter, summarizer)


def summarize_weights(name_filter: Optional[str] = None, summarizer: Callable = summarize_tensor) -> List[Any]:
    """summarize_tensor over the WEIGHTS collection."""
    return summarize_collection(GraphKeys.WEIGHTS, name_filter, summarizer)


def summarize_biases(name_filter: Optional[str] = None, summarizer: Callable = summarize_tensor) -> List[Any]:
    """summarize_tensor over the BIASES collection."""
    return summarize_collection(GraphKeys.BIASES, name_filter, summarizer)
