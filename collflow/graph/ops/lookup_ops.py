"""Lookup tables (TensorFlow 1.x tf.contrib.lookup / tf.lookup): static hash tables filled
once by an initializer op, vocabulary tables with out-of-vocabulary hash buckets, and
index-to-string tables.

    table = index_table_from_tensor(["a", "b"], num_oov_buckets=2)
    ids = table.lookup(words)        # "a" -> 0, "b" -> 1, others -> 2 + Fingerprint64 % 2
    sess.run(tf.tables_initializer()); sess.run(ids)

A table is a resource of the Session (as a queue is), reached through its HashTableV2 op's
output; every initializer op is added to GraphKeys.TABLE_INITIALIZERS, which
tf.tables_initializer() (and MonitoredTrainingSession's default Scaffold) runs.  A lookup
before the initializer ran raises FailedPreconditionError("Table not initialized.").  The
table state and kernels are in kernels/lookup_kernels.py.
"""
from __future__ import annotations

import collections
import importlib
from typing import Any, Optional, Sequence

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from .. import graph as _g
from ..registry import not_differentiable, register_op
from ..shape import TensorShape
from ..sparse_tensor import SparseTensor
from .array_ops import size as _size, where_v2 as _where
from .math_ops import add as _add, cast as _cast, not_equal as _not_equal
from .misc_ops import range as _range
from .op_util import make_op
from .string_more_ops import as_string, string_to_hash_bucket_fast, string_to_hash_bucket_strong

__all__ = ["LookupInterface", "InitializableLookupTableBase", "HashTable", "StaticHashTable",
           "TableInitializerBase", "KeyValueTensorInitializer", "TextFileIndex", "TextFileInitializer",
           "TextFileIdTableInitializer", "TextFileStringTableInitializer", "HasherSpec", "FastHashSpec",
           "StrongHashSpec", "IdTableWithHashBuckets", "StaticVocabularyTable", "index_table_from_tensor",
           "index_table_from_file", "index_to_string_table_from_tensor", "index_to_string_table_from_file"]


def _handle_spec(op: _g.Operation) -> list:
    return [(_dt.resource, TensorShape(()))]


def _find_spec(op: _g.Operation) -> list:
    # keys' shape less a key's own dims (a dense table's vector keys), + the value shape
    # (default_value's: a scalar for the static tables)
    keys, default = op.inputs[1].shape, op.inputs[2].shape
    if keys.rank is None or default.rank is None:
        return [(op.attrs["value_dtype"], TensorShape(None))]
    lead = keys.dims[:max(keys.rank - op.attrs.get("key_rank", 0), 0)]
    return [(op.attrs["value_dtype"], TensorShape(lead + default.dims))]


register_op("HashTableV2", _handle_spec, stateful=True, host_only=True, doc="a static hash table resource")
register_op("InitializeTableV2", lambda op: [], stateful=True, host_only=True)
register_op("InitializeTableFromTextFileV2", lambda op: [], stateful=True, host_only=True)
# stateful: their value depends on the table's state, so they are never folded or merged
register_op("LookupTableFindV2", _find_spec, stateful=True, host_only=True)
register_op("LookupTableSizeV2", lambda op: [(_dt.int64, TensorShape(()))], stateful=True, host_only=True)
not_differentiable("HashTableV2", "InitializeTableV2", "InitializeTableFromTextFileV2", "LookupTableFindV2",
                   "LookupTableSizeV2")


class LookupInterface:
    """What every table offers: key_dtype, value_dtype, name, lookup(keys), size()."""

    def __init__(self, key_dtype: Any, value_dtype: Any, name: str):
        self._key_dtype = _dt.as_dtype(key_dtype)
        self._value_dtype = _dt.as_dtype(value_dtype)
        self._name = name

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: self._value_dtype)
    name = property(lambda self: self._name)

    def size(self, name: Optional[str] = None) -> _g.Tensor:
        raise NotImplementedError

    def lookup(self, keys: Any, name: Optional[str] = None) -> Any:
        raise NotImplementedError


def _keys_tensor(keys: Any, key_dtype: _dt.DType) -> _g.Tensor:
    if isinstance(keys, _g.Tensor):
        if keys.dtype != key_dtype:
            raise TypeError(f"Dtype of argument `keys` must be {key_dtype.name}, received: {keys.dtype.name}")
        return keys
    return _g.convert_to_tensor(keys, dtype=key_dtype)


def _on_values(keys: Any, fn: Any) -> Any:
    """fn applied to a dense Tensor of keys, or to a SparseTensor's values (a SparseTensor back)."""
    if isinstance(keys, SparseTensor):
        return SparseTensor(keys.indices, fn(keys.values), keys.dense_shape)
    return fn(keys)


class InitializableLookupTableBase(LookupInterface):
    """A table filled once by its initializer's op (added to TABLE_INITIALIZERS)."""

    def __init__(self, default_value: Any, initializer: "TableInitializerBase", shared_name: Optional[str] = None,
                 name: Optional[str] = None):
        if not isinstance(initializer, TableInitializerBase):
            raise TypeError(f"initializer must be a table initializer, got {type(initializer).__name__}")
        g = _g.get_default_graph()
        base = name or "hash_table"
        # the table exists whatever control flow surrounds its construction
        with g.control_dependencies(None):
            uname = g.unique_name(base, mark_as_used=False)
            op = g.create_op("HashTableV2", [], {
                "key_dtype": initializer.key_dtype, "value_dtype": initializer.value_dtype,
                "shared_name": shared_name or uname}, name=base)
        # TF's table name is the op's own name, without the enclosing scopes
        super().__init__(initializer.key_dtype, initializer.value_dtype, op.name.rsplit("/", 1)[-1])
        self._handle = op.outputs[0]
        self._default_value = _g.convert_to_tensor(default_value, dtype=self._value_dtype)
        if self._default_value.shape.rank not in (None, 0):
            raise InvalidArgumentError(f"default_value must be a scalar, got shape {self._default_value.shape}")
        self._initializer = initializer
        self._init_op = initializer.initialize(self)

    resource_handle = property(lambda self: self._handle)
    table_ref = property(lambda self: self._handle)
    default_value = property(lambda self: self._default_value)
    initializer = property(lambda self: self._init_op)
    init = property(lambda self: self._init_op)

    def size(self, name: Optional[str] = None) -> _g.Tensor:
        """The number of entries (0 before initialization, as TF's)."""
        with _g.name_scope(name, f"{self._name}_Size"):
            return _g.get_default_graph().create_op("LookupTableSizeV2", [self._handle], {},
                                                    name="LookupTableSizeV2").outputs[0]

    def lookup(self, keys: Any, name: Optional[str] = None) -> Any:
        """The value of each key (default_value where absent); a SparseTensor's values are
        looked up into a SparseTensor of the same indices."""
        def find(k: Any) -> _g.Tensor:
            k = _keys_tensor(k, self._key_dtype)
            with _g.name_scope(name, f"{self._name}_Lookup"):
                # in the keys' graph: a dataset function's graph captures the table from outside
                return k.graph.create_op("LookupTableFindV2", [self._handle, k, self._default_value],
                                         {"value_dtype": self._value_dtype}, name="LookupTableFindV2").outputs[0]
        return _on_values(keys, find)


class HashTable(InitializableLookupTableBase):
    """TF1's tf.contrib.lookup.HashTable: an immutable table filled by `initializer`."""

    def __init__(self, initializer: "TableInitializerBase", default_value: Any, shared_name: Optional[str] = None,
                 name: Optional[str] = None):
        super().__init__(default_value, initializer, shared_name=shared_name, name=name)


class StaticHashTable(HashTable):
    """tf.lookup.StaticHashTable: HashTable with TF's (initializer, default_value, name)."""

    def __init__(self, initializer: "TableInitializerBase", default_value: Any, name: Optional[str] = None,
                 experimental_is_anonymous: bool = False):
        super().__init__(initializer, default_value, name=name)


class TableInitializerBase:
    """Makes the op that fills a table (`initialize(table)`), with the table's dtypes."""

    def __init__(self, key_dtype: Any, value_dtype: Any):
        self._key_dtype = _dt.as_dtype(key_dtype)
        self._value_dtype = _dt.as_dtype(value_dtype)

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: self._value_dtype)

    def initialize(self, table: InitializableLookupTableBase) -> _g.Operation:
        raise NotImplementedError

    @staticmethod
    def _register(op: _g.Operation) -> _g.Operation:
        _g.add_to_collection(_g.GraphKeys.TABLE_INITIALIZERS, op)
        return op

    def _check(self, table: InitializableLookupTableBase) -> None:
        if table.key_dtype != self._key_dtype or table.value_dtype != self._value_dtype:
            raise TypeError(f"the table's dtypes ({table.key_dtype.name}, {table.value_dtype.name}) differ from "
                            f"the initializer's ({self._key_dtype.name}, {self._value_dtype.name})")


class KeyValueTensorInitializer(TableInitializerBase):
    """Fills a table with keys[i] -> values[i] (two tensors of one length).  A key given twice
    with different values is an error when the initializer runs, as in TF."""

    def __init__(self, keys: Any, values: Any, key_dtype: Any = None, value_dtype: Any = None,
                 name: Optional[str] = None):
        with _g.name_scope(name, "key_value_init"):
            self._keys = _g.convert_to_tensor(keys, dtype=key_dtype and _dt.as_dtype(key_dtype))
            self._values = _g.convert_to_tensor(values, dtype=value_dtype and _dt.as_dtype(value_dtype))
        self._name = name or "key_value_init"
        super().__init__(self._keys.dtype, self._values.dtype)

    def initialize(self, table: InitializableLookupTableBase) -> _g.Operation:
        self._check(table)
        with _g.name_scope(self._name):
            op = make_op("InitializeTableV2", [table.resource_handle, self._keys, self._values], {},
                         name="InitializeTableV2")
        return self._register(op)


class TextFileIndex:
    """Which part of a vocabulary file's line is a key or a value."""
    WHOLE_LINE = -2
    LINE_NUMBER = -1


class TextFileInitializer(TableInitializerBase):
    """Fills a table from a text file, one entry per line: key and value are a column (split
    at `delimiter`), the whole line (WHOLE_LINE) or the 0-based line number (LINE_NUMBER).
    vocab_size: read only that many lines (an error when the file has fewer)."""

    def __init__(self, filename: Any, key_dtype: Any, key_index: int, value_dtype: Any, value_index: int,
                 vocab_size: Optional[int] = None, delimiter: str = "\t", name: Optional[str] = None,
                 value_index_offset: int = 0):
        key_dtype, value_dtype = _dt.as_dtype(key_dtype), _dt.as_dtype(value_dtype)
        for what, idx, dt in (("key", key_index, key_dtype), ("value", value_index, value_dtype)):
            if idx < -2:
                raise ValueError(f"Invalid {what} index {idx}.")
            if idx == TextFileIndex.LINE_NUMBER and dt != _dt.int64:
                raise ValueError(f"{what.capitalize()} dtype must be int64 for LINE_NUMBER, got {dt.name}.")
            if idx == TextFileIndex.WHOLE_LINE and not (dt.is_integer or dt == _dt.string):
                raise ValueError(f"{what.capitalize()} dtype must be integer or string for WHOLE_LINE, "
                                 f"got {dt.name}.")
        if vocab_size is not None and int(vocab_size) <= 0:
            raise ValueError(f"Invalid vocab_size {vocab_size}.")
        self._filename = filename
        self._key_index, self._value_index = int(key_index), int(value_index)
        self._vocab_size = -1 if vocab_size is None else int(vocab_size)
        self._delimiter = str(delimiter)
        self._offset = int(value_index_offset)
        self._name = name or "text_file_init"
        super().__init__(key_dtype, value_dtype)

    def initialize(self, table: InitializableLookupTableBase) -> _g.Operation:
        self._check(table)
        with _g.name_scope(self._name):
            fname = _g.convert_to_tensor(self._filename, dtype=_dt.string)
            op = make_op("InitializeTableFromTextFileV2", [table.resource_handle, fname], {
                "key_index": self._key_index, "value_index": self._value_index, "vocab_size": self._vocab_size,
                "delimiter": self._delimiter, "offset": self._offset}, name="InitializeTableFromTextFileV2")
        return self._register(op)


class TextFileStringTableInitializer(TextFileInitializer):
    """Line number (int64) -> whole line (string), by default."""

    def __init__(self, filename: Any, key_column_index: int = TextFileIndex.LINE_NUMBER,
                 value_column_index: int = TextFileIndex.WHOLE_LINE, vocab_size: Optional[int] = None,
                 delimiter: str = "\t", name: str = "text_file_string_table_init"):
        super().__init__(filename, _dt.int64, key_column_index, _dt.string, value_column_index,
                         vocab_size=vocab_size, delimiter=delimiter, name=name)


class TextFileIdTableInitializer(TextFileInitializer):
    """Whole line (key_dtype) -> line number (int64), by default."""

    def __init__(self, filename: Any, key_column_index: int = TextFileIndex.WHOLE_LINE,
                 value_column_index: int = TextFileIndex.LINE_NUMBER, vocab_size: Optional[int] = None,
                 delimiter: str = "\t", name: str = "text_file_id_table_init", key_dtype: Any = _dt.string):
        super().__init__(filename, key_dtype, key_column_index, _dt.int64, value_column_index,
                         vocab_size=vocab_size, delimiter=delimiter, name=name)


HasherSpec = collections.namedtuple("HasherSpec", ["hasher", "key"])
FastHashSpec = HasherSpec("fasthash", None)


class StrongHashSpec(HasherSpec):
    """SipHash-2-4 under a key of two 64-bit integers (string_to_hash_bucket_strong)."""
    __slots__ = ()

    def __new__(cls, key: Sequence[int]) -> "StrongHashSpec":
        if len(key) != 2:
            raise ValueError(f"key must have size 2, got {len(key)}.")
        if not all(isinstance(k, int) for k in key):
            raise TypeError(f"Invalid key {key}. Must be unsigned integer values.")
        return super().__new__(cls, "stronghash", key)


def _hash_buckets(keys: _g.Tensor, n: int, spec: HasherSpec) -> _g.Tensor:
    strs = keys if keys.dtype == _dt.string else as_string(keys)
    if spec.hasher == "fasthash":
        return string_to_hash_bucket_fast(strs, n, name="hash_bucket")
    if spec.hasher == "stronghash":
        return string_to_hash_bucket_strong(strs, n, key=spec.key, name="hash_bucket")
    raise ValueError(f"Unsupported hasher {spec.hasher!r}: use FastHashSpec or StrongHashSpec")


class IdTableWithHashBuckets(LookupInterface):
    """An int64 id table plus num_oov_buckets buckets: a key missing from `table` (or every
    key, when table is None) maps to table.size() + hash(key) % num_oov_buckets, its string
    form hashed (decimal for integer keys)."""

    def __init__(self, table: Optional[InitializableLookupTableBase], num_oov_buckets: int,
                 hasher_spec: HasherSpec = FastHashSpec, name: Optional[str] = None, key_dtype: Any = None):
        if table is None and num_oov_buckets <= 0:
            raise ValueError("oov_buckets must be > 0 if no table is supplied.")
        if num_oov_buckets < 0:
            raise ValueError(f"num_oov_buckets must be >= 0, got {num_oov_buckets}.")
        if not isinstance(hasher_spec, HasherSpec):
            raise TypeError(f"hasher_spec must be of type HasherSpec, got {type(hasher_spec).__name__}")
        if table is not None:
            if table.value_dtype != _dt.int64:
                raise TypeError(f"Invalid value dtype, expected int64 but got {table.value_dtype.name}.")
            key_dtype = _dt.as_dtype(key_dtype) if key_dtype is not None else table.key_dtype
            if key_dtype.is_integer != table.key_dtype.is_integer:
                raise TypeError(f"Invalid key dtype, expected {'integer' if key_dtype.is_integer else 'non-integer'} "
                                f"but got {table.key_dtype.name}.")
            name = name or table.name
        else:
            key_dtype = _dt.as_dtype(key_dtype) if key_dtype is not None else _dt.string
            name = name or "hash_bucket"
        if not (key_dtype.is_integer or key_dtype == _dt.string):
            raise TypeError(f"Invalid key_dtype, expected integer or string, got {key_dtype.name}.")
        super().__init__(key_dtype, _dt.int64, name)
        self._table = table
        self._num_oov_buckets = int(num_oov_buckets)
        self._hasher_spec = hasher_spec

    @property
    def init(self) -> Any:
        return self._table.init if self._table is not None else None

    initializer = init
    resource_handle = property(lambda self: None if self._table is None else self._table.resource_handle)

    def size(self, name: Optional[str] = None) -> _g.Tensor:
        with _g.name_scope(name, f"{self._name}_Size"):
            if self._table is None:
                return _g.convert_to_tensor(self._num_oov_buckets, dtype=_dt.int64)
            return _add(self._table.size(), _g.convert_to_tensor(self._num_oov_buckets, dtype=_dt.int64))

    def lookup(self, keys: Any, name: Optional[str] = None) -> Any:
        def find(k: Any) -> _g.Tensor:
            k = _keys_tensor(k, self._key_dtype)
            with _g.name_scope(name, f"{self._name}_Lookup"):
                # integer keys of any width go to the table as int64, as in TF
                if self._table is not None and self._table.key_dtype == _dt.int64 and k.dtype != _dt.int64:
                    k = _cast(k, _dt.int64)
                if self._num_oov_buckets == 0:
                    return self._table.lookup(k)
                buckets = _hash_buckets(k, self._num_oov_buckets, self._hasher_spec)
                if self._table is None:
                    return buckets
                ids = self._table.lookup(k)
                buckets = _add(buckets, self._table.size())
                return _where(_not_equal(ids, self._table.default_value), ids, buckets)
        return _on_values(keys, find)


class StaticVocabularyTable(IdTableWithHashBuckets):
    """tf.lookup.StaticVocabularyTable: an initializer's key -> int64 id table, and
    num_oov_buckets (> 0) hash buckets after it for the other keys."""

    def __init__(self, initializer: Optional[TableInitializerBase], num_oov_buckets: int,
                 lookup_key_dtype: Any = None, name: Optional[str] = None, experimental_is_anonymous: bool = False):
        if num_oov_buckets <= 0:
            raise ValueError("`num_oov_buckets` must be > 0; use StaticHashTable.")
        table = None
        if initializer is not None:
            if initializer.key_dtype not in (_dt.int64, _dt.string):
                raise TypeError(f"Invalid `key_dtype`, expected one of (int64, string), but got "
                                f"{initializer.key_dtype.name}.")
            if initializer.value_dtype != _dt.int64:
                raise TypeError(f"Invalid `value_dtype`, expected int64 but got {initializer.value_dtype.name}.")
            table = HashTable(initializer, default_value=-1, name=name and name.rstrip("/"))
        super().__init__(table, num_oov_buckets, name=name, key_dtype=lookup_key_dtype)


def _check_oov(num_oov_buckets: int) -> None:
    if num_oov_buckets < 0:
        raise ValueError(f"num_oov_buckets must be greater or equal than 0, got {num_oov_buckets}.")


def index_table_from_tensor(vocabulary_list: Any, num_oov_buckets: int = 0, default_value: int = -1,
                            hasher_spec: HasherSpec = FastHashSpec, dtype: Any = _dt.string,
                            name: Optional[str] = None) -> LookupInterface:
    """vocabulary_list[i] -> i (int64); other keys -> default_value, or with num_oov_buckets
    to len(vocabulary_list) + Fingerprint64(key) % num_oov_buckets.  A repeated entry is an
    error when the initializer runs."""
    if vocabulary_list is None:
        raise ValueError("vocabulary_list must be specified.")
    _check_oov(num_oov_buckets)
    dtype = _dt.as_dtype(dtype)
    with _g.name_scope(name, "string_to_index"):
        keys = _g.convert_to_tensor(vocabulary_list)
        if keys.dtype.is_integer != dtype.is_integer:
            raise ValueError(f"Invalid `dtype`: Expected {'integer' if dtype.is_integer else 'non-integer'}, "
                             f"got {keys.dtype.name}.")
        if not dtype.is_integer and keys.dtype != dtype:
            raise ValueError(f"Invalid `dtype`: Expected {dtype.name}, got {keys.dtype.name}.")
        values = _cast(_range(_size(keys)), _dt.int64)
        with _g.name_scope(None, "hash_table"):
            table_keys = _cast(keys, _dt.int64) if keys.dtype.is_integer and keys.dtype != _dt.int64 else keys
            init = KeyValueTensorInitializer(table_keys, values, table_keys.dtype, _dt.int64, name="table_init")
            table: LookupInterface = HashTable(init, default_value)
        if num_oov_buckets:
            table = IdTableWithHashBuckets(table, num_oov_buckets, hasher_spec=hasher_spec, key_dtype=dtype)
        return table


def index_table_from_file(vocabulary_file: Any = None, num_oov_buckets: int = 0, vocab_size: Optional[int] = None,
                          default_value: int = -1, hasher_spec: HasherSpec = FastHashSpec, key_dtype: Any = _dt.string,
                          name: Optional[str] = None, key_column_index: int = TextFileIndex.WHOLE_LINE,
                          value_column_index: int = TextFileIndex.LINE_NUMBER,
                          delimiter: str = "\t") -> LookupInterface:
    """A vocabulary file's keys (by default the whole line) -> int64 ids (by default the line
    number); other keys as index_table_from_tensor.  Empty lines are an error, as in TF."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    _check_oov(num_oov_buckets)
    if vocab_size is not None and vocab_size < 1:
        raise ValueError(f"vocab_size must be greater than 0, got {vocab_size}.")
    key_dtype = _dt.as_dtype(key_dtype)
    if not (key_dtype.is_integer or key_dtype == _dt.string):
        raise TypeError(f"Only integer and string keys are supported, got {key_dtype.name}.")
    with _g.name_scope(name, "string_to_index"):
        with _g.name_scope(None, "hash_table"):
            init = TextFileIdTableInitializer(vocabulary_file, vocab_size=vocab_size,
                                              key_dtype=_dt.int64 if key_dtype.is_integer else key_dtype,
                                              name="table_init", key_column_index=key_column_index,
                                              value_column_index=value_column_index, delimiter=delimiter)
            table: LookupInterface = HashTable(init, default_value)
        if num_oov_buckets:
            table = IdTableWithHashBuckets(table, num_oov_buckets, hasher_spec=hasher_spec, key_dtype=key_dtype)
        return table


def index_to_string_table_from_tensor(vocabulary_list: Any, default_value: str = "UNK",
                                      name: Optional[str] = None) -> HashTable:
    """int64 index i -> vocabulary_list[i]; other indices -> default_value."""
    if vocabulary_list is None:
        raise ValueError("vocabulary_list must be specified.")
    with _g.name_scope(name, "index_to_string"):
        vocab = _g.convert_to_tensor(vocabulary_list, dtype=_dt.string)
        keys = _cast(_range(_size(vocab)), _dt.int64)
        init = KeyValueTensorInitializer(keys, vocab, _dt.int64, _dt.string, name="table_init")
        return HashTable(init, default_value)


def index_to_string_table_from_file(vocabulary_file: Any, vocab_size: Optional[int] = None,
                                    default_value: str = "UNK", name: Optional[str] = None,
                                    key_column_index: int = TextFileIndex.LINE_NUMBER,
                                    value_column_index: int = TextFileIndex.WHOLE_LINE,
                                    delimiter: str = "\t") -> HashTable:
    """int64 line number -> the line (by default) of a vocabulary file; else default_value."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    if vocab_size is not None and vocab_size < 1:
        raise ValueError(f"vocab_size must be greater than 0, got {vocab_size}.")
    with _g.name_scope(name, "index_to_string"):
        init = TextFileStringTableInitializer(vocabulary_file, vocab_size=vocab_size, name="table_init",
                                              key_column_index=key_column_index,
                                              value_column_index=value_column_index, delimiter=delimiter)
        return HashTable(init, default_value)


# the mutable tables (their module builds on LookupInterface above); imported here so that
# their ops are registered wherever lookup tables are
_mutable_lookup_ops = importlib.import_module(__package__ + ".mutable_lookup_ops")
