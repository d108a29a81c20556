"""tf.random.experimental.Generator (TF 1.15), create_rng_state, get/set_global_generator
and Algorithm: a random-number generator whose Philox state is an int64 resource variable.

The state is [counter low, counter high, key] (THREEFRY's would be [counter, key]).  Every
draw is one op that reads the state and advances it in the same run (graph/ops/
stateful_random_ops.py), so each run of a draw gives new numbers, a Session run of
`skip(n)` moves the state as `normal([n])` would, and the values equal TensorFlow's.
The state variable is an ordinary non-trainable global variable named "Variable" (TF
1.15's name), so tf.train.Saver saves and restores it.

Differences from TF 1.15, which only half worked in graph mode: `skip` returns the state
before the skip (TF 2.x's RngReadAndSkip) and the reset_* methods return the assignment,
so both can be run; `split` works on graph tensors; an implicit global generator is made
again when the default graph changed.
"""
from __future__ import annotations

import enum
from typing import Any, List, Optional

import numpy as np

from .. import dtypes as _dt
from . import graph as _g
from .ops import array_ops as _a
from .ops import math_ops as _m
from .ops import stateful_random_ops as _sr
from .variables import Variable

__all__ = ["Algorithm", "Generator", "create_rng_state", "get_global_generator", "set_global_generator"]

_SPAN = 1 << 64
_MAX = (1 << 63) - 1


class Algorithm(enum.Enum):
    """The RNG algorithms (TF's ids)."""
    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


RNG_ALG_PHILOX, RNG_ALG_THREEFRY = Algorithm.PHILOX.value, Algorithm.THREEFRY.value
DEFAULT_ALGORITHM = RNG_ALG_PHILOX


def _alg_to_int(alg: Any) -> Any:
    """An algorithm given as an int, Algorithm, name ("philox", "threefry", "auto_select")
    or Tensor, as TF's id (a Tensor stays one)."""
    if isinstance(alg, Algorithm):
        return alg.value
    if isinstance(alg, (bool, np.bool_)):
        raise TypeError(f"Can't convert argument `alg` (of value {alg} and type {type(alg)}) to int.")
    if isinstance(alg, (int, np.integer)):
        return int(alg)
    if isinstance(alg, _g.Tensor):
        return alg
    if isinstance(alg, str):
        canon = alg.strip().lower().replace("-", "").replace("_", "")
        ids = {"philox": 1, "threefry": 2, "autoselect": 3}
        if canon in ids:
            return ids[canon]
        raise ValueError(f"Argument `alg` got unsupported value {alg}. Supported values are "
                         f"{Algorithm.PHILOX}, {Algorithm.THREEFRY} and {Algorithm.AUTO_SELECT}.")
    raise TypeError(f"Can't convert argument `alg` (of value {alg} and type {type(alg)}) to int.")


def _state_size(alg: int) -> int:
    sizes = {RNG_ALG_PHILOX: 3, RNG_ALG_THREEFRY: 2, Algorithm.AUTO_SELECT.value: 3}
    if alg not in sizes:
        raise ValueError(f"Unsupported algorithm id: {alg}")
    return sizes[alg]


def _uint_to_int(n: Any) -> Any:
    if isinstance(n, (list, tuple)):
        return [_uint_to_int(x) for x in n]
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool) and int(n) > _MAX:
        return int(n) - _SPAN
    return n


def _state_value(t: Any) -> Any:
    """A state (or key/counter) as int64: a NumPy array, or a Tensor for a Tensor."""
    if isinstance(t, Variable):
        t = t.value()
    if isinstance(t, _g.Tensor):
        return t if t.dtype == _dt.int64 else _m.cast(t, _dt.int64)
    a = np.asarray(_uint_to_int(t.tolist() if isinstance(t, np.ndarray) else t))
    if a.dtype.kind not in "iub":
        raise TypeError(f"an RNG state must be integers, got {a.dtype.name}")
    return a.astype(np.int64)


def _shape_of(v: Any) -> Any:
    """A static shape as a list (None: unknown rank) of an array, Tensor or Variable."""
    if isinstance(v, np.ndarray):
        return list(v.shape)
    return v.shape.as_list() if v.shape.rank is not None else None


def _check_shape(v: Any, size: int, what: str) -> None:
    shp = _shape_of(v)
    if shp is not None and (len(shp) != 1 or shp[0] not in (None, size)):
        raise ValueError(f"{what} must have shape [{size}] for this algorithm, got {shp}")


def create_rng_state(seed: Any, alg: Any = None, *, algorithm: Any = None) -> Any:
    """The state for `seed` (an integer of up to 64 * state-size bits, or a 1-D integer
    vector): the seed's 64-bit words, low word last, cut to the state's size or padded with
    zeros on the left (so a small seed is the key, not the counter).  A NumPy array, or a
    Tensor for a Tensor seed.  TF 1.15 names the second argument `algorithm`."""
    a = alg if alg is not None else algorithm
    if a is None:
        raise TypeError("create_rng_state() needs the algorithm (`alg`)")
    size = _state_size(_alg_to_int(a))
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        s, words = int(seed), []
        for _ in range(size):
            words.append(s & (_SPAN - 1))
            s >>= 64
        seed = words
    if isinstance(seed, _g.Tensor):
        t = _a.reshape(_state_value(seed), [-1])[:size]
        n = _a.shape(t, out_type=_dt.int64)[0]
        pad = _a.zeros(_a.reshape(_m.maximum(np.int64(size) - n, np.int64(0)), [1]), dtype=_dt.int64)
        out = _a.concat([pad, t], 0)
        out.set_shape([size])
        return out
    s = _state_value(seed)
    if s.ndim != 1:
        raise ValueError(f"seed should only have one dimension; got shape: {s.shape}")
    s = s[:size]
    return np.concatenate([np.zeros(size - s.shape[0], np.int64), s])


def _key_counter_state(key: Any, counter: Any, alg: Any) -> Any:
    counter, key = _state_value(counter), _state_value(key)
    if not isinstance(alg, _g.Tensor):
        _check_shape(counter, _state_size(alg) - 1, "counter")
    ks = _shape_of(key)
    if ks is not None and ks != []:
        raise ValueError(f"key must be a scalar, got shape {ks}")
    if isinstance(counter, np.ndarray) and isinstance(key, np.ndarray):
        return np.concatenate([counter.reshape(-1), key.reshape(1)])
    return _a.concat([counter, _a.reshape(key, [1])], 0)


def _shape_tensor(shape: Any) -> _g.Tensor:
    if isinstance(shape, (tuple, list)) and not shape:
        return _g.convert_to_tensor(np.zeros([0], np.int64), name="shape")
    if isinstance(shape, _g.Tensor):
        return shape
    t = _g.convert_to_tensor(shape, name="shape")
    if not t.dtype.is_integer:
        raise TypeError(f"shape must be integers, got {t.dtype.name}")
    return t


def _float_dtype(dtype: Any, what: str) -> _dt.DType:
    dt = _dt.as_dtype(dtype)
    if dt not in (_dt.float16, _dt.float32, _dt.float64):
        raise TypeError(f"{what}: dtype must be float16, float32 or float64, got {dt.name}")
    return dt


class Generator:
    """Random-number generator whose state is a variable (tf.random.experimental.Generator).

    Each draw (normal, uniform, ...) is an op that, when run, reads the state and advances
    it, so the same op gives new values at every run."""

    def __init__(self, copy_from: Optional["Generator"] = None, state: Any = None, alg: Any = None):
        if copy_from is not None:
            if state is not None or alg is not None:
                raise ValueError("Generator(copy_from=...) takes no state or alg")
            self._state_var = Variable(copy_from.state.value(), dtype=_dt.int64, trainable=False)
            self._alg = copy_from.algorithm
            return
        if state is None or alg is None:
            raise ValueError("Generator needs `copy_from`, or both `state` and `alg`")
        alg = _alg_to_int(alg)
        if isinstance(state, Variable):   # TF 2.x: a variable state is used as it is
            if not isinstance(alg, _g.Tensor):
                _check_shape(state, _state_size(alg), "state")
            if state.dtype != _dt.int64:
                raise TypeError(f"an RNG state variable must be int64, got {state.dtype.name}")
            self._state_var = state
        else:
            state = _state_value(state)
            if not isinstance(alg, _g.Tensor):
                _check_shape(state, _state_size(alg), "state")
            self._state_var = Variable(state, dtype=_dt.int64, trainable=False)
        self._alg = alg

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def from_state(cls, state: Any, alg: Any) -> "Generator":
        """A generator starting from `state`."""
        return cls(state=state, alg=alg)

    @classmethod
    def from_seed(cls, seed: Any, alg: Any = None) -> "Generator":
        """A generator whose state is create_rng_state(seed, alg) (alg: Philox by default)."""
        alg = _alg_to_int(DEFAULT_ALGORITHM if alg is None else alg)
        return cls(state=create_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg: Any = None) -> "Generator":
        """A generator whose state is drawn from the OS's entropy when it is initialized."""
        alg = _alg_to_int(DEFAULT_ALGORITHM if alg is None else alg)
        return cls(state=_sr.non_deterministic_ints([_state_size(alg)], dtype=_dt.int64), alg=alg)

    @classmethod
    def from_key_counter(cls, key: Any, counter: Any, alg: Any) -> "Generator":
        """A generator with Philox key `key` (a scalar) and counter `counter` ([2] for
        Philox): state = counter + [key]."""
        alg = _alg_to_int(alg)
        return cls(state=_key_counter_state(key, counter, alg), alg=alg)

    # -- state --------------------------------------------------------------------------
    @property
    def state(self) -> Variable:
        """The state variable (int64)."""
        return self._state_var

    @property
    def algorithm(self) -> Any:
        """The algorithm's id (1: Philox, 2: ThreeFry)."""
        return self._alg

    @property
    def key(self) -> _g.Tensor:
        """The key part of the state (its last element)."""
        if not isinstance(self._alg, _g.Tensor) and self._alg not in (1, 2, 3):
            raise ValueError(f"Unsupported algorithm id: {self._alg}")
        return self._state_var.value()[-1]

    def reset(self, state: Any) -> _g.Tensor:
        """Assigns `state` (returns the assignment, to run)."""
        state = _state_value(state)
        if not isinstance(self._alg, _g.Tensor):
            _check_shape(state, _state_size(self._alg), "state")
        return self._state_var.assign(state)

    def reset_from_seed(self, seed: Any) -> _g.Tensor:
        """Assigns create_rng_state(seed) (returns the assignment, to run)."""
        return self._state_var.assign(create_rng_state(seed, self._alg))

    def reset_from_key_counter(self, key: Any, counter: Any) -> _g.Tensor:
        """Assigns counter + [key] (returns the assignment, to run)."""
        return self._state_var.assign(_key_counter_state(key, counter, self._alg))

    def skip(self, delta: Any) -> _g.Tensor:
        """When run, advances the counter as a draw of `delta` values would, and gives the
        state before (int64 [3])."""
        return _sr.rng_read_and_skip(self._state_var.handle, self._alg, delta)

    # -- draws --------------------------------------------------------------------------
    def normal(self, shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
               name: Optional[str] = None) -> _g.Tensor:
        """N(mean, stddev^2) values of `shape`."""
        dt = _float_dtype(dtype, "normal")
        with _g.name_scope(name, "stateful_normal"):
            shp = _shape_tensor(shape)
            mu = _g.convert_to_tensor(mean, dtype=dt, name="mean")
            sig = _g.convert_to_tensor(stddev, dtype=dt, name="stddev")
            rnd = _sr.stateful_standard_normal(self._state_var.handle, self._alg, shp, dtype=dt)
            return _m.add(rnd * sig, mu)

    def truncated_normal(self, shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
                         name: Optional[str] = None) -> _g.Tensor:
        """Normal values within 2 stddev of the mean (the others drawn again)."""
        dt = _float_dtype(dtype, "truncated_normal")
        with _g.name_scope(name, "truncated_normal"):
            shp = _shape_tensor(shape)
            mu = _g.convert_to_tensor(mean, dtype=dt, name="mean")
            sig = _g.convert_to_tensor(stddev, dtype=dt, name="stddev")
            rnd = _sr.stateful_truncated_normal(self._state_var.handle, self._alg, shp, dtype=dt)
            return _m.add(rnd * sig, mu)

    def uniform(self, shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = _dt.float32,
                name: Optional[str] = None) -> _g.Tensor:
        """Uniform values in [minval, maxval) (floats: maxval defaults to 1).  Integers:
        minval + word % (maxval - minval), slightly biased as TF's; minval = maxval = None
        gives every bit pattern of the dtype."""
        dt = _dt.as_dtype(dtype)
        if dt.is_integer:
            if (minval is None) != (maxval is None):
                raise ValueError(f"For integer dtype {dt.name}, minval and maxval must be both `None` or both "
                                 f"non-`None`; got minval={minval} and maxval={maxval}")
        else:
            _float_dtype(dt, "uniform")
            if maxval is None:
                maxval = 1
        with _g.name_scope(name, "stateful_uniform"):
            shp = _shape_tensor(shape)
            h = self._state_var.handle
            if dt.is_integer and minval is None:
                return _sr.stateful_uniform_full_int(h, self._alg, shp, dtype=dt)
            lo = _g.convert_to_tensor(minval, dtype=dt, name="min")
            hi = _g.convert_to_tensor(maxval, dtype=dt, name="max")
            if dt.is_integer:
                if dt not in (_dt.int32, _dt.int64):
                    raise TypeError(f"uniform with minval/maxval: dtype must be int32 or int64, got {dt.name}")
                return _sr.stateful_uniform_int(h, self._alg, shp, lo, hi)
            rnd = _sr.stateful_uniform(h, self._alg, shp, dtype=dt)
            return _m.add(rnd * (hi - lo), lo)

    def uniform_full_int(self, shape: Any, dtype: Any = _dt.uint64, name: Optional[str] = None) -> _g.Tensor:
        """Every bit pattern of an integer dtype (int32, int64, uint32, uint64), uniformly."""
        dt = _dt.as_dtype(dtype)
        with _g.name_scope(name, "stateful_uniform_full_int"):
            return _sr.stateful_uniform_full_int(self._state_var.handle, self._alg, _shape_tensor(shape), dtype=dt)

    def binomial(self, shape: Any, counts: Any, probs: Any, dtype: Any = _dt.int32,
                 name: Optional[str] = None) -> _g.Tensor:
        """Binomial(counts, probs) samples of `shape`, which must end with the broadcast shape
        of counts and probs (floats of one dtype)."""
        dt = _dt.as_dtype(dtype)
        with _g.name_scope(name, "binomial"):
            c = _g.convert_to_tensor(counts, name="counts")
            p = _g.convert_to_tensor(probs, name="probs")
            if c.dtype not in (_dt.float16, _dt.float32, _dt.float64) or p.dtype != c.dtype:
                raise TypeError(f"binomial: counts and probs must have one floating dtype, got {c.dtype.name} "
                                f"and {p.dtype.name}")
            return _sr.stateful_random_binomial(self._state_var.handle, self._alg, _shape_tensor(shape), c, p,
                                                dtype=dt)

    # -- seeds and new generators ---------------------------------------------------------
    def _int64_keys(self, count: int) -> _g.Tensor:
        if not isinstance(self._alg, _g.Tensor) and self._alg not in (1, 2, 3):
            raise ValueError(f"Unsupported algorithm id: {self._alg}")
        return self.uniform_full_int([count], dtype=_dt.int64)

    def make_seeds(self, count: int = 1) -> _g.Tensor:
        """[2, count] int64 seed pairs for the stateless ops: (fresh int64 key, 0) columns."""
        keys = self._int64_keys(count)
        return _a.stack([keys, _a.zeros_like(keys)])

    def split(self, count: int = 1) -> List["Generator"]:
        """`count` new generators, each with a fresh key drawn from this one and counter 0
        (their variables' initializers draw the keys: initialize this generator first)."""
        keys = self._int64_keys(count)
        zeros = [np.int64(0)] * (_state_size(self._alg) - 1 if not isinstance(self._alg, _g.Tensor) else 2)
        return [Generator(state=_a.stack(zeros + [k]), alg=self._alg) for k in _a.unstack(keys, num=count)]


_global_generator: Optional[Generator] = None  # set by set_global_generator


def get_global_generator() -> Generator:
    """The global generator: the one set_global_generator set, else the default graph's own,
    made (from non-deterministic state) at its first use in that graph.  The graph holds its
    implicit generator, so neither keeps the other alive past the graph."""
    if _global_generator is not None:
        return _global_generator
    g = _g.get_default_graph()
    gen = g.__dict__.get("_implicit_global_generator")
    if gen is None:
        # made outside any control-flow construct and control dependencies (a first use in a
        # loop body must not put the state variable's initializer in the loop)
        with g.init_scope():
            gen = g.__dict__["_implicit_global_generator"] = Generator.from_non_deterministic_state()
    return gen


def set_global_generator(generator: Generator) -> None:
    """Makes `generator` the global generator."""
    global _global_generator
    _global_generator = generator
