"""tf.train.SaverDef: TF's SaverDef message as a plain record (its fields and the
checkpoint-format constants), for `Saver(write_version=tf.train.SaverDef.V2)` and code that
reads a saver's settings."""
from __future__ import annotations

from typing import Any, List

__all__ = ["SaverDef"]


class _CheckpointFormatVersion:
    """SaverDef.CheckpointFormatVersion: the enum's names and values."""

    LEGACY, V1, V2 = 0, 1, 2
    _NAMES = {0: "LEGACY", 1: "V1", 2: "V2"}

    @classmethod
    def Name(cls, number: int) -> str:  # noqa: N802 - protobuf's enum API
        try:
            return cls._NAMES[int(number)]
        except KeyError:
            raise ValueError(f"Enum CheckpointFormatVersion has no name defined for value {number!r}") from None

    @classmethod
    def Value(cls, name: str) -> int:  # noqa: N802 - protobuf's enum API
        for k, v in cls._NAMES.items():
            if v == name:
                return k
        raise ValueError(f"Enum CheckpointFormatVersion has no value defined for name {name!r}")

    @classmethod
    def keys(cls) -> List[str]:
        return list(cls._NAMES.values())

    @classmethod
    def values(cls) -> List[int]:
        return list(cls._NAMES)


class SaverDef:
    """TF's SaverDef message (its fields and the checkpoint-format constants, for
    `Saver(write_version=tf.train.SaverDef.V2)` and code that reads a saver's settings).
    collflow's Saver keeps its own settings; this is the plain record TF1 programs build."""

    LEGACY, V1, V2 = 0, 1, 2
    CheckpointFormatVersion = _CheckpointFormatVersion
    _FIELDS = {"filename_tensor_name": "", "save_tensor_name": "", "restore_op_name": "", "max_to_keep": 0,
               "sharded": False, "keep_checkpoint_every_n_hours": 0.0, "version": 0}

    def __init__(self, **fields: Any) -> None:
        for k in fields:
            if k not in self._FIELDS:
                raise ValueError(f'Protocol message SaverDef has no "{k}" field.')
        for k, default in self._FIELDS.items():
            setattr(self, k, fields.get(k, default))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SaverDef) and all(getattr(self, k) == getattr(other, k) for k in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, as protobuf messages

    def CopyFrom(self, other: "SaverDef") -> None:  # noqa: N802 - protobuf's API
        """Copies every field of `other` (protobuf's API)."""
        for k in self._FIELDS:
            setattr(self, k, getattr(other, k))

    def __repr__(self) -> str:
        return "\n".join(f"{k}: {getattr(self, k)!r}" for k, d in self._FIELDS.items() if getattr(self, k) != d)
