"""Learning-rate schedules: functions of the global step returning a scalar Tensor (TF 1.x).

Each builds a few scalar graph ops, so the rate is recomputed from the step on every run;
pass the result as an optimizer's learning_rate.  The step is cast to the rate's dtype.

    step = cf.train.get_or_create_global_step()
    lr = cf.train.exponential_decay(0.1, step, decay_steps=1000, decay_rate=0.96, staircase=True)
    train_op = cf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops, math_ops
from ..graph.ops.constant_op import constant, identity

__all__ = ["exponential_decay", "piecewise_constant", "polynomial_decay", "cosine_decay",
           "inverse_time_decay", "natural_exp_decay", "cosine_decay_restarts", "linear_cosine_decay",
           "noisy_linear_cosine_decay", "piecewise_constant_decay"]


def _graph_of(*xs: Any) -> _g.Graph:
    for x in xs:
        g = getattr(x, "graph", None)
        if isinstance(g, _g.Graph):
            return g
    return _g.get_default_graph()


def _start(learning_rate: Any, global_step: Any, fname: str) -> Tuple[_g.Tensor, _g.Tensor]:
    """(rate as a float Tensor, step cast to its dtype); global_step is required."""
    if global_step is None:
        raise ValueError(f"global_step is required for {fname}.")
    if isinstance(learning_rate, (int, float)) and not isinstance(learning_rate, bool):
        lr = constant(float(learning_rate), dtype=_dt.float32, name="learning_rate")
    else:
        lr = _g.convert_to_tensor(learning_rate, name="learning_rate")
    if not lr.dtype.is_floating:
        raise TypeError(f"{fname}: learning_rate must be floating point, got {lr.dtype.name}")
    step = _g.convert_to_tensor(global_step)
    if step.dtype != lr.dtype:
        step = math_ops.cast(step, lr.dtype)
    return lr, step


def _const(value: Any, dtype: _dt.DType, name: str) -> _g.Tensor:
    if isinstance(value, (_g.Tensor,)) or hasattr(value, "handle"):
        t = _g.convert_to_tensor(value)
        return t if t.dtype == dtype else math_ops.cast(t, dtype)
    return constant(value, dtype=dtype, name=name)


def _floor(x: _g.Tensor) -> _g.Tensor:
    # floor_divide by 1 is exactly floor for floats
    return math_ops.floordiv(x, 1.0)


def _decay_progress(step: _g.Tensor, decay_steps: Any, staircase: bool, dtype: _dt.DType) -> _g.Tensor:
    p = step / _const(decay_steps, dtype, "decay_steps")
    return _floor(p) if staircase else p


def _check_steps(decay_steps: Any, fname: str) -> None:
    if isinstance(decay_steps, (int, float)) and not decay_steps > 0:
        raise ValueError(f"{fname}: decay_steps must be positive, got {decay_steps}")


def exponential_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """learning_rate * decay_rate ^ (global_step / decay_steps) (the exponent floored if staircase)."""
    _check_steps(decay_steps, "exponential_decay")
    g = _graph_of(learning_rate, global_step)
    with g.as_default(), g.name_scope(name or "ExponentialDecay"):
        lr, step = _start(learning_rate, global_step, "exponential_decay")
        p = _decay_progress(step, decay_steps, staircase, lr.dtype)
        return math_ops.multiply(lr, math_ops.pow(_const(decay_rate, lr.dtype, "decay_rate"), p), name="rate")


def natural_exp_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """learning_rate * exp(-decay_rate * global_step / decay_steps) (floored if staircase)."""
    _check_steps(decay_steps, "natural_exp_decay")
    g = _graph_of(learning_rate, global_step)
    with g.as_default(), g.name_scope(name or "NaturalExpDecay"):
        lr, step = _start(learning_rate, global_step, "natural_exp_decay")
        p = _decay_progress(step, decay_steps, staircase, lr.dtype)
        return math_ops.multiply(lr, math_ops.exp(-_const(decay_rate, lr.dtype, "decay_rate") * p), name="rate")


def inverse_time_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """learning_rate / (1 + decay_rate * global_step / decay_steps) (floored if staircase)."""
    _check_steps(decay_steps, "inverse_time_decay")
    g = _graph_of(learning_rate, global_step)
    with g.as_default(), g.name_scope(name or "InverseTimeDecay"):
        lr, step = _start(learning_rate, global_step, "inverse_time_decay")
        p = _decay_progress(step, decay_steps, staircase, lr.dtype)
        denom = 1.0 + _const(decay_rate, lr.dtype, "decay_rate") * p
        return math_ops.divide(lr, denom, name="rate")


def polynomial_decay(learning_rate: Any, global_step: Any, decay_steps: Any, end_learning_rate: Any = 0.0001,
                     power: Any = 1.0, cycle: bool = False, name: Optional[str] = None) -> _g.Tensor:
    """(lr - end) * (1 - step / decay_steps) ^ power + end, with step capped at decay_steps.

    With cycle=True, decay_steps grows to the next multiple of itself above the step instead.
    """
    _check_steps(decay_steps, "polynomial_decay")
    g = _graph_of(learning_rate, global_step)
    with g.as_default(), g.name_scope(name or "PolynomialDecay"):
        lr, step = _start(learning_rate, global_step, "polynomial_decay")
        dt = lr.dtype
        ds = _const(decay_steps, dt, "decay_steps")
        end = _const(end_learning_rate, dt, "end_learning_rate")
        if cycle:
            ceil = -_floor(-(step / ds))
            mult = array_ops.where(math_ops.equal(step, 0.0), constant(1.0, dtype=dt), ceil)
            ds = ds * mult
        else:
            step = math_ops.minimum(step, ds)
        frac = 1.0 - step / ds
        return math_ops.add((lr - end) * math_ops.pow(frac, _const(power, dt, "power")), end, name="rate")


def cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any, alpha: Any = 0.0,
                 name: Optional[str] = None) -> _g.Tensor:
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)."""
    _check_steps(decay_steps, "cosine_decay")
    g = _graph_of(learning_rate, global_step)
    with g.as_default(), g.name_scope(name or "CosineDecay"):
        lr, step = _start(learning_rate, global_step, "cosine_decay")
        dt = lr.dtype
        ds = _const(decay_steps, dt, "decay_steps")
        a = _const(alpha, dt, "alpha")
        done = math_ops.minimum(step, ds) / ds
        cosine = 0.5 * (1.0 + math_ops.cos(math.pi * done))
        return math_ops.multiply(lr, (1.0 - a) * cosine + a, name="rate")


def cosine_decay_restarts(learning_rate: Any, global_step: Any, first_decay_steps: Any, t_mul: Any = 2.0,
                          m_mul: Any = 1.0, alpha: Any = 0.0, name: Optional[str] = None) -> _g.Tensor:
    """Cosine decay with warm restarts (SGDR): period i lasts first_decay_steps * t_mul**i
    steps and starts from learning_rate * m_mul**i; alpha is the floor, as a fraction."""
    _check_steps(first_decay_steps, "cosine_decay_restarts")
    g = _graph_of(learning_rate, global_step)
    with g.as_default(), g.name_scope(name or "SGDRDecay"):
        lr, step = _start(learning_rate, global_step, "cosine_decay_restarts")
        dt = lr.dtype
        done = step / _const(first_decay_steps, dt, "first_decay_steps")
        tm, mm, a = _const(t_mul, dt, "t_mul"), _const(m_mul, dt, "m_mul"), _const(alpha, dt, "alpha")

        def geometric() -> Tuple[_g.Tensor, _g.Tensor]:
            i = _floor(math_ops.log(1.0 - done * (1.0 - tm)) / math_ops.log(tm))
            before = (1.0 - math_ops.pow(tm, i)) / (1.0 - tm)   # the periods already completed
            return i, (done - before) / math_ops.pow(tm, i)

        def uniform() -> Tuple[_g.Tensor, _g.Tensor]:
            i = _floor(done)
            return i, done - i

        if isinstance(t_mul, (int, float)):  # the branch known now (TF chooses it at run time)
            i, frac = uniform() if float(t_mul) == 1.0 else geometric()
        else:
            from ..graph.control_flow import cond
            i, frac = cond(math_ops.equal(tm, 1.0), uniform, geometric)
        cosine = 0.5 * math_ops.pow(mm, i) * (1.0 + math_ops.cos(math.pi * frac))
        return math_ops.multiply(lr, (1.0 - a) * cosine + a, name="rate")


def linear_cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any, num_periods: Any = 0.5,
                        alpha: Any = 0.0, beta: Any = 0.001, name: Optional[str] = None) -> _g.Tensor:
    """learning_rate * ((alpha + linear) * cosine + beta): linear falls from 1 to 0 over
    decay_steps, cosine makes num_periods periods over them."""
    return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta, None, name,
                          "linear_cosine_decay", "LinearCosineDecay")


def noisy_linear_cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any, initial_variance: Any = 1.0,
                              variance_decay: Any = 0.55, num_periods: Any = 0.5, alpha: Any = 0.0,
                              beta: Any = 0.001, name: Optional[str] = None) -> _g.Tensor:
    """linear_cosine_decay with Gaussian noise of variance initial_variance /
    (1 + step)**variance_decay added to the linear term (collflow's random stream)."""
    return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                          (initial_variance, variance_decay), name, "noisy_linear_cosine_decay",
                          "NoisyLinearCosineDecay")


def _linear_cosine(learning_rate: Any, global_step: Any, decay_steps: Any, num_periods: Any, alpha: Any,
                   beta: Any, noise: Any, name: Optional[str], fname: str, scope: str) -> _g.Tensor:
    _check_steps(decay_steps, fname)
    g = _graph_of(learning_rate, global_step)
    with g.as_default(), g.name_scope(name or scope):
        lr, step = _start(learning_rate, global_step, fname)
        dt = lr.dtype
        ds = _const(decay_steps, dt, "decay_steps")
        step = math_ops.minimum(step, ds)
        linear = (ds - step) / ds
        if noise is not None:
            from ..graph.ops.random_ops import random_normal
            var = _const(noise[0], dt, "initial_variance") / math_ops.pow(1.0 + step, _const(noise[1], dt,
                                                                                           "variance_decay"))
            linear = linear + math_ops.sqrt(var) * random_normal([], dtype=dt)
        fraction = 2.0 * _const(num_periods, dt, "num_periods") * (step / ds)
        cosine = 0.5 * (1.0 + math_ops.cos(math.pi * fraction))
        return math_ops.multiply(lr, (_const(alpha, dt, "alpha") + linear) * cosine + _const(beta, dt, "beta"),
                                 name="rate")


def piecewise_constant(x: Any, boundaries: Sequence[Any], values: Sequence[Any],
                       name: Optional[str] = None) -> _g.Tensor:
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <= boundaries[i],
    values[-1] once x > boundaries[-1]."""
    boundaries, values = list(boundaries), list(values)
    if len(values) != len(boundaries) + 1:
        raise ValueError(f"piecewise_constant needs one more value than boundaries: got {len(boundaries)} "
                         f"boundaries and {len(values)} values")
    if any(not (isinstance(b, (_g.Tensor,)) or hasattr(b, "handle")) for b in boundaries):
        nums = [b for b in boundaries if isinstance(b, (int, float))]
        if nums != sorted(nums):
            raise ValueError(f"piecewise_constant: boundaries must increase, got {boundaries}")
    g = _graph_of(x, *values)
    with g.as_default(), g.name_scope(name or "PiecewiseConstant"):
        xt = _g.convert_to_tensor(x)
        dt = next((_g.convert_to_tensor(v).dtype for v in values if isinstance(v, _g.Tensor) or hasattr(v, "handle")),
                  None)
        if dt is None:  # Python numbers: float32 if any is a float, else int32 (as constants would be)
            dt = _dt.float32 if any(isinstance(v, float) for v in values) else _dt.int32
        vals = [_const(v, dt, f"value_{i}") for i, v in enumerate(values)]
        out = vals[-1]
        for i in range(len(boundaries) - 1, -1, -1):
            b = _const(boundaries[i], xt.dtype, f"boundary_{i}")
            out = array_ops.where(math_ops.less_equal(xt, b), vals[i], out)
        return identity(out, name="rate")


piecewise_constant_decay = piecewise_constant  # TF1's other name for it
