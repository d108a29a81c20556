"""TF1's tf.estimator.ModeKeys, EstimatorSpec and RunConfig."""
from __future__ import annotations

import collections
import copy
from typing import Any, Dict, Optional

from ..graph import graph as _g
from ..train.distribute_lib import Strategy

__all__ = ["ModeKeys", "EstimatorSpec", "RunConfig"]


class ModeKeys:
    """The mode a model_fn is called in."""
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


_SPEC_FIELDS = ["mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
                "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks", "prediction_hooks"]


def _tensor_like(x: Any) -> bool:
    return isinstance(x, (_g.Tensor, _g.Operation)) or hasattr(x, "op") or hasattr(x, "value")


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _SPEC_FIELDS)):
    """What a model_fn returns: TRAIN needs loss and train_op, EVAL loss, PREDICT predictions
    (a tensor or a dict of tensors).  eval_metric_ops maps names to (value, update_op) pairs."""

    def __new__(cls, mode: str, predictions: Any = None, loss: Any = None, train_op: Any = None,
                eval_metric_ops: Optional[Dict[str, Any]] = None, export_outputs: Any = None,
                training_chief_hooks: Any = None, training_hooks: Any = None, scaffold: Any = None,
                evaluation_hooks: Any = None, prediction_hooks: Any = None) -> "EstimatorSpec":
        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
            raise ValueError(f"mode={mode!r} is not a ModeKeys value")
        if mode == ModeKeys.TRAIN and train_op is None:
            raise ValueError("Missing train_op.")
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL) and loss is None:
            raise ValueError("Missing loss.")
        if mode == ModeKeys.PREDICT and predictions is None:
            raise ValueError("Missing predictions.")
        if loss is not None:
            loss = _g.convert_to_tensor(loss)
            if loss.shape.rank not in (None, 0) and loss.shape.num_elements() != 1:
                raise ValueError(f"Loss must be scalar, given: {loss}")
        if predictions is None:
            predictions = {}
        if isinstance(predictions, dict):
            for k, v in predictions.items():
                if not _tensor_like(v):
                    raise TypeError(f"predictions[{k}] must be Tensor, given: {v}")
        elif not _tensor_like(predictions):
            raise TypeError(f"predictions must be Tensor or dict of Tensor, given: {predictions}")
        eval_metric_ops = dict(eval_metric_ops or {})
        for k, v in eval_metric_ops.items():
            if not (isinstance(v, tuple) and len(v) == 2):
                raise TypeError(f"Values of eval_metric_ops must be (metric_value, update_op) tuples, given: {v} "
                                f"for key: {k}")
        if export_outputs is not None:
            from .export import ExportOutput
            if not isinstance(export_outputs, dict):
                raise TypeError(f"export_outputs must be dict, given: {export_outputs}")
            for k, v in export_outputs.items():
                if not isinstance(v, ExportOutput):
                    raise TypeError(f"Values in export_outputs must be ExportOutput objects. Given: {export_outputs}")
        hooks = [tuple(h or ()) for h in (training_chief_hooks, training_hooks, evaluation_hooks, prediction_hooks)]
        return super().__new__(cls, mode, predictions, loss, train_op, eval_metric_ops, export_outputs, *hooks[:2],
                               scaffold, *hooks[2:])

    def _replace(self, **kwds: Any) -> "EstimatorSpec":
        fields = self._asdict()
        fields.update(kwds)
        return EstimatorSpec(**fields)


class RunConfig:
    """The configuration of an Estimator's runs (TF1's tf.estimator.RunConfig).
    save_checkpoints_secs defaults to 600 unless save_checkpoints_steps is given; giving both is
    an error.  The cluster properties describe one local chief; `train_distribute` (a
    tf.distribute strategy) trains with one replica per MPI rank."""

    def __init__(self, model_dir: Optional[str] = None, tf_random_seed: Optional[int] = None,
                 save_summary_steps: int = 100, save_checkpoints_steps: Optional[int] = None,
                 save_checkpoints_secs: Any = "_default", session_config: Any = None,
                 keep_checkpoint_max: int = 5, keep_checkpoint_every_n_hours: float = 10000,
                 log_step_count_steps: int = 100, train_distribute: Any = None, device_fn: Any = None,
                 protocol: Any = None, eval_distribute: Any = None, experimental_distribute: Any = None,
                 experimental_max_worker_delay_secs: Any = None, session_creation_timeout_secs: int = 7200):
        if save_checkpoints_secs == "_default":
            save_checkpoints_secs = None if save_checkpoints_steps is not None else 600
        if save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError("save_checkpoints_steps and save_checkpoints_secs cannot be both set.")
        if experimental_distribute is not None:  # TF 1.x's DistributeConfig
            train_distribute = train_distribute or getattr(experimental_distribute, "train_distribute", None)
            eval_distribute = eval_distribute or getattr(experimental_distribute, "eval_distribute", None)
        for name, strategy in (("train_distribute", train_distribute), ("eval_distribute", eval_distribute)):
            if strategy is not None and not isinstance(strategy, Strategy):
                raise ValueError(f"{name} must be a tf.distribute.Strategy, got {type(strategy).__name__}")
        for name, v in (("save_summary_steps", save_summary_steps), ("log_step_count_steps", log_step_count_steps),
                        ("keep_checkpoint_max", keep_checkpoint_max)):
            if v is not None and v < 0:
                raise ValueError(f"{name} should be >= 0, given: {v}")
        self._model_dir = model_dir
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = save_summary_steps
        self._save_checkpoints_steps = save_checkpoints_steps
        self._save_checkpoints_secs = save_checkpoints_secs
        self._session_config = session_config
        self._keep_checkpoint_max = keep_checkpoint_max
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._log_step_count_steps = log_step_count_steps
        self._device_fn = device_fn
        self._protocol = protocol
        self._session_creation_timeout_secs = session_creation_timeout_secs
        # the replicas are the MPI ranks (see Estimator.train and Estimator.evaluate); without
        # eval_distribute each rank evaluates the whole evaluation input on its own
        self._train_distribute = train_distribute
        self._eval_distribute = eval_distribute

    model_dir = property(lambda self: self._model_dir)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    session_config = property(lambda self: self._session_config)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_every_n_hours = property(lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    device_fn = property(lambda self: self._device_fn)
    protocol = property(lambda self: self._protocol)
    session_creation_timeout_secs = property(lambda self: self._session_creation_timeout_secs)
    train_distribute = property(lambda self: self._train_distribute)
    eval_distribute = property(lambda self: self._eval_distribute)
    cluster_spec = property(lambda self: {})
    master = evaluation_master = property(lambda self: "")
    is_chief = property(lambda self: True)
    num_ps_replicas = property(lambda self: 0)
    num_worker_replicas = property(lambda self: 1)
    task_type = property(lambda self: "worker")
    task_id = global_id_in_cluster = property(lambda self: 0)
    service = property(lambda self: None)

    def replace(self, **kwargs: Any) -> "RunConfig":
        """A copy with the given properties changed."""
        new = copy.copy(self)
        for k, v in kwargs.items():
            if not hasattr(self, "_" + k) or k in ("cluster_spec",):
                raise ValueError(f"{k} is not a property of RunConfig that replace() can change")
            setattr(new, "_" + k, v)
        if new._save_checkpoints_steps is not None and new._save_checkpoints_secs is not None:
            if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" not in kwargs:
                new._save_checkpoints_secs = None
            elif "save_checkpoints_secs" in kwargs and "save_checkpoints_steps" not in kwargs:
                new._save_checkpoints_steps = None
            else:
                raise ValueError("save_checkpoints_steps and save_checkpoints_secs cannot be both set.")
        return new
