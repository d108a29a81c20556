"""TF 1.15's object-based checkpoints in graph mode: tf.train.Checkpoint, its restore statuses
and the tf.train.CheckpointManager that takes a Checkpoint.

    ckpt = tf.train.Checkpoint(step=step, optimizer=opt, model=model)
    path = ckpt.save("/dir/ckpt", session=sess)          # "/dir/ckpt-1"; /dir/checkpoint updated
    ckpt.restore(tf.train.latest_checkpoint("/dir")).initialize_or_restore(sess)

Files are TensorFlow's V2 bundles (tf_checkpoint.write_bundle) holding each value under its
object-graph key and the serialized TrackableObjectGraph under `_CHECKPOINTABLE_OBJECT_GRAPH`
(trackable.py), so TensorFlow restores them and they restore TensorFlow's.  A restore matches
the live objects through the object graph stored in the file, from the root by local names,
when the status is run: objects made after restore() and before run_restore_ops() /
initialize_or_restore() are restored too (TF's deferred restoration).
"""
from __future__ import annotations

import collections
import logging
import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError, NotFoundError
from ..graph import graph as _g
from ..graph.variables import Variable
from . import tf_checkpoint as _tfc
from .saver import _state_name
from .trackable import (OBJECT_GRAPH_KEY, VARIABLE_VALUE, ConstantValue, TrackableObjectGraph, checkpoint_key,
                        is_trackable, match, proto_paths, walk)

log = logging.getLogger("collflow.checkpoint")

__all__ = ["Checkpoint", "CheckpointLoadStatus", "InitializationOnlyStatus", "NameBasedSaverStatus",
           "TFCheckpointManager"]


_SESSION_PROVIDER: Optional[Callable[[], Any]] = None


def register_session_provider(fn: Optional[Callable[[], Any]]) -> None:
    """Where a save or restore without a session and outside a default one finds its session
    (TF 1.x's Keras registers its own session, as collflow's Keras does)."""
    global _SESSION_PROVIDER
    _SESSION_PROVIDER = fn


def _session(session: Any, what: str) -> Any:
    sess = session if session is not None else _g.get_default_session()
    if sess is None and _SESSION_PROVIDER is not None:
        sess = _SESSION_PROVIDER()
    if sess is None:
        raise ValueError(f"{what} needs a session in graph mode: pass session=, or call it inside "
                         "`with sess.as_default():` (a `with tf.Session() as sess:` block)")
    return sess


def _writes() -> bool:
    """Whether this process writes checkpoint files: under N ranks only rank 0 does (the
    replicas hold the same values), as collflow's Saver and CheckpointManager."""
    from .checkpoint_io import process_rank_and_size
    return process_rank_and_size()[0] == 0


def _full_name(obj: Any) -> str:
    return obj.full_name if isinstance(obj, ConstantValue) else obj.op.name


def _values(sess: Any, objects: List[Any]) -> List[np.ndarray]:
    """The values to save of variables and constants (variables read in one run)."""
    variables = [o for o in objects if isinstance(o, Variable)]
    read = iter(sess.run([v.value() for v in variables]) if variables else [])
    out = []
    for o in objects:
        if isinstance(o, Variable):
            out.append(np.asarray(next(read)))
        else:
            out.append(np.asarray(o.value, dtype=o.dtype))
    return out


class Checkpoint:
    """Groups trackable objects under keyword names, saved and restored together
    (tf.train.Checkpoint in TF 1.15 graph mode).  Children are tracked in keyword order
    (sorted, as TF), then attributes assigned later, then `save_counter` once made."""

    def __init__(self, **kwargs: Any):
        object.__setattr__(self, "_order", [])
        object.__setattr__(self, "_save_counter", None)
        object.__setattr__(self, "_save_assign_op", None)
        for k, v in sorted(kwargs.items(), key=lambda kv: kv[0]):
            if k == "save_counter":
                raise ValueError("`save_counter` is a reserved name of tf.train.Checkpoint")
            if not is_trackable(v):
                raise ValueError(f"`Checkpoint` was expecting a trackable object (an object derived from `Trackable`)"
                                 f", got {v!r}. If you believe this object should be trackable (i.e. it is part of "
                                 "the TensorFlow Python API and manages state), please open an issue.")
            setattr(self, k, v)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if not name.startswith("_") and is_trackable(value) and name not in self._order:
            self._order.append(name)

    def __delattr__(self, name: str) -> None:
        object.__delattr__(self, name)
        if name in self._order:
            self._order.remove(name)

    def _checkpoint_children(self) -> List[Any]:
        out = [(n, getattr(self, n)) for n in self._order if n != "save_counter" and is_trackable(getattr(self, n))]
        return out + ([("save_counter", self._save_counter)] if self._save_counter is not None else [])

    # -- the counter --------------------------------------------------------------------------
    @property
    def save_counter(self) -> Variable:
        """An int64 variable counting save() calls (made on first use: save or restore)."""
        self._maybe_create_save_counter()
        return self._save_counter

    def _maybe_create_save_counter(self) -> None:
        if self._save_counter is None:
            g = _g.get_default_graph()
            with g.as_default(), g.device("/cpu:0"):
                v = Variable(np.int64(0), name="save_counter", trainable=False, dtype=_dt.int64)
            object.__setattr__(self, "_save_counter", v)

    def _init_save_counter(self, sess: Any) -> None:
        """Makes save_counter, and initializes it unless it holds a value (restored or saved
        before; TF initializes only a new one, failing later on one a restore did not reach)."""
        self._maybe_create_save_counter()
        st = sess.resources.variables.get(_state_name(self._save_counter))
        if st is None or st.value is None:
            sess.run(self._save_counter.initializer)

    # -- saving ------------------------------------------------------------------------------
    def write(self, file_prefix: str, session: Any = None) -> str:
        """Writes a checkpoint at `file_prefix` (no numbering, no `checkpoint` file); returns it."""
        file_prefix = os.fspath(file_prefix)
        sess = _session(session, "Checkpoint.write")
        if not _writes():
            return file_prefix  # rank 0 reads the values and writes them
        graph = walk(self)
        leaves = [i for i, o in enumerate(graph.objects) if isinstance(o, (Variable, ConstantValue))]
        values = _values(sess, [graph.objects[i] for i in leaves])
        proto = graph.to_proto(_full_name)
        tensors: Dict[str, Any] = {checkpoint_key(graph.paths[i]): v for i, v in zip(leaves, values)}
        tensors[OBJECT_GRAPH_KEY] = np.array(proto.SerializeToString(), dtype=object)
        d = os.path.dirname(os.path.abspath(file_prefix))
        os.makedirs(d, exist_ok=True)  # TF's bundle writer makes the directory
        _tfc.write_bundle(file_prefix, tensors)
        return file_prefix

    def save(self, file_prefix: str, session: Any = None) -> str:
        """Adds 1 to save_counter and writes `<file_prefix>-<save_counter>`; records it in the
        directory's `checkpoint` file (relative path); returns the path."""
        file_prefix = os.fspath(file_prefix)
        sess = _session(session, "Checkpoint.save")
        self._init_save_counter(sess)
        if self._save_assign_op is None:
            with self._save_counter.graph.as_default():
                object.__setattr__(self, "_save_assign_op", self._save_counter.assign_add(np.int64(1)))
        n = int(sess.run(self._save_assign_op))
        path = self.write(f"{file_prefix}-{n}", session=sess)
        if _writes():
            directory = os.path.dirname(os.path.abspath(file_prefix))
            _tfc.write_state_file(directory, [os.path.relpath(os.path.abspath(path), directory)])
        return path

    # -- restoring ---------------------------------------------------------------------------
    def restore(self, save_path: Optional[str]) -> Any:
        """A status for restoring `save_path` (a prefix; None: initialize only).  Nothing is
        assigned until its run_restore_ops() / initialize_or_restore().  A checkpoint without an
        object graph (tf.train.Saver's) restores by variable names (NameBasedSaverStatus)."""
        if save_path is None:
            return InitializationOnlyStatus(self)
        save_path = os.fspath(save_path)
        try:
            reader = _tfc.BundleReader(save_path)
        except NotFoundError as e:
            raise NotFoundError(f"Failed to restore from checkpoint at {save_path}: Unsuccessful TensorSliceReader "
                                f"constructor: Failed to find any matching files for {save_path} ({e})") from None
        self._maybe_create_save_counter()
        if OBJECT_GRAPH_KEY not in reader.entries:
            return NameBasedSaverStatus(self, reader)
        raw = reader.read([OBJECT_GRAPH_KEY])[OBJECT_GRAPH_KEY]
        raw = raw.item() if isinstance(raw, np.ndarray) else raw
        proto = TrackableObjectGraph.FromString(raw if isinstance(raw, bytes) else str(raw).encode("latin-1"))
        return CheckpointLoadStatus(self, reader, proto)


# -- restore statuses ----------------------------------------------------------------------------

class _Status:
    def __init__(self, root: Any):
        self._root = root
        self._partial = False

    def expect_partial(self) -> "_Status":
        """Silences the (here: absent) warnings about values left unused; returns self."""
        self._partial = True
        return self

    def _initialize(self, sess: Any, skip: set) -> None:
        live = walk(self._root)
        inits = [o.initializer for o in live.objects if isinstance(o, Variable) and id(o) not in skip]
        if inits:
            sess.run(inits)


class InitializationOnlyStatus(_Status):
    """restore(None): nothing to restore; initialize_or_restore() initializes every variable."""

    def _nothing(self) -> AssertionError:
        return AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    def assert_consumed(self) -> "InitializationOnlyStatus":
        """AssertionError: nothing was restored (TF's)."""
        raise self._nothing()

    def assert_existing_objects_matched(self) -> "InitializationOnlyStatus":
        """AssertionError: nothing was restored (TF's)."""
        raise self._nothing()

    def assert_nontrivial_match(self) -> "InitializationOnlyStatus":
        """AssertionError: nothing was restored (TF's)."""
        raise self._nothing()

    def run_restore_ops(self, session: Any = None) -> None:
        """Nothing to run."""

    def initialize_or_restore(self, session: Any = None) -> None:
        """Runs the initializers of every variable in the object graph."""
        self._initialize(_session(session, "initialize_or_restore"), set())


_NAME_BASED = ("Restoring a name-based tf.train.Saver checkpoint using the object-based restore API. This mode uses "
               "global names to match variables, and so is somewhat fragile. It also adds new restore ops to the graph "
               "each time it is called when graph building. Prefer re-encoding training checkpoints in the "
               "object-based format: run save() on the object-based saver (the same one this message is coming "
               "from) and use that checkpoint in the future.")


class NameBasedSaverStatus(_Status):
    """A checkpoint without an object graph (tf.train.Saver's): variables restore by their
    graph names; the assertions fail with TF's message."""

    def __init__(self, root: Any, reader: Any):
        super().__init__(root)
        self._reader = reader

    def assert_consumed(self) -> "NameBasedSaverStatus":
        """AssertionError: a name-based checkpoint has no object graph to check (TF's)."""
        raise AssertionError(_NAME_BASED)

    assert_existing_objects_matched = assert_consumed

    def assert_nontrivial_match(self) -> "NameBasedSaverStatus":
        """Checks that some variable was found in the name-based checkpoint."""
        return self

    def run_restore_ops(self, session: Any = None) -> None:
        """Restores the variables found by their names."""
        sess = _session(session, "run_restore_ops")
        for v in walk(self._root).variables():
            if v.op.name in self._reader.entries:
                _assign(sess, v, self._reader.read([v.op.name])[v.op.name], v.op.name)

    def initialize_or_restore(self, session: Any = None) -> None:
        """Restores by names, initializing the variables the file lacks."""
        self.run_restore_ops(session)


def _assign(sess: Any, v: Variable, value: np.ndarray, key: str) -> None:
    want = v.dtype.as_numpy_dtype
    if value.dtype != np.dtype(want):
        raise InvalidArgumentError(f"tensor_name = {key}; expected dtype {v.dtype.name} does not equal original "
                                   f"dtype {_dt.as_dtype(value.dtype).name} (restoring {v.op.name})")
    shape = v.shape
    if shape.dims is not None and not shape.is_compatible_with(value.shape):
        raise ValueError(f"Received incompatible tensor with shape {value.shape} when attempting to restore variable "
                         f"with shape {tuple(shape.as_list())} and name {key}.")
    sess._load_variable(v, value)


class CheckpointLoadStatus(_Status):
    """What restore() of an object-based checkpoint returns (see the module doc)."""

    def __init__(self, root: Any, reader: Any, proto: TrackableObjectGraph):
        super().__init__(root)
        self._reader = reader
        self._proto = proto
        self._names = proto_paths(proto)

    def _matched(self) -> Dict[int, Any]:
        return match(self._root, self._proto)

    def _node_name(self, i: int) -> str:
        return self._names.get(i, f"node {i}")

    def run_restore_ops(self, session: Any = None) -> None:
        """Assigns every matched variable its checkpointed value (objects made since restore()
        included)."""
        self._restore(_session(session, "run_restore_ops"))

    def _restore(self, sess: Any) -> set:
        done = set()
        for i, obj in sorted(self._matched().items()):
            if isinstance(obj, ConstantValue):
                self._check_constant(i, obj)
            if not isinstance(obj, Variable):
                continue
            for a in self._proto.nodes[i].attributes:
                if a.name == VARIABLE_VALUE:
                    if a.checkpoint_key not in self._reader.entries:
                        raise NotFoundError(f"the checkpoint {self._reader.path} lists {a.checkpoint_key} in its "
                                            "object graph but has no such tensor")
                    _assign(sess, obj, self._reader.read([a.checkpoint_key])[a.checkpoint_key], a.checkpoint_key)
                    done.add(id(obj))
        return done

    def _check_constant(self, i: int, obj: ConstantValue) -> None:
        """A value kept in Python (a Keras optimizer's hyperparameter) is not assigned: a
        checkpoint holding another value is logged."""
        for a in self._proto.nodes[i].attributes:
            if a.name == VARIABLE_VALUE and a.checkpoint_key in self._reader.entries:
                saved = self._reader.read([a.checkpoint_key])[a.checkpoint_key]
                if np.shape(saved) == () and not np.isclose(float(saved), float(obj.value), rtol=1e-6, atol=0.0):
                    log.warning("%s is %s in checkpoint %s; it stays %s here (a Python value, not a variable)",
                                a.checkpoint_key, saved, self._reader.path, obj.value)

    def initialize_or_restore(self, session: Any = None) -> None:
        """Restores the matched variables, initializes the others of the object graph."""
        sess = _session(session, "initialize_or_restore")
        self._initialize(sess, self._restore(sess))

    def _unmatched_live(self, found: Dict[int, Any], skip_empty: bool) -> List[str]:
        live = walk(self._root)
        bound = {id(o) for o in found.values()}
        out = []
        for i, o in enumerate(live.objects):
            if id(o) in bound:
                continue
            if skip_empty and isinstance(o, (list, tuple, dict)) and not live.children[i]:
                continue
            out.append(f"{live.paths[i] or '(root)'} ({_describe(o)})")
        return out

    def assert_consumed(self) -> "CheckpointLoadStatus":
        """AssertionError unless every checkpointed value has a live object and every live
        object a checkpointed value; returns self."""
        found = self._matched()
        problems = []
        for i, node in enumerate(self._proto.nodes):
            if node.attributes and i not in found:
                keys = ", ".join(a.checkpoint_key for a in node.attributes)
                problems.append(f"Unresolved object in checkpoint {self._node_name(i)}: {keys}")
        unused = [f"{self._node_name(i)}: {a.name}" for i, o in found.items()
                  for a in self._proto.nodes[i].attributes
                  if not (a.name == VARIABLE_VALUE and isinstance(o, (Variable, ConstantValue)))]
        if unused:
            problems.append("Unused attributes in these objects (the attributes exist in the checkpoint but were not "
                            "restored): " + "; ".join(unused))
        unbound = self._unmatched_live(found, skip_empty=False)
        if unbound:
            problems.append("Objects not assigned a value from checkpoint: " + "; ".join(unbound))
        if problems:
            raise AssertionError("\n".join(problems))
        return self

    def assert_existing_objects_matched(self) -> "CheckpointLoadStatus":
        """AssertionError when an existing object (with state) has no checkpointed value."""
        unbound = self._unmatched_live(self._matched(), skip_empty=True)
        if unbound:
            raise AssertionError("Some Python objects were not bound to checkpointed values, likely due to changes in "
                                 f"the Python program: {unbound}")
        return self

    def assert_nontrivial_match(self) -> "CheckpointLoadStatus":
        """AssertionError when nothing but the root matched."""
        found = self._matched()
        counter = getattr(self._root, "_save_counter", None)  # matches any checkpoint a Checkpoint wrote
        if not [o for i, o in found.items() if i != 0 and o is not counter]:
            unbound = self._unmatched_live(found, skip_empty=False)
            if unbound:
                raise AssertionError("Nothing except the root object matched a checkpointed value. Typically this means "
                                     "that the checkpoint does not match the Python program. The following objects "
                                     f"have no matching checkpointed value: {unbound}")
            raise AssertionError(f"Nothing to load. No dependencies have been added to {self._root!r} yet.")
        return self


def _describe(o: Any) -> str:
    if isinstance(o, Variable):
        return f"variable {o.op.name}"
    return type(o).__name__


# -- TF's CheckpointManager ----------------------------------------------------------------------

def _read_timestamps(directory: str) -> Tuple[List[float], float]:
    """(all_model_checkpoint_timestamps, last_preserved_timestamp) of a `checkpoint` file."""
    stamps: List[float] = []
    preserved = 0.0
    try:
        with open(os.path.join(directory, _tfc.STATE_FILENAME), "rb") as f:
            text = f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return stamps, preserved
    for line in text.splitlines():
        key, _, value = line.partition(":")
        try:
            if key.strip() == "all_model_checkpoint_timestamps":
                stamps.append(float(value))
            elif key.strip() == "last_preserved_timestamp":
                preserved = float(value)
        except ValueError:
            continue
    return stamps, preserved


class TFCheckpointManager:
    """tf.train.CheckpointManager(checkpoint, directory, max_to_keep, ...): numbered saves of a
    tf.train.Checkpoint, keeping the newest `max_to_keep` (None: all; those at least
    `keep_checkpoint_every_n_hours` apart are kept as well), recorded in TF's `checkpoint`
    file (relative paths).  Picks up the checkpoints that file lists in `directory`."""

    def __init__(self, checkpoint: Checkpoint, directory: str, max_to_keep: Optional[int],
                 keep_checkpoint_every_n_hours: Optional[float] = None, checkpoint_name: str = "ckpt",
                 step_counter: Any = None, checkpoint_interval: Optional[int] = None, init_fn: Any = None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager's checkpoint must be a tf.train.Checkpoint, got {checkpoint!r}")
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, got {max_to_keep}.")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is not None.")
        self._checkpoint = checkpoint
        self._max_to_keep = max_to_keep
        self._keep_every = keep_checkpoint_every_n_hours
        self._directory = os.fspath(directory)
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._interval = checkpoint_interval
        self._last_step: Optional[int] = None
        self._init_fn = init_fn
        self._save_counter_assign: Any = None
        # TF's recovery: the `checkpoint` file's newest path; the others stay managed only when
        # it gave their timestamps (TF writes them) and they are newer than the last preserved one
        now = time.time()
        self._last_preserved = now
        self._maybe_delete: "collections.OrderedDict[str, float]" = collections.OrderedDict()
        self._latest: Optional[str] = None
        listed = _tfc.read_state_file(self._directory) if os.path.isdir(self._directory) else []
        if listed:
            paths = [p if os.path.isabs(p) else os.path.join(self._directory, p) for p in listed]
            self._latest = paths[-1]
            stamps, preserved = _read_timestamps(self._directory)
            self._last_preserved = min(preserved, now)
            if len(stamps) != len(paths):
                stamps = [self._last_preserved] * len(paths)
            for path, stamp in zip(paths, stamps):
                if min(stamp, now) > self._last_preserved:
                    self._maybe_delete[path] = min(stamp, now)

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoint(self) -> Checkpoint:
        return self._checkpoint

    @property
    def latest_checkpoint(self) -> Optional[str]:
        """The newest checkpoint's prefix (None before any)."""
        return self._latest

    @property
    def checkpoints(self) -> List[str]:
        """The managed checkpoints, oldest first."""
        return list(self._maybe_delete)

    @property
    def checkpoint_interval(self) -> Optional[int]:
        return self._interval

    def restore_or_initialize(self, session: Any = None) -> Optional[str]:
        """Restores the latest checkpoint (returns it), else runs init_fn (returns None)."""
        if self._latest is not None:
            self._checkpoint.restore(self._latest).initialize_or_restore(session)
            return self._latest
        if self._init_fn is not None:
            self._init_fn()
        return None

    def save(self, checkpoint_number: Any = None, check_interval: bool = True, options: Any = None) -> Optional[str]:
        """Saves `<directory>/<checkpoint_name>-<n>` (n: checkpoint_number, else save_counter,
        which is incremented either way) with the default session; sweeps old ones; returns
        the path (None when checkpoint_interval says not yet)."""
        sess = _session(None, "CheckpointManager.save")
        if self._interval is not None:
            step = int(sess.run(self._step_counter)) if not isinstance(self._step_counter, int) else self._step_counter
            if self._last_step is not None and (step == self._last_step or
                                                (check_interval and step < self._last_step + self._interval)):
                return None
            self._last_step = step
        ck = self._checkpoint
        ck._init_save_counter(sess)
        if self._save_counter_assign is None:
            with ck._save_counter.graph.as_default():
                self._save_counter_assign = ck._save_counter.assign_add(np.int64(1), read_value=False)
        sess.run(self._save_counter_assign)
        n = checkpoint_number if checkpoint_number is not None else ck._save_counter
        if not isinstance(n, (int, np.integer)):
            n = sess.run(n)
        path = ck.write(f"{self._prefix}-{int(n)}", session=sess)
        self._maybe_delete.pop(path, None)
        self._maybe_delete[path] = time.time()
        self._latest = path
        self._record()
        self._sweep()
        self._record()
        return path

    def _record(self) -> None:
        """TF's `checkpoint` file: the managed paths (relative), their timestamps and the last
        preserved time, so that either library's manager picks them up again."""
        from ..platform.atomic_files import atomic_write_bytes
        if not _writes():
            return
        d = os.path.abspath(self._directory)
        paths = [os.path.relpath(os.path.abspath(p), d) for p in self._maybe_delete]
        latest = os.path.relpath(os.path.abspath(self._latest), d) if self._latest else paths[-1]
        lines = [f"model_checkpoint_path: {_tfc._quote(latest)}"]
        lines += [f"all_model_checkpoint_paths: {_tfc._quote(p)}" for p in paths]
        lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in self._maybe_delete.values()]
        lines.append(f"last_preserved_timestamp: {self._last_preserved!r}")
        atomic_write_bytes(os.path.join(d, _tfc.STATE_FILENAME), ("\n".join(lines) + "\n").encode("utf-8"))

    def _sweep(self) -> None:
        """Forgets the oldest checkpoints beyond max_to_keep on every rank (their lists stay
        alike); rank 0, the writer, deletes their files."""
        if not self._max_to_keep:
            return
        writer = _writes()
        while len(self._maybe_delete) > self._max_to_keep:
            path, stamp = self._maybe_delete.popitem(last=False)
            if self._keep_every and stamp - self._keep_every * 3600.0 >= self._last_preserved:
                self._last_preserved = stamp
                continue  # kept on disk, no longer managed
            for f in (_tfc.bundle_files(path) if writer else ()):
                try:
                    os.remove(f)
                except FileNotFoundError:
                    pass
