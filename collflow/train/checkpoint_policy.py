"""What a checkpoint file may contain, and where a checkpoint may live: checks made before reading.

A checkpoint is data, never a reference to other data.  An HDF5 file can point elsewhere in
several ways (external raw storage, soft and external links, virtual datasets, object
references) and can declare datasets far larger than itself (a chunked dataset never written
reads back as fill values).  Reading such a file would copy another file's bytes into the
job's state, or allocate gigabytes on the say-so of a few kilobytes.  So, before anything
is read, `check_file` walks the whole file without following anything but hard links and
refuses:

- soft, external and user-defined links (the object would come from elsewhere);
- datasets with external storage, virtual datasets, HDF5 filters (collflow writes none, and
  a compressed dataset's declared size is not bounded by the file's), null dataspaces;
- dataset dtypes other than bool, integers, floats and complex64/128 (no strings, variable-length data,
  references, compounds, opaque or array types);
- attribute types other than those and strings (the format's names and versions);
- declared sizes that the file cannot hold: every dataset's bytes together, and every
  attribute's, must fit in the file (an uncompressed value is stored in full).

`checksum_table` requires every variable's checksum (or, with allow_unverified, warns).

Index entries (`checkpoint.json`) name files inside the checkpoint directory: `entry_problem`
says why a name is not a plain file name, and `contained_path` resolves a name (symlinks
included) and refuses a result outside the directory.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Iterable, Iterator, Optional, Set, Tuple

import numpy as np

from ..errors import UnsafeCheckpointError

__all__ = ["check_file", "checksum_table", "entry_problem", "contained_path"]

log = logging.getLogger("collflow.checkpoint")


def _unsafe(msg: str) -> Exception:
    """UnsafeCheckpointError(msg): a DataLossError, so every caller that falls back past a
    damaged checkpoint falls back past a refused one too."""
    return UnsafeCheckpointError(msg)


# HDF5 type classes a dataset may have (h5py stores bool as an HDF5 enum over int8)
_DATASET_CLASSES = ("INTEGER", "FLOAT", "ENUM")
# attributes may also be strings: the format, versions, variable names, RNG fields
_ATTRIBUTE_CLASSES = _DATASET_CLASSES + ("STRING",)
# the layouts whose bytes are inside the file (VIRTUAL maps other datasets, maybe other files)
_INSIDE_LAYOUTS = ("COMPACT", "CONTIGUOUS", "CHUNKED")
_TYPE_CLASSES = ("INTEGER", "FLOAT", "TIME", "STRING", "BITFIELD", "OPAQUE", "COMPOUND", "REFERENCE", "ENUM",
                 "VLEN", "ARRAY")


def _constants(module: Any, names: Tuple[str, ...]) -> Set[int]:
    return {getattr(module, n) for n in names if hasattr(module, n)}


def _is_complex_type(h5t: Any, tid: Any) -> bool:
    """Whether an HDF5 type is exactly how h5py stores complex64 or complex128: a compound of
    two equal IEEE floats (4 or 8 bytes) named r and i, packed in that order.  The only compound
    type a checkpoint may hold (collflow writes complex variables so)."""
    if tid.get_class() != h5t.COMPOUND or tid.get_nmembers() != 2:
        return False
    size = tid.get_size() // 2
    if size not in (4, 8) or tid.get_size() != 2 * size:
        return False
    for i, name in enumerate((b"r", b"i")):
        mt = tid.get_member_type(i)
        if (tid.get_member_name(i) != name or tid.get_member_offset(i) != i * size
                or mt.get_class() != h5t.FLOAT or mt.get_size() != size):
            return False
    return True


def _class_name(h5t: Any, cls: int) -> str:
    """'vlen', 'reference', ... for an HDF5 type class (for messages)."""
    for n in _TYPE_CLASSES:
        if getattr(h5t, n, None) == cls:
            return n.lower()
    return f"class {cls}"


def _declared_nbytes(shape: Optional[Tuple[int, ...]], itemsize: int) -> int:
    """Bytes a value of `shape` takes in memory (Python ints: a hostile shape cannot overflow)."""
    n = 1
    for d in shape or ():
        n *= int(d)
    return n * int(itemsize)


def _text(raw: Any) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


class _Walk:
    """One pass over a checkpoint's objects and attributes; raises at the first breach.

    Uses h5py's low-level identifiers (a tenth of the cost of its File/Group/Dataset objects:
    a checkpoint may hold thousands of variables).  path: the file (for messages); size: its
    length in bytes, the bound of what it may declare.
    """

    def __init__(self, path: str, size: int):
        import h5py
        self.h5py = h5py
        self.path, self.size = path, size
        self.dataset_bytes = 0
        self.attribute_bytes = 0
        self.seen: Set[Any] = set()
        self.dataset_classes = _constants(h5py.h5t, _DATASET_CLASSES)
        self.attribute_classes = _constants(h5py.h5t, _ATTRIBUTE_CLASSES)
        self.inside_layouts = _constants(h5py.h5d, _INSIDE_LAYOUTS)

    def refuse(self, where: str, why: str) -> Exception:
        return _unsafe(f"checkpoint {self.path}: {where} {why}; refused (a checkpoint must hold its data "
                       "itself, see 'What a checkpoint may contain' in docs/checkpoints.md)")

    def run(self, root: Any) -> None:
        """Checks every object reachable by hard links from the group `root` (a GroupID), each
        once (a link cycle ends)."""
        h5i = self.h5py.h5i
        self.visit(root, "/")
        stack = [(root, "")]
        while stack:  # not recursion: a file may nest groups deeper than Python recurses
            group, base = stack.pop()
            for name, oid in self.children(group, base):
                kind = h5i.get_type(oid)
                first = self.visit(oid, name)
                if kind == h5i.DATASET:
                    self.check_dataset(oid, name, first)
                elif kind == h5i.GROUP:
                    if first:
                        stack.append((oid, name))
                else:
                    raise self.refuse(f"object {name}", "is not a group or a dataset (a named datatype?)")

    def visit(self, oid: Any, name: str) -> bool:
        """Marks object `oid` seen; whether it was new (then its attributes are checked).

        One object reached by two hard links is one (file number, address)."""
        info = self.h5py.h5o.get_info(oid)
        key = (info.fileno, info.addr)
        if key in self.seen:
            return False
        self.seen.add(key)
        # h5a.get_num_attrs works on every h5py 3.x (ObjInfo.num_attrs only on newer ones)
        self.check_attributes(oid, name, self.h5py.h5a.get_num_attrs(oid))
        return True

    def children(self, group: Any, base: str) -> Iterator[Tuple[str, Any]]:
        """(full name, object id) of each link of `group`; refuses links other than hard ones."""
        h5l = self.h5py.h5l
        for raw in group:  # link names (bytes), nothing resolved
            raw = raw if isinstance(raw, bytes) else str(raw).encode()
            full = f"{base}/{_text(raw)}"
            kind = group.links.get_info(raw).type
            if kind != h5l.TYPE_HARD:
                what = {h5l.TYPE_SOFT: "a soft link", h5l.TYPE_EXTERNAL: "an external link"}.get(
                    kind, f"a user-defined link (type {kind})")
                raise self.refuse(f"entry {full}", f"is {what}{self.link_target(group, raw, kind)}, not data "
                                  "stored in the file")
            yield full, self.h5py.h5o.open(group, raw)

    def link_target(self, group: Any, raw: bytes, kind: int) -> str:
        """' to <where>' of a soft or external link, for the message ('' when unknown)."""
        h5l = self.h5py.h5l
        try:
            val = group.links.get_val(raw)
        except Exception:  # a user-defined link h5py cannot describe
            return ""
        if kind == h5l.TYPE_EXTERNAL and isinstance(val, tuple) and len(val) == 2:
            return f" to {_text(val[1])} in file {_text(val[0])}"
        if kind == h5l.TYPE_SOFT:
            return f" to {_text(val)}"
        return ""

    def check_dataset(self, did: Any, name: str, first: bool) -> None:
        """A dataset's layout, type, dataspace and declared size (the size counted per link)."""
        where = f"dataset {name}"
        tid, space = did.get_type(), did.get_space()
        if first:
            self.check_layout(did, where)
            if not _is_complex_type(self.h5py.h5t, tid):  # complex64/128: h5py's {r, i} compound
                self.check_type(tid, where, self.dataset_classes, _DATASET_CLASSES)
            if space.get_simple_extent_type() == self.h5py.h5s.NULL:
                raise self.refuse(where, "has a null dataspace (no shape)")
        # per link: a reader reads each name, so 1000 links to one dataset cost 1000 reads
        nbytes = _declared_nbytes(space.shape, tid.get_size())
        self.dataset_bytes += nbytes
        if self.dataset_bytes > self.size:
            raise self.refuse(where, self.too_big("datasets", space.shape, tid, nbytes, self.dataset_bytes))

    def too_big(self, what: str, shape: Any, tid: Any, nbytes: int, total: int) -> str:
        try:
            kind = tid.dtype.name
        except Exception:  # a type NumPy has no name for
            kind = f"{tid.get_size()}-byte"
        return (f"declares {kind}{list(shape or ())}, {nbytes} bytes ({total} bytes of {what} in all so far), "
                f"more than the file's {self.size} bytes can hold")

    def check_layout(self, did: Any, where: str) -> None:
        """Refuses storage outside the file (external raw data, virtual datasets) and filters."""
        dcpl = did.get_create_plist()
        layout = dcpl.get_layout()
        if layout == getattr(self.h5py.h5d, "VIRTUAL", 3):
            raise self.refuse(where, "is a virtual dataset (its values come from other datasets or files)")
        if layout not in self.inside_layouts:
            raise self.refuse(where, f"has an unknown storage layout ({layout})")
        n = dcpl.get_external_count()
        if n:
            files = ", ".join(_text(dcpl.get_external(i)[0]) for i in range(n))
            raise self.refuse(where, f"uses HDF5 external storage (its bytes are read from {files})")
        n = dcpl.get_nfilters()
        if n:
            # collflow writes no filter, and a filtered dataset's size is not bounded by the file's
            filters = ", ".join(self.filter_name(dcpl, i) for i in range(n))
            raise self.refuse(where, f"uses HDF5 filter(s) {filters} (collflow stores data unfiltered)")

    @staticmethod
    def filter_name(dcpl: Any, i: int) -> str:
        code, _flags, _values, label = dcpl.get_filter(i)
        return f"{_text(label) or 'unnamed'} (id {code})"

    def check_type(self, tid: Any, where: str, allowed: Set[int], names: Tuple[str, ...]) -> None:
        cls = tid.get_class()
        if cls not in allowed:
            raise self.refuse(where, f"has HDF5 type class {_class_name(self.h5py.h5t, cls)}; only "
                              f"{', '.join(c.lower() for c in names)} values are read (no object, reference, "
                              "variable-length or compound types)")

    def check_attributes(self, oid: Any, name: str, count: int) -> None:
        """Each attribute's type and declared size, checked without reading its value."""
        h5a = self.h5py.h5a
        for i in range(count):
            aid = h5a.open(oid, index=i)
            where = f"attribute {_text(aid.name)!r} of {name}"
            tid, space = aid.get_type(), aid.get_space()
            self.check_type(tid, where, self.attribute_classes, _ATTRIBUTE_CLASSES)
            if space.get_simple_extent_type() == self.h5py.h5s.NULL:
                raise self.refuse(where, "has a null dataspace (no value)")
            nbytes = _declared_nbytes(space.shape, tid.get_size())
            self.attribute_bytes += nbytes
            if self.attribute_bytes > self.size:
                raise self.refuse(where, self.too_big("attributes", space.shape, tid, nbytes, self.attribute_bytes))


def check_file(f: Any, path: str, size: Optional[int] = None) -> None:
    """Raises UnsafeCheckpointError naming the object and the reason when the open h5py File
    `f` (the checkpoint at `path`, `size` bytes) holds anything collflow does not read."""
    import h5py
    _Walk(path, os.path.getsize(path) if size is None else size).run(h5py.h5g.open(f.id, b"/"))


# -- checksums -----------------------------------------------------------------------------------


def checksum_table(f: Any, name: str, entries: Iterable[Any], path: str, allow_unverified: bool
                   ) -> Optional[np.ndarray]:
    """The checksum table `name` of the checked file `f`, required to cover every variable
    (`entries`: objects with name, dataset and crc_index).  A file or variable without one is
    refused (UnsafeCheckpointError) unless `allow_unverified`, which logs a warning instead;
    None then means no table (nothing can be checked)."""
    import h5py
    entries = list(entries)
    ds = f.get(name)
    if not isinstance(ds, h5py.Dataset):
        return _unverified(path, f"it has no checksums (no dataset /{name})", allow_unverified)
    if ds.ndim != 1 or ds.dtype != np.uint32:
        raise _unsafe(f"checkpoint {path}: dataset /{name} is {ds.dtype}{list(ds.shape)}, not a uint32 vector; "
                      "refused")
    crcs = np.asarray(ds[...])  # bounded: check_file compared its declared size with the file's
    unchecked = [f"{e.name!r} ({e.dataset})" for e in entries if e.crc_index is None]
    if unchecked:  # accepted only unverified: the reader skips their checks
        _unverified(path, f"variable(s) {', '.join(unchecked)} have no checksum (no crc_index attribute)",
                    allow_unverified)
    for e in entries:
        if e.crc_index is not None and not 0 <= e.crc_index < crcs.shape[0]:
            raise _unsafe(f"checkpoint {path}: variable {e.name!r} ({e.dataset}) has crc_index {e.crc_index}, "
                          f"outside /{name} ({crcs.shape[0]} entries); refused")
    return crcs


def _unverified(path: str, why: str, allow: bool) -> None:
    """Refuses a file whose bytes cannot be verified, unless `allow` (then warns, loudly)."""
    if not allow:
        raise _unsafe(f"checkpoint {path} cannot be verified: {why}; refused. To restore it anyway, unchecked, "
                      "pass allow_unverified=True (scripts/train.py: --allow-unverified-checkpoint)")
    log.warning("RESTORING AN UNVERIFIED CHECKPOINT: %s: %s. Its bytes are NOT checked for damage or tampering "
                "(allow_unverified=True / --allow-unverified-checkpoint)", path, why)
    return None


# -- index entries -------------------------------------------------------------------------------


def entry_problem(name: Any) -> Optional[str]:
    """Why `name` cannot be an index entry (a plain file name in the directory), or None."""
    if not isinstance(name, str) or not name:
        return "it is not a non-empty string"
    if "\x00" in name:
        return "it contains a NUL character"
    seps = [s for s in ("/", "\\", os.sep, os.altsep) if s]
    if any(s in name for s in seps):
        return "it contains a path separator (entries are file names inside the directory)"
    if name in (".", "..") or os.path.isabs(name):
        return "it names a directory or an absolute path"
    return None


def contained_path(directory: str, name: str) -> str:
    """`directory`/`name` after checking that `name` is a plain file name whose resolved
    location (symlinks followed) stays inside the resolved directory; raises
    UnsafeCheckpointError otherwise."""
    why = entry_problem(name)
    if why is not None:
        raise _unsafe(f"checkpoint entry {name!r} in {directory} refused: {why}")
    path = os.path.join(directory, name)
    real_dir, real = os.path.realpath(directory), os.path.realpath(path)
    if os.path.dirname(real) != real_dir:
        raise _unsafe(f"checkpoint entry {name!r} in {directory} refused: it resolves to {real}, outside the "
                      "checkpoint directory (a symlink out of it?)")
    return path
