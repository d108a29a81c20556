"""TF1's tf.estimator.Estimator on collflow's graphs, MonitoredSession and checkpoints.

Each call (train, evaluate, predict) builds a new graph: the global step, the input_fn's
tensors and the model_fn's EstimatorSpec, then runs it in a MonitoredSession that restores
the newest checkpoint of model_dir (collflow's HDF5 files, `model.ckpt-<step>.h5`).
"""
from __future__ import annotations

import inspect
import os
import re
import tempfile
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np

from ..errors import OutOfRangeError
from ..graph import graph as _g
from ..graph.graph import GraphKeys
from ..graph.ops import random_ops
from ..graph.ops.constant_op import group
from ..graph.variables import global_variables, trainable_variables
from ..nn import metrics as _metrics
from ..platform import tf_logging as logging
from ..summary.proto import Summary
from ..summary.writer import FileWriterCache
from ..train import hooks as _hooks
from ..train import monitored_session as _ms
from ..train.distribute_lib import ReduceOp
from ..train.checkpoint_utils import init_from_checkpoint, list_variables, load_variable
from ..train.global_step import create_global_step, get_global_step
from ..train.saver import Saver, latest_checkpoint
from .model_fn import EstimatorSpec, ModeKeys, RunConfig
from .warm_starting import VocabInfo, warm_start_var_with_vocab

__all__ = ["Estimator", "WarmStartSettings", "VocabInfo"]


class WarmStartSettings:
    """Where a new model's variables start from: `ckpt_to_initialize_from` (a checkpoint or a
    directory), for the trainable variables whose names match `vars_to_warm_start` (a regex,
    or a list of names/regexes), renamed through `var_name_to_prev_var_name`; the variables of
    `var_name_to_vocab_info` (name -> VocabInfo) are remapped by vocabulary (warm_starting.py)."""

    def __init__(self, ckpt_to_initialize_from: str, vars_to_warm_start: Any = ".*",
                 var_name_to_vocab_info: Optional[dict] = None, var_name_to_prev_var_name: Optional[dict] = None):
        self.ckpt_to_initialize_from = ckpt_to_initialize_from
        self.vars_to_warm_start = vars_to_warm_start
        self.var_name_to_vocab_info = dict(var_name_to_vocab_info or {})
        self.var_name_to_prev_var_name = dict(var_name_to_prev_var_name or {})


def _fn_args(fn: Callable) -> List[str]:
    target = fn.func if hasattr(fn, "func") and hasattr(fn, "keywords") else fn
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return []
    return [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _verify_model_fn_args(model_fn: Callable, params: Any) -> None:
    args = set(_fn_args(model_fn))
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(f"model_fn ({model_fn}) does not include params argument, but params ({params}) is passed "
                         "to Estimator.")


def _parse_input_fn_result(result: Any) -> tuple:
    """(features, labels, input hooks) from what an input_fn returned."""
    hooks: List[Any] = []
    if hasattr(result, "make_one_shot_iterator") or hasattr(result, "_as_variant_or_dataset"):
        it = result.make_one_shot_iterator()
        result = it.get_next()
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise ValueError(f"input_fn should return (features, labels) as a len 2 tuple, got {len(result)} items")
        return result[0], result[1], hooks
    return result, None, hooks


class Estimator:
    """Trains, evaluates and predicts with a model_fn(features, labels, mode, params, config)
    returning an EstimatorSpec (TF1's tf.estimator.Estimator)."""

    def __init__(self, model_fn: Callable, model_dir: Optional[str] = None, config: Optional[RunConfig] = None,
                 params: Optional[dict] = None, warm_start_from: Any = None):
        if config is None:
            config = RunConfig()
        elif not isinstance(config, RunConfig):
            raise ValueError(f"config must be an instance of RunConfig, but provided {config}.")
        if model_dir is not None and config.model_dir is not None and \
                os.path.abspath(model_dir) != os.path.abspath(config.model_dir):
            raise ValueError(f"model_dir are set both in constructor and RunConfig, but with different values. In "
                             f"constructor: '{model_dir}', in RunConfig: '{config.model_dir}' ")
        model_dir = model_dir or config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp()
            logging.warning("Using temporary folder as model directory: %s", model_dir)
        self._model_dir = model_dir
        self._config = config.replace(model_dir=model_dir)
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        _verify_model_fn_args(model_fn, params)
        self._model_fn = model_fn
        self._params = dict(params or {})
        if isinstance(warm_start_from, str):
            warm_start_from = WarmStartSettings(warm_start_from)
        self._warm_start_settings = warm_start_from
        logging.info("Using config: %s", {k.lstrip("_"): v for k, v in vars(self._config).items()})

    model_dir = property(lambda self: self._model_dir)
    config = property(lambda self: self._config)
    params = property(lambda self: dict(self._params))
    model_fn = property(lambda self: self._model_fn)

    # -- export -------------------------------------------------------------------------------------------
    def export_saved_model(self, export_dir_base: str, serving_input_receiver_fn: Callable,
                           assets_extra: Optional[dict] = None, as_text: bool = False,
                           checkpoint_path: Optional[str] = None, experimental_mode: str = ModeKeys.PREDICT) -> bytes:
        """A SavedModel of the model over serving_input_receiver_fn's receiver, with the variables
        of `checkpoint_path` (default: the newest), in export_dir_base/<timestamp>; returns that
        path as bytes (TF1's).  The signatures are the EstimatorSpec's export_outputs (default: a
        predict signature of its predictions).  assets_extra and as_text change nothing."""
        from .export import export_saved_model
        return export_saved_model(self, export_dir_base, serving_input_receiver_fn, checkpoint_path,
                                  experimental_mode)

    def export_savedmodel(self, export_dir_base: str, serving_input_receiver_fn: Callable,
                          assets_extra: Optional[dict] = None, as_text: bool = False,
                          checkpoint_path: Optional[str] = None, strip_default_attrs: bool = False) -> bytes:
        """TF1's older name of export_saved_model."""
        return self.export_saved_model(export_dir_base, serving_input_receiver_fn, assets_extra, as_text,
                                       checkpoint_path)

    # -- the checkpoint ---------------------------------------------------------------------------------
    def latest_checkpoint(self) -> Optional[str]:
        return latest_checkpoint(self._model_dir)

    def _require_checkpoint(self) -> str:
        path = self.latest_checkpoint()
        if path is None:
            raise ValueError(f"Could not find trained model in model_dir: {self._model_dir}.")
        return path

    def get_variable_names(self) -> List[str]:
        return [name for name, _ in list_variables(self._require_checkpoint())]

    def get_variable_value(self, name: str) -> np.ndarray:
        return load_variable(self._require_checkpoint(), name)

    # -- building ---------------------------------------------------------------------------------------
    def _call_input_fn(self, input_fn: Callable, mode: str, input_context: Any = None) -> Any:
        args = _fn_args(input_fn)
        kwargs: Dict[str, Any] = {}
        if "input_context" in args:
            kwargs["input_context"] = input_context
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = self.config
        return input_fn(**kwargs)

    def _call_model_fn(self, features: Any, labels: Any, mode: str, config: RunConfig) -> EstimatorSpec:
        args = _fn_args(self._model_fn)
        kwargs: Dict[str, Any] = {}
        if "labels" in args:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = config
        spec = self._model_fn(features=features, **kwargs)
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(f"model_fn should return an EstimatorSpec. Given: {spec}")
        return spec

    def _new_graph(self) -> _g.Graph:
        g = _g.Graph()
        return g

    def _build(self, input_fn: Callable, mode: str) -> tuple:
        """In the default graph: (global step, spec, input hooks)."""
        random_ops.set_random_seed(self._config.tf_random_seed)
        gs = create_global_step(_g.get_default_graph())
        features, labels, input_hooks = _parse_input_fn_result(self._call_input_fn(input_fn, mode))
        if mode == ModeKeys.PREDICT:
            labels = None
        spec = self._call_model_fn(features, labels, mode, self._config)
        return gs, spec, input_hooks

    def _build_distributed(self, input_fn: Callable, strategy: Any) -> tuple:
        """TF 1.x's distributed training graph, one replica per rank: input_fn (told its
        InputContext) gives per-replica batches, dealt out to the replicas as TF deals them;
        the v1 optimizer divides a mean loss by the replicas and sums their gradients; the
        reported loss is their mean (SUM when the loss was not scaled by the optimizer)."""
        random_ops.set_random_seed(self._config.tf_random_seed)
        g = _g.get_default_graph()
        with strategy.scope():
            gs = create_global_step(g)
            ds = self._call_input_fn(input_fn, ModeKeys.TRAIN, input_context=strategy._input_context())
            if not (hasattr(ds, "make_one_shot_iterator") and hasattr(ds, "shard")):
                raise ValueError("With train_distribute the input_fn must return a tf.data.Dataset, got "
                                 f"{type(ds).__name__}")
            features, labels, input_hooks = _parse_input_fn_result(strategy._per_replica_dataset(ds))
            strategy._scale_loss_for_estimator = True
            try:
                spec = strategy.extended.call_for_each_replica(
                    self._call_model_fn, args=(features, labels, ModeKeys.TRAIN, self._config))
            finally:
                strategy._scale_loss_for_estimator = False
            scaled = g.__dict__.get("_is_loss_scaled_by_optimizer", False)
            op = ReduceOp.MEAN if scaled else ReduceOp.SUM
            spec = spec._replace(loss=strategy.reduce(op, spec.loss))
        return gs, spec, input_hooks

    def _build_distributed_eval(self, input_fn: Callable, strategy: Any) -> tuple:
        """TF 1.x's distributed evaluation graph, one replica per rank: input_fn (told its
        InputContext) gives per-replica batches, dealt out round robin as in training; each
        replica runs the model on its batches and updates its own metric state."""
        random_ops.set_random_seed(self._config.tf_random_seed)
        with strategy.scope():
            gs = create_global_step(_g.get_default_graph())
            ds = self._call_input_fn(input_fn, ModeKeys.EVAL, input_context=strategy._input_context())
            if not (hasattr(ds, "make_one_shot_iterator") and hasattr(ds, "shard")):
                raise ValueError("With eval_distribute the input_fn must return a tf.data.Dataset, got "
                                 f"{type(ds).__name__}")
            features, labels, input_hooks = _parse_input_fn_result(strategy._per_replica_dataset(ds))
            spec = strategy.extended.call_for_each_replica(
                self._call_model_fn, args=(features, labels, ModeKeys.EVAL, self._config))
        return gs, spec, input_hooks

    def _scaffold(self, spec: EstimatorSpec) -> _ms.Scaffold:
        scaffold = spec.scaffold or _ms.Scaffold()
        if scaffold.saver is None and not _g.get_collection(_ms.SAVERS):
            _g.add_to_collection(_ms.SAVERS, Saver(max_to_keep=self._config.keep_checkpoint_max,
                                                         keep_checkpoint_every_n_hours=
                                                         self._config.keep_checkpoint_every_n_hours))
        return scaffold

    def _warm_start(self) -> None:
        ws = self._warm_start_settings
        if ws is None:
            return
        ckpt = ws.ckpt_to_initialize_from
        if os.path.isdir(ckpt):
            ckpt = latest_checkpoint(ckpt) or ckpt
        logging.info("Warm-starting from: %s", ckpt)
        in_ckpt = dict(list_variables(ckpt))
        pats = ws.vars_to_warm_start
        if isinstance(pats, str) or pats is None:
            candidates = [v for v in trainable_variables() if re.match(pats or ".*", v.op.name)]
        else:
            candidates = [v for v in global_variables()
                          if any(v.op.name == p or re.match(p, v.op.name) for p in pats)]
        assignment = {}
        vocab_used = set()
        for v in candidates:
            prev = ws.var_name_to_prev_var_name.get(v.op.name, v.op.name)
            if prev not in in_ckpt:
                logging.info("Warm-start: %s is not in the checkpoint; it is initialized as usual", prev)
                continue
            if v.op.name in ws.var_name_to_vocab_info:
                vocab_used.add(v.op.name)
                warm_start_var_with_vocab(v, load_variable(ckpt, prev), ws.var_name_to_vocab_info[v.op.name])
                continue
            assignment[prev] = v
        if assignment:
            init_from_checkpoint(ckpt, assignment)
        unused = set(ws.var_name_to_vocab_info) - vocab_used
        if unused:  # TF1's check: a vocabulary remapping that names no warm-started variable
            raise ValueError(f"Not all keys in var_name_to_vocab_info were used: {sorted(unused)}")

    # -- train ------------------------------------------------------------------------------------------
    def train(self, input_fn: Callable, hooks: Optional[Sequence[Any]] = None, steps: Optional[int] = None,
              max_steps: Optional[int] = None, saving_listeners: Optional[Sequence[Any]] = None) -> "Estimator":
        """Trains until input_fn's data ends, `steps` more steps, or the global step reaches
        `max_steps`; resumes from model_dir's newest checkpoint.  Returns self."""
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None:
            ckpt = self.latest_checkpoint()
            if ckpt is not None:
                try:
                    start = int(load_variable(ckpt, GraphKeys.GLOBAL_STEP))
                except Exception:  # noqa: BLE001 - a checkpoint without a global step
                    start = 0
                if max_steps <= start:
                    logging.info("Skipping training since max_steps has already saved.")
                    return self
        hooks = list(hooks or [])
        if steps is not None or max_steps is not None:
            hooks.append(_hooks.StopAtStepHook(num_steps=steps, last_step=max_steps))
        loss = self._train_model(input_fn, hooks, list(saving_listeners or []))
        logging.info("Loss for final step: %s.", loss)
        return self

    def _train_model(self, input_fn: Callable, hooks: List[Any], saving_listeners: List[Any]) -> Any:
        cfg = self._config
        with self._new_graph().as_default():
            if cfg.train_distribute is not None:
                gs, spec, input_hooks = self._build_distributed(input_fn, cfg.train_distribute)
            else:
                gs, spec, input_hooks = self._build(input_fn, ModeKeys.TRAIN)
            if get_global_step() is not gs:
                raise ValueError("model_fn created a global step of its own: use tf.train.get_global_step()")
            self._warm_start()
            all_hooks = list(input_hooks) + hooks + list(spec.training_hooks)
            all_hooks.append(_hooks.NanTensorHook(spec.loss))
            if cfg.log_step_count_steps:
                all_hooks.append(_hooks.LoggingTensorHook({"loss": spec.loss, "step": gs},
                                                          every_n_iter=cfg.log_step_count_steps))
            scaffold = self._scaffold(spec)
            chief_hooks = list(spec.training_chief_hooks)
            if cfg.save_checkpoints_secs or cfg.save_checkpoints_steps:
                if not any(isinstance(h, _hooks.CheckpointSaverHook) for h in all_hooks + chief_hooks):
                    chief_hooks.append(_hooks.CheckpointSaverHook(
                        self._model_dir, save_secs=cfg.save_checkpoints_secs, save_steps=cfg.save_checkpoints_steps,
                        scaffold=scaffold, listeners=saving_listeners))
            elif saving_listeners:
                raise ValueError("There should be a CheckpointSaverHook to use saving_listeners. Please set one of "
                                 "the RunConfig.save_checkpoints_steps or RunConfig.save_checkpoints_secs.")
            loss = None
            with _ms.MonitoredTrainingSession(
                    checkpoint_dir=self._model_dir, scaffold=scaffold, hooks=all_hooks,
                    chief_only_hooks=chief_hooks, save_checkpoint_secs=0,
                    save_summaries_steps=cfg.save_summary_steps, config=cfg.session_config,
                    log_step_count_steps=cfg.log_step_count_steps) as sess:
                while not sess.should_stop():
                    _, loss = sess.run([spec.train_op, spec.loss])
            return loss

    # -- evaluate ---------------------------------------------------------------------------------------
    def evaluate(self, input_fn: Callable, steps: Optional[int] = None, hooks: Optional[Sequence[Any]] = None,
                 checkpoint_path: Optional[str] = None, name: Optional[str] = None) -> Dict[str, Any]:
        """Runs the eval metrics over input_fn's data (or `steps` batches) with the newest (or
        the given) checkpoint; returns their values plus `loss` (the mean batch loss) and
        `global_step`, and writes them to model_dir/eval[_name]."""
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if checkpoint_path is None:
            logging.info("Could not find trained model in model_dir: %s, running initialization to evaluate.",
                         self._model_dir)
        strategy = self._config.eval_distribute
        replicas = strategy.num_replicas_in_sync if strategy is not None else 1
        with self._new_graph().as_default():
            if strategy is not None:
                gs, spec, input_hooks = self._build_distributed_eval(input_fn, strategy)
            else:
                gs, spec, input_hooks = self._build(input_fn, ModeKeys.EVAL)
            if "loss" in spec.eval_metric_ops:
                raise ValueError('Metric with name "loss" is not allowed, because Estimator already defines a default '
                                 'metric with the same name.')
            eval_dict = dict(spec.eval_metric_ops)
            eval_dict["loss"] = _metrics.mean(spec.loss)
            update_op = group(*[v[1] for v in eval_dict.values()])
            final = {k: v[0] for k, v in eval_dict.items()}
            final[GraphKeys.GLOBAL_STEP] = gs
            final_hook = _hooks.FinalOpsHook(final)
            all_hooks = list(input_hooks) + list(hooks or []) + list(spec.evaluation_hooks)
            if steps is not None:
                all_hooks.append(_StopAfterNEvalsHook(steps))
            if replicas > 1:  # before the final values are read
                all_hooks.append(_SumMetricStateHook(_g.get_collection(GraphKeys.METRIC_VARIABLES)))
            all_hooks.append(final_hook)
            scaffold = self._scaffold(spec)
            creator = _ms.ChiefSessionCreator(scaffold=scaffold, config=self._config.session_config,
                                              checkpoint_filename_with_path=checkpoint_path)
            logging.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            with _ms.MonitoredSession(creator, hooks=all_hooks) as sess:
                while not sess.should_stop():
                    sess.run(update_op)
            results = final_hook.final_ops_values
        out = {k: (np.int64(v) if k == GraphKeys.GLOBAL_STEP else v) for k, v in results.items()}
        logging.info("Saving dict for global step %d: %s", out[GraphKeys.GLOBAL_STEP],
                     ", ".join(f"{k} = {v}" for k, v in sorted(out.items())))
        if replicas <= 1 or strategy._replica_id() == 0:  # one evaluator's events, as TF's
            self._write_eval_summary(out, name)
        return out

    def eval_dir(self, name: Optional[str] = None) -> str:
        return os.path.join(self._model_dir, "eval" if not name else "eval_" + name)

    def _write_eval_summary(self, results: Dict[str, Any], name: Optional[str]) -> None:
        step = int(results[GraphKeys.GLOBAL_STEP])
        values = []
        for k, v in sorted(results.items()):
            if k == GraphKeys.GLOBAL_STEP:
                continue
            a = np.asarray(v)
            if a.size == 1 and a.dtype.kind in "fiub":
                values.append(Summary.Value(tag=k, simple_value=float(a.ravel()[0])))
        writer = FileWriterCache.get(self.eval_dir(name))
        writer.add_summary(Summary(value=values), step)
        writer.flush()

    # -- predict ----------------------------------------------------------------------------------------
    def predict(self, input_fn: Callable, predict_keys: Optional[Sequence[str]] = None,
                hooks: Optional[Sequence[Any]] = None, checkpoint_path: Optional[str] = None,
                yield_single_examples: bool = True) -> Iterator[Any]:
        """A generator of the model's predictions over input_fn's features (labels are dropped):
        one dict (or value) per example, or per batch with yield_single_examples=False."""
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if checkpoint_path is None:
            logging.info("Could not find trained model in model_dir: %s, running initialization to predict.",
                         self._model_dir)
        g = self._new_graph()
        with g.as_default():  # the generator yields outside the graph's context
            _, spec, input_hooks = self._build(input_fn, ModeKeys.PREDICT)
            predictions = spec.predictions
            if predict_keys is not None:
                if isinstance(predict_keys, str):
                    predict_keys = [predict_keys]
                if not isinstance(predictions, dict):
                    raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
                missing = [k for k in predict_keys if k not in predictions]
                if missing:
                    raise ValueError(f"Expected to run at least one output from {list(predictions)}, provided "
                                     f"{predict_keys}.")
                predictions = {k: predictions[k] for k in predict_keys}
            scaffold = self._scaffold(spec)
            creator = _ms.ChiefSessionCreator(scaffold=scaffold, config=self._config.session_config,
                                              checkpoint_filename_with_path=checkpoint_path)
            all_hooks = list(input_hooks) + list(hooks or []) + list(spec.prediction_hooks)
            sess = _ms.MonitoredSession(creator, hooks=all_hooks)
        try:
            while True:
                with g.as_default():
                    if sess.should_stop():
                        break
                    try:
                        values = sess.run(predictions)
                    except OutOfRangeError:
                        break
                yield from _split(values, yield_single_examples)
        finally:
            with g.as_default():
                sess.close()


def _split(values: Any, single: bool) -> Iterator[Any]:
    if not single:
        yield values
        return
    if not isinstance(values, dict):
        yield from values
        return
    sizes = {k: np.shape(v)[0] if np.ndim(v) else None for k, v in values.items()}
    batch = set(sizes.values())
    if len(batch) != 1 or None in batch:
        raise ValueError(f"Batch length of predictions should be same. {sizes}")
    for i in range(batch.pop()):
        yield {k: v[i] for k, v in values.items()}


class _StopAfterNEvalsHook(_hooks.SessionRunHook):
    """Stops an evaluation after num_evals runs."""

    def __init__(self, num_evals: int):
        self._num_evals = int(num_evals)
        self._done = 0

    def after_run(self, run_context: Any, run_values: Any) -> None:
        self._done += 1
        if self._done >= self._num_evals:
            run_context.request_stop()


class _SumMetricStateHook(_hooks.SessionRunHook):
    """Under eval_distribute, once every replica has run out of batches: each metric
    variable becomes its sum over the replicas (TF's SyncOnRead SUM aggregation), so the
    metric values read after it are those of all the replicas' batches together."""

    def __init__(self, variables: Sequence[Any]):
        from ..graph.ops.collective_ops import all_reduce
        from ..graph.ops.state_ops import assign
        for v in variables:
            if not v.shape.is_fully_defined():
                raise ValueError(
                    f"eval_distribute: the metric variable {v.op.name} has the shape {v.shape}, not fixed when the "
                    "graph is built (a metric that gathers values, like streaming_concat); its state cannot be "
                    "summed over the replicas. Evaluate without eval_distribute.")
        self._op = group(*[assign(v, all_reduce(v, op="sum", name="sum_over_replicas")) for v in variables])

    def end(self, session: Any) -> None:
        session.run(self._op)
