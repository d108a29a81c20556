"""`tf.ConfigProto` and `tf.GPUOptions` (TensorFlow 1.x), and how a Session honours them.

    config = cf.ConfigProto(allow_soft_placement=True, log_device_placement=True)
    config.gpu_options.allow_growth = True
    config.gpu_options.visible_device_list = str(hvd.local_rank())
    sess = cf.Session(config=config)        # a plain dict of Session options works too

They behave like the protocol buffers users know: keyword construction, attribute
assignment, nested `gpu_options` edited in place, unknown fields refused.  What each
field does in collflow:

- allow_soft_placement, log_device_placement, operation_timeout_in_ms: the Session's
  options of the same names (log_device_placement logs each op's device once per plan).
- device_count={'GPU': 0}: run on the CPU.
- intra_op_parallelism_threads: the BLAS thread count (process-wide, through threadpoolctl
  when it is installed; otherwise ignored with a debug log).  inter_op_parallelism_threads
  and use_per_session_threads are accepted and ignored (collflow runs a plan's ops in
  order on the calling thread).
- gpu_options.visible_device_list: the first id is the physical GPU this process uses
  (as `local rank`; only before the process set up its GPU).  per_process_gpu_memory_fraction:
  a limit on CuPy's memory pool.  allow_growth: recorded; CuPy's pool always grows on
  demand, so True is what collflow does anyway and False does not reserve memory up front.
- graph_options.optimizer_options: opt_level L0 (with do_common_subexpression_elimination /
  do_constant_folding) turns the plan passes off (or keeps one); the JIT levels are recorded.
"""
from __future__ import annotations

import copy
from typing import Any, Dict

from ..errors import InvalidArgumentError
from ..platform import tf_logging

__all__ = ["ConfigProto", "GPUOptions", "GraphOptions", "OptimizerOptions", "RewriterConfig", "session_options",
           "configure_process", "configure_device", "set_blas_threads"]


class _Message:
    """A protobuf-like record: fields with defaults, keyword construction, no unknown fields."""

    _FIELDS: Dict[str, Any] = {}
    _NESTED: Dict[str, type] = {}  # fields holding another message: its type

    def __init__(self, **kwargs: Any):
        for k, v in self._FIELDS.items():
            object.__setattr__(self, k, copy.deepcopy(v))
        for k, v in kwargs.items():
            if k not in self._FIELDS:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{k}" field.')
            setattr(self, k, v)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._FIELDS:
            raise AttributeError(f'Assignment not allowed (no field "{name}" in protocol message object '
                                 f'{type(self).__name__}).')
        kind = self._NESTED.get(name)
        if kind is not None:  # a message field: a message of its type, or a dict of its fields
            if isinstance(value, dict):
                value = kind(**value)
            if not isinstance(value, kind):
                raise TypeError(f"{type(self).__name__}.{name} takes a {kind.__name__}, got {value!r}")
            object.__setattr__(self, name, value)
            return
        default = self._FIELDS[name]
        if isinstance(default, bool):
            if not isinstance(value, (bool, int)):
                raise TypeError(f"{type(self).__name__}.{name} takes a bool, got {value!r}")
            value = bool(value)
        elif isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{type(self).__name__}.{name} takes an int, got {value!r}")
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{type(self).__name__}.{name} takes a number, got {value!r}")
            value = float(value)
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise TypeError(f"{type(self).__name__}.{name} takes a str, got {value!r}")
        elif isinstance(default, dict):
            if not isinstance(value, dict):
                raise TypeError(f"{type(self).__name__}.{name} takes a dict, got {value!r}")
            value = dict(value)
        object.__setattr__(self, name, value)

    def CopyFrom(self, other: "_Message") -> None:  # noqa: N802 (protobuf's name)
        if type(other) is not type(self):
            raise TypeError(f"CopyFrom needs a {type(self).__name__}, got {type(other).__name__}")
        for k in self._FIELDS:
            object.__setattr__(self, k, copy.deepcopy(getattr(other, k)))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, k) == getattr(other, k) for k in self._FIELDS)

    def __repr__(self) -> str:
        set_fields = [f"{k}={getattr(self, k)!r}" for k in self._FIELDS if getattr(self, k) != self._FIELDS[k]]
        return f"{type(self).__name__}({', '.join(set_fields)})"


class GPUOptions(_Message):
    """tf.GPUOptions: per_process_gpu_memory_fraction, allow_growth, visible_device_list,
    allocator_type, force_gpu_compatible (see the module docstring for what each does)."""

    _FIELDS = {"per_process_gpu_memory_fraction": 0.0, "allow_growth": False, "visible_device_list": "",
               "allocator_type": "", "force_gpu_compatible": False}


class OptimizerOptions(_Message):
    """tf.OptimizerOptions: opt_level L1 (the default) runs common-subexpression elimination
    and constant folding on every plan; L0 runs only those of do_common_subexpression_
    elimination / do_constant_folding that are set (TF's rule).  The JIT levels are
    recorded (collflow has no XLA)."""

    L1, L0 = 0, -1
    DEFAULT, OFF, ON_1, ON_2 = 0, -1, 1, 2
    _FIELDS = {"do_common_subexpression_elimination": False, "do_constant_folding": False,
               "max_folded_constant_in_bytes": 0, "do_function_inlining": False, "opt_level": 0,
               "global_jit_level": 0, "cpu_global_jit": False}

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "opt_level" and value not in (OptimizerOptions.L1, OptimizerOptions.L0):
            raise ValueError(f"OptimizerOptions.opt_level is L1 (0) or L0 (-1), got {value!r}")
        if name == "global_jit_level" and value not in (-1, 0, 1, 2):
            raise ValueError(f"OptimizerOptions.global_jit_level is DEFAULT, OFF, ON_1 or ON_2, got {value!r}")
        super().__setattr__(name, value)

    def passes(self) -> Dict[str, bool]:
        """Which plan passes these options ask for: {"cse": ..., "fold": ...}."""
        full = self.opt_level >= OptimizerOptions.L1
        return {"cse": full or self.do_common_subexpression_elimination,
                "fold": full or self.do_constant_folding}


class RewriterConfig:
    """tf.RewriterConfig (graph_options.rewrite_options): Grappler's switches, recorded only --
    collflow's plan passes are chosen by optimizer_options.  Takes any field TF's has
    (layout_optimizer, memory_optimization, auto_mixed_precision, ...) as TF 1.x programs set
    them; ON/OFF/DEFAULT/AGGRESSIVE and the memory levels are TF's enum values."""

    DEFAULT, ON, OFF, AGGRESSIVE = 0, 1, 2, 3
    NO_MEM_OPT, MANUAL, HEURISTICS, SWAPPING_HEURISTICS, RECOMPUTATION_HEURISTICS = 1, 2, 3, 4, 5
    SCHEDULING_HEURISTICS, DEFAULT_MEM_OPT = 6, 0

    def __init__(self, **fields: Any):
        self.__dict__.update(fields)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return 0  # an unset proto field reads as its default

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RewriterConfig) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"RewriterConfig({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class GraphOptions(_Message):
    """tf.GraphOptions: optimizer_options is honoured (see OptimizerOptions); the rest are
    recorded."""

    _FIELDS = {"enable_recv_scheduling": False, "optimizer_options": OptimizerOptions(),
               "enable_bfloat16_sendrecv": False, "timeline_step": 0, "build_cost_model": 0,
               "build_cost_model_after": 0, "infer_shapes": False, "place_pruned_graph": False,
               "rewrite_options": RewriterConfig()}
    _NESTED = {"optimizer_options": OptimizerOptions, "rewrite_options": RewriterConfig}


class ConfigProto(_Message):
    """tf.ConfigProto: the Session options TensorFlow 1.x programs pass (see the module docstring)."""

    _FIELDS = {"device_count": {}, "intra_op_parallelism_threads": 0, "inter_op_parallelism_threads": 0,
               "use_per_session_threads": False, "allow_soft_placement": False, "log_device_placement": False,
               "operation_timeout_in_ms": 0, "isolate_session_state": False, "gpu_options": GPUOptions(),
               "graph_options": GraphOptions()}
    _NESTED = {"gpu_options": GPUOptions, "graph_options": GraphOptions}

    def to_session_options(self) -> Dict[str, Any]:
        """The Session's option dict these fields stand for."""
        d: Dict[str, Any] = {}
        if self.allow_soft_placement:
            d["allow_soft_placement"] = True
        if self.log_device_placement:
            d["log_device_placement"] = True
        if self.operation_timeout_in_ms > 0:
            d["operation_timeout_in_ms"] = self.operation_timeout_in_ms
        bad = {k: v for k, v in self.device_count.items() if not isinstance(v, int) or v < 0}
        if bad:
            raise InvalidArgumentError(f"ConfigProto.device_count values must be counts >= 0, got {bad}")
        if self.device_count.get("GPU", 1) == 0:
            d["device"] = "/cpu:0"
        if self.intra_op_parallelism_threads > 0:
            d["intra_op_parallelism_threads"] = self.intra_op_parallelism_threads
        if self.gpu_options != GPUOptions():
            d["gpu_options"] = copy.deepcopy(self.gpu_options)
        passes = self.graph_options.optimizer_options.passes()
        if not all(passes.values()):
            d["optimize"] = passes
        return d


def session_options(config: Any) -> Dict[str, Any]:
    """A Session's option dict from `config`: None, a dict (copied) or a ConfigProto."""
    if config is None:
        return {}
    if isinstance(config, ConfigProto):
        return config.to_session_options()
    if isinstance(config, dict):
        d = dict(config)
        if isinstance(d.get("gpu_options"), dict):
            d["gpu_options"] = GPUOptions(**d["gpu_options"])
        return d
    raise TypeError(f"Session config must be a dict of options or a cf.ConfigProto, got {type(config).__name__}")


_threadpool_limits: Any = None  # the limit in force (threadpoolctl's object), so a new one can restore first


def set_blas_threads(n: int) -> bool:
    """The process's BLAS thread count: n > 0 limits it, 0 restores the library's default.
    ConfigProto's and tf.config's intra-op threads both come here.  False when threadpoolctl
    is not installed (nothing changes)."""
    global _threadpool_limits
    if _threadpool_limits is not None:
        _threadpool_limits.restore_original_limits()
        _threadpool_limits = None
    if not n:
        return True
    try:
        import threadpoolctl
    except ImportError:
        return False
    _threadpool_limits = threadpoolctl.threadpool_limits(limits=int(n), user_api="blas")
    return True


def configure_process(options: Dict[str, Any]) -> None:
    """What must happen before the Session picks its device: the GPU of visible_device_list,
    the BLAS thread count of intra_op_parallelism_threads, the host allocator's policy
    (kernels/host_memory.py: freed arrays kept for reuse, once per process)."""
    from ..kernels import host_memory
    host_memory.keep_freed_memory()
    gpu_opts = options.get("gpu_options")
    visible = gpu_opts.visible_device_list.strip() if isinstance(gpu_opts, GPUOptions) else ""
    if visible and options.get("device") != "/cpu:0":
        try:
            first = int(visible.split(",")[0])
        except ValueError:
            raise InvalidArgumentError(f"gpu_options.visible_device_list must list GPU ids such as '0' or '1,2', "
                                       f"got {visible!r}") from None
        from ..kernels import gpu
        dev = gpu.setup(local_rank=first)  # once per process: a later, different choice cannot apply
        if dev is not None and dev.index != first:
            tf_logging.warning("gpu_options.visible_device_list=%r ignored: this process already uses GPU %d",
                               visible, dev.index)
    n = options.get("intra_op_parallelism_threads")
    if n and not set_blas_threads(n):
        tf_logging.debug("intra_op_parallelism_threads=%d ignored: threadpoolctl is not installed", n)


def configure_device(options: Dict[str, Any], device: Any) -> None:
    """Applies gpu_options to the Session's default device (a CuPy GPU) once it is known."""
    gpu_opts = options.get("gpu_options")
    if not isinstance(gpu_opts, GPUOptions) or getattr(device, "device_type", "CPU") != "GPU":
        return
    frac = gpu_opts.per_process_gpu_memory_fraction
    if frac:
        if not 0.0 < frac <= 1.0:
            raise InvalidArgumentError(f"gpu_options.per_process_gpu_memory_fraction must be in (0, 1], got {frac} "
                                       "(collflow does not oversubscribe GPU memory)")
        device.xp.get_default_memory_pool().set_limit(fraction=frac)
        tf_logging.info("GPU %d: CuPy's memory pool limited to %.0f%% of the device", device.index, 100 * frac)
