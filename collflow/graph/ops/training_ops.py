"""Fused optimizer updates: one stateful op per (optimizer, dense|sparse).

Each op takes the variable's resource handle, the handles of its slot variables, the
hyperparameters as scalars of the variable's dtype, and the gradient; its kernel
(kernels/training_kernels.py) updates the variable and the slots in place and outputs
nothing, so a training step touches each parameter once instead of going through a chain
of elementwise ops and an assignment.  The sparse forms take an IndexedSlices gradient
(values, indices), sum duplicate indices, and touch only those rows of the variable and of
every slot; Adam's sparse form is either TF1's (every row's moments decay, every row of the
variable moves) or the "lazy" one of LazyAdamOptimizer (untouched rows are left alone).

Semantics follow TensorFlow's ResourceApply* ops, also for complex variables where TF's kernels
take them (COMPLEX_KINDS below: the same formulas in complex arithmetic):

  GradientDescent  var -= lr * g
  Momentum         accum = momentum * accum + g
                   var -= lr * accum                    (nesterov: lr * (g + momentum * accum))
  Adam             lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
                   m += (g - m) * (1 - beta1);  v += (g*g - v) * (1 - beta2)
                   var -= lr_t * m / (sqrt(v) + epsilon)
  Adagrad          accum += g * g;  var -= lr * g / sqrt(accum)
  RMSProp          ms += (g*g - ms) * (1 - rho)
                   mom = momentum * mom + lr * g / sqrt(ms + epsilon);  var -= mom
  CenteredRMSProp  as RMSProp, with mg += (g - mg) * (1 - rho) and ms - mg*mg in the root
  Adadelta         accum = rho * accum + (1 - rho) * g*g
                   u = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * g
                   accum_update = rho * accum_update + (1 - rho) * u*u;  var -= lr * u
  Ftrl             (FTRL-proximal, McMahan et al.; lr_power -0.5 is the paper's)
                   new = accum + g*g;  gs = g + 2 * l2_shrinkage * var
                   linear += gs - (new^-p - accum^-p) / lr * var          (p = lr_power)
                   var = |linear| > l1 ? (sign(linear) * l1 - linear) / (new^-p / lr + 2 * l2) : 0
                   accum = new
  ProximalGradientDescent  (TF's; a = lr)
  ProximalAdagrad  accum += g * g;  a = lr / sqrt(accum)         (per element)
                   p = var - a * g
                   var = sign(p) * max(|p| - a * l1, 0) / (1 + a * l2)
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import register_op, not_differentiable
from .op_util import make_op
from .state_ops import variable_dtype_shape

__all__ = [
    "apply_gradient_descent", "apply_momentum", "apply_adam", "apply_adagrad", "apply_rms_prop",
    "apply_centered_rms_prop", "apply_adadelta", "apply_ftrl", "apply_proximal_gradient_descent",
    "apply_proximal_adagrad", "sparse_apply_proximal_gradient_descent", "sparse_apply_proximal_adagrad",
    "sparse_apply_gradient_descent", "sparse_apply_momentum", "sparse_apply_adam", "sparse_apply_adagrad",
    "sparse_apply_rms_prop", "sparse_apply_centered_rms_prop", "sparse_apply_adadelta", "sparse_apply_ftrl",
]

# op type -> (number of resource handles: var + slots, names of the scalar hyperparameters)
_LAYOUT = {
    "GradientDescent": (1, ("lr",)),
    "Momentum": (2, ("lr", "momentum")),
    "Adam": (3, ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon")),
    "Adagrad": (2, ("lr",)),
    "RMSProp": (3, ("lr", "rho", "momentum", "epsilon")),
    "CenteredRMSProp": (4, ("lr", "rho", "momentum", "epsilon")),
    "Adadelta": (3, ("lr", "rho", "epsilon")),
    "Ftrl": (3, ("lr", "l1", "l2", "l2_shrinkage", "lr_power")),
    "ProximalGradientDescent": (1, ("lr", "l1", "l2")),
    "ProximalAdagrad": (2, ("lr", "l1", "l2")),
}


# the updates whose TensorFlow kernels (Apply*/ResourceApply*, CPU) also take complex64/128:
# the same formulas in complex arithmetic (g*g is the complex square, sqrt the principal root);
# Ftrl and the proximal ones are real only in TF too
COMPLEX_KINDS = frozenset(("GradientDescent", "Momentum", "Adam", "Adagrad", "RMSProp", "CenteredRMSProp",
                           "Adadelta"))


def _check_apply(op: _g.Operation, n_handles: int, scalars: Sequence[str], sparse: bool) -> list:
    """Validates handles, scalars and gradient of an Apply op; it has no outputs."""
    dt, shp = variable_dtype_shape(op.inputs[0])
    vname = op.inputs[0].op.name
    kind = op.type[len("SparseApply"):] if sparse else op.type[len("Apply"):]
    if dt.is_complex and kind not in COMPLEX_KINDS:
        raise ValueError(f"variable {vname!r} has dtype {dt.name}; {op.type} updates real floating-point "
                         f"variables only (as TensorFlow's kernel)")
    if not (dt.is_floating or dt.is_complex):
        raise ValueError(f"variable {vname!r} has dtype {dt.name}; optimizers update floating-point variables")
    for h in op.inputs[1:n_handles]:
        sdt, sshp = variable_dtype_shape(h)
        if sdt != dt or not sshp.is_compatible_with(shp):
            raise ValueError(f"slot {h.op.name!r} ({sdt.name}, {sshp}) does not match variable "
                             f"{vname!r} ({dt.name}, {shp})")
    k = n_handles
    for nm, t in zip(scalars, op.inputs[k:k + len(scalars)]):
        if t.dtype != dt:
            raise ValueError(f"{nm} has dtype {t.dtype.name}, the variable {vname!r} {dt.name}")
        if t.shape.rank not in (None, 0):
            raise ValueError(f"{nm} must be a scalar, got shape {t.shape}")
    k += len(scalars)
    grad = op.inputs[k]
    if grad.dtype != dt:
        raise ValueError(f"gradient has dtype {grad.dtype.name}, the variable {vname!r} {dt.name}")
    if not sparse:
        if not grad.shape.is_compatible_with(shp):
            raise ValueError(f"gradient of shape {grad.shape} does not match variable {vname!r} of shape {shp}")
        return []
    idx = op.inputs[k + 1]
    if not idx.dtype.is_integer:
        raise ValueError(f"indices must be integers, got {idx.dtype.name}")
    if idx.shape.rank not in (None, 1):
        raise ValueError(f"indices must be a vector, got shape {idx.shape}")
    if shp.rank is not None and grad.shape.rank is not None:
        if shp.rank == 0:
            raise ValueError(f"a sparse update needs a variable of rank >= 1; {vname!r} is a scalar")
        rows = grad.shape[1:] if grad.shape.rank >= 1 else None
        if grad.shape.rank != shp.rank or not rows.is_compatible_with(shp[1:]):
            raise ValueError(f"gradient values of shape {grad.shape} do not fit rows of variable "
                             f"{vname!r} of shape {shp}")
        n_idx = idx.shape.dims[0] if idx.shape.rank == 1 else None
        n_rows = grad.shape.dims[0] if grad.shape.rank else None
        if n_idx is not None and n_rows is not None and n_idx != n_rows:
            raise ValueError(f"{n_idx} indices for {n_rows} rows of gradient values")
    return []


def _register(kind: str) -> None:
    n, scalars = _LAYOUT[kind]
    register_op("Apply" + kind, lambda op: _check_apply(op, n, scalars, False), variable_state=True)
    register_op("SparseApply" + kind, lambda op: _check_apply(op, n, scalars, True), variable_state=True)
    not_differentiable("Apply" + kind, "SparseApply" + kind)


for _kind in _LAYOUT:
    _register(_kind)


# -- constructors ----------------------------------------------------------------------


def _handle(v: Any) -> _g.Tensor:
    h = getattr(v, "handle", v)
    if not isinstance(h, _g.Tensor) or h.dtype != _dt.resource:
        raise TypeError(f"expected a cf.Variable (or its resource handle), got {type(v).__name__}")
    return h


def _build(kind: str, handles: Sequence[Any], scalars: Sequence[Any], grad: Any, indices: Any,
           attrs: Optional[dict], name: Optional[str]) -> _g.Operation:
    hs = [_handle(h) for h in handles]
    dt, _ = variable_dtype_shape(hs[0])
    g = hs[0].graph
    sc = [_g.convert_to_tensor(s, dtype=dt, graph=g) if not isinstance(s, _g.Tensor) else s for s in scalars]
    sparse = indices is not None
    ins: List[Any] = hs + sc + [grad] + ([indices] if sparse else [])
    op_type = ("SparseApply" if sparse else "Apply") + kind
    return make_op(op_type, ins, attrs, name=name or op_type)


def apply_gradient_descent(var: Any, lr: Any, grad: Any, name: Optional[str] = None) -> _g.Operation:
    """var -= lr * grad, in place."""
    return _build("GradientDescent", [var], [lr], grad, None, None, name)


def apply_momentum(var: Any, accum: Any, lr: Any, grad: Any, momentum: Any, use_nesterov: bool = False,
                   name: Optional[str] = None) -> _g.Operation:
    """accum = momentum * accum + grad; var -= lr * accum (or the Nesterov form), in place."""
    return _build("Momentum", [var, accum], [lr, momentum], grad, None, {"use_nesterov": bool(use_nesterov)}, name)


def apply_adam(var: Any, m: Any, v: Any, beta1_power: Any, beta2_power: Any, lr: Any, beta1: Any, beta2: Any,
               epsilon: Any, grad: Any, name: Optional[str] = None) -> _g.Operation:
    """One Adam step on var and its moments m, v (TensorFlow's epsilon-hat form), in place."""
    return _build("Adam", [var, m, v], [beta1_power, beta2_power, lr, beta1, beta2, epsilon], grad, None, None, name)


def apply_adagrad(var: Any, accum: Any, lr: Any, grad: Any, name: Optional[str] = None) -> _g.Operation:
    """accum += grad^2; var -= lr * grad / sqrt(accum), in place."""
    return _build("Adagrad", [var, accum], [lr], grad, None, None, name)


def apply_rms_prop(var: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any, epsilon: Any, grad: Any,
                   name: Optional[str] = None) -> _g.Operation:
    """One RMSProp step (mean square ms, momentum mom), in place."""
    return _build("RMSProp", [var, ms, mom], [lr, rho, momentum, epsilon], grad, None, None, name)


def apply_centered_rms_prop(var: Any, mg: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any,
                            epsilon: Any, grad: Any, name: Optional[str] = None) -> _g.Operation:
    """One centered RMSProp step (mean gradient mg, mean square ms, momentum mom), in place."""
    return _build("CenteredRMSProp", [var, mg, ms, mom], [lr, rho, momentum, epsilon], grad, None, None, name)


def sparse_apply_gradient_descent(var: Any, lr: Any, grad_values: Any, indices: Any,
                                  name: Optional[str] = None) -> _g.Operation:
    """var[indices] -= lr * grad_values (duplicates add); only those rows are touched."""
    return _build("GradientDescent", [var], [lr], grad_values, indices, None, name)


def sparse_apply_momentum(var: Any, accum: Any, lr: Any, grad_values: Any, indices: Any, momentum: Any,
                          use_nesterov: bool = False, name: Optional[str] = None) -> _g.Operation:
    """Momentum on the rows `indices` of var and accum only."""
    return _build("Momentum", [var, accum], [lr, momentum], grad_values, indices,
                  {"use_nesterov": bool(use_nesterov)}, name)


def sparse_apply_adam(var: Any, m: Any, v: Any, beta1_power: Any, beta2_power: Any, lr: Any, beta1: Any,
                      beta2: Any, epsilon: Any, grad_values: Any, indices: Any, lazy: bool = True,
                      name: Optional[str] = None) -> _g.Operation:
    """Adam on a sparse gradient.  lazy (LazyAdamOptimizer): moments and variable updated on the
    rows `indices` only.  lazy=False (TF1's AdamOptimizer): every row's moments decay, the
    touched rows add the gradient, and every row of var moves."""
    return _build("Adam", [var, m, v], [beta1_power, beta2_power, lr, beta1, beta2, epsilon], grad_values,
                  indices, {"lazy": bool(lazy)}, name)


def sparse_apply_adagrad(var: Any, accum: Any, lr: Any, grad_values: Any, indices: Any,
                         name: Optional[str] = None) -> _g.Operation:
    """Adagrad on the rows `indices` of var and accum only."""
    return _build("Adagrad", [var, accum], [lr], grad_values, indices, None, name)


def sparse_apply_rms_prop(var: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any, epsilon: Any,
                          grad_values: Any, indices: Any, name: Optional[str] = None) -> _g.Operation:
    """RMSProp on the rows `indices` of var, ms and mom only."""
    return _build("RMSProp", [var, ms, mom], [lr, rho, momentum, epsilon], grad_values, indices, None, name)


def sparse_apply_centered_rms_prop(var: Any, mg: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any,
                                   epsilon: Any, grad_values: Any, indices: Any,
                                   name: Optional[str] = None) -> _g.Operation:
    """Centered RMSProp on the rows `indices` of var, mg, ms and mom only."""
    return _build("CenteredRMSProp", [var, mg, ms, mom], [lr, rho, momentum, epsilon], grad_values, indices,
                  None, name)


def apply_adadelta(var: Any, accum: Any, accum_update: Any, lr: Any, rho: Any, epsilon: Any, grad: Any,
                   name: Optional[str] = None) -> _g.Operation:
    """Adadelta on the whole variable (see the module doc)."""
    return _build("Adadelta", [var, accum, accum_update], [lr, rho, epsilon], grad, None, None, name)


def sparse_apply_adadelta(var: Any, accum: Any, accum_update: Any, lr: Any, rho: Any, epsilon: Any,
                          grad_values: Any, indices: Any, name: Optional[str] = None) -> _g.Operation:
    """Adadelta on the rows `indices` only."""
    return _build("Adadelta", [var, accum, accum_update], [lr, rho, epsilon], grad_values, indices, None, name)


def apply_ftrl(var: Any, accum: Any, linear: Any, lr: Any, l1: Any, l2: Any, l2_shrinkage: Any, lr_power: Any,
               grad: Any, name: Optional[str] = None) -> _g.Operation:
    """FTRL-proximal on the whole variable (see the module doc)."""
    return _build("Ftrl", [var, accum, linear], [lr, l1, l2, l2_shrinkage, lr_power], grad, None, None, name)


def sparse_apply_ftrl(var: Any, accum: Any, linear: Any, lr: Any, l1: Any, l2: Any, l2_shrinkage: Any,
                      lr_power: Any, grad_values: Any, indices: Any, name: Optional[str] = None) -> _g.Operation:
    """FTRL-proximal on the rows `indices` only."""
    return _build("Ftrl", [var, accum, linear], [lr, l1, l2, l2_shrinkage, lr_power], grad_values, indices,
                  None, name)


def apply_proximal_gradient_descent(var: Any, lr: Any, l1: Any, l2: Any, grad: Any,
                                    name: Optional[str] = None) -> _g.Operation:
    """Proximal gradient descent (L1/L2) on the whole variable (see the module doc)."""
    return _build("ProximalGradientDescent", [var], [lr, l1, l2], grad, None, None, name)


def sparse_apply_proximal_gradient_descent(var: Any, lr: Any, l1: Any, l2: Any, grad_values: Any, indices: Any,
                                           name: Optional[str] = None) -> _g.Operation:
    """Proximal gradient descent on the rows `indices` only."""
    return _build("ProximalGradientDescent", [var], [lr, l1, l2], grad_values, indices, None, name)


def apply_proximal_adagrad(var: Any, accum: Any, lr: Any, l1: Any, l2: Any, grad: Any,
                           name: Optional[str] = None) -> _g.Operation:
    """Proximal Adagrad (L1/L2) on the whole variable (see the module doc)."""
    return _build("ProximalAdagrad", [var, accum], [lr, l1, l2], grad, None, None, name)


def sparse_apply_proximal_adagrad(var: Any, accum: Any, lr: Any, l1: Any, l2: Any, grad_values: Any, indices: Any,
                                  name: Optional[str] = None) -> _g.Operation:
    """Proximal Adagrad on the rows `indices` only."""
    return _build("ProximalAdagrad", [var, accum], [lr, l1, l2], grad_values, indices, None, name)
