"""Saving mutable lookup tables with tf.train.Saver, as TF's saveable objects.

A table made with checkpoint=True is in the SAVEABLE_OBJECTS collection under its `name`
argument; a Saver's default var_list takes them with the global variables (an explicit
var_list may hold tables or their saveables too).  A table is saved as TF names it: the
entries "<name>-keys" and "<name>-values", its export() (a dense table's bucket arrays).

collflow's HDF5 checkpoints hold numbers only, so a string array is stored as its UTF-8
bytes (uint8, concatenated) under the entry's name and the byte lengths (int64, the array's
shape) under "<entry>@lengths".  TensorFlow-format checkpoints take the strings as they are.
Restoring replaces a table's contents (TF's LookupTableImportV2).

Other saveable objects (an iterator's, collflow/data/iterator_state.py) take the same road:
an object with `_collflow_state_saveable = True`, a `name`, a `graph`, `entry` (its one
checkpoint entry, a uint8 array), `save_state(sess)` and `restore_state(sess, array)`.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from ..graph import graph as _g
from ..graph.ops.mutable_lookup_ops import SAVEABLE_OBJECTS, TableSaveable, _MutableTableBase

__all__ = ["split_var_list", "graph_of", "snapshot", "plan_restore", "restore"]

_LENGTHS = "@lengths"


def _is_state(x: Any) -> bool:
    return bool(getattr(x, "_collflow_state_saveable", False))


def _as_saveable(x: Any, name: Optional[str] = None) -> Any:
    if _is_state(x):
        return x
    if isinstance(x, TableSaveable):
        return x if name is None else TableSaveable(x.op, name)
    if isinstance(x, _MutableTableBase):
        return TableSaveable(x, name or x._name)  # the constructor's name, as TF's saveable
    return None


def split_var_list(var_list: Any) -> Tuple[Any, Dict[str, TableSaveable]]:
    """(var_list without tables, {saved name: table saveable}).  None: the default graph's
    SAVEABLE_OBJECTS tables (a later table of the same name wins, as in TF's Saver)."""
    tables: Dict[str, TableSaveable] = {}
    if var_list is None:
        for s in _g.get_default_graph().get_collection(SAVEABLE_OBJECTS):
            if isinstance(s, TableSaveable) or _is_state(s):
                tables[s.name] = s
        return None, tables
    if isinstance(var_list, Mapping):
        rest_map = {}
        for k, v in var_list.items():
            s = _as_saveable(v, str(k))
            if s is None:
                rest_map[k] = v
            else:
                tables[s.name] = s
        return rest_map, tables
    rest = []
    for v in var_list:
        s = _as_saveable(v)
        if s is None:
            rest.append(v)
        else:
            tables[s.name] = s
    return rest, tables


def graph_of(tables: Mapping[str, TableSaveable]) -> Optional[_g.Graph]:
    for s in tables.values():
        return s.graph if _is_state(s) else s.op.resource_handle.graph
    return None


def _entries(name: str, s: Any = None) -> Tuple[str, ...]:
    if _is_state(s):
        return (s.entry,)
    return name + "-keys", name + "-values"


def _encode(a: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """A string array as (its UTF-8 bytes concatenated, the byte length of each element)."""
    parts = [x.encode("utf-8") if isinstance(x, str) else bytes(x) for x in a.reshape(-1).tolist()]
    lengths = np.array([len(p) for p in parts], dtype=np.int64).reshape(a.shape)
    return np.frombuffer(b"".join(parts), dtype=np.uint8).copy(), lengths


def _decode(blob: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    data = np.asarray(blob, dtype=np.uint8).tobytes()
    out = np.empty(lengths.size, dtype=object)
    pos = 0
    for i, n in enumerate(np.asarray(lengths).reshape(-1).tolist()):
        out[i] = data[pos:pos + n].decode("utf-8", errors="surrogateescape")
        pos += n
    return out.reshape(lengths.shape)


def _handles(sess: Any, tables: Mapping[str, TableSaveable]) -> List[Any]:
    """The tables' resources in this Session (running the handle ops creates empty ones)."""
    names = list(tables)
    got = sess.run([tables[n].op.resource_handle for n in names])
    return [h.item() if isinstance(h, np.ndarray) else h for h in got]


def snapshot(sess: Any, tables: Mapping[str, TableSaveable], encode: bool = True) -> Dict[str, np.ndarray]:
    """The entries saving `tables`; encode=False keeps string arrays as they are (TF's format)."""
    out: Dict[str, np.ndarray] = {}
    states = {n: s for n, s in tables.items() if _is_state(s)}
    for name, s in states.items():
        out[s.entry] = s.save_state(sess)
    tables = {n: s for n, s in tables.items() if n not in states}
    if not tables:
        return out
    for name, res in zip(tables, _handles(sess, tables)):
        for entry, arr in zip(_entries(name), res.export()):
            if encode and arr.dtype == object:
                out[entry], out[entry + _LENGTHS] = _encode(arr)
            else:
                out[entry] = arr
        # (keys and values come from one export, under the table's lock: they agree)
    return out


def plan_restore(tables: Mapping[str, TableSaveable], specs: Mapping[str, Any], result: Any) -> List[str]:
    """The checkpoint entries to read for `tables`; records missing tables in result.missing
    and takes the tables' entries out of result.unexpected."""
    want: List[str] = []
    for name, s in tables.items():
        names = [e + x for e in _entries(name, s) for x in ("", _LENGTHS) if e + x in specs]
        if not all(e in specs for e in _entries(name, s)):
            result.missing.append(name)
            continue
        want += names
    mine = {e + x for n, s in tables.items() for e in _entries(n, s) for x in ("", _LENGTHS)}
    result.unexpected = [u for u in result.unexpected if u not in mine]
    return want


def restore(sess: Any, tables: Mapping[str, TableSaveable], values: Mapping[str, np.ndarray]) -> List[str]:
    """Replaces the contents of the tables whose entries are in `values`; their names."""
    done = []
    for name, s in tables.items():
        if _is_state(s) and s.entry in values:
            s.restore_state(sess, values[s.entry])
            done.append(name)
    todo = [n for n, s in tables.items() if not _is_state(s) and all(e in values for e in _entries(n))]
    if not todo:
        return done
    for name, res in zip(todo, _handles(sess, {n: tables[n] for n in todo})):
        arrs = []
        for entry in _entries(name):
            a = values[entry]
            if entry + _LENGTHS in values:
                a = _decode(a, values[entry + _LENGTHS])
            arrs.append(a)
        res.import_values(arrs[0], arrs[1], tables[name].op.resource_handle.op)
        done.append(name)
    return done
