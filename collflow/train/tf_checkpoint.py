"""TensorFlow's own checkpoint format (V2, the "tensor bundle"), read and written without TensorFlow.

A checkpoint `<prefix>` is

    <prefix>.index                the table (tf_table) "" -> BundleHeaderProto (number of data
                                  shards, endianness, version) and each tensor's name ->
                                  BundleEntryProto (dtype, shape, shard, offset, size, the masked
                                  CRC-32C of its bytes, the slices of a partitioned variable)
    <prefix>.data-00000-of-00001  the tensors' bytes back to back: numbers little-endian in C
                                  order; a string tensor as its lengths (varints), the masked
                                  CRC-32C of the lengths (each as a little-endian uint32), the bytes

TF1's Saver writes this format (its default, V2); so do TF 2's tf.train.Checkpoint and
Keras's save_weights(save_format="tf").  A partitioned variable is one entry listing its
slices, each slice stored under a key that encodes the name and the slice (TF's
OrderedCode); reading assembles the whole variable.

BundleReader has checkpoint_io.CheckpointReader's interface, so a TensorFlow checkpoint
restores into a collflow graph wherever a collflow one does (Saver.restore,
NewCheckpointReader, init_from_checkpoint, the Restore op); write_bundle writes one that
TensorFlow restores.  Only tensors are in this format: a collflow checkpoint also keeps the
random streams and the input position.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..errors import DataLossError, InvalidArgumentError, NotFoundError
from ..platform.atomic_files import fsync_directory, temporary_name
from ..platform.crc32c import crc32c, mask
from ..summary.proto import Message, TensorShapeProto, encode_varint
from .tf_table import build_table, get_varint, read_table

__all__ = ["BundleReader", "TensorFlowReader", "write_bundle", "is_bundle", "bundle_prefix", "bundle_files", "INDEX_SUFFIX"]

INDEX_SUFFIX = ".index"
_MAX_SHARDS = 1 << 16

# TensorFlow's DataType enum -> NumPy; strings are object arrays of bytes
_TF_TO_NP: Dict[int, Any] = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8,
                             7: object, 8: np.complex64, 9: np.int64, 10: np.bool_, 17: np.uint16,
                             18: np.complex128, 19: np.float16, 22: np.uint32, 23: np.uint64}
_NP_TO_TF: Dict[Any, int] = {np.dtype(v): k for k, v in _TF_TO_NP.items() if v is not object}
_TF_NAMES = {14: "bfloat16", 11: "qint8", 12: "quint8", 13: "qint32", 15: "qint16", 16: "quint16",
             20: "resource", 21: "variant"}
_DT_STRING = 7


class _Version(Message):
    FIELDS = ((1, "producer", "int32", 0), (2, "min_consumer", "int32", 0), (3, "bad_consumers", ["int32"], None))


class _Header(Message):
    FIELDS = ((1, "num_shards", "int32", 0), (2, "endianness", "enum", 0), (3, "version", _Version, None))


class _Extent(Message):
    FIELDS = ((1, "start", "int64", 0), (2, "length", "int64", 0))
    ONEOF = frozenset({"length"})


class _Slice(Message):
    FIELDS = ((1, "extent", [_Extent], None),)


class _Entry(Message):
    FIELDS = ((1, "dtype", "enum", 0), (2, "shape", TensorShapeProto, None), (3, "shard_id", "int32", 0),
              (4, "offset", "int64", 0), (5, "size", "int64", 0), (6, "crc32c", "fixed32", 0),
              (7, "slices", [_Slice], None))


def data_file(prefix: str, shard: int, num_shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def bundle_prefix(path: str) -> str:
    """The checkpoint prefix of `path` (a prefix, or its .index file)."""
    return path[:-len(INDEX_SUFFIX)] if path.endswith(INDEX_SUFFIX) else path


def is_bundle(path: str) -> bool:
    """Whether `path` names a TensorFlow V2 checkpoint (its prefix, or its .index file)."""
    return os.path.isfile(bundle_prefix(path) + INDEX_SUFFIX)


def bundle_files(path: str) -> List[str]:
    """The files of the checkpoint `path` names that exist: its index and data shards."""
    prefix = bundle_prefix(path)
    d, base = os.path.split(prefix)
    try:
        names = os.listdir(d or ".")
    except OSError:
        return []
    return [os.path.join(d, n) for n in sorted(names)
            if n == base + INDEX_SUFFIX or (n.startswith(base + ".data-") and "-of-" in n[len(base) + 6:])]


# -- slices of partitioned variables: TF's OrderedCode keys ----------------------------------------


def _num_increasing(v: int) -> bytes:
    body = v.to_bytes((v.bit_length() + 7) // 8, "big") if v else b""
    return bytes([len(body)]) + body


def _string_increasing(s: bytes) -> bytes:
    return s.replace(b"\xff", b"\xff\x00").replace(b"\x00", b"\x00\xff") + b"\x00\x01"


_HEADER_BITS = [(0, 0), (0x80, 0), (0xC0, 0), (0xE0, 0), (0xF0, 0), (0xF8, 0), (0xFC, 0), (0xFE, 0), (0xFF, 0),
                (0xFF, 0x80), (0xFF, 0xC0)]


def _signed_increasing(v: int) -> bytes:
    x = ~v if v < 0 else v
    if x < 64:
        return bytes([(0x80 ^ v) & 0xFF])
    n = x.bit_length() // 7 + 1  # bytes: 7 payload bits per byte beyond the sign/length bits
    buf = bytearray(v.to_bytes(10, "big", signed=True))[10 - n:]
    buf[0] ^= _HEADER_BITS[n][0]
    buf[1] ^= _HEADER_BITS[n][1]
    return bytes(buf)


def slice_key(name: str, extents: Sequence[Tuple[int, int]]) -> bytes:
    """The key TensorFlow stores one slice of a partitioned variable under
    (checkpoint::EncodeTensorNameSlice): extents are (start, length), length -1 for a whole dim."""
    out = _num_increasing(0) + _string_increasing(name.encode()) + _num_increasing(len(extents))
    for start, length in extents:
        out += _signed_increasing(start) + _signed_increasing(length)
    return out


# -- reading -------------------------------------------------------------------------------------------


def assemble(where: str, name: str, shape: Tuple[int, ...], dtype: np.dtype, slices: List[List[Tuple[int, int]]],
             part: Any) -> np.ndarray:
    """A partitioned variable put together from its slices: part(extents, shape) reads one.
    Slices must lie inside the shape and cover it (DataLossError naming `where` otherwise)."""
    out = np.zeros(shape, dtype=dtype) if dtype != object else np.full(shape, b"", dtype=object)
    covered = 0
    for ext in slices:
        if len(ext) != len(shape) or any(ln != -1 and (s < 0 or ln < 0 or s + ln > d) for (s, ln), d in zip(ext, shape)):
            raise DataLossError(f"TensorFlow checkpoint {where}: slice {ext} of {name!r} does not fit its shape "
                                f"{list(shape)}")
        idx = tuple(slice(0, d) if ln == -1 else slice(s, s + ln) for (s, ln), d in zip(ext, shape))
        want = tuple(len(range(*i.indices(d))) for i, d in zip(idx, shape))
        out[idx] = part(ext, want)
        covered += int(np.prod(want, dtype=np.int64))
    if covered != int(np.prod(shape, dtype=np.int64)):
        raise DataLossError(f"TensorFlow checkpoint {where}: the slices of {name!r} cover {covered} of its "
                            f"{int(np.prod(shape, dtype=np.int64))} elements")
    return out


@dataclass
class _Tensor:
    name: str
    tf_dtype: int
    dtype: np.dtype
    shape: Tuple[int, ...]
    shard: int
    offset: int
    size: int
    crc: int
    slices: List[List[Tuple[int, int]]]  # per slice, (start, length) per dim (-1: the whole dim)


class TensorFlowReader:
    """What a reader of TensorFlow's checkpoints shares (checkpoint_io.CheckpointReader's
    interface): `entries` (name -> an entry with dtype and shape), `_what` (how errors name
    the file) and `_read_entry(entry, verify)` come from the format."""

    entries: Dict[str, Any]
    _what: str
    # TF's files hold no random streams, input position, world size or graph fingerprint
    rng: Dict[str, dict] = {}
    pipeline: Dict[str, int] = {}
    world_size = 1
    graph_fingerprint = ""
    collflow_version = ""

    def variable_specs(self) -> Dict[str, Tuple[np.dtype, Tuple[int, ...]]]:
        """name -> (NumPy dtype, shape) of every tensor (a partitioned variable: the whole one)."""
        return {n: (e.dtype, e.shape) for n, e in self.entries.items()}

    def read(self, names: Optional[Iterable[str]] = None, verify: bool = True) -> Dict[str, np.ndarray]:
        """Reads tensors (all by default) into fresh arrays; verify: check their checksums."""
        names = list(self.entries) if names is None else list(names)
        missing = [n for n in names if n not in self.entries]
        if missing:
            raise NotFoundError(f"{self._what} has no tensor(s) {', '.join(missing)}")
        return {n: self._read_entry(self.entries[n], verify) for n in names}

    def _read_entry(self, entry: Any, verify: bool) -> np.ndarray:
        raise NotImplementedError

    def _step(self) -> Optional[int]:
        """The "global_step" tensor's value when it is an integer scalar."""
        t = self.entries.get("global_step")
        if t is None or t.shape != () or t.dtype.kind not in "iu":
            return None
        return int(self.read(["global_step"])["global_step"])

    def close(self) -> None:
        """Nothing stays open between reads; kept for CheckpointReader's interface."""

    def __enter__(self) -> "TensorFlowReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class BundleReader(TensorFlowReader):
    """Opens a TensorFlow V2 checkpoint (prefix or .index file), checks its index; reads on request.

    Same interface as checkpoint_io.CheckpointReader: path, global_step (the "global_step"
    tensor when there is one), variable_specs(), read(names, verify), rng / pipeline (empty:
    TF does not save them), world_size (1), close().  A missing index raises NotFoundError;
    a damaged index or data file, a failed checksum, a big-endian file or a dtype collflow
    cannot hold raise DataLossError naming the file and the tensor.
    """

    def __init__(self, path: str, allow_unverified: bool = False):
        self.prefix = os.path.abspath(bundle_prefix(path))
        self.path = self.prefix
        self._what = f"TensorFlow checkpoint {self.prefix}"
        index = self.prefix + INDEX_SUFFIX
        if not os.path.isfile(index):
            raise NotFoundError(f"TensorFlow checkpoint {self.prefix} does not exist (no file {index})")
        self.timestamp = os.path.getmtime(index)
        with open(index, "rb") as f:
            raw = f.read()
        try:
            items = read_table(raw)
        except DataLossError as e:
            raise DataLossError(f"TensorFlow checkpoint index {index} is damaged: {e}") from None
        self._parse(index, items)
        # (a partitioned global step, were there one, would not count)
        self.global_step = self._step() if not getattr(self.entries.get("global_step"), "slices", None) else None

    def _parse(self, index: str, items: List[Tuple[bytes, bytes]]) -> None:
        if not items or items[0][0] != b"":
            raise DataLossError(f"TensorFlow checkpoint index {index} has no header entry")
        try:
            header = _Header.FromString(items[0][1])
        except Exception as e:
            raise DataLossError(f"TensorFlow checkpoint index {index} has a damaged header ({e})") from None
        if header.endianness != 0:
            raise DataLossError(f"TensorFlow checkpoint {self.prefix} was written big-endian; collflow reads "
                                "little-endian checkpoints only")
        if not 1 <= header.num_shards <= _MAX_SHARDS:
            raise DataLossError(f"TensorFlow checkpoint index {index} declares {header.num_shards} data shards")
        self.num_shards = header.num_shards
        self._shard_sizes: Dict[int, int] = {}
        self.entries: Dict[str, _Tensor] = {}
        self._slices: Dict[bytes, _Tensor] = {}
        for key, value in items[1:]:
            t = self._entry(index, key, value)
            if key[:1] == b"\x00":  # one slice of a partitioned variable (an OrderedCode key)
                self._slices[key] = t
            else:
                self.entries[t.name] = t

    def _entry(self, index: str, key: bytes, value: bytes) -> _Tensor:
        name = key.decode("utf-8", "backslashreplace")
        try:
            e = _Entry.FromString(value)
            shape = tuple(int(d.size) for d in e.shape.dim)
            slices = [[(int(x.start), int(x.length) if x.HasField("length") else -1) for x in s.extent]
                      for s in e.slices]
        except Exception as err:
            raise DataLossError(f"TensorFlow checkpoint index {index}: entry {name!r} is damaged ({err})") from None
        if e.dtype not in _TF_TO_NP:
            what = _TF_NAMES.get(e.dtype, f"DataType {e.dtype}")
            raise DataLossError(f"TensorFlow checkpoint {self.prefix}: tensor {name!r} is {what}, which collflow "
                                "does not read")
        dt = np.dtype(_TF_TO_NP[e.dtype])
        if any(d < 0 for d in shape) or e.offset < 0 or e.size < 0 or not 0 <= e.shard_id < self.num_shards:
            raise DataLossError(f"TensorFlow checkpoint index {index}: entry {name!r} has an impossible shape, "
                                f"offset, size or shard ({shape}, {e.offset}, {e.size}, {e.shard_id})")
        n = int(np.prod(shape, dtype=np.int64))
        if not slices and e.dtype != _DT_STRING and e.size != n * dt.itemsize:
            raise DataLossError(f"TensorFlow checkpoint index {index}: tensor {name!r} of shape {list(shape)} "
                                f"({dt}) declares {e.size} bytes, not {n * dt.itemsize}")
        if not slices and e.offset + e.size > self._shard_size(e.shard_id):
            raise DataLossError(f"TensorFlow checkpoint {self.prefix}: tensor {name!r} needs bytes up to "
                                f"{e.offset + e.size} of {data_file(self.prefix, e.shard_id, self.num_shards)}, "
                                f"which has {self._shard_size(e.shard_id)} (truncated)")
        return _Tensor(name, e.dtype, dt, shape, e.shard_id, e.offset, e.size, e.crc32c, slices)

    def _shard_size(self, shard: int) -> int:
        if shard not in self._shard_sizes:
            f = data_file(self.prefix, shard, self.num_shards)
            try:
                self._shard_sizes[shard] = os.path.getsize(f)
            except OSError:
                raise DataLossError(f"TensorFlow checkpoint {self.prefix}: data file {f} is missing") from None
        return self._shard_sizes[shard]

    def _read_entry(self, t: _Tensor, verify: bool) -> np.ndarray:
        if not t.slices:
            return self._read_one(t, verify)

        def part(ext: List[Tuple[int, int]], want: Tuple[int, ...]) -> np.ndarray:
            p = self._slices.get(slice_key(t.name, ext))
            if p is None:
                raise DataLossError(f"TensorFlow checkpoint {self.prefix}: slice {ext} of {t.name!r} is missing")
            if p.shape != want or p.dtype != t.dtype:
                raise DataLossError(f"TensorFlow checkpoint {self.prefix}: slice {ext} of {t.name!r} has shape "
                                    f"{list(p.shape)}, expected {list(want)}")
            return self._read_one(p, verify)
        return assemble(self.prefix, t.name, t.shape, t.dtype, t.slices, part)

    def _read_one(self, t: _Tensor, verify: bool) -> np.ndarray:
        f = data_file(self.prefix, t.shard, self.num_shards)
        if t.offset + t.size > self._shard_size(t.shard):
            raise DataLossError(f"TensorFlow checkpoint {self.prefix}: tensor {t.name!r} runs past the end of {f}")
        with open(f, "rb") as fh:
            fh.seek(t.offset)
            buf = fh.read(t.size)
        if len(buf) != t.size:
            raise DataLossError(f"TensorFlow checkpoint {self.prefix}: {f} is truncated inside {t.name!r}")
        if t.dtype == object:
            arr, crc = _decode_strings(buf, t, f)
        else:
            arr = np.frombuffer(buf, dtype=t.dtype.newbyteorder("<")).astype(t.dtype).reshape(t.shape)
            crc = crc32c(buf)
        if verify and int(mask(crc)) != t.crc:
            raise DataLossError(f"TensorFlow checkpoint {self.prefix} is corrupt: tensor {t.name!r} fails its "
                                f"checksum ({int(mask(crc)):#010x}, expected {t.crc:#010x})")
        return arr


def _length_bytes(lengths: Sequence[int]) -> bytes:
    """What TF checksums for a string tensor's lengths: each as uint32 (uint64 past 4 GiB)."""
    return b"".join(struct.pack("<I", n) if n <= 0xFFFFFFFF else struct.pack("<Q", n) for n in lengths)


def _decode_strings(buf: bytes, t: _Tensor, f: str) -> Tuple[np.ndarray, int]:
    n = int(np.prod(t.shape, dtype=np.int64))
    lengths, pos = [], 0
    for _ in range(n):
        ln, pos = get_varint(buf, pos, len(buf), f"string length of {t.name!r} in {f}")
        lengths.append(ln)
    if pos + 4 + sum(lengths) != len(buf):
        raise DataLossError(f"TensorFlow checkpoint {f}: string tensor {t.name!r} holds {len(buf)} bytes, its "
                            f"lengths say {pos + 4 + sum(lengths)}")
    lens_crc = struct.unpack_from("<I", buf, pos)[0]
    head = _length_bytes(lengths)
    if int(mask(crc32c(head))) != lens_crc:
        raise DataLossError(f"TensorFlow checkpoint {f}: the string lengths of {t.name!r} fail their checksum")
    pos += 4
    out = np.empty(n, dtype=object)
    for i, ln in enumerate(lengths):
        out[i] = buf[pos:pos + ln]
        pos += ln
    return out.reshape(t.shape), crc32c(head + buf[pos - sum(lengths) - 4:])


# -- writing -------------------------------------------------------------------------------------------


def _encode_strings(a: np.ndarray) -> Tuple[bytes, int]:
    """A string tensor's bytes in the data file and its entry's masked CRC-32C, which covers
    the lengths as uint32 (not their varints), the lengths' own checksum and the strings."""
    items = [x.encode("utf-8") if isinstance(x, str) else bytes(x) for x in a.reshape(-1)]
    lengths = [len(x) for x in items]
    head = _length_bytes(lengths)
    check = struct.pack("<I", int(mask(crc32c(head))))
    body = b"".join(items)
    data = b"".join(encode_varint(n) for n in lengths) + check + body
    return data, int(mask(crc32c(head + check + body)))


def write_bundle(prefix: str, tensors: Mapping[str, Any], durable: bool = True) -> List[str]:
    """Writes `tensors` (name -> array; strings as object arrays of bytes/str) as a TensorFlow V2
    checkpoint at `prefix`; returns the files written.  The data file, then the index, each
    to a temporary name and renamed; an older checkpoint of the same prefix loses its index
    first, so a crash never leaves an index over data it does not describe."""
    d = os.path.dirname(os.path.abspath(prefix))
    if not os.path.isdir(d):
        raise NotFoundError(f"cannot write TensorFlow checkpoint {prefix}: directory {d} does not exist")
    names = sorted(tensors, key=lambda s: s.encode("utf-8"))
    entries: List[Tuple[bytes, bytes]] = [(b"", _Header(num_shards=1, version=_Version(producer=1)).SerializeToString())]
    data_path, index_path = data_file(prefix, 0, 1), prefix + INDEX_SUFFIX
    tmp_data, tmp_index = temporary_name(data_path), temporary_name(index_path)
    try:
        offset = 0
        with open(tmp_data, "wb") as fh:
            for name in names:
                if not name or name.encode("utf-8")[:1] == b"\x00":
                    raise InvalidArgumentError(f"cannot save a tensor named {name!r} in a TensorFlow checkpoint")
                a = np.asarray(tensors[name])
                if a.dtype.kind in "SUO":
                    a = a.astype(object)
                    data, crc = _encode_strings(a)
                    tf_dt = _DT_STRING
                else:
                    if a.dtype not in _NP_TO_TF:
                        raise InvalidArgumentError(f"cannot save {name!r} ({a.dtype}) in a TensorFlow checkpoint")
                    tf_dt = _NP_TO_TF[a.dtype]
                    # (ascontiguousarray alone would make a scalar 1-d)
                    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).reshape(a.shape)
                    data = memoryview(a).cast("B") if a.size else b""
                    crc = int(mask(crc32c(data)))
                fh.write(data)
                shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(s)) for s in a.shape])
                e = _Entry(dtype=tf_dt, shape=shape, offset=offset, size=len(data), crc32c=crc)
                entries.append((name.encode("utf-8"), e.SerializeToString()))
                offset += len(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        with open(tmp_index, "wb") as fh:
            fh.write(build_table(entries))
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if os.path.exists(index_path):
            os.remove(index_path)
        os.replace(tmp_data, data_path)
        os.replace(tmp_index, index_path)
    except BaseException:
        for p in (tmp_data, tmp_index):
            try:
                os.remove(p)
            except OSError:
                pass
        raise
    if durable:
        fsync_directory(d)
    return [index_path, data_path]


# -- TensorFlow's `checkpoint` state file --------------------------------------------------------------

STATE_FILENAME = "checkpoint"


def _unquote(s: str) -> str:
    """A text-format string literal's value (C escapes, octal bytes)."""
    body = s.strip()
    if len(body) < 2 or body[0] != body[-1] or body[0] not in "\"'":
        raise ValueError(f"not a quoted string: {s!r}")
    return body[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1").decode(
        "utf-8", "replace")


def read_state_file(directory: str) -> List[str]:
    """The checkpoints TensorFlow's `checkpoint` file in `directory` lists, oldest first (the
    newest, model_checkpoint_path, last), as written: relative or absolute; [] without one.
    A damaged file raises DataLossError."""
    path = os.path.join(directory, STATE_FILENAME)
    try:
        with open(path, "rb") as f:
            text = f.read(1 << 20).decode("utf-8", "replace")
    except (FileNotFoundError, IsADirectoryError):
        return []
    latest, every = None, []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or key not in ("model_checkpoint_path", "all_model_checkpoint_paths"):
            continue
        try:
            v = _unquote(value)
        except ValueError as e:
            raise DataLossError(f"TensorFlow checkpoint state file {path} is damaged: {e}") from None
        if key == "model_checkpoint_path":
            latest = v
        else:
            every.append(v)
    out = [p for p in every if p != latest]
    return out + [latest] if latest else out


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def write_state_file(directory: str, paths: Sequence[str], durable: bool = True) -> None:
    """Writes TensorFlow's `checkpoint` file listing `paths` (oldest first; the last is the
    newest), so that TensorFlow's tf.train.latest_checkpoint / get_checkpoint_state find them."""
    from ..platform.atomic_files import atomic_write_bytes
    if not paths:
        return
    lines = [f"model_checkpoint_path: {_quote(paths[-1])}"]
    lines += [f"all_model_checkpoint_paths: {_quote(p)}" for p in paths]
    atomic_write_bytes(os.path.join(directory, STATE_FILENAME), ("\n".join(lines) + "\n").encode("utf-8"),
                       durable=durable)
