"""tf.keras.backend in TF1's graph mode: the session Keras runs in, the learning phase, and
small tensor helpers.

Keras uses the default session when one is active (`with tf.Session() as sess:` or
`K.set_session(sess)`), else a session of its own for the default graph; before use it
initializes the graph's variables that are not initialized yet (as TF1's Keras does), so a
model built and fitted with no session code runs.  The learning phase is a bool
placeholder_with_default(False) per graph that fit() feeds True (dropout, batch norm).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops.constant_op import constant as _constant, placeholder as _placeholder
from ..graph.ops.constant_op import placeholder_with_default
from ..graph.variables import Variable, global_variables, local_variables
from ..runtime.session import Session

# and the tensor functions below the session helpers
__all__ = ["get_session", "set_session", "clear_session", "learning_phase", "set_learning_phase", "floatx",
           "set_floatx", "epsilon", "set_epsilon", "image_data_format", "int_shape", "get_value", "set_value",
           "batch_get_value", "batch_set_value", "placeholder", "variable", "constant", "eval", "get_uid",
           "manual_variable_initialization"]

_EPSILON = [1e-7]
_FLOATX = ["float32"]
_MANUAL_INIT = [False]


def _state(g: Optional[_g.Graph] = None) -> Dict[str, Any]:
    g = g or _g.get_default_graph()
    return g._aux.setdefault("keras", {})


def floatx() -> str:
    return _FLOATX[0]


def set_floatx(value: str) -> None:
    if value not in ("float16", "float32", "float64"):
        raise ValueError(f"Unknown floatx type: {value}")
    _FLOATX[0] = value


def epsilon() -> float:
    """The fuzz factor of Keras's losses (1e-7)."""
    return _EPSILON[0]


def set_epsilon(value: float) -> None:
    _EPSILON[0] = float(value)


_IMAGE_DATA_FORMAT = ["channels_last"]  # set_image_data_format (backend_more.py) changes it


def image_data_format() -> str:
    return _IMAGE_DATA_FORMAT[0]


def normalize_data_format(value: Optional[str]) -> str:
    """A Keras layer's data_format: None is image_data_format() (read when the layer is made,
    as Keras's conv_utils does), case is ignored; anything else is a ValueError."""
    fmt = image_data_format() if value is None else str(value).lower()
    if fmt not in ("channels_first", "channels_last"):
        raise ValueError(f'The `data_format` argument must be one of "channels_first", "channels_last". '
                         f"Received: {value}")
    return fmt


def get_uid(prefix: str = "") -> int:
    """1, 2, ... per prefix and graph (Keras's layer-name counter)."""
    counters = _state().setdefault("uids", {})
    counters[prefix] = counters.get(prefix, 0) + 1
    return counters[prefix]


def learning_phase() -> Any:
    """The graph's learning phase: a bool tensor fit() feeds True, or the value set_learning_phase gave."""
    st = _state()
    if "fixed_phase" in st:
        return st["fixed_phase"]
    if "phase" not in st:
        with _g.get_default_graph().as_default(), _g.name_scope(None), _g.control_dependencies(None):
            st["phase"] = placeholder_with_default(False, [], name="keras_learning_phase")
    return st["phase"]


def set_learning_phase(value: int) -> None:
    """Fixes the learning phase to 0 (test) or 1 (train) for layers built from now on."""
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    _state()["fixed_phase"] = bool(value)


def manual_variable_initialization(value: bool) -> None:
    """True: Keras leaves variable initialization to the user's code."""
    _MANUAL_INIT[0] = bool(value)


def set_session(session: Any) -> None:
    """Makes Keras run in `session` (its graph's)."""
    _state(session.graph)["session"] = session


def _initialize(sess: Any) -> None:
    if _MANUAL_INIT[0]:
        return
    with sess.graph.as_default():
        # tracked: variables in no collection that Keras made (a metric's, as TF's track_variable)
        candidates = [v for v in global_variables() + local_variables() + _state(sess.graph).get("tracked", [])
                      if not getattr(v, "_keras_initialized", False)]
        if not candidates:
            return
        from ..graph.variables import report_uninitialized_variables
        names = set(_dt.string_text(n) for n in sess.run(report_uninitialized_variables(candidates)))
        todo = [v for v in candidates if v.op.name in names]
        if todo:
            sess.run([v.initializer for v in todo])
        for v in candidates:
            v._keras_initialized = True


def get_session() -> Any:
    """The session Keras runs in (see the module doc), its new variables initialized."""
    sess = _g.get_default_session()
    if sess is None or sess.graph is not _g.get_default_graph():
        st = _state()
        sess = st.get("session")
        if sess is None or getattr(sess, "_closed", False):
            sess = Session(graph=_g.get_default_graph())
            st["session"] = sess
    _initialize(sess)
    return sess


def clear_session() -> None:
    """Drops Keras's session and starts a new default graph (TF1's clear_session)."""
    st = _state()
    sess = st.pop("session", None)
    if sess is not None:
        try:
            sess.close()
        except Exception:  # noqa: BLE001  (closing a dead session is fine)
            pass
    _g.reset_default_graph()


def int_shape(x: Any) -> Optional[tuple]:
    s = x.shape if hasattr(x, "shape") else _g.convert_to_tensor(x).shape
    if getattr(s, "rank", 0) is None:
        return None
    return tuple(s.as_list()) if hasattr(s, "as_list") else tuple(s)


def placeholder(shape: Any = None, ndim: Optional[int] = None, dtype: Any = None, sparse: bool = False,
                name: Optional[str] = None) -> _g.Tensor:
    if shape is None and ndim is not None:
        shape = [None] * ndim
    return _placeholder(_dt.as_dtype(dtype or floatx()), shape, name=name)


def variable(value: Any, dtype: Any = None, name: Optional[str] = None, constraint: Any = None) -> Variable:
    v = Variable(np.asarray(value, dtype=_dt.as_dtype(dtype or floatx()).np), name=name)
    return v


def constant(value: Any, dtype: Any = None, shape: Any = None, name: Optional[str] = None) -> _g.Tensor:
    return _constant(value, dtype=dtype or floatx(), shape=shape, name=name)


def eval(x: Any) -> np.ndarray:  # noqa: A001  (Keras's name)
    return get_session().run(x)


def get_value(x: Any) -> np.ndarray:
    return get_session().run(x)


def batch_get_value(xs: Sequence[Any]) -> List[np.ndarray]:
    return get_session().run(list(xs)) if xs else []


def set_value(x: Variable, value: Any) -> None:
    batch_set_value([(x, value)])


def batch_set_value(pairs: Sequence[Any]) -> None:
    pairs = list(pairs)
    if pairs:
        sess = get_session()
        for v, value in pairs:
            v.load(np.asarray(value, dtype=v.dtype.np), sess)


# -- tensor functions (Keras's backend API over collflow's ops) ---------------------------------
# Custom losses, metrics and Lambda layers are written against these (K.mean(K.square(...))).

def _ops() -> Any:
    import collflow as cf
    return cf


def _axis(axis: Any) -> Any:
    return list(axis) if isinstance(axis, tuple) else axis


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    cf = _ops()
    x = cf.convert_to_tensor(x)
    if x.dtype.is_bool or x.dtype.is_integer:
        x = cf.cast(x, floatx())
    return cf.reduce_mean(x, axis=_axis(axis), keepdims=keepdims)


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    return _ops().reduce_sum(x, axis=_axis(axis), keepdims=keepdims)


def max(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    return _ops().reduce_max(x, axis=_axis(axis), keepdims=keepdims)


def min(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    return _ops().reduce_min(x, axis=_axis(axis), keepdims=keepdims)


def prod(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return _ops().reduce_prod(x, axis=_axis(axis), keepdims=keepdims)


def var(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    cf = _ops()
    m = cf.reduce_mean(x, axis=_axis(axis), keepdims=True)
    return cf.reduce_mean(cf.square(x - m), axis=_axis(axis), keepdims=keepdims)


def std(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return _ops().sqrt(var(x, axis, keepdims))


def any(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    cf = _ops()
    return cf.reduce_any(cf.cast(x, cf.bool), axis=_axis(axis), keepdims=keepdims)


def all(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    cf = _ops()
    return cf.reduce_all(cf.cast(x, cf.bool), axis=_axis(axis), keepdims=keepdims)


def argmax(x: Any, axis: int = -1) -> Any:
    return _ops().argmax(x, axis=axis)


def argmin(x: Any, axis: int = -1) -> Any:
    return _ops().argmin(x, axis=axis)


def square(x: Any) -> Any:
    return _ops().square(x)


def sqrt(x: Any) -> Any:
    cf = _ops()
    return cf.sqrt(cf.clip_by_value(x, 0.0, float("inf")))  # Keras clips negatives to zero first


def abs(x: Any) -> Any:  # noqa: A001
    return _ops().abs(x)


def exp(x: Any) -> Any:
    return _ops().exp(x)


def log(x: Any) -> Any:
    return _ops().log(x)


def pow(x: Any, a: Any) -> Any:  # noqa: A001
    return _ops().pow(x, a)


def sign(x: Any) -> Any:
    return _ops().sign(x)


def round(x: Any) -> Any:  # noqa: A001
    return _ops().round(x)


def clip(x: Any, min_value: Any, max_value: Any) -> Any:
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    return _ops().clip_by_value(x, min_value if min_value is not None else -float("inf"),
                                max_value if max_value is not None else float("inf"))


def maximum(x: Any, y: Any) -> Any:
    return _ops().maximum(x, y)


def minimum(x: Any, y: Any) -> Any:
    return _ops().minimum(x, y)


def equal(x: Any, y: Any) -> Any:
    return _ops().equal(x, y)


def not_equal(x: Any, y: Any) -> Any:
    return _ops().not_equal(x, y)


def greater(x: Any, y: Any) -> Any:
    return _ops().greater(x, y)


def greater_equal(x: Any, y: Any) -> Any:
    return _ops().greater_equal(x, y)


def less(x: Any, y: Any) -> Any:
    return _ops().less(x, y)


def less_equal(x: Any, y: Any) -> Any:
    return _ops().less_equal(x, y)


def cast(x: Any, dtype: Any) -> Any:
    return _ops().cast(x, dtype)


def cast_to_floatx(x: Any) -> Any:
    return np.asarray(x, dtype=floatx())


def dot(x: Any, y: Any) -> Any:
    """x @ y; for rank > 2 the last axis of x with the second to last of y (Keras's dot)."""
    cf = _ops()
    x, y = cf.convert_to_tensor(x), cf.convert_to_tensor(y)
    if x.shape.rank == 2 and y.shape.rank == 2:
        return cf.matmul(x, y)
    return cf.tensordot(x, y, [[x.shape.rank - 1], [y.shape.rank - 2 if y.shape.rank > 1 else 0]])


def batch_dot(x: Any, y: Any, axes: Any = None) -> Any:
    """Per-sample dot of two batches: sum over x's axes[0] and y's axes[1] (default: the last of x, the
    second to last (or last) of y)."""
    cf = _ops()
    x, y = cf.convert_to_tensor(x), cf.convert_to_tensor(y)
    rx, ry = x.shape.rank, y.shape.rank
    if axes is None:
        axes = [rx - 1, ry - 2 if ry > 2 else ry - 1]
    elif isinstance(axes, int):
        axes = [axes, axes]
    ax, ay = [a % r for a, r in zip(axes, (rx, ry))]
    if rx == 2 and ry == 2:
        return cf.reduce_sum(x * y, axis=ax, keepdims=True)
    xs = cf.transpose(x, [0] + [i for i in range(1, rx) if i != ax] + [ax])
    ys = cf.transpose(y, [0, ay] + [i for i in range(1, ry) if i != ay])
    return _batch_dot_general(cf, xs, ys)


def _batch_dot_general(cf: Any, xs: Any, ys: Any) -> Any:
    # xs: [b, ..x, k], ys: [b, k, ..y] -> [b, ..x, ..y]
    xr, yr = xs.shape.as_list()[1:-1], ys.shape.as_list()[2:]
    k = xs.shape.as_list()[-1]
    out = cf.matmul(cf.reshape(xs, [-1, int(np.prod(xr)) if xr else 1, k]),
                    cf.reshape(ys, [-1, k, int(np.prod(yr)) if yr else 1]))
    shape = [-1] + xr + yr
    return cf.reshape(out, shape if len(shape) > 1 else [-1, 1])


def concatenate(tensors: Any, axis: int = -1) -> Any:
    return _ops().concat(list(tensors), axis)


def stack(x: Any, axis: int = 0) -> Any:
    return _ops().stack(list(x), axis=axis)


def reshape(x: Any, shape: Any) -> Any:
    return _ops().reshape(x, shape)


def permute_dimensions(x: Any, pattern: Any) -> Any:
    return _ops().transpose(x, list(pattern))


def transpose(x: Any) -> Any:
    return _ops().transpose(x)


def expand_dims(x: Any, axis: int = -1) -> Any:
    return _ops().expand_dims(x, axis)


def squeeze(x: Any, axis: int) -> Any:
    return _ops().squeeze(x, [axis])


def flatten(x: Any) -> Any:
    return _ops().reshape(x, [-1])


def batch_flatten(x: Any) -> Any:
    cf = _ops()
    x = cf.convert_to_tensor(x)
    return cf.reshape(x, [-1, int(np.prod(x.shape.as_list()[1:]))])


def shape(x: Any) -> Any:
    return _ops().shape(x)


def ndim(x: Any) -> Optional[int]:
    return _ops().convert_to_tensor(x).shape.rank


def tile(x: Any, n: Any) -> Any:
    """x tiled n[i] times along axis i (an int n: one axis); n may be a run-time int tensor (TF's)."""
    cf = _ops()
    return cf.tile(x, [n] if isinstance(n, int) else n if isinstance(n, cf.Tensor) else list(n))


def repeat(x: Any, n: int) -> Any:
    """[b, d] -> [b, n, d]."""
    cf = _ops()
    return cf.tile(cf.expand_dims(x, 1), [1, n, 1])


def gather(reference: Any, indices: Any) -> Any:
    return _ops().gather(reference, indices)


def one_hot(indices: Any, num_classes: int) -> Any:
    return _ops().one_hot(indices, num_classes)


def cumsum(x: Any, axis: int = 0) -> Any:
    from ..graph.ops.scan_ops import cumsum as _cumsum
    return _cumsum(x, axis=axis)


def zeros(shape: Any, dtype: Any = None, name: Optional[str] = None) -> Any:
    return variable(np.zeros(shape), dtype, name)


def ones(shape: Any, dtype: Any = None, name: Optional[str] = None) -> Any:
    return variable(np.ones(shape), dtype, name)


def zeros_like(x: Any, dtype: Any = None, name: Optional[str] = None) -> Any:
    return _ops().zeros_like(x, dtype=dtype, name=name)


def ones_like(x: Any, dtype: Any = None, name: Optional[str] = None) -> Any:
    return _ops().ones_like(x, dtype=dtype, name=name)


def random_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None, seed: Any = None) -> Any:
    return _ops().random_normal(shape, mean=mean, stddev=stddev, dtype=dtype or floatx(), seed=seed)


def random_uniform(shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = None, seed: Any = None) -> Any:
    return _ops().random_uniform(shape, minval=minval, maxval=maxval, dtype=dtype or floatx(), seed=seed)


def switch(condition: Any, then_expression: Any, else_expression: Any) -> Any:
    cf = _ops()
    then_v = then_expression() if callable(then_expression) else then_expression
    else_v = else_expression() if callable(else_expression) else else_expression
    return cf.where(cf.cast(condition, cf.bool) if cf.convert_to_tensor(condition).shape.rank else
                    cf.fill(cf.shape(then_v), cf.cast(condition, cf.bool)), then_v, else_v)


def in_train_phase(x: Any, alt: Any, training: Any = None) -> Any:
    return switch(learning_phase() if training is None else training, x, alt)


def in_test_phase(x: Any, alt: Any, training: Any = None) -> Any:
    return in_train_phase(alt, x, training)


def l2_normalize(x: Any, axis: Any = None) -> Any:
    return _ops().nn.l2_normalize(x, axis=axis)


def relu(x: Any, alpha: float = 0.0, max_value: Optional[float] = None, threshold: float = 0.0) -> Any:
    cf = _ops()
    y = cf.where(x > threshold, x, alpha * (x - threshold)) if (alpha or threshold) else cf.nn.relu(x)
    return y if max_value is None else cf.minimum(y, float(max_value))


def softmax(x: Any, axis: int = -1) -> Any:
    return _ops().nn.softmax(x, axis=axis)


def sigmoid(x: Any) -> Any:
    return _ops().sigmoid(x)


def tanh(x: Any) -> Any:
    return _ops().tanh(x)


def softplus(x: Any) -> Any:
    return _ops().nn.softplus(x)


def categorical_crossentropy(target: Any, output: Any, from_logits: bool = False, axis: int = -1) -> Any:
    from .losses import categorical_crossentropy as _cce
    return _cce(target, output, from_logits=from_logits)


def sparse_categorical_crossentropy(target: Any, output: Any, from_logits: bool = False, axis: int = -1) -> Any:
    from .losses import sparse_categorical_crossentropy as _scce
    return _scce(target, output, from_logits=from_logits)


def binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> Any:
    """Elementwise (no mean over the last axis, as Keras's backend function)."""
    cf = _ops()
    output = cf.convert_to_tensor(output)
    if not from_logits:
        if output.op.type == "Sigmoid":
            output = output.op.inputs[0]
        else:
            p = cf.clip_by_value(output, epsilon(), 1.0 - epsilon())
            output = cf.log(p / (1.0 - p))
    return cf.nn.sigmoid_cross_entropy_with_logits(labels=cf.cast(target, output.dtype), logits=output)


def gradients(loss: Any, variables: Any) -> Any:
    return _ops().gradients(loss, variables)


def stop_gradient(x: Any) -> Any:
    return _ops().stop_gradient(x)


def function(inputs: Sequence[Any], outputs: Any, updates: Any = None, **kwargs: Any) -> Any:
    """A callable running `outputs` (and `updates`) in Keras's session on a list of input values."""
    ins = list(inputs)
    outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    ups = list(updates or [])

    def run(values: Sequence[Any]) -> List[Any]:
        if len(values) != len(ins):
            raise ValueError(f"this function takes {len(ins)} inputs, got {len(values)}")
        res = get_session().run(list(outs) + ups, dict(zip(ins, values)))
        return res[:len(outs)]
    return run
