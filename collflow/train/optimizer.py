"""The Optimizer base class (TensorFlow 1.x `tf.train.Optimizer`).

`minimize(loss)` = `compute_gradients(loss)` (symbolic gradients, one per variable) then
`apply_gradients(grads_and_vars)`, which adds one fused, in-place update op per variable
(graph/ops/training_ops.py) and groups them into the train op.  Between the two, users may
transform the gradients (clip, all-reduce, average) as in TensorFlow.

Subclasses implement `_create_slots(var_list)`, `_prepare()`, `_apply_dense(grad, var)`,
`_apply_sparse(grad, var)` (grad an IndexedSlices) and optionally `_finish(update_ops, name)`.
Slot variables (a momentum accumulator, Adam's moments) are non-trainable cf.Variables named
"<var>/<OptimizerName>" (then "_1", "_2", ...), placed on the variable's device and created
outside any name scope or control dependencies of the caller.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.gradients import gradients
from ..graph.indexed_slices import IndexedSlices
from ..graph.ops import array_ops, math_ops, state_ops
from ..graph.ops.constant_op import constant, group
from ..graph.variables import Variable
from . import distribute_lib as _ds
from .between_graph import async_apply

__all__ = ["Optimizer"]

# collection of the ops returned by apply_gradients (TensorFlow's GraphKeys.TRAIN_OP)
TRAIN_OP = "train_op"

GradAndVar = Tuple[Any, Variable]


def _is_variable(v: Any) -> bool:
    return isinstance(v, Variable)


def _var_names(vs: Sequence[Any]) -> List[str]:
    return [getattr(v, "name", repr(v)) for v in vs]


class Optimizer:
    """Base class of the optimizers: gradients, slots and the fused update ops."""

    # how much compute_gradients synchronizes (TensorFlow's constants)
    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("an Optimizer needs a name")
        self._use_locking = use_locking
        self._name = name
        # slot name -> {primary variable -> slot variable}
        self._slots: Dict[str, Dict[Variable, Variable]] = {}
        # (name, graph) -> non-slot variable (Adam's beta powers)
        self._non_slot: Dict[Tuple[str, _g.Graph], Variable] = {}
        # (hyperparameter, dtype name) -> Tensor, for the apply_gradients call being built
        self._hyper_cache: Dict[Tuple[str, str], _g.Tensor] = {}

    def get_name(self) -> str:
        return self._name

    # -- gradients --------------------------------------------------------------------------

    def compute_gradients(self, loss: Any, var_list: Optional[Sequence[Variable]] = None,
                          gate_gradients: int = GATE_OP, aggregation_method: Any = None,
                          colocate_gradients_with_ops: bool = False, grad_loss: Any = None
                          ) -> List[GradAndVar]:
        """[(gradient or None, variable)] of `loss` for var_list (default: trainable variables).

        Gradients of gathered variables are IndexedSlices.
        """
        if callable(loss) and not isinstance(loss, _g.Tensor):
            raise TypeError("compute_gradients needs a loss Tensor (collflow builds graphs; there is no eager mode)")
        loss = _g.convert_to_tensor(loss)
        if not loss.dtype.is_floating:
            raise InvalidArgumentError(f"the loss {loss.name} must be floating point, got {loss.dtype.name}")
        if gate_gradients not in (self.GATE_NONE, self.GATE_OP, self.GATE_GRAPH):
            raise ValueError(f"gate_gradients must be GATE_NONE, GATE_OP or GATE_GRAPH, got {gate_gradients!r}")
        if var_list is None:
            var_list = loss.graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        else:
            var_list = list(var_list)
        for v in var_list:
            if not _is_variable(v):
                raise TypeError(f"var_list must contain cf.Variables, got {type(v).__name__} ({v!r})")
        if not var_list:
            raise ValueError("No variables to optimize.")
        loss = _scale_loss_for_replicas(loss)
        # TF1: GATE_OP gates each op's gradients (tf.gradients(gate_gradients=True)), GATE_GRAPH
        # gates them all at the end with one tf.tuple
        grads = gradients(loss, var_list, grad_ys=grad_loss, gate_gradients=gate_gradients == self.GATE_OP)
        if gate_gradients == self.GATE_GRAPH:
            grads = _gate(grads)
        return list(zip(grads, var_list))

    # -- applying -----------------------------------------------------------------------------

    # True when the update is linear in the gradient with no state that remembers its scale
    # (plain SGD): a gradient scale then folds into the learning rate instead of a pass
    folds_gradient_scale = False

    def apply_gradients(self, grads_and_vars: Sequence[GradAndVar], global_step: Optional[Variable] = None,
                        name: Optional[str] = None, gradient_scale: Any = None,
                        after_updates: Optional[Callable[[Dict[Variable, _g.Operation]], List[_g.Operation]]] = None
                        ) -> _g.Operation:
        """The train op: one in-place update per (grad, var) with a gradient, then global_step += 1.

        Pairs whose gradient is None are skipped; it is an error if every gradient is None.
        gradient_scale: an optional scalar (e.g. 1/ranks for summed gradients) that every dense
        gradient is multiplied by; optimizers linear in the gradient fold it into the learning
        rate (no pass over the gradient), the others multiply.  after_updates: called with
        {variable: its update op}; the ops it returns (made inside this name scope) run
        before the step ends (SyncReplicasOptimizer averages the updated variables there).
        """
        pairs = _check_pairs(grads_and_vars)
        replicated = False
        if _ds.has_strategy():
            pairs = _sum_over_replicas(pairs)
            replicated = _ds.get_strategy().num_replicas_in_sync > 1
        var_list = [v for gr, v in pairs if gr is not None]
        if not var_list:
            raise ValueError(
                "No gradients provided for any variable: every gradient is None for variables "
                f"{_var_names([v for _, v in pairs])}. Check that the loss depends on them through "
                "differentiable ops.")
        g = var_list[0].graph
        # a TF1 cluster program's variables on the ps job: every worker's update, in rank order
        step = async_apply(self, pairs, global_step, name)
        if step is not None:
            g.add_to_collection(TRAIN_OP, step)
            return step
        with g.as_default():
            self._create_slots_for(g, var_list)
            self._hyper_cache = {}
            with g.name_scope(name or self._name) as scope:
                self._prepare()
                for dt in dict.fromkeys(v.dtype for v in var_list):
                    self._prepare_dtype(dt)
                update_ops = []
                for grad, var in pairs:
                    if grad is None:
                        continue
                    constraint = getattr(var, "constraint", None)
                    with g.name_scope("update_" + var.op.name), g.device(var.device):
                        if isinstance(grad, IndexedSlices):
                            if constraint is not None:
                                raise RuntimeError("Cannot use a constraint function on a sparse variable.")
                            update_ops.append(self._apply_sparse(grad, var))
                        elif gradient_scale is not None:
                            scale = math_ops.cast(gradient_scale, var.dtype)
                            update_ops.append(self._apply_dense_scaled(grad, var, scale))
                        else:
                            update_ops.append(self._apply_dense(grad, var))
                        if constraint is not None:
                            # TF1: the projection runs after the variable's update, on its new value
                            with g.control_dependencies([update_ops[-1]]):
                                projected = var.assign(constraint(var.read_value()))
                            update_ops[-1] = getattr(projected, "op", projected)
                if after_updates is not None:
                    update_ops = update_ops + list(after_updates(dict(zip(var_list, update_ops))))
                # TF1 names the train op by the scope itself ("Adam", "train"): the group of the
                # updates, or with a global_step the increment that runs after them
                if global_step is None:
                    apply_op = self._finish(update_ops, scope)
                else:
                    if not _is_variable(global_step) or not global_step.dtype.is_integer:
                        raise TypeError(f"global_step must be an integer cf.Variable, got {global_step!r}")
                    finish = self._finish(update_ops, "update")
                    with g.control_dependencies([finish]), g.device(global_step.device):
                        apply_op = state_ops.assign_add(global_step, 1, name=scope).op
            self._hyper_cache = {}
        g.add_to_collection(TRAIN_OP, apply_op)
        if replicated:
            # replicas start from rank 0's variables, as TF's mirrored variables start identical
            from .sync_replicas import add_replica_sync
            add_replica_sync(g, apply_op)
        return apply_op

    def minimize(self, loss: Any, global_step: Optional[Variable] = None,
                 var_list: Optional[Sequence[Variable]] = None, gate_gradients: int = GATE_OP,
                 aggregation_method: Any = None, colocate_gradients_with_ops: bool = False,
                 name: Optional[str] = None, grad_loss: Any = None) -> _g.Operation:
        """compute_gradients + apply_gradients: the op that takes one training step."""
        gv = self.compute_gradients(loss, var_list=var_list, gate_gradients=gate_gradients,
                                    aggregation_method=aggregation_method,
                                    colocate_gradients_with_ops=colocate_gradients_with_ops,
                                    grad_loss=grad_loss)
        if all(gr is None for gr, _ in gv):
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not support "
                f"gradients, between variables {_var_names([v for _, v in gv])} and loss {loss!r}.")
        return self.apply_gradients(gv, global_step=global_step, name=name)

    # -- slots --------------------------------------------------------------------------------

    def get_slot(self, var: Variable, name: str) -> Optional[Variable]:
        """The slot variable `name` ("momentum", "m", ...) made for `var`, or None."""
        return self._slots.get(name, {}).get(var)

    def get_slot_names(self) -> List[str]:
        """Names of the slots this optimizer creates, sorted."""
        return sorted(self._slots)

    def variables(self) -> List[Variable]:
        """The optimizer's own variables (slots and e.g. Adam's beta powers) in the default graph."""
        g = _g.get_default_graph()
        out = [v for (n, gg), v in self._non_slot.items() if gg is g]
        for table in self._slots.values():
            out.extend(v for v in table.values() if v.graph is g)
        return sorted(out, key=lambda v: v.name)

    def _checkpoint_children(self) -> List[Tuple[str, Variable]]:
        """Object checkpoints' children (train/trackable.py): the non-slot variables (Adam's
        beta1_power, ...) of the default graph by name, as TF 1.x's optimizers track them."""
        g = _g.get_default_graph()
        return sorted(((n, v) for (n, gg), v in self._non_slot.items() if gg is g), key=lambda p: p[0])

    def _slot_table(self, slot_name: str) -> Dict[Variable, Variable]:
        return self._slots.setdefault(slot_name, {})

    def _make_slot(self, var: Variable, slot_name: str, value: float = 0.0) -> Variable:
        """The slot `slot_name` of var, created filled with `value` if it does not exist yet."""
        table = self._slot_table(slot_name)
        s = table.get(var)
        if s is None:
            s = _create_slot_var(var, value, self._name)
            table[var] = s
        return s

    def _zeros_slot(self, var: Variable, slot_name: str) -> Variable:
        return self._make_slot(var, slot_name, 0.0)

    def _non_slot_variable(self, name: str, graph: _g.Graph) -> Optional[Variable]:
        return self._non_slot.get((name, graph))

    def _create_non_slot_variable(self, initial_value: Any, name: str, colocate_with: Variable) -> Variable:
        """A variable of the optimizer itself, one per graph, on colocate_with's device."""
        g = colocate_with.graph
        v = self._non_slot.get((name, g))
        if v is None:
            # in the caller's name scope, as TF1 (opt.minimize under name_scope("train") makes
            # train/beta1_power), out of any loop or cond being built
            with g.as_default(), g.init_scope(), g.device(colocate_with.device):
                v = Variable(initial_value, trainable=False, name=name)
            self._non_slot[(name, g)] = v
        return v

    def _create_slots_for(self, g: _g.Graph, var_list: List[Variable]) -> None:
        with g.init_scope():
            self._create_slots(var_list)

    # -- hyperparameters ------------------------------------------------------------------------

    def _hyper(self, name: str, dtype: _dt.DType) -> _g.Tensor:
        """Hyperparameter `self._<name>` (float, Tensor, Variable or callable) as a `dtype` scalar."""
        key = (name, dtype.name)
        t = self._hyper_cache.get(key)
        if t is not None:
            return t
        value = getattr(self, "_" + name)
        if callable(value) and not isinstance(value, (_g.Tensor, Variable)):
            value = value()
        if isinstance(value, (_g.Tensor, Variable)):
            t = _g.convert_to_tensor(value)
            if t.shape.rank not in (None, 0):
                raise InvalidArgumentError(f"{self._name}: {name} must be a scalar, got shape {t.shape}")
            if t.dtype != dtype:
                t = math_ops.cast(t, dtype, name=f"{name}_{dtype.name}")
        elif _python_number(value) and dtype != _dt.float32 and (dtype.is_floating or dtype.is_complex):
            # TF1's _prepare converts a Python float to a float32 tensor and each update casts it
            # to the variable's dtype: a float64 model steps with float64(float32(0.1))
            t = math_ops.cast(constant(value, dtype=_dt.float32 if isinstance(value, float) else _dt.int32,
                                       name=name), dtype, name=f"{name}_{dtype.name}")
        else:
            t = constant(value, dtype=dtype, name=name)
        self._hyper_cache[key] = t
        return t

    def _prepare_dtype(self, dtype: _dt.DType) -> None:
        """Creates this dtype's hyperparameter tensors up front, outside per-variable device scopes."""
        for n in self._hyper_names():
            self._hyper(n, dtype)

    def _hyper_names(self) -> Tuple[str, ...]:
        return ("learning_rate",)

    # -- subclass interface -----------------------------------------------------------------------

    def _create_slots(self, var_list: List[Variable]) -> None:
        """Creates the slot variables of var_list (called outside scopes and control deps)."""

    def _prepare(self) -> None:
        """Called once per apply_gradients inside its name scope, before the updates."""

    def _apply_dense(self, grad: _g.Tensor, var: Variable) -> _g.Operation:
        raise NotImplementedError

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> _g.Operation:
        raise NotImplementedError

    def _apply_dense_scaled(self, grad: _g.Tensor, var: Variable, scale: _g.Tensor) -> _g.Operation:
        """The update for gradient `grad * scale` (a scalar); optimizers that fold the scale
        into a hyperparameter override this."""
        return self._apply_dense(grad * scale, var)

    def _finish(self, update_ops: List[_g.Operation], name: str) -> _g.Operation:
        """The op that completes the step once every update ran."""
        return group(*update_ops, name=name)


def _python_number(value: Any) -> bool:
    """A Python float or int (not a NumPy scalar, which keeps its own dtype in TF1)."""
    return type(value) in (float, int)



def _scale_loss_for_replicas(loss: _g.Tensor) -> _g.Tensor:
    """TF 1.x's rule under a distribution strategy (Estimator only, see distribute_lib): a
    mean-reduced loss is divided by the number of replicas, whose gradients are then summed."""
    g = loss.graph
    g.__dict__["_is_loss_scaled_by_optimizer"] = False
    if _ds.get_loss_reduction() is _ds.ReduceOp.MEAN:
        n = _ds.get_strategy().num_replicas_in_sync
        if n > 1:
            loss = loss * constant(1.0 / n, dtype=loss.dtype)
            g.__dict__["_is_loss_scaled_by_optimizer"] = True
    return loss


def _sum_over_replicas(pairs: List[GradAndVar]) -> List[GradAndVar]:
    """In a strategy's replica context the gradients are summed over the replicas first (TF's
    merge_call into batch_reduce_to(SUM)); the updates then run on every rank alike."""
    if _ds.in_cross_replica_context():
        raise RuntimeError("Use `_distributed_apply()` instead of `apply_gradients()` in a cross-replica context.")
    strategy = _ds.get_strategy()
    live = [(i, gr, v) for i, (gr, v) in enumerate(pairs) if gr is not None]
    if not live or strategy.num_replicas_in_sync <= 1:
        return pairs

    def merge(strategy: Any) -> List[Any]:
        return strategy.extended.batch_reduce_to(_ds.ReduceOp.SUM, [(gr, v) for _, gr, v in live])
    reduced = _ds.get_replica_context().merge_call(merge)
    out = list(pairs)
    for (i, _, v), r in zip(live, reduced):
        out[i] = (r, v)
    return out


def _check_pairs(grads_and_vars: Sequence[GradAndVar]) -> List[GradAndVar]:
    """Validates (grad, var) pairs and converts dense gradients to Tensors."""
    try:
        pairs = list(grads_and_vars)
    except TypeError:
        raise TypeError(f"grads_and_vars must be a sequence of (gradient, variable) pairs, "
                        f"got {type(grads_and_vars).__name__}") from None
    if not pairs:
        raise ValueError("No variables provided.")
    out: List[GradAndVar] = []
    seen = set()
    for p in pairs:
        if not isinstance(p, (tuple, list)) or len(p) != 2:
            raise TypeError(f"grads_and_vars must hold (gradient, variable) pairs, got {p!r}")
        gr, v = p
        if not _is_variable(v):
            raise TypeError(f"the second element of each pair must be a cf.Variable, got {type(v).__name__} ({v!r})")
        if v in seen:
            raise ValueError(f"variable {v.name} appears more than once in grads_and_vars")
        seen.add(v)
        if gr is not None:
            if not isinstance(gr, IndexedSlices):
                gr = _g.convert_to_tensor(gr, graph=v.graph) if not isinstance(gr, _g.Tensor) else gr
            if gr.dtype != v.dtype:
                raise InvalidArgumentError(
                    f"gradient {gr.name} of variable {v.name} has dtype {gr.dtype.name}, the variable {v.dtype.name}")
            if gr.graph is not v.graph:
                raise InvalidArgumentError(f"gradient {gr.name} and variable {v.name} are in different graphs")
            if isinstance(gr, _g.Tensor) and not gr.shape.is_compatible_with(v.shape):
                raise InvalidArgumentError(
                    f"gradient {gr.name} of shape {gr.shape} does not match variable {v.name} of shape {v.shape}")
        out.append((gr, v))
    return out


def _create_slot_var(primary: Variable, value: float, op_name: str) -> Variable:
    """A non-trainable variable shaped like `primary`, filled with `value`, on its device."""
    g = primary.graph
    dt = primary.dtype
    shp = primary.shape

    def init() -> _g.Tensor:
        if shp.is_fully_defined():
            # Fill keeps the graph small: no full-size constant in it
            return array_ops.fill(shp.as_list(), constant(value, dtype=dt), name="Fill")
        base = array_ops.zeros_like(primary.initial_value)
        return base if value == 0 else base + constant(value, dtype=dt)

    with g.as_default(), g.init_scope(), g.name_scope(None), g.device(primary.device):
        return Variable(init, trainable=False, name=slot_name(primary.op.name, op_name), dtype=dt)


_SLOT_INFIX = threading.local()


@contextlib.contextmanager
def slot_name_infix(infix: str) -> Iterator[None]:
    """Slots created inside are named `<primary>/<infix>/<suffix>`.  TF1's canned Linear and DNN
    estimators minimize inside their model's variable scope on (one-part) partitioned variables,
    and their checkpoints name the slots `.../weights/part_0/Ftrl` and `.../kernel/t_0/Adagrad`
    whatever optimizer is given; collflow's variables are not partitioned, so the name is set here."""
    outer = getattr(_SLOT_INFIX, "value", "")
    _SLOT_INFIX.value = infix
    try:
        yield
    finally:
        _SLOT_INFIX.value = outer


def slot_name(primary_name: str, suffix: str) -> str:
    """TF1's slot_creator naming: `primary/suffix` under the current variable scope (so a
    minimize inside variable_scope("train") makes train/W/Adam), name scopes ignored."""
    from ..graph.variable_scope import get_variable_scope
    infix = getattr(_SLOT_INFIX, "value", "")
    if infix:
        suffix = f"{infix}/{suffix}"
    vs = get_variable_scope().name
    return f"{vs}/{primary_name}/{suffix}" if vs else f"{primary_name}/{suffix}"


def _gate(grads: List[Any]) -> List[Any]:
    """GATE_GRAPH: every gradient becomes available only once all of them are computed (TF1's
    tf.tuple over the gradients: "tuple/control_dependency", "tuple/control_dependency_1", ...)."""
    from ..graph.ops.case_ops import tuple as _tuple
    present = [gr for gr in grads if gr is not None]
    if not present:
        return grads
    g = (present[0].values if isinstance(present[0], IndexedSlices) else present[0]).graph
    with g.as_default():
        return _tuple(grads)
