"""More of tf.keras.backend (TF 1.15's): convolutions and pooling, padding and resizing, the
CTC helpers, folds and map_fn, `rnn` (the step-function loop), variable updates, random
tensors and variables, and small elementwise functions; reachable as tf.keras.backend.<name>.

Deliberate differences: `rnn` always unrolls in Python (it needs a static number of time steps);
the channels_first data format is handled by transposing to channels_last and back.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from . import backend as _K

__all__ = ["backend", "arange", "bias_add", "batch_normalization", "conv1d", "conv2d", "conv2d_transpose", "conv3d",
           "depthwise_conv2d", "separable_conv2d", "pool2d", "pool3d", "cos", "sin", "count_params",
           "ctc_batch_cost", "ctc_decode", "ctc_label_dense_to_sparse", "cumprod", "dropout", "dtype", "elu", "eye",
           "foldl", "foldr", "map_fn", "rnn", "hard_sigmoid", "in_top_k", "is_keras_tensor", "is_sparse",
           "learning_phase_scope", "local_conv1d", "local_conv2d", "moving_average_update", "name_scope",
           "normalize_batch_in_training", "print_tensor", "random_bernoulli", "random_binomial",
           "random_normal_variable", "random_uniform_variable", "repeat_elements", "reset_uids", "resize_images",
           "resize_volumes", "reverse", "set_image_data_format", "softsign", "spatial_2d_padding",
           "spatial_3d_padding", "temporal_padding", "to_dense", "truncated_normal", "update", "update_add",
           "update_sub", "binary_focal_crossentropy", "categorical_focal_crossentropy"]


def _cf() -> Any:
    import collflow as cf  # the public ops (imported on use: keras sits above them)
    return cf


def backend() -> str:
    """The backend's name: 'tensorflow', as Keras's."""
    return "tensorflow"


def _data_format(data_format: Optional[str]) -> str:
    data_format = data_format or _K.image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"Unknown data_format: {data_format}")
    return data_format


def set_image_data_format(data_format: str) -> None:
    """Sets the default data format ('channels_last' or 'channels_first')."""
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"Unknown data_format: {data_format}")
    _K._IMAGE_DATA_FORMAT[0] = str(data_format)


def _to_last(x: Any, data_format: str) -> Any:
    # channels_first [b, c, *s] -> [b, *s, c]
    if data_format == "channels_last":
        return x
    n = _K.ndim(x)
    return _cf().transpose(x, [0] + list(range(2, n)) + [1])


def _to_first(x: Any, data_format: str) -> Any:
    if data_format == "channels_last":
        return x
    n = _K.ndim(x)
    return _cf().transpose(x, [0, n - 1] + list(range(1, n - 1)))


# -- elementwise and small helpers -------------------------------------------------------------

def arange(start: Any, stop: Any = None, step: Any = 1, dtype: str = "int32") -> Any:
    """range(start, stop, step) as an int32 computation cast to dtype (a negative lone start gives [])."""
    cf = _cf()
    if stop is None and isinstance(start, (int, float)) and start < 0:
        start = 0
    r = cf.range(start, stop, step, dtype=cf.int32) if stop is not None else cf.range(start, delta=step,
                                                                                      dtype=cf.int32)
    return r if dtype == "int32" else cf.cast(r, dtype)


def cos(x: Any) -> Any:
    return _cf().cos(x)


def sin(x: Any) -> Any:
    return _cf().sin(x)


def softsign(x: Any) -> Any:
    return _cf().nn.softsign(x)


def hard_sigmoid(x: Any) -> Any:
    """clip(0.2 * x + 0.5, 0, 1)."""
    cf = _cf()
    x = cf.convert_to_tensor(x)
    return cf.clip_by_value(0.2 * x + 0.5, 0.0, 1.0)


def elu(x: Any, alpha: float = 1.0) -> Any:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    cf = _cf()
    res = cf.nn.elu(x)
    return res if alpha == 1 else cf.where(x > 0, res, alpha * res)


def cumprod(x: Any, axis: int = 0) -> Any:
    from ..graph.ops.scan_ops import cumprod as _cumprod
    return _cumprod(x, axis=axis)


def reverse(x: Any, axes: Any) -> Any:
    """x reversed along axes (an int or a list)."""
    return _cf().reverse(x, [axes] if isinstance(axes, int) else list(axes))


def dtype(x: Any) -> str:
    """The dtype's name ('float32')."""
    return x.dtype.base_dtype.name


def count_params(x: Any) -> int:
    """The number of scalars in x (its static shape)."""
    return int(np.prod(_K.int_shape(x)))


def is_sparse(tensor: Any) -> bool:
    return isinstance(tensor, _cf().SparseTensor)


def to_dense(tensor: Any) -> Any:
    from ..graph.ops.sparse_ops import sparse_tensor_to_dense
    return sparse_tensor_to_dense(tensor) if is_sparse(tensor) else tensor


def is_keras_tensor(x: Any) -> bool:
    """Whether x is the output of a Keras layer or Input; ValueError for a non-tensor, as Keras's."""
    cf = _cf()
    if not (isinstance(x, (cf.Tensor, cf.Variable, cf.SparseTensor)) or hasattr(x, "op")):
        raise ValueError(f"Unexpectedly found an instance of type `{type(x)}`. Expected a symbolic tensor instance.")
    from .layers import history_of
    if history_of(x) is not None:
        return True
    inputs = getattr(getattr(x, "graph", None), "_keras_input_layers", {})  # tf.keras.Input's placeholders
    return inputs.get(getattr(x, "name", None)) is not None and inputs[x.name].output is x


def eye(size: Any, dtype: Any = None, name: Optional[str] = None) -> Any:
    """An identity matrix as a variable (as TF 1.15's backend makes it)."""
    cf = _cf()
    dt = dtype or _K.floatx()
    rows, cols = (size, size) if isinstance(size, int) else tuple(size)
    return _K.variable(np.eye(rows, cols, dtype=np.dtype(cf.as_dtype(dt).as_numpy_dtype)), dtype=dt, name=name)


def in_top_k(predictions: Any, targets: Any, k: int) -> Any:
    return _cf().nn.in_top_k(predictions, targets, k)


def name_scope(name: str) -> Any:
    return _cf().name_scope(name)


def print_tensor(x: Any, message: str = "") -> Any:
    """x, printing message and x (to stdout) when it runs."""
    import sys
    cf = _cf()
    from ..graph.ops.logging_ops import print_v2
    op = print_v2(message, x, output_stream=sys.stdout)
    with cf.control_dependencies([op]):
        return cf.identity(x)


@contextlib.contextmanager
def learning_phase_scope(value: int) -> Iterator[None]:
    """Fixes the learning phase to value (0 or 1) inside the block, restoring it after."""
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    st = _K._state()
    missing = object()
    before = st.get("fixed_phase", missing)
    st["fixed_phase"] = bool(value)
    try:
        yield
    finally:
        if before is missing:
            st.pop("fixed_phase", None)
        else:
            st["fixed_phase"] = before


def reset_uids() -> None:
    """Restarts the layer-name counters (get_uid) of the default graph."""
    _K._state().pop("uids", None)


# -- variables and updates -------------------------------------------------------------------

def update(x: Any, new_x: Any) -> Any:
    return _cf().assign(x, new_x)


def update_add(x: Any, increment: Any) -> Any:
    return _cf().assign_add(x, increment)


def update_sub(x: Any, decrement: Any) -> Any:
    return _cf().assign_sub(x, decrement)


def moving_average_update(x: Any, value: Any, momentum: float) -> Any:
    """x := momentum * x + (1 - momentum) * value, zero-debiased as TF1's Keras does it: a
    running average `biased` from zero and a step count, x set to biased / (1 - momentum^step)."""
    cf = _cf()
    dt = x.dtype.base_dtype
    one_minus = cf.cast(1.0 - momentum, dt) if not isinstance(momentum, (int, float)) else \
        cf.constant(1.0 - momentum, dtype=dt)
    g = cf.get_default_graph()
    with g.as_default(), cf.name_scope(None), cf.control_dependencies(None):
        base = x.op.name
        biased = cf.Variable(np.zeros(x.shape.as_list(), dt.as_numpy_dtype), trainable=False,
                             name=f"{base}/AssignMovingAvg/biased")
        step = cf.Variable(np.zeros((), dt.as_numpy_dtype), trainable=False,
                           name=f"{base}/AssignMovingAvg/local_step")
    with cf.name_scope("AssignMovingAvg"):
        value = cf.cast(value, dt)
        new_biased = cf.assign_sub(biased, (biased - value) * one_minus)
        new_step = cf.assign_add(step, cf.constant(1.0, dtype=dt))
        factor = 1.0 - cf.pow(1.0 - one_minus, new_step)
        return cf.assign_sub(x, x - new_biased / factor)


def _seed(seed: Any, high: int) -> int:
    return int(np.random.randint(high)) if seed is None else seed


def random_normal_variable(shape: Any, mean: float, scale: float, dtype: Any = None, name: Optional[str] = None,
                           seed: Any = None) -> Any:
    dt = dtype or _K.floatx()
    cf = _cf()
    init = cf.random_normal(shape, mean=mean, stddev=scale, dtype=dt, seed=_seed(seed, 10 ** 8))
    return cf.Variable(init, dtype=dt, name=name or "variable")


def random_uniform_variable(shape: Any, low: float, high: float, dtype: Any = None, name: Optional[str] = None,
                            seed: Any = None) -> Any:
    dt = dtype or _K.floatx()
    cf = _cf()
    init = cf.random_uniform(shape, minval=low, maxval=high, dtype=dt, seed=_seed(seed, 10 ** 8))
    return cf.Variable(init, dtype=dt, name=name or "variable")


def random_binomial(shape: Any, p: float = 0.0, dtype: Any = None, seed: Any = None) -> Any:
    """1 where a uniform draw is <= p, else 0."""
    cf = _cf()
    dt = dtype or _K.floatx()
    u = cf.random_uniform(shape, dtype=dt, seed=_seed(seed, 10 ** 6))
    return cf.where(u <= p, cf.ones(shape, dtype=dt), cf.zeros(shape, dtype=dt))


random_bernoulli = random_binomial


def truncated_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None, seed: Any = None) -> Any:
    return _cf().truncated_normal(shape, mean=mean, stddev=stddev, dtype=dtype or _K.floatx(),
                                  seed=_seed(seed, 10 ** 6))


def dropout(x: Any, level: float, noise_shape: Any = None, seed: Any = None) -> Any:
    """Keeps each entry with probability 1 - level, scaled by 1 / (1 - level)."""
    return _cf().nn.dropout(x, rate=level, noise_shape=noise_shape, seed=seed)


# -- shapes: repeat, padding, resizing ---------------------------------------------------------

def repeat_elements(x: Any, rep: int, axis: int) -> Any:
    """Each slice of x along axis repeated rep times in place ([a, b] -> [a, a, b, b])."""
    cf = _cf()
    x = cf.convert_to_tensor(x)
    n = x.shape.rank
    axis = axis % n
    static = x.shape.as_list()
    y = cf.tile(cf.expand_dims(x, axis + 1), [1] * (axis + 1) + [rep] + [1] * (n - axis - 1))
    dyn = cf.shape(x)
    new_shape = cf.concat([dyn[:axis], dyn[axis:axis + 1] * rep, dyn[axis + 1:]], 0)
    out = cf.reshape(y, new_shape)
    if static[axis] is not None:
        static[axis] *= rep
    out.set_shape(static)
    return out


def temporal_padding(x: Any, padding: Tuple[int, int] = (1, 1)) -> Any:
    """Zeros before and after the time axis of [batch, time, features]."""
    return _cf().pad(x, [[0, 0], list(padding), [0, 0]])


def spatial_2d_padding(x: Any, padding: Any = ((1, 1), (1, 1)), data_format: Optional[str] = None) -> Any:
    fmt = _data_format(data_format)
    pads = [[0, 0], list(padding[0]), list(padding[1])]
    pads = pads + [[0, 0]] if fmt == "channels_last" else [[0, 0]] + pads
    return _cf().pad(x, pads)


def spatial_3d_padding(x: Any, padding: Any = ((1, 1), (1, 1), (1, 1)), data_format: Optional[str] = None) -> Any:
    fmt = _data_format(data_format)
    pads = [[0, 0]] + [list(p) for p in padding]
    pads = pads + [[0, 0]] if fmt == "channels_last" else [[0, 0]] + pads
    return _cf().pad(x, pads)


def resize_images(x: Any, height_factor: int, width_factor: int, data_format: str,
                  interpolation: str = "nearest") -> Any:
    """Images scaled up by integer factors (nearest or bilinear, half-pixel centres as TF's resize v2)."""
    cf = _cf()
    fmt = _data_format(data_format)
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError("interpolation should be one of \"nearest\" or \"bilinear\".")
    y = _to_last(cf.convert_to_tensor(x), fmt)
    hw = cf.shape(y)[1:3] * cf.constant(np.array([height_factor, width_factor], dtype=np.int32))
    from ..graph.ops import image_ops
    fn = image_ops.resize_nearest_neighbor if interpolation == "nearest" else image_ops.resize_bilinear
    out = fn(y, hw, half_pixel_centers=True)
    s = y.shape.as_list()
    out.set_shape([s[0], s[1] * height_factor if s[1] is not None else None,
                   s[2] * width_factor if s[2] is not None else None, s[3]])
    return _to_first(out, fmt)


def resize_volumes(x: Any, depth_factor: int, height_factor: int, width_factor: int, data_format: str) -> Any:
    """Volumes scaled up by repeating entries along the three spatial axes."""
    first = _data_format(data_format) == "channels_first"
    off = 2 if first else 1
    out = repeat_elements(x, depth_factor, axis=off)
    out = repeat_elements(out, height_factor, axis=off + 1)
    return repeat_elements(out, width_factor, axis=off + 2)


# -- convolution and pooling -------------------------------------------------------------------

def _padding(padding: str) -> str:
    if padding not in ("same", "valid"):
        raise ValueError(f"Invalid padding: {padding}")
    return padding.upper()


def _tuple(v: Any, n: int) -> Tuple[int, ...]:
    return (int(v),) * n if isinstance(v, int) else tuple(int(e) for e in v)


def _conv(x: Any, kernel: Any, strides: Any, padding: str, data_format: Optional[str], dilation_rate: Any,
          n: int) -> Any:
    cf = _cf()
    fmt = _data_format(data_format)
    x, kernel = _to_last(cf.convert_to_tensor(x), fmt), cf.convert_to_tensor(kernel)
    if padding == "causal":
        if n != 1:
            raise ValueError("causal padding is for conv1d only")
        left = (kernel.shape.as_list()[0] - 1) * _tuple(dilation_rate, 1)[0]
        x = temporal_padding(x, (left, 0))
        padding = "valid"
    from ..graph.ops.conv_dispatch_ops import convolution
    out = convolution(x, kernel, _padding(padding), strides=list(_tuple(strides, n)),
                      dilation_rate=list(_tuple(dilation_rate, n)))
    return _to_first(out, fmt)


def conv1d(x: Any, kernel: Any, strides: int = 1, padding: str = "valid", data_format: Optional[str] = None,
           dilation_rate: int = 1) -> Any:
    """1-D convolution of [batch, steps, in] with kernel [width, in, out] ('causal' pads the start)."""
    return _conv(x, kernel, strides, padding, data_format, dilation_rate, 1)


def conv2d(x: Any, kernel: Any, strides: Any = (1, 1), padding: str = "valid", data_format: Optional[str] = None,
           dilation_rate: Any = (1, 1)) -> Any:
    return _conv(x, kernel, strides, padding, data_format, dilation_rate, 2)


def conv3d(x: Any, kernel: Any, strides: Any = (1, 1, 1), padding: str = "valid", data_format: Optional[str] = None,
           dilation_rate: Any = (1, 1, 1)) -> Any:
    return _conv(x, kernel, strides, padding, data_format, dilation_rate, 3)


def conv2d_transpose(x: Any, kernel: Any, output_shape: Any, strides: Any = (1, 1), padding: str = "valid",
                     data_format: Optional[str] = None, dilation_rate: Any = (1, 1)) -> Any:
    """The transpose of conv2d: kernel [h, w, out, in], output_shape [batch, h, w, out] (None batch: x's)."""
    cf = _cf()
    fmt = _data_format(data_format)
    x = _to_last(cf.convert_to_tensor(x), fmt)
    if isinstance(output_shape, (tuple, list)):
        shp = list(output_shape)
        if fmt == "channels_first":
            shp = [shp[0], shp[2], shp[3], shp[1]]
        if shp[0] is None:
            shp = cf.stack([cf.shape(x)[0]] + [cf.constant(int(d)) for d in shp[1:]])
        output_shape = shp
    s = _tuple(strides, 2)
    if _tuple(dilation_rate, 2) != (1, 1):
        raise NotImplementedError("conv2d_transpose with dilation_rate is not supported by collflow")
    out = cf.nn.conv2d_transpose(x, kernel, output_shape, [1, s[0], s[1], 1], padding=_padding(padding))
    return _to_first(out, fmt)


def depthwise_conv2d(x: Any, depthwise_kernel: Any, strides: Any = (1, 1), padding: str = "valid",
                     data_format: Optional[str] = None, dilation_rate: Any = (1, 1)) -> Any:
    cf = _cf()
    fmt = _data_format(data_format)
    s = _tuple(strides, 2)
    out = cf.nn.depthwise_conv2d(_to_last(cf.convert_to_tensor(x), fmt), depthwise_kernel, [1, s[0], s[1], 1],
                                 _padding(padding), rate=list(_tuple(dilation_rate, 2)))
    return _to_first(out, fmt)


def separable_conv2d(x: Any, depthwise_kernel: Any, pointwise_kernel: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: Optional[str] = None, dilation_rate: Any = (1, 1)) -> Any:
    cf = _cf()
    fmt = _data_format(data_format)
    s = _tuple(strides, 2)
    out = cf.nn.separable_conv2d(_to_last(cf.convert_to_tensor(x), fmt), depthwise_kernel, pointwise_kernel,
                                 [1, s[0], s[1], 1], _padding(padding), rate=list(_tuple(dilation_rate, 2)))
    return _to_first(out, fmt)


def _pool(x: Any, pool_size: Any, strides: Any, padding: str, data_format: Optional[str], pool_mode: str,
          n: int) -> Any:
    cf = _cf()
    fmt = _data_format(data_format)
    if pool_mode not in ("max", "avg"):
        raise ValueError(f"Invalid pooling mode: {pool_mode}")
    x = _to_last(cf.convert_to_tensor(x), fmt)
    k = [1, *_tuple(pool_size, n), 1]
    s = [1, *_tuple(strides, n), 1]
    if n == 2:
        fn = cf.nn.max_pool if pool_mode == "max" else cf.nn.avg_pool
    else:
        fn = cf.nn.max_pool3d if pool_mode == "max" else cf.nn.avg_pool3d
    return _to_first(fn(x, k, s, _padding(padding)), fmt)


def pool2d(x: Any, pool_size: Any, strides: Any = (1, 1), padding: str = "valid", data_format: Optional[str] = None,
           pool_mode: str = "max") -> Any:
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 2)


def pool3d(x: Any, pool_size: Any, strides: Any = (1, 1, 1), padding: str = "valid",
           data_format: Optional[str] = None, pool_mode: str = "max") -> Any:
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 3)


def local_conv1d(inputs: Any, kernel: Any, kernel_size: Any, strides: Any, data_format: Optional[str] = None) -> Any:
    """Unshared-weights 1-D convolution: kernel [out_steps, width * in, filters] -> [batch, out_steps, filters]."""
    cf = _cf()
    fmt = _data_format(data_format)
    x = _to_last(cf.convert_to_tensor(inputs), fmt)
    (k,), (s,) = _tuple(kernel_size, 1), _tuple(strides, 1)
    kernel = cf.convert_to_tensor(kernel)
    out_len = kernel.shape.as_list()[0]
    feat = kernel.shape.as_list()[1]
    patches = [cf.reshape(x[:, i * s:i * s + k, :], [-1, feat]) for i in range(out_len)]
    y = cf.matmul(cf.stack(patches), kernel)  # [out_steps, batch, filters]
    return _to_first(cf.transpose(y, [1, 0, 2]), fmt)


def local_conv2d(inputs: Any, kernel: Any, kernel_size: Any, strides: Any, output_shape: Any,
                 data_format: Optional[str] = None) -> Any:
    """Unshared-weights 2-D convolution: kernel [out_h * out_w, kh * kw * in, filters]."""
    cf = _cf()
    fmt = _data_format(data_format)
    x = _to_last(cf.convert_to_tensor(inputs), fmt)
    kh, kw = _tuple(kernel_size, 2)
    kernel = cf.convert_to_tensor(kernel)
    sh, sw = _tuple(strides, 2)
    oh, ow = output_shape
    feat = kernel.shape.as_list()[1]
    patches = [cf.reshape(x[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :], [-1, feat])
               for i in range(oh) for j in range(ow)]
    y = cf.matmul(cf.stack(patches), kernel)  # [oh * ow, batch, filters]
    filters = kernel.shape.as_list()[2]
    out = cf.reshape(cf.transpose(y, [1, 0, 2]), [-1, oh, ow, filters])
    return _to_first(out, fmt)


def bias_add(x: Any, bias: Any, data_format: Optional[str] = None) -> Any:
    """x + bias along the channels axis (a bias of rank 1 or the full channel shape)."""
    cf = _cf()
    fmt = _data_format(data_format)
    x, bias = cf.convert_to_tensor(x), cf.convert_to_tensor(bias)
    n, bshape = x.shape.rank, bias.shape.as_list()
    if len(bshape) != 1 and len(bshape) != n - 1:
        raise ValueError(f"Unexpected bias dimensions {len(bshape)}, expect to be 1 or {n - 1} dimensions")
    if len(bshape) == 1:
        if fmt == "channels_last" or n <= 2:
            return cf.nn.bias_add(x, bias)
        return x + cf.reshape(bias, [1, bshape[0]] + [1] * (n - 2))
    if fmt == "channels_first":
        return x + cf.reshape(bias, [1, bshape[-1]] + bshape[:-1])
    return x + cf.reshape(bias, [1] + bshape)


# -- normalization ---------------------------------------------------------------------------

def batch_normalization(x: Any, mean: Any, var: Any, beta: Any, gamma: Any, axis: int = -1,
                        epsilon: float = 1e-3) -> Any:
    """(x - mean) / sqrt(var + epsilon) * gamma + beta."""
    return _cf().nn.batch_normalization(x, mean, var, beta, gamma, epsilon)


def normalize_batch_in_training(x: Any, gamma: Any, beta: Any, reduction_axes: Sequence[int],
                                epsilon: float = 1e-3) -> Tuple[Any, Any, Any]:
    """(x normalized by its moments over reduction_axes, the mean, the variance)."""
    cf = _cf()
    x = cf.convert_to_tensor(x)
    n = x.shape.rank
    axes = sorted(a % n for a in reduction_axes)
    mean, var = cf.nn.moments(x, axes)
    if axes == list(range(n))[:-1]:
        normed = cf.nn.batch_normalization(x, mean, var, beta, gamma, epsilon)
        if n == 4:
            # Keras takes the fused kernel's path here, whose variance output is Bessel-corrected
            count = cf.cast(cf.reduce_prod(cf.shape(x)[:-1]), var.dtype)
            var = var * count / cf.maximum(count - 1.0, 1.0)
        return normed, mean, var
    # the statistics broadcast back over the reduced axes
    target = [1 if i in axes else -1 for i in range(n)]
    kept = [i for i in range(n) if i not in axes]
    shape = cf.stack([1 if i in axes else cf.shape(x)[i] for i in range(n)]) if len(kept) > 1 else target

    def b(t: Any) -> Any:
        return None if t is None else cf.reshape(t, shape)
    normed = cf.nn.batch_normalization(x, b(mean), b(var), b(beta), b(gamma), epsilon)
    return normed, mean, var


# -- control flow --------------------------------------------------------------------------------

def foldl(fn: Callable, elems: Any, initializer: Any = None, name: Optional[str] = None) -> Any:
    return _cf().foldl(fn, elems, initializer=initializer, name=name)


def foldr(fn: Callable, elems: Any, initializer: Any = None, name: Optional[str] = None) -> Any:
    return _cf().foldr(fn, elems, initializer=initializer, name=name)


def map_fn(fn: Callable, elems: Any, name: Optional[str] = None, dtype: Any = None) -> Any:
    return _cf().map_fn(fn, elems, name=name, dtype=dtype)


def rnn(step_function: Callable, inputs: Any, initial_states: List[Any], go_backwards: bool = False,
        mask: Any = None, constants: Optional[List[Any]] = None, unroll: bool = False, input_length: Any = None,
        time_major: bool = False, zero_output_for_mask: bool = False) -> Tuple[Any, Any, List[Any]]:
    """Keras's loop over time: step_function(input_t, states (+ constants)) -> (output_t, new_states);
    returns (last output, outputs [batch, time, ...], last states).  Where mask[b, t] is False the
    states stay and the output repeats the previous one (zeros with zero_output_for_mask).
    Always unrolled here: the number of time steps must be static."""
    cf = _cf()
    x = cf.convert_to_tensor(inputs)
    steps = x.shape.as_list()[0 if time_major else 1]
    if steps is None:
        raise ValueError("collflow's K.rnn unrolls the loop: the inputs need a static number of time steps")
    xs = cf.unstack(x, axis=0 if time_major else 1)
    masks = None
    if mask is not None:
        m = cf.cast(mask, cf.bool)
        masks = cf.unstack(m, axis=0 if time_major else 1)
    order = list(range(steps))[::-1] if go_backwards else list(range(steps))
    states = list(initial_states)
    outputs: List[Any] = []
    prev = None
    for t in order:
        out, new_states = step_function(xs[t], states + list(constants or []))
        new_states = list(new_states) if isinstance(new_states, (list, tuple)) else [new_states]
        if masks is not None:
            mt = masks[t]

            def pick(new: Any, old: Any, mt: Any = mt) -> Any:
                new = cf.convert_to_tensor(new)
                cond = cf.reshape(mt, cf.concat([cf.shape(mt), cf.ones([new.shape.rank - 1], cf.int32)], 0))
                return cf.where(cf.broadcast_to(cond, cf.shape(new)), new, old)
            base = cf.zeros_like(out) if (prev is None or zero_output_for_mask) else prev
            out = pick(out, base)
            new_states = [pick(n, o) for n, o in zip(new_states, states)]
        outputs.append(out)
        prev = out
        states = new_states
    stacked = cf.stack(outputs, axis=0 if time_major else 1)
    return outputs[-1], stacked, states


# -- CTC -----------------------------------------------------------------------------------------

def ctc_label_dense_to_sparse(labels: Any, label_lengths: Any) -> Any:
    """A SparseTensor of the first label_lengths[b] labels of each row of dense labels [batch, max_len]."""
    cf = _cf()
    labels = cf.convert_to_tensor(labels)
    mask = cf.sequence_mask(cf.cast(label_lengths, cf.int32), maxlen=cf.shape(labels)[1])
    idx = cf.where(mask)
    vals = cf.gather_nd(labels, idx)
    return cf.SparseTensor(idx, vals, cf.cast(cf.shape(labels), cf.int64))


def ctc_batch_cost(y_true: Any, y_pred: Any, input_length: Any, label_length: Any) -> Any:
    """Per-sample CTC loss [batch, 1] of softmax outputs y_pred [batch, time, classes] (blank: the last class)."""
    cf = _cf()
    label_length = cf.cast(cf.squeeze(label_length, axis=-1), cf.int32)
    input_length = cf.cast(cf.squeeze(input_length, axis=-1), cf.int32)
    sparse = ctc_label_dense_to_sparse(y_true, label_length)
    sparse = cf.SparseTensor(sparse.indices, cf.cast(sparse.values, cf.int32), sparse.dense_shape)
    logits = cf.log(cf.transpose(y_pred, [1, 0, 2]) + _K.epsilon())
    return cf.expand_dims(cf.nn.ctc_loss(labels=sparse, inputs=logits, sequence_length=input_length), 1)


def ctc_decode(y_pred: Any, input_length: Any, greedy: bool = True, beam_width: int = 100,
               top_paths: int = 1) -> Tuple[List[Any], Any]:
    """([dense decoded paths, -1 padded], log probabilities) of softmax outputs [batch, time, classes]."""
    cf = _cf()
    logits = cf.log(cf.transpose(y_pred, [1, 0, 2]) + _K.epsilon())
    input_length = cf.cast(input_length, cf.int32)
    if greedy:
        decoded, log_prob = cf.nn.ctc_greedy_decoder(inputs=logits, sequence_length=input_length)
    else:
        decoded, log_prob = cf.nn.ctc_beam_search_decoder(inputs=logits, sequence_length=input_length,
                                                          beam_width=beam_width, top_paths=top_paths)
    dense = [cf.sparse_to_dense(st.indices, st.dense_shape, st.values, default_value=-1) for st in decoded]
    return dense, log_prob


# -- focal cross-entropies (tf_keras 2.x's; TF 1.15 had none) ---------------------------------

def binary_focal_crossentropy(target: Any, output: Any, apply_class_balancing: bool = False, alpha: float = 0.25,
                              gamma: float = 2.0, from_logits: bool = False) -> Any:
    """Elementwise (1 - p_t)^gamma * binary cross-entropy, p_t the probability of the true class;
    with apply_class_balancing weighted alpha (positives) / 1 - alpha (negatives)."""
    cf = _cf()
    output = cf.convert_to_tensor(output)
    target = cf.cast(target, output.dtype)
    prob = cf.sigmoid(output) if from_logits else output
    p_t = target * prob + (1.0 - target) * (1.0 - prob)
    focal = cf.pow(1.0 - p_t, gamma) * _K.binary_crossentropy(target, output, from_logits=from_logits)
    if apply_class_balancing:
        focal = (target * alpha + (1.0 - target) * (1.0 - alpha)) * focal
    return focal


def categorical_focal_crossentropy(target: Any, output: Any, alpha: float = 0.25, gamma: float = 2.0,
                                   from_logits: bool = False, axis: int = -1) -> Any:
    """sum over axis of alpha * (1 - p)^gamma * -target * log(p), p the (renormalized, clipped) probabilities."""
    cf = _cf()
    output = cf.convert_to_tensor(output)
    target = cf.cast(target, output.dtype)
    if from_logits:
        output = cf.nn.softmax(output, axis=axis)
    output = output / cf.reduce_sum(output, axis=axis, keepdims=True)
    eps = _K.epsilon()
    output = cf.clip_by_value(output, eps, 1.0 - eps)
    return cf.reduce_sum(alpha * cf.pow(1.0 - output, gamma) * (-target * cf.log(output)), axis=axis)
