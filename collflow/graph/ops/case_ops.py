"""tf.case and tf.tuple: control flow built on cf.cond and control dependencies.

`case` chains conds in order (the first true predicate's function runs, else the default).
With exclusive=True, or without a default (the last pair's function is the default then, and
TensorFlow requires one predicate to hold), a CheckCasePredicates op checks the predicates
first and passes them on, so nothing in the case runs before the check.  `tuple` returns its tensors gated on all of
them: a consumer of any output waits for every input.  The check's kernel lives in
kernels/misc_kernels.py.
"""
from __future__ import annotations

import builtins
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..control_flow import cond
from ..indexed_slices import IndexedSlices
from ..registry import register_op, not_differentiable
from .constant_op import group, identity
from .op_util import make_op

_pytuple = builtins.tuple  # `tuple` is a public function below (TensorFlow's name)

# exported by name (collflow/__init__.py imports `case` and, last, `tuple`: it shadows the builtin)
__all__ = ["case", "switch_case"]


def _check_spec(op: _g.Operation) -> list:
    for t in op.inputs:
        if t.dtype != _dt.bool_ or t.shape.rank not in (None, 0):
            raise ValueError(f"predicates must be scalar bools, got {t.dtype.name} of shape {t.shape}")
    return [(t.dtype, t.shape) for t in op.inputs]


# passes its scalar bool inputs through, or fails the run if more than one is true (attr
# `exclusive`) or none is (attr `require_one`)
register_op("CheckCasePredicates", _check_spec, stateful=True)
not_differentiable("CheckCasePredicates")


def _pairs(pred_fn_pairs: Any) -> List[Any]:
    if isinstance(pred_fn_pairs, dict):
        items = list(pred_fn_pairs.items())  # insertion order (TensorFlow: use an OrderedDict)
    elif isinstance(pred_fn_pairs, (list, _pytuple)):
        items = list(pred_fn_pairs)
    else:
        raise TypeError(f"case: pred_fn_pairs must be a list of (predicate, callable) pairs or a dict, "
                        f"got {type(pred_fn_pairs).__name__}")
    for i, p in enumerate(items):
        if not isinstance(p, (list, _pytuple)) or len(p) != 2:
            raise TypeError(f"case: pred_fn_pairs[{i}] must be a (predicate, callable) pair, got {p!r}")
        if not callable(p[1]):
            raise TypeError(f"case: the function of pred_fn_pairs[{i}] must be callable, got {p[1]!r}")
    return items


def case(pred_fn_pairs: Any, default: Optional[Callable[[], Any]] = None, exclusive: bool = False,
         strict: bool = False, name: str = "case") -> Any:
    """Runs the function of the first predicate that is true, else `default` (TensorFlow's tf.case).

    pred_fn_pairs: a list of (scalar bool tensor, callable) pairs, or a dict of them (in its
    order).  Every callable returns the same structure of tensors.  default: a callable; if
    None, the last pair's function is the default, and a run in which no predicate holds
    fails with InvalidArgumentError (TensorFlow's rule).  exclusive: fail the run with
    InvalidArgumentError when more than one predicate is true.  strict=False unpacks a
    singleton list or tuple result, as TensorFlow 1.x.
    """
    items = _pairs(pred_fn_pairs)
    if not items and default is None:
        raise InvalidArgumentError("case: no pred_fn_pairs and no default")
    if default is not None and not callable(default):
        raise TypeError(f"case: default must be callable, got {default!r}")
    g = _g.get_default_graph()
    for p, _ in items:
        if isinstance(p, _g.Tensor):
            g = p.graph
            break
    with g.as_default(), g.name_scope(name):
        preds = []
        for i, (p, _) in enumerate(items):
            t = _g.convert_to_tensor(p, dtype=_dt.bool_) if not isinstance(p, _g.Tensor) else p
            if t.dtype != _dt.bool_ or t.shape.rank not in (None, 0):
                raise InvalidArgumentError(f"case: predicate {i} must be a scalar bool tensor, got {t.dtype.name} "
                                           f"of shape {t.shape}")
            preds.append(t)
        fns = [f for _, f in items]
        exclusive = bool(exclusive) and len(preds) > 1
        check = None
        if exclusive or default is None:
            check = make_op("CheckCasePredicates", preds, {"names": [t.name for t in preds], "exclusive": exclusive,
                                                           "require_one": default is None}, name="check_predicates")
            preds = list(check.outputs)
        if default is None:
            default = fns.pop()
            preds.pop()

        def chain(i: int) -> Any:
            if i == len(preds):
                return default()
            return cond(preds[i], fns[i], lambda: chain(i + 1), name=f"If_{i}")

        if preds or check is None:
            result = chain(0)   # every branch waits for the checked predicates
        else:
            with g.control_dependencies([check]):  # one pair and no default: nothing else waits for the check
                result = default()
    if not strict and isinstance(result, (list, _pytuple)) and len(result) == 1:
        return result[0]
    return result


def tuple(tensors: Sequence[Any], name: Optional[str] = None,  # noqa: A001 - TensorFlow's name
          control_inputs: Optional[Sequence[Any]] = None) -> List[Any]:
    """The tensors, each gated on all of them (and on control_inputs): TensorFlow's tf.tuple.

    A consumer of any returned tensor runs only after every input is computed.  Entries may
    be Tensors, IndexedSlices, Operations (returned as a group gated likewise) or None.
    """
    # Python/NumPy values become constants, as TF's convert_n_to_tensor_or_indexed_slices
    items = [t if t is None or isinstance(t, _g.Operation) or getattr(t, "op", None) is not None
             else _g.convert_to_tensor(t) for t in tensors]
    g = _g.get_default_graph()
    for t in items:
        gg = getattr(t, "graph", None)
        if isinstance(gg, _g.Graph):
            g = gg
            break
    gating: List[_g.Operation] = []
    for t in items:
        if t is None:
            continue
        op = t if isinstance(t, _g.Operation) else getattr(t, "op", None)
        if not isinstance(op, _g.Operation):
            raise TypeError(f"tuple: entries must be Tensors, IndexedSlices, Operations or None, got {t!r}")
        gating.append(op)
    for c in control_inputs or ():
        op = c if isinstance(c, _g.Operation) else getattr(c, "op", None)
        if not isinstance(op, _g.Operation):
            raise TypeError(f"tuple: control_inputs must be Operations or Tensors, got {c!r}")
        gating.append(op)
    gating = sorted(set(gating), key=lambda o: o._id)
    # TF1's names: "tuple/group_deps", then "tuple/control_dependency", "..._1" per tensor
    # (gradients gated per op are fetched as "gradients/<op>_grad/tuple/control_dependency_1:0")
    with g.as_default(), g.name_scope(name or "tuple"):
        gate = group(*gating, name="group_deps")
        out: List[Any] = []
        with g.control_dependencies([gate]):
            for t in items:
                if t is None:
                    out.append(None)
                elif isinstance(t, _g.Operation):
                    out.append(group(t))
                elif isinstance(t, IndexedSlices):
                    out.append(IndexedSlices(identity(t.values, name="control_dependency"), identity(t.indices),
                                             t.dense_shape, t._static_shape))
                else:
                    out.append(identity(t, name="control_dependency"))
        return out


def switch_case(branch_index: Any, branch_fns: Any, default: Optional[Callable[[], Any]] = None,
                name: str = "switch_case") -> Any:
    """Runs branch_fns[branch_index] (a list of callables, or a dict {int: callable}); an index
    with no branch runs `default`, or the last branch when default is None (tf.switch_case)."""
    if isinstance(branch_fns, dict):
        items = sorted(branch_fns.items())
    elif isinstance(branch_fns, (builtins.list, builtins.tuple)):
        items = [it if isinstance(it, builtins.tuple) else (i, it) for i, it in enumerate(branch_fns)]
    else:
        raise TypeError(f"branch_fns must be a list, tuple, or dict, got {type(branch_fns).__name__}")
    if not items:
        raise ValueError("Must provide at least one item in branch_fns")
    for k, fn in items:
        if not isinstance(k, (int, np.integer)) or not callable(fn):
            raise TypeError(f"branch_fns entries must be (int, callable), got ({k!r}, {fn!r})")
    idx = _g.convert_to_tensor(branch_index)
    if idx.dtype != _dt.int32:
        raise TypeError(f"branch_index must be an int32 scalar, got {idx.dtype.name}")
    from .math_ops import equal
    with idx.graph.as_default(), idx.graph.name_scope(name):
        pairs = [(equal(idx, int(k)), fn) for k, fn in items]
        return case(pairs, default=default if default is not None else items[-1][1], exclusive=False, strict=True,
                    name="case")
