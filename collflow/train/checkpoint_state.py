"""TF1's `tf.train.generate_checkpoint_state_proto` and `tf.train.update_checkpoint_state`:
TensorFlow's `checkpoint` state file (a CheckpointState message in text format), which
collflow's readers (saver.tf_state_files, get_checkpoint_state, latest_checkpoint) and
TensorFlow's read."""
from __future__ import annotations

import os
from typing import List, Optional, Sequence

from ..errors import InvalidArgumentError
from . import tf_checkpoint as _tfc

__all__ = ["CheckpointStateProto", "generate_checkpoint_state_proto", "update_checkpoint_state"]


class CheckpointStateProto:
    """TF's CheckpointState message: the newest checkpoint, every kept one (oldest first),
    their timestamps and the last preserved timestamp; str() is its text format."""

    def __init__(self, model_checkpoint_path: str = "", all_model_checkpoint_paths: Sequence[str] = (),
                 all_model_checkpoint_timestamps: Sequence[float] = (), last_preserved_timestamp: float = 0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths: List[str] = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps: List[float] = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = float(last_preserved_timestamp)

    def __str__(self) -> str:
        q = _tfc._quote
        lines = [f"model_checkpoint_path: {q(self.model_checkpoint_path)}"] if self.model_checkpoint_path else []
        lines += [f"all_model_checkpoint_paths: {q(p)}" for p in self.all_model_checkpoint_paths]
        lines += [f"all_model_checkpoint_timestamps: {_fmt(t)}" for t in self.all_model_checkpoint_timestamps]
        if self.last_preserved_timestamp:
            lines.append(f"last_preserved_timestamp: {_fmt(self.last_preserved_timestamp)}")
        return "".join(line + "\n" for line in lines)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CheckpointStateProto) and str(self) == str(other)

    __repr__ = __str__


def _fmt(t: float) -> str:
    # protobuf's text format prints a double with the shortest repr that round-trips
    s = repr(float(t))
    return s[:-2] if s.endswith(".0") else s


def generate_checkpoint_state_proto(save_dir: str, model_checkpoint_path: str,
                                    all_model_checkpoint_paths: Optional[Sequence[str]] = None,
                                    all_model_checkpoint_timestamps: Optional[Sequence[float]] = None,
                                    last_preserved_timestamp: Optional[float] = None) -> CheckpointStateProto:
    """The CheckpointState TF1 would write: model_checkpoint_path appended to the list when it
    is not its last entry (or the list is empty); with a relative save_dir, relative paths made relative to it."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    stamps = list(all_model_checkpoint_timestamps or [])
    if stamps and len(stamps) != len(paths):
        raise ValueError(f"Checkpoint timestamps, if provided, must match checkpoint paths "
                         f"(got paths {paths} and timestamps {stamps})")
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, save_dir) for p in paths]
    return CheckpointStateProto(model_checkpoint_path, paths, stamps, last_preserved_timestamp or 0.0)


def update_checkpoint_state(save_dir: str, model_checkpoint_path: str,
                            all_model_checkpoint_paths: Optional[Sequence[str]] = None,
                            latest_filename: Optional[str] = None,
                            all_model_checkpoint_timestamps: Optional[Sequence[float]] = None,
                            last_preserved_timestamp: Optional[float] = None) -> None:
    """Writes save_dir/`latest_filename` (default `checkpoint`), TF's checkpoint state file."""
    from ..platform.atomic_files import atomic_write_bytes
    state = generate_checkpoint_state_proto(save_dir, model_checkpoint_path, all_model_checkpoint_paths,
                                            all_model_checkpoint_timestamps, last_preserved_timestamp)
    path = os.path.join(save_dir, latest_filename or _tfc.STATE_FILENAME)
    if os.path.abspath(path) == os.path.abspath(model_checkpoint_path):
        raise InvalidArgumentError(f"{model_checkpoint_path!r} collides with the checkpoint state file")
    atomic_write_bytes(path, str(state).encode("utf-8"), durable=True)
