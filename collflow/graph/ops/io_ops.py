"""Save and Restore: the paper's checkpoint nodes, so a checkpoint can be taken inside a run.

`save(filename, tensor_names, data)` adds a stateful Save op that writes the values of `data`
(one tensor per name) to the HDF5 checkpoint `filename`, atomically and durably, in the
format of cf.train.Saver (collflow/train/checkpoint_io.py); run it after the train op
(`with cf.control_dependencies([train_op]): ...`) to checkpoint inside the training run.
Under N ranks only rank 0 writes (replicas hold identical values) unless chief_only=False.

`restore(filename, tensor_names, dtypes, shapes)` adds a Restore op whose outputs are the
saved values, checked against the declared dtypes and shapes; assign them to variables to
restore (cf.train.Saver.build_restore_op does that for its variables).  Neither op is
differentiable.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import register_op, not_differentiable
from ..shape import TensorShape, as_shape
from .op_util import make_op

__all__ = ["save", "restore"]


def _check_filename(t: _g.Tensor, op_type: str) -> None:
    if t.dtype != _dt.string:
        raise ValueError(f"{op_type} needs a string filename, got a {t.dtype.name} tensor")
    if t.shape.rank not in (None, 0):
        raise ValueError(f"{op_type} needs a scalar filename, got shape {t.shape}")


def _check_names(names: Sequence[str], op_type: str) -> None:
    seen = set()
    for n in names:
        if not isinstance(n, str) or not n:
            raise ValueError(f"{op_type}: tensor names must be non-empty strings, got {n!r}")
        if n in seen:
            raise ValueError(f"{op_type}: tensor name {n!r} appears twice")
        seen.add(n)


def _save_spec(op: _g.Operation) -> list:
    _check_filename(op.inputs[0], "Save")
    names = op.attrs["tensor_names"]
    _check_names(names, "Save")
    if len(names) != len(op.inputs) - 1:
        raise ValueError(f"Save got {len(names)} tensor names for {len(op.inputs) - 1} tensors")
    for n, t in zip(names, op.inputs[1:]):
        if t.dtype in (_dt.string, _dt.resource):
            raise ValueError(f"Save cannot store {n!r}: tensors of dtype {t.dtype.name} are not supported")
    return []


def _restore_spec(op: _g.Operation) -> list:
    _check_filename(op.inputs[0], "Restore")
    names, dts, shapes = op.attrs["tensor_names"], op.attrs["dtypes"], op.attrs["shapes"]
    _check_names(names, "Restore")
    if not len(names) == len(dts) == len(shapes):
        raise ValueError(f"Restore got {len(names)} names, {len(dts)} dtypes and {len(shapes)} shapes")
    return [(dt, sh) for dt, sh in zip(dts, shapes)]


register_op("Save", _save_spec, stateful=True, doc="writes tensors to an HDF5 checkpoint")
register_op("Restore", _restore_spec, stateful=True, doc="reads tensors from an HDF5 checkpoint")
not_differentiable("Save", "Restore")


def _filename(filename: Any, graph: Optional[_g.Graph]) -> _g.Tensor:
    if isinstance(filename, _g.Tensor):
        return filename
    if not isinstance(filename, str) or not filename:
        raise InvalidArgumentError(f"a checkpoint filename must be a non-empty string or string tensor, "
                                   f"got {filename!r}")
    return _g.convert_to_tensor(filename, dtype=_dt.string, name="filename", graph=graph)


def save(filename: Any, tensor_names: Sequence[str], data: Sequence[Any], chief_only: bool = True,
         name: Optional[str] = None) -> _g.Operation:
    """An op writing `data[i]` under `tensor_names[i]` to the checkpoint `filename` when run.

    filename: a string or scalar string tensor (fed per run, e.g. with the step in it).
    chief_only: under N ranks write on rank 0 only (the values are identical replicas).
    """
    data = list(data)
    tensors = [_g.convert_to_tensor(d) for d in data]
    g = tensors[0].graph if tensors else _g.get_default_graph()
    with g.as_default():
        fn = _filename(filename, g)
        return make_op("Save", [fn] + tensors,
                       {"tensor_names": tuple(tensor_names), "chief_only": bool(chief_only)}, name=name or "save")


def restore(filename: Any, tensor_names: Sequence[str], dtypes: Sequence[Any],
            shapes: Optional[Sequence[Any]] = None, name: Optional[str] = None) -> List[_g.Tensor]:
    """Tensors read from the checkpoint `filename`, one per name, of the given dtypes (and shapes).

    Running it fails with NotFoundError naming every absent entry, or InvalidArgumentError
    naming every entry whose dtype or shape differs from the declared one.
    """
    names = tuple(tensor_names)
    dts = tuple(_dt.as_dtype(d) for d in dtypes)
    shp = tuple(TensorShape(None) if s is None else as_shape(s) for s in (shapes or [None] * len(names)))
    g = filename.graph if isinstance(filename, _g.Tensor) else _g.get_default_graph()
    with g.as_default():
        fn = _filename(filename, g)
        op = make_op("Restore", [fn], {"tensor_names": names, "dtypes": dts, "shapes": shp}, name=name or "restore")
    return list(op.outputs)
