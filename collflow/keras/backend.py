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


def image_data_format() -> str:
    return "channels_last"


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
        candidates = [v for v in global_variables() + local_variables()
                      if not getattr(v, "_keras_initialized", False)]
        if not candidates:
            return
        from ..graph.variables import report_uninitialized_variables
        names = set(str(n) for n in sess.run(report_uninitialized_variables(candidates)))
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
