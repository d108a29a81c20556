"""Small reference models (an MLP and a CNN classifier) shared by scripts/train.py and benchmarks.

Each builder adds its ops to the default graph and returns a `Model`: the placeholders to
feed (x, y), the logits, the mean sparse softmax cross-entropy `loss`, the batch `accuracy`
and, given an optimizer, the `train_op`.  Weights start from a Glorot-uniform draw made
with NumPy from `seed` (biases at zero), so a model is the same on every rank and every run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from .. import dtypes as _dt
from ..graph.graph import Tensor, Operation, name_scope
from ..graph.ops import array_ops, constant_op, math_ops
from ..graph.variables import Variable

__all__ = ["Model", "build_mlp", "build_cnn", "make_optimizer", "OPTIMIZERS", "DEFAULT_LEARNING_RATES"]

# default learning rates that train the bundled models well with each optimizer
DEFAULT_LEARNING_RATES = {"sgd": 0.1, "momentum": 0.05, "adam": 3e-3, "adagrad": 0.05, "rmsprop": 1e-3}
OPTIMIZERS = tuple(DEFAULT_LEARNING_RATES)


@dataclass
class Model:
    """Handles of a built classifier.

    x: placeholder (None, *input_shape) float; y: placeholder (None,) int32 labels;
    logits (None, num_classes); loss: scalar mean cross-entropy; accuracy: scalar fraction
    of the batch classified correctly; train_op: one optimizer step (None without optimizer);
    global_step: the int64 step counter the train_op increments (or None).
    """

    name: str
    x: Tensor
    y: Tensor
    logits: Tensor
    loss: Tensor
    accuracy: Tensor
    train_op: Optional[Operation] = None
    global_step: Any = None
    variables: List[Variable] = field(default_factory=list)
    input_shape: Tuple[int, ...] = ()
    num_classes: int = 0

    @property
    def num_params(self) -> int:
        """Number of trainable scalars."""
        return int(sum(int(np.prod(v.shape.as_list(), dtype=np.int64)) for v in self.variables))


def make_optimizer(name: str, learning_rate: Optional[float] = None, sparse: bool = False) -> Any:
    """A cf.train optimizer by short name: sgd, momentum (0.9), adam, adagrad, rmsprop.  sparse:
    for models whose big variables get sparse gradients (embedding tables), "adam" is
    LazyAdamOptimizer (the others already update only the touched rows, as in TF1)."""
    from .. import train
    if name not in DEFAULT_LEARNING_RATES:
        raise ValueError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")
    lr = DEFAULT_LEARNING_RATES[name] if learning_rate is None else float(learning_rate)
    if name == "sgd":
        return train.GradientDescentOptimizer(lr)
    if name == "momentum":
        return train.MomentumOptimizer(lr, momentum=0.9)
    if name == "adam":
        return train.LazyAdamOptimizer(lr) if sparse else train.AdamOptimizer(lr)
    if name == "adagrad":
        return train.AdagradOptimizer(lr)
    return train.RMSPropOptimizer(lr)


def _glorot(rng: np.random.Generator, shape: Sequence[int], fan_in: int, fan_out: int, dtype: Any) -> np.ndarray:
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=tuple(shape)).astype(dtype)


def _activation(name: Any) -> Callable[[Tensor], Tensor]:
    if callable(name):
        return name
    from .. import nn
    if name in ("relu", "tanh", "sigmoid", "leaky_relu"):
        return getattr(nn, name)
    raise ValueError(f"unknown activation {name!r}; use 'relu', 'tanh', 'sigmoid', 'leaky_relu' or a callable")


def _head(name: str, x: Tensor, y: Tensor, logits: Tensor, optimizer: Any, global_step: bool,
          variables: List[Variable], input_shape: Tuple[int, ...], num_classes: int) -> Model:
    from .. import nn
    with name_scope("loss"):
        xent = nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        loss = math_ops.reduce_mean(xent, name="loss")
    with name_scope("accuracy"):
        pred = math_ops.argmax(logits, axis=1, output_type=_dt.int32)
        accuracy = math_ops.reduce_mean(math_ops.cast(math_ops.equal(pred, y), _dt.float32), name="accuracy")
    train_op = None
    step = None
    if optimizer is not None:
        from .. import train
        if global_step:
            step = train.get_or_create_global_step()
        train_op = optimizer.minimize(loss, global_step=step, var_list=variables)
    return Model(name, x, y, logits, loss, accuracy, train_op, step, variables, input_shape, num_classes)


def _dense(h: Tensor, n_in: int, n_out: int, rng: np.random.Generator, dtype: Any, name: str,
           variables: List[Variable]) -> Tensor:
    w = Variable(_glorot(rng, (n_in, n_out), n_in, n_out, dtype.np), name=f"{name}/kernel")
    b = Variable(np.zeros((n_out,), dtype.np), name=f"{name}/bias")
    variables += [w, b]
    return math_ops.matmul(h, w) + b


def build_mlp(input_dim: int, hidden: Sequence[int] = (128,), num_classes: int = 10, optimizer: Any = None,
              activation: Any = "relu", seed: int = 0, dtype: Any = _dt.float32,
              global_step: bool = True, name: str = "mlp") -> Model:
    """A multilayer perceptron input_dim -> hidden... -> num_classes (activation between layers).

    x: (None, input_dim) `dtype`; y: (None,) int32.  With an optimizer (e.g. from
    make_optimizer), train_op runs one step on the mean cross-entropy; `global_step`
    adds the step counter the optimizer increments.
    """
    dt = _dt.as_dtype(dtype)
    act = _activation(activation)
    rng = np.random.default_rng(seed)
    variables: List[Variable] = []
    with name_scope(name):
        x = constant_op.placeholder(dt, (None, int(input_dim)), name="x")
        y = constant_op.placeholder(_dt.int32, (None,), name="y")
        h, n_in = x, int(input_dim)
        for i, n in enumerate(hidden):
            h = act(_dense(h, n_in, int(n), rng, dt, f"dense{i}", variables))
            n_in = int(n)
        logits = _dense(h, n_in, int(num_classes), rng, dt, "logits", variables)
        return _head(name, x, y, logits, optimizer, global_step, variables, (int(input_dim),), int(num_classes))


def build_cnn(input_shape: Sequence[int] = (8, 8, 1), num_classes: int = 10, filters: Sequence[int] = (16, 32),
              kernel_size: int = 3, dense: int = 64, optimizer: Any = None, seed: int = 0,
              dtype: Any = _dt.float32, global_step: bool = True, name: str = "cnn") -> Model:
    """A small convolutional classifier on NHWC images of `input_shape` (H, W, C).

    Each entry of `filters` adds conv (kernel_size x kernel_size, SAME, stride 1) + ReLU +
    2x2 max-pool (stride 2, SAME); then flatten -> dense(`dense`) + ReLU -> logits.
    """
    from .. import nn
    dt = _dt.as_dtype(dtype)
    h_, w_, c_ = (int(d) for d in input_shape)
    rng = np.random.default_rng(seed)
    variables: List[Variable] = []
    k = int(kernel_size)
    with name_scope(name):
        x = constant_op.placeholder(dt, (None, h_, w_, c_), name="x")
        y = constant_op.placeholder(_dt.int32, (None,), name="y")
        h, c_in, hh, ww = x, c_, h_, w_
        for i, f in enumerate(filters):
            f = int(f)
            with name_scope(f"conv{i}"):
                kern = Variable(_glorot(rng, (k, k, c_in, f), k * k * c_in, k * k * f, dt.np), name="kernel")
                bias = Variable(np.zeros((f,), dt.np), name="bias")
                variables += [kern, bias]
                h = nn.conv2d(h, kern, strides=[1, 1, 1, 1], padding="SAME")
                h = nn.relu(nn.bias_add(h, bias))
                h = nn.max_pool2d(h, ksize=2, strides=2, padding="SAME")
            c_in, hh, ww = f, -(-hh // 2), -(-ww // 2)
        flat = hh * ww * c_in
        h = array_ops.reshape(h, (-1, flat))
        h = nn.relu(_dense(h, flat, int(dense), rng, dt, "dense", variables))
        logits = _dense(h, int(dense), int(num_classes), rng, dt, "logits", variables)
        return _head(name, x, y, logits, optimizer, global_step, variables, (h_, w_, c_), int(num_classes))
