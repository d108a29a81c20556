"""TensorFlow's first checkpoint format (V1, TensorSliceWriter), read without TensorFlow.

TF before 1.0 (and `Saver(write_version=SaverDef.V1)` since) wrote one file per checkpoint,
`model.ckpt` or `model.ckpt-<step>`: a sorted string table (tf_table) whose "" entry is a
SavedTensorSlices message holding the meta data (each tensor's name, shape, dtype and
slices) and whose other entries, keyed by name and slice (tf_checkpoint.slice_key), hold
each slice's values as a TensorProto (float_val, int_val, ... or tensor_content).  The
model zoos of that time (TF-slim's ImageNet checkpoints) ship in it, so
`init_from_checkpoint("resnet_v1_50.ckpt", ...)` and Saver.restore read it through
V1Reader, which has CheckpointReader's interface.  A sharded V1 checkpoint
(`model.ckpt-00000-of-00002`, ...) is read one file at a time; collflow does not write V1.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

import numpy as np

from ..errors import DataLossError, NotFoundError
from ..summary.proto import Message, TensorShapeProto, _fields
from .tf_checkpoint import _TF_NAMES, _TF_TO_NP, TensorFlowReader, _Slice, assemble, slice_key
from .tf_table import TABLE_MAGIC, get_varint, read_table

__all__ = ["V1Reader", "is_v1_checkpoint"]

_MAX_BYTES = 1 << 40


class _SliceMeta(Message):
    FIELDS = ((1, "name", "string", ""), (2, "shape", TensorShapeProto, None), (3, "type", "enum", 0),
              (4, "slice", [_Slice], None))


class _Meta(Message):
    FIELDS = ((1, "tensor", [_SliceMeta], None),)


class _SavedSlice(Message):
    FIELDS = ((1, "name", "string", ""), (2, "slice", _Slice, None), (3, "data", "bytes", b""))


class _Saved(Message):
    FIELDS = ((1, "meta", _Meta, None), (2, "data", _SavedSlice, None))


def is_v1_checkpoint(path: str) -> bool:
    """Whether `path` is a file ending in the table magic number (a V1 checkpoint; collflow's
    HDF5 files and everything else do not)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() < 48:
                return False
            f.seek(-8, os.SEEK_END)
            return struct.unpack("<Q", f.read(8))[0] == TABLE_MAGIC
    except OSError:
        return False


# TensorProto's value fields by dtype: (field number, how the values are stored)
_FIELD = {1: (5, "<f4"), 2: (6, "<f8"), 3: (7, "varint"), 4: (7, "varint"), 5: (7, "varint"), 6: (7, "varint"),
          17: (7, "varint"), 7: (8, "bytes"), 8: (9, "<f4"), 9: (10, "varint"), 10: (11, "varint"),
          18: (12, "<f8"), 19: (13, "varint"), 22: (16, "varint"), 23: (17, "varint")}


def _varints(buf: bytes) -> List[int]:
    out, pos = [], 0
    while pos < len(buf):
        v, pos = get_varint(buf, pos, len(buf), "packed value")
        out.append(v)
    return out


def _values(proto: bytes, tf_dtype: int, dtype: np.dtype, n: int, what: str) -> np.ndarray:
    """The n values of a serialized TensorProto (tensor_content, or its typed repeated field)."""
    field, how = _FIELD[tf_dtype]
    raw: List[Any] = []
    content = None
    for number, wire, v in _fields(proto):
        if number == 4 and wire == 2:
            content = bytes(v)
        elif number == field:
            if how == "bytes":
                raw.append(bytes(v))
            elif how == "varint":
                raw.extend(_varints(v) if wire == 2 else [v])
            else:
                raw.append(bytes(v))
    if content is not None and how != "bytes":
        arr = np.frombuffer(content, dtype=dtype.newbyteorder("<")).astype(dtype)
    elif how == "bytes":
        arr = np.empty(len(raw), dtype=object)
        arr[:] = raw
    elif how == "varint":
        ints = [x - (1 << 64) if x >= 1 << 63 else x for x in raw]
        if tf_dtype == 19:  # half_val: the float16 bit patterns
            arr = np.array(ints, dtype=np.uint16).view(np.float16)
        else:
            arr = np.array(ints, dtype=np.int64 if dtype.kind != "u" else np.uint64).astype(dtype)
    else:
        flat = np.frombuffer(b"".join(raw), dtype=how)
        arr = flat.view(np.complex64 if tf_dtype == 8 else np.complex128) if tf_dtype in (8, 18) else flat
        arr = arr.astype(dtype)
    if arr.size == 1 and n > 1:  # TF stores a tensor of one repeated value as that value once
        arr = np.full(n, arr[0], dtype=dtype)
    if arr.size != n:
        raise DataLossError(f"{what} holds {arr.size} values, its slice needs {n}")
    return arr


@dataclass
class _V1Tensor:
    name: str
    tf_dtype: int
    dtype: np.dtype
    shape: Tuple[int, ...]
    slices: List[List[Tuple[int, int]]]


class V1Reader(TensorFlowReader):
    """Opens a V1 checkpoint file, checks its table and meta data; reads tensors on request.

    Same interface as checkpoint_io.CheckpointReader (path, global_step, variable_specs(),
    read(), rng/pipeline empty, world_size 1, close()).  The table's block checksums are
    always checked (V1 keeps no per-tensor checksum); a damaged file raises DataLossError.
    """

    def __init__(self, path: str, allow_unverified: bool = False):
        self.path = os.path.abspath(path)
        self._what = f"TensorFlow V1 checkpoint {self.path}"
        if not os.path.isfile(self.path):
            raise NotFoundError(f"TensorFlow V1 checkpoint {self.path} does not exist")
        self.timestamp = os.path.getmtime(self.path)
        size = os.path.getsize(self.path)
        if size > _MAX_BYTES:
            raise DataLossError(f"TensorFlow V1 checkpoint {self.path} is {size} bytes; collflow reads up to 1 TiB")
        with open(self.path, "rb") as f:
            raw = f.read()
        try:
            items = dict(read_table(raw))
        except DataLossError as e:
            raise DataLossError(f"TensorFlow V1 checkpoint {self.path} is damaged: {e}") from None
        self._items = items
        self.entries: Dict[str, _V1Tensor] = {}
        try:
            meta = _Saved.FromString(items.get(b"", b"")).meta
            for m in meta.tensor:
                self.entries[m.name] = self._tensor(m)
        except DataLossError:
            raise
        except Exception as e:
            raise DataLossError(f"TensorFlow V1 checkpoint {self.path} has damaged meta data ({e})") from None
        if b"" not in items:
            raise DataLossError(f"TensorFlow V1 checkpoint {self.path} has no meta data entry")
        self.global_step = self._step()

    def _tensor(self, m: Any) -> _V1Tensor:
        if m.type not in _TF_TO_NP:
            what = _TF_NAMES.get(m.type, f"DataType {m.type}")
            raise DataLossError(f"TensorFlow V1 checkpoint {self.path}: tensor {m.name!r} is {what}, which "
                                "collflow does not read")
        shape = tuple(int(d.size) for d in m.shape.dim)
        if any(d < 0 for d in shape):
            raise DataLossError(f"TensorFlow V1 checkpoint {self.path}: tensor {m.name!r} has shape {list(shape)}")
        slices = [[(int(x.start), int(x.length) if x.HasField("length") else -1) for x in s.extent] for s in m.slice]
        # a whole tensor's slice lists no extents at all (or "full" ones)
        slices = [ext if ext else [(0, -1)] * len(shape) for ext in slices]
        return _V1Tensor(m.name, m.type, np.dtype(_TF_TO_NP[m.type]), shape, slices)

    def _read_entry(self, t: _V1Tensor, verify: bool) -> np.ndarray:
        """A tensor's values (the table's block checksums were checked when it was opened)."""
        def part(ext: List[Tuple[int, int]], want: Tuple[int, ...]) -> np.ndarray:
            # the key spells a whole dimension as (0, -1) where the meta data does
            key = slice_key(t.name, ext) if len(t.shape) else slice_key(t.name, [])
            value = self._items.get(key)
            what = f"TensorFlow V1 checkpoint {self.path}: slice {ext} of {t.name!r}"
            if value is None:
                raise DataLossError(f"{what} is missing")
            try:
                saved = _Saved.FromString(value).data
            except Exception as e:
                raise DataLossError(f"{what} is damaged ({e})") from None
            n = int(np.prod(want, dtype=np.int64))
            return _values(saved.data, t.tf_dtype, t.dtype, n, what).reshape(want)
        if not t.shape:
            return part([], ()).reshape(())
        return assemble(self.path, t.name, t.shape, t.dtype, t.slices, part)
