"""Mutable lookup tables (TF 1.15's tf.contrib.lookup.MutableHashTable / MutableDenseHashTable,
tf.lookup.experimental.MutableHashTable / DenseHashTable): tables changed by insert() and
remove() ops while the Session runs.

    table = MutableHashTable(tf.string, tf.int64, default_value=-1)
    sess.run(table.insert(["a", "b"], [1, 2]))
    sess.run(table.lookup(["a", "z"]))      # [1, -1]

As the static tables, a table is a resource of the Session, created the first time one of
its ops runs (empty: mutable tables need no initializer).  Values may be vectors: their shape
is default_value's.  With checkpoint=True the table joins the SAVEABLE_OBJECTS collection
under its `name` argument, and tf.train.Saver saves its contents as "<name>-keys" and
"<name>-values" (collflow/train/table_checkpoint.py).  The kernels are in
kernels/mutable_lookup_kernels.py.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

from ... import dtypes as _dt
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from .lookup_ops import LookupInterface, _keys_tensor

__all__ = ["MutableHashTable", "DenseHashTable", "MutableDenseHashTable", "SAVEABLE_OBJECTS", "TableSaveable"]

# TF's GraphKeys.SAVEABLE_OBJECTS: objects tf.train.Saver saves besides the global variables
SAVEABLE_OBJECTS = "saveable_objects"

# TF's default bucket count of a MutableDenseHashTableV2 (the op's attr default)
_DEFAULT_BUCKETS = 131072


def _handle_spec(op: _g.Operation) -> list:
    return [(_dt.resource, TensorShape(()))]


def _export_spec(op: _g.Operation) -> list:
    # as TF's: the exported arrays' shapes depend on the table's contents
    return [(op.attrs["Tkeys"], TensorShape(None)), (op.attrs["Tvalues"], TensorShape(None))]


register_op("MutableHashTableV2", _handle_spec, stateful=True, host_only=True, doc="a mutable hash table")
register_op("MutableHashTableOfTensorsV2", _handle_spec, stateful=True, host_only=True,
            doc="a mutable hash table of vector values")
register_op("MutableDenseHashTableV2", _handle_spec, stateful=True, host_only=True,
            doc="a mutable hash table in open-addressing buckets (empty_key and deleted_key mark free buckets)")
register_op("LookupTableInsertV2", lambda op: [], stateful=True, host_only=True)
register_op("LookupTableRemoveV2", lambda op: [], stateful=True, host_only=True)
register_op("LookupTableImportV2", lambda op: [], stateful=True, host_only=True)
register_op("LookupTableExportV2", _export_spec, stateful=True, host_only=True)
not_differentiable("MutableHashTableV2", "MutableHashTableOfTensorsV2", "MutableDenseHashTableV2",
                   "LookupTableInsertV2", "LookupTableRemoveV2", "LookupTableImportV2", "LookupTableExportV2")


def _convert(value: Any, dtype: _dt.DType, what: str) -> _g.Tensor:
    """convert_to_tensor with TF's ValueError for a Tensor of another dtype."""
    if isinstance(value, _g.Tensor) and value.dtype != dtype:
        raise ValueError(f"{what}: Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                         f"{value.dtype.name}: {value!r}")
    return _g.convert_to_tensor(value, dtype=dtype, name=what)


class TableSaveable:
    """What TF's MutableHashTable._Saveable is to a Saver: `op` (the table) saved under `name`
    as the entries "<name>-keys" and "<name>-values"."""

    def __init__(self, table: "_MutableTableBase", name: str):
        self.op = table
        self.name = name

    def __repr__(self) -> str:
        return f"<TableSaveable {self.name!r} of table {self.op.name!r}>"


class _MutableTableBase(LookupInterface):
    """The ops common to both mutable tables: lookup, insert, remove, size, export."""

    _key_rank = 0  # the rank of one key (a dense table's keys may be vectors)

    def _make(self, op_type: str, inputs: list, attrs: dict, name: str, checkpoint: bool) -> None:
        g = _g.get_default_graph()
        # the table exists whatever control flow surrounds its construction, as TF's
        with g.control_dependencies(None):
            uname = g.unique_name(name, mark_as_used=False)
            ins = [f(g) for f in inputs]
            attrs = dict(attrs, key_dtype=self._key_dtype, value_dtype=self._value_dtype,
                         value_shape=tuple(self._value_shape), shared_name=uname)
            op = g.create_op(op_type, ins, attrs, name=name)
        self._handle = op.outputs[0]
        self._table_name = op.name.rsplit("/", 1)[-1]  # TF's name: the op's own, without scopes
        self._checkpoint = bool(checkpoint)
        if checkpoint:
            # TF keys the saved entries by the constructor's `name`, not the op's unique name
            g.add_to_collection(SAVEABLE_OBJECTS, TableSaveable(self, name))

    resource_handle = property(lambda self: self._handle)
    name = property(lambda self: self._table_name)
    default_value = property(lambda self: self._default_value)

    def size(self, name: Optional[str] = None) -> _g.Tensor:
        """The number of entries (int64)."""
        with _g.name_scope(name, f"{self.name}_Size"):
            return _g.get_default_graph().create_op("LookupTableSizeV2", [self._handle], {},
                                                    name="LookupTableSizeV2").outputs[0]

    def lookup(self, keys: Any, name: Optional[str] = None) -> _g.Tensor:
        """The value of each key, default_value where absent: shape keys' (less a key's own
        dims) + the value shape."""
        with _g.name_scope(name, f"{self.name}_lookup_table_find"):
            k = _convert(keys, self._key_dtype, "keys")
            # in the keys' graph: a dataset function's graph captures the table from outside
            return k.graph.create_op("LookupTableFindV2", [self._handle, k, self._default_value], {
                "value_dtype": self._value_dtype, "key_rank": self._key_rank}, name="LookupTableFindV2").outputs[0]

    def insert(self, keys: Any, values: Any, name: Optional[str] = None) -> _g.Operation:
        """An op setting keys[i] -> values[i] (added or replaced)."""
        with _g.name_scope(name, f"{self.name}_lookup_table_insert"):
            k = _convert(keys, self._key_dtype, "keys")
            v = _convert(values, self._value_dtype, "values")
            return k.graph.create_op("LookupTableInsertV2", [self._handle, k, v], {}, name="LookupTableInsertV2")

    def remove(self, keys: Any, name: Optional[str] = None) -> _g.Operation:
        """An op removing the keys (absent ones are ignored)."""
        k = _keys_tensor(keys, self._key_dtype)
        with _g.name_scope(name, f"{self.name}_lookup_table_remove"):
            return k.graph.create_op("LookupTableRemoveV2", [self._handle, k], {}, name="LookupTableRemoveV2")

    def export(self, name: Optional[str] = None) -> Tuple[_g.Tensor, _g.Tensor]:
        """(keys, values) of the table's contents."""
        with _g.name_scope(name, f"{self.name}_lookup_table_export_values"):
            op = _g.get_default_graph().create_op("LookupTableExportV2", [self._handle], {
                "Tkeys": self._key_dtype, "Tvalues": self._value_dtype}, name="LookupTableExportV2")
            return op.outputs[0], op.outputs[1]

    def import_values(self, keys: Any, values: Any, name: Optional[str] = None) -> _g.Operation:
        """An op replacing the contents by what export() gave (what a restore runs)."""
        with _g.name_scope(name, f"{self.name}_table_restore"):
            k = _convert(keys, self._key_dtype, "keys")
            v = _convert(values, self._value_dtype, "values")
            return k.graph.create_op("LookupTableImportV2", [self._handle, k, v], {}, name="LookupTableImportV2")


class MutableHashTable(_MutableTableBase):
    """A mutable hash table: insert(), remove(), lookup(), size(), export().

    default_value: what lookup() gives for absent keys; its shape is every value's (a
    scalar, or a vector: MutableHashTableOfTensors).  checkpoint: a Saver saves the contents.
    export() gives the entries in insertion order (TF's order is its hash map's)."""

    def __init__(self, key_dtype: Any, value_dtype: Any, default_value: Any, name: str = "MutableHashTable",
                 checkpoint: bool = True, experimental_is_anonymous: bool = False):
        value_dtype = _dt.as_dtype(value_dtype)
        self._default_value = _g.convert_to_tensor(default_value, dtype=value_dtype)
        self._value_shape = self._default_value.shape
        super().__init__(key_dtype, value_dtype, name)
        op_type = "MutableHashTableV2" if self._value_shape.rank == 0 else "MutableHashTableOfTensorsV2"
        self._make(op_type, [], {}, name, checkpoint)


class DenseHashTable(_MutableTableBase):
    """A mutable hash table in open-addressing buckets (TF's MutableDenseHashTable).

    empty_key and deleted_key (of key_dtype, distinct, never used as keys) mark free and
    removed buckets; a key may be a vector (empty_key's shape).  initial_num_buckets: a
    power of 2, at least 4 (default 131072); the buckets double when an insert would fill
    more than 80%.  export() gives the bucket arrays: keys [num_buckets, key size] and values
    [num_buckets, value size], free buckets holding empty_key (deleted_key once removed)."""

    def __init__(self, key_dtype: Any, value_dtype: Any, default_value: Any, empty_key: Any, deleted_key: Any,
                 initial_num_buckets: Optional[int] = None, name: str = "MutableDenseHashTable",
                 checkpoint: bool = True, experimental_is_anonymous: bool = False):
        key_dtype, value_dtype = _dt.as_dtype(key_dtype), _dt.as_dtype(value_dtype)
        self._default_value = _g.convert_to_tensor(default_value, dtype=value_dtype)
        self._value_shape = self._default_value.shape
        super().__init__(key_dtype, value_dtype, name)
        g = _g.get_default_graph()
        with g.control_dependencies(None):
            self._empty_key = _convert(empty_key, key_dtype, "empty_key")
            self._deleted_key = _convert(deleted_key, key_dtype, "deleted_key")
        self._key_rank = self._empty_key.shape.rank or 0
        buckets = _DEFAULT_BUCKETS if initial_num_buckets is None else int(initial_num_buckets)
        self._make("MutableDenseHashTableV2", [lambda _: self._empty_key, lambda _: self._deleted_key],
                   {"initial_num_buckets": buckets, "max_load_factor": 0.8}, name, checkpoint)


# TF 1.15's tf.contrib.lookup name of the same table
MutableDenseHashTable = DenseHashTable
