"""tf.estimator.export (TF1): serving input receivers, export outputs, and
Estimator.export_saved_model's SavedModel of the PREDICT graph (collflow's SavedModel files)."""
from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops.constant_op import group, placeholder
from ..graph.ops.parsing_ops import parse_example
from ..graph.variables import local_variables_initializer, tables_initializer
from ..saved_model import SavedModelBuilder
from ..train.signature_def import (SignatureDef, classification_signature_def, is_valid_signature,
                                   predict_signature_def, regression_signature_def, signature_constants,
                                   tag_constants)

__all__ = ["ServingInputReceiver", "TensorServingInputReceiver", "build_parsing_serving_input_receiver_fn",
           "build_raw_serving_input_receiver_fn", "ExportOutput", "PredictOutput", "ClassificationOutput",
           "RegressionOutput", "build_all_signature_defs", "export_saved_model", "canned_export_outputs"]

log = logging.getLogger("collflow.estimator")

DEFAULT_SERVING_KEY = signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY


def _as_dict(x: Any, default_key: str, what: str) -> Dict[str, Any]:
    if x is None:
        raise ValueError(f"{what} must be defined.")
    d = dict(x) if isinstance(x, Mapping) else {default_key: x}
    for k, v in d.items():
        if not isinstance(k, str):
            raise ValueError(f"{what} keys must be strings: {k}.")
        if not (_g.is_tensor(v) or hasattr(v, "indices")):
            raise ValueError(f"{what} must be a Tensor or SparseTensor, or a dict of them: {k}: {v!r}.")
    return d


class ServingInputReceiver:
    """What serving feeds (receiver_tensors) and what the model_fn gets (features) (TF1's)."""

    def __init__(self, features: Any, receiver_tensors: Any, receiver_tensors_alternatives: Any = None):
        self.features = _as_dict(features, "feature", "features")
        self.receiver_tensors = _as_dict(receiver_tensors, "input", "receiver_tensors")
        self.receiver_tensors_alternatives = {
            k: _as_dict(v, "input", f"receiver_tensors_alternatives[{k!r}]")
            for k, v in (receiver_tensors_alternatives or {}).items()}


class TensorServingInputReceiver(ServingInputReceiver):
    """A receiver whose features reach the model_fn as one Tensor, not a dict (TF1's)."""

    def __init__(self, features: Any, receiver_tensors: Any, receiver_tensors_alternatives: Any = None):
        if not _g.is_tensor(features):
            raise ValueError(f"features must be a single Tensor, got {features!r}")
        super().__init__({"feature": features}, receiver_tensors, receiver_tensors_alternatives)
        self.features = features


def build_parsing_serving_input_receiver_fn(feature_spec: Mapping[str, Any],
                                            default_batch_size: Optional[int] = None) -> Callable[[], ServingInputReceiver]:
    """A receiver fn taking serialized tf.Examples ("examples") and parsing them by feature_spec."""
    def serving_input_receiver_fn() -> ServingInputReceiver:
        serialized = placeholder(_dt.string, [default_batch_size], name="input_example_tensor")
        return ServingInputReceiver(parse_example(serialized, dict(feature_spec)), {"examples": serialized})
    return serving_input_receiver_fn


def build_raw_serving_input_receiver_fn(features: Mapping[str, Any], default_batch_size: Optional[int] = None
                                        ) -> Callable[[], ServingInputReceiver]:
    """A receiver fn with one placeholder per feature (shaped like `features`' tensors, the
    batch dimension `default_batch_size`), fed directly."""
    def serving_input_receiver_fn() -> ServingInputReceiver:
        receivers = {}
        for name, t in features.items():
            shape = [default_batch_size] + list(t.shape.as_list()[1:]) if t.shape.rank else None
            receivers[name] = placeholder(t.dtype, shape, name=name)
        return ServingInputReceiver(dict(receivers), receivers)
    return serving_input_receiver_fn


class ExportOutput:
    """What one signature of an exported model returns."""

    def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> SignatureDef:
        raise NotImplementedError


def _single_string_input(receiver_tensors: Mapping[str, Any], what: str) -> Any:
    if len(receiver_tensors) != 1:
        raise ValueError(f"{what} input must be a single string Tensor; got {receiver_tensors}")
    (_, examples), = receiver_tensors.items()
    if examples.dtype != _dt.string:
        raise ValueError(f"{what} input must be a single string Tensor; got {receiver_tensors}")
    return examples


class ClassificationOutput(ExportOutput):
    """Scores (float) and/or classes (string) of a classify signature."""

    def __init__(self, scores: Any = None, classes: Any = None):
        if scores is not None and not (_g.is_tensor(scores) and scores.dtype.is_floating):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None and not (_g.is_tensor(classes) and classes.dtype == _dt.string):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        if scores is None and classes is None:
            raise ValueError("At least one of scores and classes must be set.")
        self.scores, self.classes = scores, classes

    @property
    def outputs(self) -> Dict[str, Any]:
        out = {}
        if self.scores is not None:
            out[signature_constants.CLASSIFY_OUTPUT_SCORES] = self.scores
        if self.classes is not None:
            out[signature_constants.CLASSIFY_OUTPUT_CLASSES] = self.classes
        return out

    def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> SignatureDef:
        return classification_signature_def(_single_string_input(receiver_tensors, "Classification"),
                                            self.classes, self.scores)


class RegressionOutput(ExportOutput):
    """The float value of a regress signature."""

    def __init__(self, value: Any):
        if not (_g.is_tensor(value) and value.dtype.is_floating):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self.value = value

    @property
    def outputs(self) -> Dict[str, Any]:
        return {signature_constants.REGRESS_OUTPUTS: self.value}

    def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> SignatureDef:
        return regression_signature_def(_single_string_input(receiver_tensors, "Regression"), self.value)


class PredictOutput(ExportOutput):
    """Any named tensors of a predict signature (a single tensor is named "output")."""

    def __init__(self, outputs: Any):
        self._outputs = _as_dict(outputs, "output", "Prediction outputs")

    @property
    def outputs(self) -> Dict[str, Any]:
        return dict(self._outputs)

    def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> SignatureDef:
        return predict_signature_def(receiver_tensors, self._outputs)


def build_all_signature_defs(receiver_tensors: Mapping[str, Any], export_outputs: Mapping[str, ExportOutput],
                             receiver_tensors_alternatives: Optional[Mapping[str, Any]] = None,
                             serving_only: bool = True) -> Dict[str, SignatureDef]:
    """One signature per export output (and per alternative receiver, keyed
    "<receiver>:<output>"); those that cannot be built for the receiver (a classify signature
    over non-string inputs) are left out with a log line, as in TF1."""
    if not isinstance(export_outputs, Mapping):
        raise ValueError(f"export_outputs must be a dict and not {type(export_outputs)}")
    plans = [(None, dict(receiver_tensors))] + [(k, dict(v)) for k, v in (receiver_tensors_alternatives or {}).items()]
    out: Dict[str, SignatureDef] = {}
    for receiver_name, receivers in plans:
        for key, export_output in export_outputs.items():
            name = key if receiver_name is None else f"{receiver_name}:{key}"
            try:
                sig = export_output.as_signature_def(receivers)
            except ValueError as e:
                log.info("Signature %s is left out of the export: %s", name, e)
                continue
            if is_valid_signature(sig):
                out[name] = sig
    return out


def canned_export_outputs(kind: str, predictions: Mapping[str, Any]) -> Dict[str, ExportOutput]:
    """TF1's canned heads' export outputs: "serving_default", "classification"/"regression"
    and "predict" (kind: "binary", "multi_class" or "regression")."""
    predict = PredictOutput(dict(predictions))
    if kind == "regression":
        reg = RegressionOutput(predictions["predictions"])
        return {DEFAULT_SERVING_KEY: reg, "regression": reg, "predict": predict}
    # the class names row by row: the head's all_classes ([batch, n] strings, TF1's tile of the vocabulary)
    cls = ClassificationOutput(scores=predictions["probabilities"], classes=predictions["all_classes"])
    outs: Dict[str, ExportOutput] = {DEFAULT_SERVING_KEY: cls, "classification": cls, "predict": predict}
    if kind == "binary":
        outs["regression"] = RegressionOutput(predictions["logistic"])
    return outs


def _timestamped_dir(base: str) -> str:
    """base/<seconds since the epoch>: now, or one past the newest export there when that is
    later (exports within one second keep their order, which the exporters' pruning relies on)."""
    ts = int(time.time())
    if os.path.isdir(base):
        taken = [int(n) for n in os.listdir(base) if n.isdigit()]
        if taken:
            ts = max(ts, max(taken) + 1)
    return os.path.join(base, str(ts))


def serving_model(estimator: Any, serving_input_receiver_fn: Callable[[], Any],
                  mode: str = "infer") -> Tuple["ServingInputReceiver", Dict[str, "ExportOutput"]]:
    """Builds the Estimator's model in `mode` over the receiver's features in the default graph
    (with the config's graph seed and a global step, as model_fns expect); returns the receiver
    and the export outputs (a predict output of the predictions when the model gives none)."""
    from ..graph.ops import random_ops
    from ..train.global_step import get_or_create_global_step
    random_ops.set_random_seed(estimator.config.tf_random_seed)
    get_or_create_global_step(_g.get_default_graph())
    receiver = serving_input_receiver_fn()
    if not isinstance(receiver, ServingInputReceiver):
        raise ValueError(f"serving_input_receiver_fn must return a ServingInputReceiver, got {receiver!r}")
    spec = estimator._call_model_fn(receiver.features, None, mode, estimator.config)
    return receiver, spec.export_outputs or {DEFAULT_SERVING_KEY: PredictOutput(spec.predictions)}


def export_saved_model(estimator: Any, export_dir_base: str, serving_input_receiver_fn: Callable[[], Any],
                       checkpoint_path: Optional[str] = None, mode: str = "infer") -> bytes:
    """Builds the model in `mode` over the receiver's features, restores the checkpoint (the
    newest by default) and writes a SavedModel to export_dir_base/<timestamp>; returns that
    path as bytes (TF1's)."""
    checkpoint_path = checkpoint_path or estimator.latest_checkpoint()
    if not checkpoint_path:
        raise ValueError(f"Couldn't find trained model at {estimator.model_dir}.")
    export_dir = _timestamped_dir(os.path.abspath(str(export_dir_base)))
    from ..train.saver import Saver
    from ..runtime.session import Session
    g = _g.Graph()
    with g.as_default():
        receiver, export_outputs = serving_model(estimator, serving_input_receiver_fn, mode)
        sigs = build_all_signature_defs(receiver.receiver_tensors, export_outputs,
                                        receiver.receiver_tensors_alternatives)
        if not sigs:
            raise ValueError("None of the export outputs gives a valid signature for the receiver's tensors")
        main_op = group(local_variables_initializer(), tables_initializer(), name="main_op")
        with Session(graph=g) as sess:
            Saver(allow_empty=True).restore(sess, checkpoint_path)
            builder = SavedModelBuilder(export_dir)
            builder.add_meta_graph_and_variables(sess, [tag_constants.SERVING], signature_def_map=sigs,
                                                 main_op=main_op)
            builder.save()
    return export_dir.encode()
