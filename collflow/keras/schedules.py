"""tf.keras.optimizers.schedules (TF 1.15): learning rates as functions of the step count.

A Keras optimizer given a schedule as its learning_rate evaluates it at `iterations` (the count
before the step's increment, cast to the variable's dtype) in every training step, as
OptimizerV2's _decayed_lr does; model.save writes the schedule's {"class_name", "config"} in
the optimizer's config and load_model makes it again.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay", "PolynomialDecay",
           "InverseTimeDecay", "CosineDecay", "CosineDecayRestarts", "serialize", "deserialize"]


def _cf() -> Any:
    import collflow as cf  # the public ops (imported on use: keras sits above them)
    return cf


class LearningRateSchedule:
    """The base class: subclasses define __call__(step) -> a scalar tensor, and get_config."""

    def __call__(self, step: Any) -> Any:
        raise NotImplementedError("Learning rate schedule must override __call__")

    def get_config(self) -> Dict[str, Any]:
        raise NotImplementedError("Learning rate schedule must override get_config")

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "LearningRateSchedule":
        return cls(**config)


def _rate_and_step(initial: Any, step: Any) -> tuple:
    # the rate's dtype (float32 for a Python number) and the step cast to it, as TF's schedules
    cf = _cf()
    lr = cf.convert_to_tensor(initial, name="initial_learning_rate")
    return lr, cf.cast(step, lr.dtype)


def _rate_and_progress(sched: Any, step: Any) -> Tuple[Any, Any]:
    """(the initial rate, step / decay_steps floored when staircase) of the exponential and
    inverse-time schedules."""
    cf = _cf()
    lr, s = _rate_and_step(sched.initial_learning_rate, step)
    p = s / cf.cast(sched.decay_steps, lr.dtype)
    return lr, (cf.floor(p) if sched.staircase else p)


class ExponentialDecay(LearningRateSchedule):
    """initial_learning_rate * decay_rate ** (step / decay_steps) (the exponent floored with staircase)."""

    def __init__(self, initial_learning_rate: Any, decay_steps: Any, decay_rate: Any, staircase: bool = False,
                 name: Optional[str] = None):
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.decay_rate, self.staircase, self.name = decay_rate, staircase, name

    def __call__(self, step: Any) -> Any:
        cf = _cf()
        with cf.name_scope(self.name or "ExponentialDecay"):
            lr, p = _rate_and_progress(self, step)
            return cf.multiply(lr, cf.pow(cf.cast(self.decay_rate, lr.dtype), p))

    def get_config(self) -> Dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i],
    values[-1] after the last boundary."""

    def __init__(self, boundaries: Sequence[Any], values: Sequence[Any], name: Optional[str] = None):
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of values")
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step: Any) -> Any:
        cf = _cf()
        with cf.name_scope(self.name or "PiecewiseConstant"):
            vals = [cf.convert_to_tensor(v) for v in self.values]
            x = cf.convert_to_tensor(step)
            out = vals[-1]
            # from the last interval down: the first boundary the step does not pass picks the value
            for b, v in reversed(list(zip(self.boundaries, vals[:-1]))):
                out = cf.where(x <= cf.cast(b, x.dtype), v, out)
            return out

    def get_config(self) -> Dict[str, Any]:
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """(initial - end) * (1 - step / decay_steps) ** power + end, the step held at decay_steps
    (with cycle, decay_steps grows to the next multiple past the step instead)."""

    def __init__(self, initial_learning_rate: Any, decay_steps: Any, end_learning_rate: Any = 0.0001,
                 power: Any = 1.0, cycle: bool = False, name: Optional[str] = None):
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power, self.cycle, self.name = end_learning_rate, power, cycle, name

    def __call__(self, step: Any) -> Any:
        cf = _cf()
        with cf.name_scope(self.name or "PolynomialDecay"):
            lr, s = _rate_and_step(self.initial_learning_rate, step)
            end = cf.cast(self.end_learning_rate, lr.dtype)
            steps = cf.cast(self.decay_steps, lr.dtype)
            if self.cycle:
                # step 0 counts as the first cycle
                mult = cf.where(cf.equal(s, 0.0), cf.ones_like(s), cf.ceil(s / steps))
                steps = steps * mult
            else:
                s = cf.minimum(s, steps)
            frac = s / steps
            return cf.add(cf.multiply(lr - end, cf.pow(1.0 - frac, cf.cast(self.power, lr.dtype))), end)

    def get_config(self) -> Dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate, "power": self.power, "cycle": self.cycle,
                "name": self.name}


class InverseTimeDecay(LearningRateSchedule):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps) (the ratio floored with staircase)."""

    def __init__(self, initial_learning_rate: Any, decay_steps: Any, decay_rate: Any, staircase: bool = False,
                 name: Optional[str] = None):
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.decay_rate, self.staircase, self.name = decay_rate, staircase, name

    def __call__(self, step: Any) -> Any:
        cf = _cf()
        with cf.name_scope(self.name or "InverseTimeDecay"):
            lr, p = _rate_and_progress(self, step)
            return cf.div(lr, 1.0 + cf.cast(self.decay_rate, lr.dtype) * p)

    def get_config(self) -> Dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)
    (tf_keras 2.x's place; TF 1.15 had it as tf.keras.experimental.CosineDecay), with tf_keras's
    optional linear warmup from initial_learning_rate to warmup_target over warmup_steps."""

    def __init__(self, initial_learning_rate: Any, decay_steps: Any, alpha: float = 0.0, name: Optional[str] = None,
                 warmup_target: Any = None, warmup_steps: Any = 0):
        self.initial_learning_rate, self.decay_steps, self.alpha, self.name = initial_learning_rate, decay_steps, \
            alpha, name
        self.warmup_target, self.warmup_steps = warmup_target, warmup_steps

    def _decay(self, s: Any, steps: Any, lr: Any) -> Any:
        cf = _cf()
        frac = s / steps
        cosine = 0.5 * (1.0 + cf.cos(cf.constant(float(np.pi), dtype=lr.dtype) * frac))
        return cf.multiply(lr, (1.0 - cf.cast(self.alpha, lr.dtype)) * cosine + cf.cast(self.alpha, lr.dtype))

    def __call__(self, step: Any) -> Any:
        cf = _cf()
        with cf.name_scope(self.name or "CosineDecay"):
            lr, s = _rate_and_step(self.initial_learning_rate, step)
            steps = cf.cast(self.decay_steps, lr.dtype)
            if self.warmup_target is None:
                return self._decay(cf.minimum(s, steps), steps, lr)
            warm = cf.cast(self.warmup_steps, lr.dtype)
            target = cf.cast(self.warmup_target, lr.dtype)
            s = cf.minimum(s, steps + warm)
            rising = (target - lr) * (s / warm) + lr
            return cf.where(s < warm, rising, self._decay(s - warm, steps, target))

    def get_config(self) -> Dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "alpha": self.alpha, "name": self.name, "warmup_target": self.warmup_target,
                "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay restarted after first_decay_steps, each period t_mul times longer and m_mul
    times lower (SGDR; tf_keras 2.x's place, TF 1.15's tf.keras.experimental)."""

    def __init__(self, initial_learning_rate: Any, first_decay_steps: Any, t_mul: float = 2.0, m_mul: float = 1.0,
                 alpha: float = 0.0, name: Optional[str] = None):
        self.initial_learning_rate, self.first_decay_steps = initial_learning_rate, first_decay_steps
        self._t_mul, self._m_mul, self.alpha, self.name = t_mul, m_mul, alpha, name

    def __call__(self, step: Any) -> Any:
        cf = _cf()
        with cf.name_scope(self.name or "SGDRDecay"):
            lr, s = _rate_and_step(self.initial_learning_rate, step)
            frac = s / cf.cast(self.first_decay_steps, lr.dtype)
            t_mul = cf.cast(self._t_mul, lr.dtype)
            if float(self._t_mul) == 1.0:
                restart = cf.floor(frac)
                frac = frac - restart
            else:
                # the period index in a geometric series of lengths 1, t_mul, t_mul^2, ...
                restart = cf.floor(cf.log(1.0 - frac * (1.0 - t_mul)) / cf.log(t_mul))
                done = (1.0 - cf.pow(t_mul, restart)) / (1.0 - t_mul)
                frac = (frac - done) / cf.pow(t_mul, restart)
            m_fac = cf.pow(cf.cast(self._m_mul, lr.dtype), restart)
            cosine = 0.5 * m_fac * (1.0 + cf.cos(cf.constant(float(np.pi), dtype=lr.dtype) * frac))
            alpha = cf.cast(self.alpha, lr.dtype)
            return cf.multiply(lr, (1.0 - alpha) * cosine + alpha)

    def get_config(self) -> Dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate, "first_decay_steps": self.first_decay_steps,
                "t_mul": self._t_mul, "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


_CLASSES: List[type] = [ExponentialDecay, PiecewiseConstantDecay, PolynomialDecay, InverseTimeDecay, CosineDecay,
                        CosineDecayRestarts]


def serialize(learning_rate_schedule: LearningRateSchedule) -> Dict[str, Any]:
    """{"class_name", "config"} of a schedule."""
    if not isinstance(learning_rate_schedule, LearningRateSchedule):
        raise ValueError(f"Cannot serialize {learning_rate_schedule!r}: not a LearningRateSchedule")
    return {"class_name": type(learning_rate_schedule).__name__, "config": learning_rate_schedule.get_config()}


def deserialize(config: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None) -> LearningRateSchedule:
    """The schedule serialize described (custom classes through custom_objects)."""
    name = config.get("class_name")
    table = {c.__name__: c for c in _CLASSES}
    table.update(custom_objects or {})
    cls = table.get(name)
    if cls is None:
        raise ValueError(f"Unknown decay: {name}")
    return cls.from_config(dict(config.get("config") or {}))
