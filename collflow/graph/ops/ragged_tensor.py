"""tf.RaggedTensor: rows of different lengths, as TF 1.15 represents them.

A RaggedTensor is `values` (a Tensor, or a RaggedTensor for a nested one) cut into rows by
`row_splits` (int64, [nrows + 1], row i is values[row_splits[i]:row_splits[i + 1]]).  Its
outermost `ragged_rank` dimensions after the first are ragged; `flat_values` is the Tensor at
the bottom.  Every op on one is an op on its flat values plus index helpers (the kernels in
kernels/ragged_kernels.py), so gradients flow to the flat values through gather, gather_nd
and the segment ops.  Session.run fetches one as a RaggedTensorValue and feeds one (a
tf.ragged.placeholder) from a RaggedTensorValue.

Math, reductions, constant, range and the tf.ragged namespace are in ragged_math.py.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .op_util import make_op, single

__all__ = ["RaggedTensor", "RaggedTensorValue", "is_ragged"]

_I64 = _dt.int64


def _vec(dt: Any) -> Any:
    return lambda op: [(dt, TensorShape([None]))]


register_op("RaggedCheckSplits", lambda op: [(_I64, op.inputs[0].shape)], host_only=True)
register_op("RaggedSameSplits", lambda op: [(_I64, op.inputs[0].shape)], host_only=True)
register_op("RaggedSplitsToRowIds", _vec(_I64), host_only=True)
register_op("RaggedRowIdsToSplits", _vec(_I64), host_only=True)
register_op("RaggedDenseGatherIndex", lambda op: [(_I64, TensorShape([_nrows_of(op.inputs[0]), None]))],
            host_only=True)
register_op("RaggedFromDenseIndices", lambda op: [(_I64, TensorShape([None, 2]))], host_only=True)
register_op("RaggedLengthsFromPadding", lambda op: [(_I64, TensorShape([op.inputs[0].shape.dims[0]
                                                                       if op.inputs[0].shape.rank else None]))],
            host_only=True)
register_op("RaggedToSparseIndices",
            lambda op: [(_I64, TensorShape([None, None])), (_I64, TensorShape([None]))], host_only=True)
register_op("RaggedRange", lambda op: [(_I64, TensorShape([None])), (op.inputs[0].dtype, TensorShape([None]))],
            host_only=True)
not_differentiable("RaggedCheckSplits", "RaggedSameSplits", "RaggedSplitsToRowIds", "RaggedRowIdsToSplits",
                   "RaggedDenseGatherIndex", "RaggedFromDenseIndices", "RaggedLengthsFromPadding",
                   "RaggedToSparseIndices", "RaggedRange")


def _nrows_of(splits: _g.Tensor) -> Optional[int]:
    d = splits.shape.dims[0] if splits.shape.rank == 1 else None
    return None if d is None else d - 1


def is_ragged(x: Any) -> bool:
    return isinstance(x, RaggedTensor)


def _ops() -> Any:
    # the op modules, imported late: this module is imported by the op package itself
    from . import array_ops, math_ops, scan_ops, slicing_ops, index_ops, segment_ops
    return array_ops, math_ops, scan_ops, slicing_ops, index_ops, segment_ops


def _int64(x: Any, g: Optional[_g.Graph] = None) -> _g.Tensor:
    if isinstance(x, _g.Tensor):
        if x.dtype == _I64:
            return x
        if not x.dtype.is_integer:
            raise TypeError(f"row partition tensors must be integers, got {x.dtype.name}")
        return _ops()[1].cast(x, _I64)
    return _g.convert_to_tensor(np.asarray(x, np.int64))


def _graph_of(*xs: Any) -> _g.Graph:
    for x in xs:
        if isinstance(x, (_g.Tensor, RaggedTensor)):
            return x.graph
    return _g.get_default_graph()


def _values_tensor(values: Any) -> Any:
    return values if isinstance(values, (RaggedTensor, _g.Tensor)) else _g.convert_to_tensor(values)


def _nvals(values: Any) -> _g.Tensor:
    """The number of rows of values (int64 scalar)."""
    if isinstance(values, RaggedTensor):
        return values.nrows()
    a, m = _ops()[0], _ops()[1]
    return m.cast(a.shape(values)[0], _I64)


class RaggedTensorValue:
    """A fetched RaggedTensor: NumPy `values` (or a nested RaggedTensorValue) and row_splits."""

    def __init__(self, values: Any, row_splits: Any):
        self._values, self._row_splits = values, np.asarray(row_splits)

    values = property(lambda self: self._values)
    row_splits = property(lambda self: self._row_splits)

    @property
    def flat_values(self) -> np.ndarray:
        v = self._values
        while isinstance(v, RaggedTensorValue):
            v = v.values
        return v

    @property
    def nested_row_splits(self) -> tuple:
        out, v = [self._row_splits], self._values
        while isinstance(v, RaggedTensorValue):
            out.append(v.row_splits)
            v = v.values
        return tuple(out)

    @property
    def ragged_rank(self) -> int:
        return len(self.nested_row_splits)

    @property
    def dtype(self) -> Any:
        return self.flat_values.dtype

    @property
    def shape(self) -> tuple:
        return (self._row_splits.shape[0] - 1,) + (None,) * self.ragged_rank + tuple(self.flat_values.shape[1:])

    def to_list(self) -> list:
        v = self._values
        rows = v.to_list() if isinstance(v, RaggedTensorValue) else np.asarray(v).tolist()
        s = self._row_splits
        return [rows[int(s[i]):int(s[i + 1])] for i in range(len(s) - 1)]

    def __repr__(self) -> str:
        return f"tf.RaggedTensorValue(values={self._values!r}, row_splits={self._row_splits!r})"


class RaggedTensor:
    """Rows of `values` cut at `row_splits` (TF 1.15's tf.RaggedTensor); build one with the
    from_* class methods or tf.ragged.constant."""

    def __init__(self, values: Any, row_splits: _g.Tensor, internal: bool = False):
        if not internal:
            raise ValueError("RaggedTensor constructor is private; please use one of the factory methods "
                             "instead (e.g., RaggedTensor.from_row_lengths())")
        self._values, self._row_splits = values, row_splits

    # -- factories ------------------------------------------------------------------------------

    @classmethod
    def from_row_splits(cls, values: Any, row_splits: Any, name: Optional[str] = None,
                        validate: bool = True) -> "RaggedTensor":
        """Row i is values[row_splits[i]:row_splits[i + 1]]."""
        with _graph_of(values, row_splits).as_default():
            values = _values_tensor(values)
            splits = _int64(row_splits)
            if splits.shape.rank not in (None, 1):
                raise ValueError(f"row_splits must be a vector, got shape {splits.shape}")
            if validate:
                splits = single("RaggedCheckSplits", [splits, _nvals(values)], name=name or "RaggedFromRowSplits")
            return cls(values, splits, internal=True)

    @classmethod
    def from_row_lengths(cls, values: Any, row_lengths: Any, name: Optional[str] = None,
                         validate: bool = True) -> "RaggedTensor":
        """Row i holds the next row_lengths[i] values."""
        with _graph_of(values, row_lengths).as_default():
            a, m, sc = _ops()[:3]
            n = _int64(row_lengths)
            splits = a.concat([np.zeros(1, np.int64), sc.cumsum(n)], 0)
            return cls.from_row_splits(values, splits, name=name, validate=validate)

    @classmethod
    def from_row_starts(cls, values: Any, row_starts: Any, name: Optional[str] = None,
                        validate: bool = True) -> "RaggedTensor":
        """Row i starts at values[row_starts[i]] and ends where the next row starts."""
        with _graph_of(values, row_starts).as_default():
            values = _values_tensor(values)
            a = _ops()[0]
            splits = a.concat([_int64(row_starts), a.reshape(_nvals(values), [1])], 0)
            return cls.from_row_splits(values, splits, name=name, validate=validate)

    @classmethod
    def from_row_limits(cls, values: Any, row_limits: Any, name: Optional[str] = None,
                        validate: bool = True) -> "RaggedTensor":
        """Row i ends (exclusive) at row_limits[i] and starts where the previous row ends."""
        with _graph_of(values, row_limits).as_default():
            a = _ops()[0]
            splits = a.concat([np.zeros(1, np.int64), _int64(row_limits)], 0)
            return cls.from_row_splits(values, splits, name=name, validate=validate)

    @classmethod
    def from_value_rowids(cls, values: Any, value_rowids: Any, nrows: Any = None, name: Optional[str] = None,
                          validate: bool = True) -> "RaggedTensor":
        """values[j] goes to row value_rowids[j] (sorted); nrows defaults to the last id + 1."""
        with _graph_of(values, value_rowids).as_default():
            ids = _int64(value_rowids)
            n = _int64(-1 if nrows is None else nrows)
            splits = single("RaggedRowIdsToSplits", [ids, n], name=name or "RaggedFromValueRowIds")
            return cls.from_row_splits(values, splits, validate=validate)

    @classmethod
    def from_nested_row_splits(cls, flat_values: Any, nested_row_splits: Sequence[Any], name: Optional[str] = None,
                               validate: bool = True) -> "RaggedTensor":
        """from_row_splits applied innermost first."""
        if isinstance(nested_row_splits, (_g.Tensor, np.ndarray)):
            raise TypeError("nested_row_splits must be a list of Tensors")
        result = flat_values
        for s in reversed(list(nested_row_splits)):
            result = cls.from_row_splits(result, s, validate=validate)
        return result

    @classmethod
    def from_nested_row_lengths(cls, flat_values: Any, nested_row_lengths: Sequence[Any],
                                name: Optional[str] = None, validate: bool = True) -> "RaggedTensor":
        result = flat_values
        for n in reversed(list(nested_row_lengths)):
            result = cls.from_row_lengths(result, n, validate=validate)
        return result

    @classmethod
    def from_nested_value_rowids(cls, flat_values: Any, nested_value_rowids: Sequence[Any],
                                 nested_nrows: Optional[Sequence[Any]] = None, name: Optional[str] = None,
                                 validate: bool = True) -> "RaggedTensor":
        ids = list(nested_value_rowids)
        nn = [None] * len(ids) if nested_nrows is None else list(nested_nrows)
        result = flat_values
        for r, n in reversed(list(zip(ids, nn))):
            result = cls.from_value_rowids(result, r, n, validate=validate)
        return result

    @classmethod
    def from_tensor(cls, tensor: Any, lengths: Any = None, padding: Any = None, ragged_rank: int = 1,
                    name: Optional[str] = None) -> "RaggedTensor":
        """The rows of a dense tensor: whole, cut to `lengths`, or without their trailing
        `padding` (ragged_rank > 1 makes the next dimensions ragged too, uniformly)."""
        if lengths is not None and padding is not None:
            raise ValueError("Specify lengths or padding, but not both")
        with _graph_of(tensor).as_default():
            a, m, sc, sl, ix, _ = _ops()
            t = _g.convert_to_tensor(tensor)
            r = t.shape.rank
            if r is not None and r < ragged_rank + 1:
                raise ValueError(f"ragged_rank must be less than the rank of the tensor ({r}), got {ragged_rank}")
            if ragged_rank < 1:
                raise ValueError(f"ragged_rank must be at least 1, got {ragged_rank}")
            if ragged_rank > 1:
                if lengths is not None or padding is not None:
                    raise NotImplementedError("from_tensor: lengths/padding with ragged_rank > 1 are not supported")
                shp = a.shape(t, out_type=_I64)
                # uniform rows: merge the first two dimensions and recurse
                inner = cls.from_tensor(_merge_first_two(t), ragged_rank=ragged_rank - 1)
                return cls.from_row_splits(inner, _uniform(shp[0], shp[1]), validate=False)
            shp = a.shape(t, out_type=_I64)
            nrows, width = shp[0], shp[1]
            if lengths is None and padding is None:
                return cls.from_row_splits(_merge_first_two(t), _uniform(nrows, width), validate=False)
            if padding is not None:
                pad = _g.convert_to_tensor(padding, dtype=t.dtype)
                if r is not None and pad.shape.rank is not None and not pad.shape.is_compatible_with(
                        TensorShape(t.shape.dims[2:])):
                    raise ValueError(f"padding must have the shape of the tensor's rows' items "
                                     f"{TensorShape(t.shape.dims[2:])}, got {pad.shape}")
                n = single("RaggedLengthsFromPadding", [t, pad])
            else:
                n = _int64(lengths)
            idx = single("RaggedFromDenseIndices", [n, width])
            return cls.from_row_lengths(ix.gather_nd(t, idx), n, validate=False)

    @classmethod
    def from_sparse(cls, st_input: Any, name: Optional[str] = None) -> "RaggedTensor":
        """The rows of a 2-D SparseTensor (entries in row-major order), each row's entries
        in order (TF requires them left-aligned; collflow keeps them in order either way)."""
        from ..sparse_tensor import SparseTensor
        if not isinstance(st_input, SparseTensor):
            raise TypeError(f"st_input must be a SparseTensor, got {type(st_input).__name__}")
        if st_input.shape.rank not in (None, 2):
            raise ValueError(f"rank(st_input) must be 2, got {st_input.shape.rank}")
        with st_input.graph.as_default():
            rowids = st_input.indices[:, 0]
            return cls.from_value_rowids(st_input.values, rowids, st_input.dense_shape[0], validate=False)

    # -- structure ------------------------------------------------------------------------------

    values = property(lambda self: self._values)
    row_splits = property(lambda self: self._row_splits)

    @property
    def flat_values(self) -> _g.Tensor:
        v = self._values
        while isinstance(v, RaggedTensor):
            v = v.values
        return v

    @property
    def nested_row_splits(self) -> tuple:
        out, v = [self._row_splits], self._values
        while isinstance(v, RaggedTensor):
            out.append(v.row_splits)
            v = v.values
        return tuple(out)

    @property
    def ragged_rank(self) -> int:
        return 1 + (self._values.ragged_rank if isinstance(self._values, RaggedTensor) else 0)

    @property
    def dtype(self) -> _dt.DType:
        return self.flat_values.dtype

    @property
    def row_splits_dtype(self) -> _dt.DType:
        return _I64

    @property
    def graph(self) -> _g.Graph:
        return self._row_splits.graph

    @property
    def name(self) -> str:
        return self.flat_values.name

    @property
    def shape(self) -> TensorShape:
        """[nrows, None (each ragged dimension), the flat values' inner dimensions...]."""
        inner = self.flat_values.shape
        tail = list(inner.dims[1:]) if inner.rank is not None else None
        head = [_nrows_of(self._row_splits)] + [None] * self.ragged_rank
        return TensorShape(None) if tail is None else TensorShape(head + tail)

    def get_shape(self) -> TensorShape:
        return self.shape

    # -- row partition queries --------------------------------------------------------------------

    def row_lengths(self, axis: int = 1, name: Optional[str] = None) -> Any:
        """The length of each row (axis 1), or of the rows one level down (axis 2, ...)."""
        if axis == 0:
            raise ValueError("row_lengths: axis=0 has no row lengths")
        if axis == 1:
            with self.graph.as_default():
                return self._row_splits[1:] - self._row_splits[:-1]
        if not isinstance(self._values, RaggedTensor):
            raise ValueError(f"row_lengths: axis={axis} is not a ragged dimension")
        return self.with_values(self._values.row_lengths(axis - 1))

    def row_starts(self, name: Optional[str] = None) -> _g.Tensor:
        with self.graph.as_default():
            return self._row_splits[:-1]

    def row_limits(self, name: Optional[str] = None) -> _g.Tensor:
        with self.graph.as_default():
            return self._row_splits[1:]

    def value_rowids(self, name: Optional[str] = None) -> _g.Tensor:
        """The row of each of values' rows."""
        return single("RaggedSplitsToRowIds", [self._row_splits], name=name or "RaggedValueRowIds")

    def nested_value_rowids(self, name: Optional[str] = None) -> tuple:
        out, rt = [], self
        while isinstance(rt, RaggedTensor):
            out.append(rt.value_rowids())
            rt = rt.values
        return tuple(out)

    def nested_row_lengths(self, name: Optional[str] = None) -> tuple:
        out, rt = [], self
        while isinstance(rt, RaggedTensor):
            out.append(rt.row_lengths())
            rt = rt.values
        return tuple(out)

    def nrows(self, out_type: Any = _I64, name: Optional[str] = None) -> _g.Tensor:
        with self.graph.as_default():
            a, m = _ops()[:2]
            n = a.shape(self._row_splits, out_type=_I64)[0] - 1
            return n if _dt.as_dtype(out_type) == _I64 else m.cast(n, out_type)

    def bounding_shape(self, axis: Any = None, name: Optional[str] = None) -> _g.Tensor:
        """[nrows, the longest row of each ragged dimension, the inner dimensions] (int64)."""
        with self.graph.as_default():
            a, m = _ops()[:2]
            dims, rt = [self.nrows()], self
            while isinstance(rt, RaggedTensor):
                dims.append(m.reduce_max(a.concat([np.zeros(1, np.int64), rt.row_lengths()], 0)))
                rt = rt.values
            inner = a.shape(rt, out_type=_I64)[1:]
            out = a.concat([a.stack(dims), inner], 0)
            return out if axis is None else out[axis]

    # -- values ---------------------------------------------------------------------------------

    def with_values(self, new_values: Any) -> "RaggedTensor":
        """The same rows over other values (as many rows as values has)."""
        with self.graph.as_default():
            return RaggedTensor(_values_tensor(new_values), self._row_splits, internal=True)

    def with_flat_values(self, new_values: Any) -> "RaggedTensor":
        """The same nested rows over other flat values."""
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    # -- conversions ----------------------------------------------------------------------------

    def to_tensor(self, default_value: Any = None, name: Optional[str] = None, shape: Any = None) -> _g.Tensor:
        """A dense tensor, each row padded to the longest with default_value (zero/"")."""
        if shape is not None:
            raise NotImplementedError("RaggedTensor.to_tensor: shape is not supported")
        with self.graph.as_default():
            a, m, sc, sl = _ops()[:4]
            inner = self._values.to_tensor(default_value) if isinstance(self._values, RaggedTensor) else self._values
            dv = _default(default_value, self.dtype)
            if dv is None and self.dtype == _dt.string:
                dv = _g.convert_to_tensor("", dtype=_dt.string)
            fill = a.expand_dims(a.zeros_like(inner[0]) if dv is None else
                                 _fill_like_row(inner, dv), 0)
            padded = a.concat([inner, fill], 0)
            idx = single("RaggedDenseGatherIndex", [self._row_splits, _int64(-1)])
            return sl.gather(padded, idx, name=name)

    def to_sparse(self, name: Optional[str] = None) -> Any:
        """A SparseTensor with an entry for every flat value."""
        from ..sparse_tensor import SparseTensor
        with self.graph.as_default():
            a = _ops()[0]
            splits = list(self.nested_row_splits)
            op = make_op("RaggedToSparseIndices", splits + [self.flat_values], {"num_splits": len(splits)},
                         name=name or "RaggedToSparse")
            return SparseTensor(op.outputs[0], a.reshape(self.flat_values, [-1]), op.outputs[1])

    def eval(self, feed_dict: Any = None, session: Any = None) -> RaggedTensorValue:
        sess = session or _g.get_default_session()
        if sess is None:
            raise ValueError("Cannot evaluate a RaggedTensor without a default session")
        return sess.run(self, feed_dict)

    # Session.run's protocol for composite values: the component tensors, and the value from theirs
    def _cf_components(self) -> List[_g.Tensor]:
        return [self.flat_values] + list(self.nested_row_splits)

    def _cf_from_values(self, vals: Sequence[Any]) -> RaggedTensorValue:
        result = vals[0]
        for s in reversed(vals[1:]):
            result = RaggedTensorValue(result, s)
        return result

    def _cf_feed_values(self, value: Any) -> List[Any]:
        if not isinstance(value, RaggedTensorValue):
            raise TypeError(f"feed_dict key {self!r} is a RaggedTensor; its value must be a RaggedTensorValue, "
                            f"got {type(value).__name__}")
        if value.ragged_rank != self.ragged_rank:
            raise ValueError(f"feed for {self!r}: ragged_rank {value.ragged_rank} does not match "
                             f"{self.ragged_rank}")
        return [value.flat_values] + list(value.nested_row_splits)

    def __repr__(self) -> str:
        return f"tf.RaggedTensor(values={self._values!r}, row_splits={self._row_splits!r})"

    def __iter__(self) -> Any:
        # rt[i] exists, so without this Python would iterate by building ops forever
        raise TypeError("RaggedTensor object is not iterable in graph mode (index its rows, or fetch it)")

    def __bool__(self) -> bool:
        raise TypeError("RaggedTensor may not be used as a boolean.")

    __nonzero__ = __bool__


def _default(default_value: Any, dtype: _dt.DType) -> Any:
    if default_value is None:
        return None
    return _g.convert_to_tensor(default_value, dtype=dtype)


def _fill_like_row(inner: _g.Tensor, dv: _g.Tensor) -> _g.Tensor:
    """One row of inner's row shape, filled with dv (broadcast)."""
    a = _ops()[0]
    # zeros_like keeps strings working: "" + dv for strings would need a string op, so use
    # where on a true mask of the row's shape
    ones = a.ones_like(inner[0], dtype=_dt.bool_)
    from .array_ops import where_v2
    return where_v2(ones, dv, inner[0])


def _merge_first_two(t: _g.Tensor) -> _g.Tensor:
    a = _ops()[0]
    shp = a.shape(t, out_type=_I64)
    d = t.shape.dims if t.shape.rank is not None else None
    if d is not None and None not in d[2:]:
        return a.reshape(t, [-1] + [int(x) for x in d[2:]])
    return a.reshape(t, a.concat([np.asarray([-1], np.int64), shp[2:]], 0))


def _uniform(nrows: _g.Tensor, width: _g.Tensor) -> _g.Tensor:
    """Uniform row splits [0, width, 2 width, ..., nrows * width]."""
    from .misc_ops import range as _range
    return _range(0, nrows + 1, dtype=_I64) * width


def _refuse(rt: RaggedTensor, dtype: Any) -> Any:
    raise TypeError(f"{rt!r} is a RaggedTensor: convert it with rt.to_tensor() or use an op that takes one "
                    "(tf.ragged.*, its operators, tf.reduce_* over it)")


_g.register_tensor_conversion(RaggedTensor, _refuse)
