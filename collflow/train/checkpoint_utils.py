"""TensorFlow 1.x's checkpoint helpers: `tf.train.get_checkpoint_state`, `list_variables`,
`load_variable`, `load_checkpoint` / `NewCheckpointReader` (the reader object with
get_variable_to_shape_map / get_variable_to_dtype_map / get_tensor / has_tensor), and
`init_from_checkpoint` (variables initialized from a checkpoint: fine-tuning, warm starts).

A checkpoint argument is a checkpoint directory (its newest checkpoint is used), a prefix as
Saver.save returns (`dir/model.ckpt-100`) or a file.  Files are read through
checkpoint_io.CheckpointReader, so a damaged one raises DataLossError and a missing one
NotFoundError, as restoring would.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, NotFoundError
from . import checkpoint_io as cio
from . import checkpoint_policy as _policy
from .saver import _as_prefix, checkpoint_file, latest_checkpoint, tf_state_files

__all__ = ["CheckpointState", "get_checkpoint_state", "list_variables", "load_variable", "load_checkpoint",
           "NewCheckpointReader", "init_from_checkpoint", "checkpoints_iterator"]


@dataclass
class CheckpointState:
    """What TF1's `get_checkpoint_state` returns: the newest checkpoint's prefix and every
    listed one, oldest first."""

    model_checkpoint_path: str
    all_model_checkpoint_paths: List[str] = field(default_factory=list)


def get_checkpoint_state(checkpoint_dir: str, latest_filename: Optional[str] = None) -> Optional[CheckpointState]:
    """The checkpoints `checkpoint_dir`'s index lists (that still exist), or None when there is
    none (TF1: `ckpt = tf.train.get_checkpoint_state(d); if ckpt and ckpt.model_checkpoint_path:
    saver.restore(sess, ckpt.model_checkpoint_path)`).  `latest_filename` (the name of TF's
    state file) is accepted and unused: the index is checkpoint.json, and TensorFlow's `checkpoint`
    file where TensorFlow wrote the directory."""
    latest = latest_checkpoint(checkpoint_dir)
    if latest is None:
        return None
    try:
        entries = cio.read_index(checkpoint_dir)
    except cio.DataLossError:
        entries = []
    paths = []
    for name in [e.path for e in entries] + tf_state_files(checkpoint_dir):
        try:
            p = _policy.contained_path(checkpoint_dir, name)
        except cio.UnsafeCheckpointError:
            continue
        if os.path.exists(p) and _as_prefix(os.path.abspath(p)) not in paths:
            paths.append(_as_prefix(os.path.abspath(p)))
    if latest in paths:
        paths.remove(latest)  # the newest last, as TF lists them
    if latest not in paths:
        paths.append(latest)
    return CheckpointState(latest, paths)


def _resolve(ckpt: str) -> str:
    if os.path.isdir(ckpt):
        latest = latest_checkpoint(ckpt)
        if latest is None:
            raise NotFoundError(f"no checkpoint found in directory {ckpt}")
        ckpt = latest
    f = checkpoint_file(ckpt)
    if not os.path.isfile(f):
        raise NotFoundError(f"checkpoint {ckpt} not found (no file {f})")
    return f


class NewCheckpointReader:
    """Reads one checkpoint's variables (TF1's `tf.train.NewCheckpointReader`)."""

    def __init__(self, ckpt: str):
        self.path = _resolve(ckpt)
        with cio.open_checkpoint(self.path) as r:
            self._specs = r.variable_specs()

    def get_variable_to_shape_map(self) -> Dict[str, List[int]]:
        return {k: list(shape) for k, (_, shape) in self._specs.items()}

    def get_variable_to_dtype_map(self) -> Dict[str, np.dtype]:
        return {k: np.dtype(dt) for k, (dt, _) in self._specs.items()}

    def has_tensor(self, name: str) -> bool:
        return name in self._specs

    def get_tensor(self, name: str) -> np.ndarray:
        if name not in self._specs:
            raise NotFoundError(f"checkpoint {self.path} has no variable {name!r} (it has: "
                                f"{', '.join(sorted(self._specs)[:20])}{', ...' if len(self._specs) > 20 else ''})")
        with cio.open_checkpoint(self.path) as r:
            value = r.read([name])[name]
        if isinstance(value, np.ndarray) and value.dtype == object:  # strings: bytes, as TF gives them
            return _dt.user_string_value(value)
        return value


def load_checkpoint(ckpt_dir_or_file: str) -> NewCheckpointReader:
    """tf.train.load_checkpoint: a reader for the checkpoint (the newest one of a directory)."""
    return NewCheckpointReader(ckpt_dir_or_file)


def list_variables(ckpt_dir_or_file: str) -> List[Tuple[str, List[int]]]:
    """[(name, shape)] of the checkpoint's variables, sorted by name (tf.train.list_variables)."""
    return sorted(NewCheckpointReader(ckpt_dir_or_file).get_variable_to_shape_map().items())


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """One variable's saved value (tf.train.load_variable); a name ending in ':0' is accepted."""
    if name.endswith(":0"):
        name = name[:-2]
    return NewCheckpointReader(ckpt_dir_or_file).get_tensor(name)


def init_from_checkpoint(ckpt_dir_or_file: str, assignment_map: Dict[str, Any]) -> None:
    """Makes variables' initializers read their values from a checkpoint (TF1's
    tf.train.init_from_checkpoint); call it before global_variables_initializer().

    assignment_map, checkpoint name -> current variable, as TF's:
      "ckpt/scope/w": "new/scope/w" or a Variable   one variable;
      "ckpt/scope/": "new/scope/"                   every variable under new/scope/, from the
                                                    same relative name under ckpt/scope/;
      "/": "new/scope/"  or  "ckpt/scope/": "/"     the root scope on either side.
    Names and shapes are checked now (ValueError naming the entry, as TF); the values are
    read when the initializers run.  Partitioned variables are not supported."""
    from ..graph.ops import io_ops
    from ..graph.variables import Variable, global_variables

    reader = NewCheckpointReader(ckpt_dir_or_file)
    shapes, dtypes_ = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    store = {v.name[:-2] if v.name.endswith(":0") else v.name: v for v in global_variables()}

    def assign_from(var: Any, tensor_name: str) -> None:
        if tensor_name not in shapes:
            raise ValueError(f"Tensor {tensor_name} is not found in {ckpt_dir_or_file} checkpoint "
                             f"{sorted(shapes)[:20]}")
        if not var.shape.is_compatible_with(shapes[tensor_name]):
            raise ValueError(f"Shape of variable {var.name} ({var.shape}) doesn't match with shape of tensor "
                             f"{tensor_name} ({shapes[tensor_name]}) from checkpoint reader.")
        if dtypes_[tensor_name] != var.dtype.np:
            raise InvalidArgumentError(f"init_from_checkpoint: variable {var.name} is {var.dtype.name} but "
                                       f"{tensor_name} in the checkpoint is {dtypes_[tensor_name]}")
        pending.pop(var, None)  # a variable mapped twice takes the later entry, as TF's
        pending[var] = tensor_name

    # one Restore per graph for every variable (TF makes one per variable): each run of a
    # Restore opens and checks the whole file, so BERT's ~200 variables would open it ~200 times
    pending: Dict[Any, str] = {}

    for ckpt_name, current in sorted(assignment_map.items(), key=lambda kv: kv[0]):
        if isinstance(current, (list, tuple)):
            raise InvalidArgumentError("init_from_checkpoint: partitioned variables (a list of parts) are not "
                                       "supported")
        var = current if isinstance(current, Variable) else store.get(current)
        if var is not None:
            assign_from(var, ckpt_name)
            continue
        if not isinstance(current, str):
            raise TypeError(f"init_from_checkpoint: {current!r} is neither a variable nor a name")
        scope = current[:current.rindex("/")] if "/" in current else ""
        if not ckpt_name.endswith("/"):
            raise ValueError(f"Assignment map with scope only name {scope} should map to scope only {ckpt_name}. "
                             "Should be 'scope/': 'other_scope/'.")
        for name in sorted(n for n in store if not scope or n.startswith(scope + "/")):
            rel = name[len(scope):]
            if current != "/":
                rel = rel[1:]
            full = rel if ckpt_name == "/" else ckpt_name + rel
            if full.endswith("/"):
                full = full[:-1]
            if full not in shapes:
                raise ValueError(f"Tensor {full} ({name[len(scope) + 1:]} in {ckpt_name}) is not found in "
                                 f"{ckpt_dir_or_file} checkpoint")
            assign_from(store[name], full)
    by_graph: Dict[Any, list] = {}
    for var in pending:
        by_graph.setdefault(var.graph, []).append(var)
    for g, variables in by_graph.items():
        names = list(dict.fromkeys(pending[v] for v in variables))  # two variables may share an entry
        first = {n: next(v for v in variables if pending[v] == n) for n in names}
        with g.as_default(), g.name_scope(None), g.control_dependencies(None):
            values = io_ops.restore(reader.path, names, [first[n].dtype for n in names],
                                    [first[n].shape for n in names], name="checkpoint_initializer")
        for var in variables:
            var._initialize_from(values[names.index(pending[var])])


def wait_for_new_checkpoint(checkpoint_dir: str, last_checkpoint: Optional[str] = None,
                            seconds_to_sleep: float = 1, timeout: Optional[float] = None) -> Optional[str]:
    """The newest checkpoint of checkpoint_dir once it differs from last_checkpoint, looking
    every seconds_to_sleep; None after `timeout` seconds without one."""
    import time
    from .saver import latest_checkpoint
    start = time.monotonic()
    while True:
        path = latest_checkpoint(checkpoint_dir)
        if path is not None and path != last_checkpoint:
            return path
        if timeout is not None and time.monotonic() - start > timeout:
            return None
        time.sleep(seconds_to_sleep if timeout is None else max(0.0, min(seconds_to_sleep, timeout)))


def checkpoints_iterator(checkpoint_dir: str, min_interval_secs: float = 0, timeout: Optional[float] = None,
                         timeout_fn: Optional[Callable[[], bool]] = None) -> Iterator[str]:
    """Yields each new checkpoint of checkpoint_dir as it appears (TF1's continuous evaluation
    loop): waits at least min_interval_secs between yields; after `timeout` seconds with no
    new checkpoint it calls timeout_fn and stops unless that returns False (no timeout_fn:
    stops)."""
    import time
    last: Optional[str] = None
    while True:
        found = wait_for_new_checkpoint(checkpoint_dir, last, 0.1, timeout)
        if found is None:
            if timeout_fn is None or timeout_fn():
                return
            continue
        last = found
        t0 = time.monotonic()
        yield found
        wait = min_interval_secs - (time.monotonic() - t0)
        if wait > 0:
            time.sleep(wait)
