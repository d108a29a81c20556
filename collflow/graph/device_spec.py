"""Device names as TF 1.x writes them: '/job:ps/replica:0/task:1/device:GPU:0' and its parts.

An op's `device` is the string its device scopes and device functions gave it.  Two parts
matter differently in collflow: the job/replica/task prefix names a task of a TF cluster
(tf.train.ClusterSpec), which collflow runs as MPI ranks, so the prefix is kept for the
program to read (replica_device_setter's choices, `v.device`) and for the optimizers to
know which variables a TF program meant to share between workers; the local part
('/cpu:0', '/gpu:N') is where the op runs in this process.  `canonical_device` gives the
local part, `device_string` the whole (local part in collflow's short form).

`DeviceSpec` is TF1's mutable tf.DeviceSpec (TF's own string form, '/device:CPU:0').
"""
from __future__ import annotations

import functools
import re
from typing import Any, List, Optional, Tuple

from ..errors import InvalidArgumentError

__all__ = ["DeviceSpec", "canonical_device", "device_string", "merge_device_strings", "job_part",
           "apply_device_stack"]

_LOCAL_TYPES = ("cpu", "gpu", "test")
_PART = re.compile(r"(job|replica|task):(.*)")


def _parse(spec: str) -> Tuple[Optional[str], Optional[int], Optional[int], Optional[str], Optional[int]]:
    """(job, replica, task, device_type, device_index) of a TF device string; unset parts None.

    device_type is kept as written upper-cased ('CPU', 'GPU'); device_index None for '*' or
    a missing index.  Raises InvalidArgumentError naming the string for anything else.
    """
    job = replica = task = dtype = index = None
    bad = InvalidArgumentError(f"cannot parse device specification {spec!r}; use e.g. '/cpu:0', '/gpu:N' or "
                               "'/job:NAME/replica:N/task:N/device:TYPE:N'")
    parts = [p for p in spec.strip().split("/") if p]
    for p in parts:
        m = _PART.fullmatch(p)
        if m:
            key, val = m.group(1), m.group(2)
            if key == "job":
                if not re.fullmatch(r"[A-Za-z0-9_.\-]+", val):
                    raise bad
                job = val
            else:
                if not val.isdigit():
                    raise bad
                if key == "replica":
                    replica = int(val)
                else:
                    task = int(val)
            continue
        fields = p.split(":")
        if fields[0].lower() == "device":
            fields = fields[1:]
        if not fields or len(fields) > 2 or not fields[0]:
            raise bad
        dtype = fields[0].upper()
        if len(fields) == 2:
            if fields[1] == "*":
                index = None
            elif fields[1].isdigit():
                index = int(fields[1])
            else:
                raise bad
    return job, replica, task, dtype, index


class DeviceSpec:
    """TF1's tf.DeviceSpec: job, replica, task, device_type and device_index, each optional."""

    def __init__(self, job: Optional[str] = None, replica: Optional[int] = None, task: Optional[int] = None,
                 device_type: Optional[str] = None, device_index: Optional[int] = None):
        self.job = job
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = None if device_type is None else str(device_type).upper()
        self.device_index = None if device_index is None else int(device_index)

    @classmethod
    def from_string(cls, spec: Optional[str]) -> "DeviceSpec":
        return cls(*_parse(spec or ""))

    def parse_from_string(self, spec: Optional[str]) -> "DeviceSpec":
        """Sets this spec's fields from `spec` (TF1's mutating form); returns self."""
        self.job, self.replica, self.task, self.device_type, self.device_index = _parse(spec or "")
        return self

    def merge_from(self, dev: "DeviceSpec") -> None:
        """Takes every field `dev` sets (TF1's mutating merge)."""
        for f in ("job", "replica", "task", "device_type", "device_index"):
            v = getattr(dev, f)
            if v is not None:
                setattr(self, f, v)

    def make_merged_spec(self, dev: "DeviceSpec") -> "DeviceSpec":
        """A new spec: this one with every field `dev` sets taken from `dev`."""
        out = self.replace()
        out.merge_from(dev)
        return out

    def replace(self, **kwargs: Any) -> "DeviceSpec":
        fields = dict(job=self.job, replica=self.replica, task=self.task, device_type=self.device_type,
                      device_index=self.device_index)
        for k in kwargs:
            if k not in fields:
                raise TypeError(f"DeviceSpec.replace() got an unexpected keyword argument {k!r}")
        fields.update(kwargs)
        return DeviceSpec(**fields)

    def to_string(self) -> str:
        s = ""
        if self.job is not None:
            s += f"/job:{self.job}"
        if self.replica is not None:
            s += f"/replica:{self.replica}"
        if self.task is not None:
            s += f"/task:{self.task}"
        if self.device_type is not None:
            s += f"/device:{self.device_type}:{'*' if self.device_index is None else self.device_index}"
        return s

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"<DeviceSpec {self.to_string() or '(empty)'}>"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self) -> int:
        return hash(self.to_string())


def _local(dtype: Optional[str], index: Optional[int], spec: str) -> Optional[str]:
    if dtype is None:
        return None
    t = dtype.lower()
    if t not in _LOCAL_TYPES:
        raise InvalidArgumentError(f"cannot parse device specification {spec!r}: device type {dtype!r} is not "
                                   "one collflow has; use '/cpu:0' or '/gpu:N'")
    return f"/{t}:{index or 0}"


@functools.lru_cache(maxsize=1024)
def canonical_device(spec: Optional[str]) -> Optional[str]:
    """The local part of a device string: '/cpu:0' or '/gpu:N' ('gpu', '/device:GPU:1',
    '/job:worker/task:1/device:GPU:2' included); None when it names no device type."""
    if spec is None or spec == "":
        return None
    s = spec.strip()
    if ":" not in s and "/" not in s:  # 'gpu', 'cpu'
        s = s + ":0"
    _, _, _, dtype, index = _parse(s)
    return _local(dtype, index, spec)


def _compose(job: Optional[str], replica: Optional[int], task: Optional[int], local: Optional[str]) -> Optional[str]:
    s = ""
    if job is not None:
        s += f"/job:{job}"
    if replica is not None:
        s += f"/replica:{replica}"
    if task is not None:
        s += f"/task:{task}"
    s += local or ""
    return s or None


@functools.lru_cache(maxsize=1024)
def device_string(spec: Optional[str]) -> Optional[str]:
    """An op's device string: TF's job/replica/task prefix, then the local part as
    canonical_device writes it ('/job:ps/task:0', '/job:worker/task:1/gpu:0', '/cpu:0')."""
    if spec is None or spec == "":
        return None
    s = spec.strip()
    if ":" not in s and "/" not in s:
        s = s + ":0"
    job, replica, task, dtype, index = _parse(s)
    return _compose(job, replica, task, _local(dtype, index, spec))


def job_part(spec: Optional[str]) -> Tuple[Optional[str], Optional[int]]:
    """(job, task) named by a device string, each None where unset."""
    if not spec or "/job:" not in spec and "/task:" not in spec:
        return None, None
    job, _, task, _, _ = _parse(spec)
    return job, task


def merge_device_strings(outer: Optional[str], inner: Optional[str]) -> Optional[str]:
    """`inner`'s fields over `outer`'s (TF1's nesting of device-name scopes); both are
    device_string forms."""
    if not outer:
        return inner
    if not inner:
        return outer
    oj, orr, ot, odt, oi = _parse(outer)
    ij, ir, it, idt, ii = _parse(inner)
    dtype, index = (idt, ii) if idt is not None else (odt, oi)
    return _compose(ij if ij is not None else oj, ir if ir is not None else orr,
                    it if it is not None else ot, _local(dtype, index, inner))


def apply_device_stack(stack: List[Any], op: Any, reset: Any) -> Optional[str]:
    """The device a graph's device scopes give a new op: innermost first (TF1's order), so
    an inner name's fields win and a device function sees the op as the inner scopes left
    it; `reset` (tf.device(None)) stops the walk, None entries ('') change nothing."""
    dev: Optional[str] = None
    for e in reversed(stack):
        if e is reset:
            break
        if e is None:
            continue
        if isinstance(e, str):
            dev = merge_device_strings(e, dev)
            continue
        op.device = dev
        r = e(op)
        dev = device_string(r.to_string() if isinstance(r, DeviceSpec) else r) if r else None
    return dev
