"""An iterator's position in tf.train.Saver checkpoints: tf.data.experimental.make_saveable_from_iterator.

TensorFlow serializes every dataset's internal state (buffers, counters, random states) into a
variant tensor.  collflow's pipelines are Python generators, so an iterator's state is kept as
what is needed to run its pipeline again up to the same place: which dataset it was started on
(the fingerprint of the pipeline), the values of the graph tensors the run read, the root of
its unseeded random draws (IterationContext.entropy) and how many elements it has given out.
Restoring starts the pipeline again with those and takes that many elements, so the next
element is the one the saved run would have given next: shuffle orders (seeded or not), the
repeat epoch, batches, maps, take/skip counts all continue.  The cost of a restore is that of
producing the skipped elements again.

Graph tensors the pipeline reads that depend on placeholders (fed when the iterator was
initialized) are stored in the checkpoint; the others (constants, variables) are computed
again in the restoring Session and must have the values they had (a digest is compared).
Random ops inside dataset functions (a map's tf.random_uniform) draw from their own streams
and are not replayed; collflow's own unseeded draws (shuffle, sample_from_datasets, ...) are.

The state is one checkpoint entry `<iterator handle name>_STATE` (TF's name): a uint8 array
holding a JSON header and the stored tensors' bytes (no pickle).
"""
from __future__ import annotations

import hashlib
import json
import struct
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import DataLossError, InvalidArgumentError
from ..graph import graph as _g
from .dataset import Dataset
from .dataset_core import _digest
from .iterator_ops import Iterator, _placeholders_upstream, resource_of

__all__ = ["make_saveable_from_iterator", "IteratorSaveable"]

_MAGIC = b"CFITER1\0"
_FORMAT = "collflow.iterator_state"


def _pipeline_id(ds: Dataset) -> str:
    # a Dataset does not change once built, and its fingerprint digests every array it holds
    # (0.2 s for 200 MB): computed once per dataset, not at every save
    got = ds.__dict__.get("_iterator_state_pipeline_id")
    if got is None:
        got = ds.__dict__["_iterator_state_pipeline_id"] = \
            hashlib.sha256(ds.fingerprint_repr().encode()).hexdigest()[:32]
    return got


# -- the bytes -----------------------------------------------------------------------------------------

def _pack(header: Dict[str, Any], arrays: List[np.ndarray]) -> np.ndarray:
    """header (JSON) + arrays (raw bytes; a string array as its elements' UTF-8 bytes) -> uint8."""
    parts: List[bytes] = []
    metas = []
    for a in arrays:
        if a.dtype == object or a.dtype.kind in "SU":
            items = [x if isinstance(x, bytes) else str(x).encode("utf-8") for x in a.reshape(-1).tolist()]
            metas.append({"dtype": "string", "shape": list(a.shape), "lengths": [len(x) for x in items]})
            parts.append(b"".join(items))
        else:
            metas.append({"dtype": a.dtype.str, "shape": list(a.shape)})
            parts.append(np.ascontiguousarray(a).tobytes())
    head = json.dumps(dict(header, arrays=metas), sort_keys=True).encode()
    blob = _MAGIC + struct.pack("<Q", len(head)) + head + b"".join(parts)
    return np.frombuffer(blob, dtype=np.uint8).copy()


def _unpack(value: Any, where: str) -> Tuple[Dict[str, Any], List[np.ndarray]]:
    a = np.asarray(value)
    if a.dtype != np.uint8 or a.ndim != 1:
        raise DataLossError(f"{where}: an iterator state is a uint8 vector, the checkpoint holds {a.dtype}{list(a.shape)}")
    blob = a.tobytes()
    try:
        if blob[:8] != _MAGIC:
            raise ValueError("not a collflow iterator state")
        (n,) = struct.unpack("<Q", blob[8:16])
        header = json.loads(blob[16:16 + n].decode())
        if header.get("format") != _FORMAT:
            raise ValueError(f"format {header.get('format')!r}")
        pos, arrays = 16 + n, []
        for m in header["arrays"]:
            shape = tuple(int(d) for d in m["shape"])
            if m["dtype"] == "string":
                out = np.empty(len(m["lengths"]), dtype=object)
                for i, k in enumerate(m["lengths"]):
                    out[i] = blob[pos:pos + k]
                    pos += k
                arrays.append(out.reshape(shape))
                continue
            dt = np.dtype(m["dtype"])
            if dt.kind not in "biufc":
                raise ValueError(f"dtype {dt}")
            size = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
            if pos + size > len(blob):
                raise ValueError("truncated")
            arrays.append(np.frombuffer(blob[pos:pos + size], dtype=dt).reshape(shape).copy())
            pos += size
        if pos != len(blob):
            raise ValueError("trailing bytes")
    except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as e:
        raise DataLossError(f"{where}: the checkpoint's iterator state cannot be read ({e})") from None
    return header, arrays


# -- the saveable ----------------------------------------------------------------------------------------

class IteratorSaveable:
    """The state of one iterator as a saveable object of tf.train.Saver (TF's
    _IteratorSaveable): add it to the SAVEABLE_OBJECTS collection, or give it in a Saver's
    var_list.  Its checkpoint entry is `<name>_STATE`."""

    _collflow_state_saveable = True

    def __init__(self, handle: _g.Tensor, name: Optional[str] = None):
        self.handle = handle
        self.op = handle.op
        self.name = name or handle.name
        self.entry = self.name + "_STATE"

    @property
    def graph(self) -> _g.Graph:
        return self.handle.graph

    def _datasets(self) -> List[Tuple[Optional[str], Dataset]]:
        """(initializer op name, dataset) of every dataset this iterator can be started on."""
        ds = self.op.attrs.get("dataset")
        if ds is not None:
            return [(None, ds)]
        return [(op.name, op.attrs["dataset"]) for op in self.graph.get_operations()
                if op.type == "MakeIterator" and op.inputs[0] is self.handle]

    def save_state(self, sess: Any) -> np.ndarray:
        """The iterator's state in this Session, as the uint8 array the checkpoint holds."""
        res = resource_of(self.op, sess.resources)
        with res._lock:
            source, produced, exhausted = res.source, res.produced, res.exhausted
        header: Dict[str, Any] = {"format": _FORMAT, "iterator": self.name}
        if source is None:
            return _pack(dict(header, state="uninitialized"), [])
        ds, caps, values, ctx = source
        fed = [i for i, t in enumerate(caps) if _placeholders_upstream([t])]
        # the captured values are fixed from one initialization to the next: hashed once per
        # initialization, not at every save
        cached = res.__dict__.get("_saved_digests")
        if cached is None or cached[0] is not source:
            cached = res.__dict__["_saved_digests"] = (source, [_digest(np.asarray(v)) for v in values])
        header.update(state="exhausted" if exhausted else "running", produced=int(produced),
                      entropy=ctx.entropy, pipeline=_pipeline_id(ds), fed=fed, digests=list(cached[1]))
        return _pack(header, [np.asarray(values[i]) for i in fed])

    def restore_state(self, sess: Any, value: Any) -> None:
        """Puts the iterator of this Session where the state says (TF's DeserializeIterator:
        whatever it was doing before is discarded)."""
        header, stored = _unpack(value, self.entry)
        res = resource_of(self.op, sess.resources)
        if header.get("state") == "uninitialized":
            with res._lock:
                res._elements, res.source, res.produced, res.exhausted = None, None, 0, False
                res.started = False
            return
        found = [(n, d) for n, d in self._datasets() if _pipeline_id(d) == header.get("pipeline")]
        if not found:
            from ..train.checkpoint_io import process_rank_and_size
            ranks = process_rank_and_size()[1]
            hint = "" if ranks <= 1 else (
                f". Under {ranks} ranks only rank 0 writes the model checkpoint, so it holds rank 0's input "
                "position: a rank whose pipeline differs (e.g. shard(num_workers, rank)) cannot restore it; "
                "tf.data.experimental.CheckpointInputPipelineHook writes one input checkpoint per rank")
            raise InvalidArgumentError(
                f"cannot restore iterator {self.name!r}: the checkpoint's state is of a pipeline this graph does "
                f"not start it on (build the same dataset, with the same transformations and arguments, as the "
                f"saving program){hint}")
        ds = found[0][1]
        caps = ds._captures()
        digests, fed = list(header["digests"]), [int(i) for i in header["fed"]]
        if len(digests) != len(caps) or len(stored) != len(fed):
            raise DataLossError(f"{self.entry}: the state's tensors do not match the pipeline's {len(caps)}")
        values: List[Any] = [None] * len(caps)
        for i, a in zip(fed, stored):
            values[i] = a
        todo = [i for i in range(len(caps)) if values[i] is None]
        if todo:
            for i, v in zip(todo, sess.run([caps[i] for i in todo])):
                # a fetched string is bytes: back to collflow's str, as the saved digest has it
                values[i] = _dt.string_array(v) if caps[i].dtype == _dt.string else np.asarray(v)
                if _digest(values[i]) != digests[i]:
                    raise InvalidArgumentError(
                        f"cannot restore iterator {self.name!r}: the pipeline reads {caps[i].name}, whose value "
                        "differs from the saved run's, so its elements would not continue where they stopped")
        for i in fed:  # the stored ones are given back as the dtype the graph tensor has
            if caps[i].dtype == _dt.string:
                continue
            values[i] = values[i].astype(caps[i].dtype.np, copy=False)
        res.initialize(ds, caps, values, sess.resources, entropy=header.get("entropy"))
        produced = int(header["produced"])
        with res._lock:
            if header["state"] == "exhausted":  # at its end: nothing to replay
                res._elements, res.exhausted, res.produced = iter(()), True, produced
                return
            it = res._elements
            assert it is not None
            for k in range(produced):  # run the pipeline again up to where the saved run was
                if next(it, None) is None:
                    raise DataLossError(
                        f"cannot restore iterator {self.name!r}: its pipeline ended after {k} elements, the "
                        f"checkpoint was saved after {produced}")
            res.produced = produced


def make_saveable_from_iterator(iterator: Iterator) -> IteratorSaveable:
    """tf.data.experimental.make_saveable_from_iterator: a saveable object that saves and
    restores `iterator`'s position with tf.train.Saver (add it to the SAVEABLE_OBJECTS
    collection).  Restoring discards the iterator's current state, as TensorFlow's does."""
    if not isinstance(iterator, Iterator):
        raise TypeError(f"make_saveable_from_iterator takes a tf.data Iterator, got {type(iterator).__name__}")
    h = iterator._handle
    if h.op.type != "IteratorV2":
        raise ValueError(f"iterator {h.name} ({h.op.type}) does not support checkpointing: save the iterators "
                         "whose string handles are fed to it instead")
    return IteratorSaveable(h)
