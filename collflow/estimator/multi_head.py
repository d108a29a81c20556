"""MultiHead (TF's tf.estimator.MultiHead, TF 1.15's tf.contrib.estimator.multi_head): several
named heads over one logits tensor (split in the heads' order) or a dict of logits by head
name; labels are a dict by head name.  The training loss is sum_i head_weight_i * loss_i;
predictions are keyed (head name, key); eval metrics are the heads' own (`<metric>/<head>`)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops.constant_op import no_op
from ..nn import metrics as _metrics
from ..summary import summary_ops as _summary
from .export import DEFAULT_SERVING_KEY, PredictOutput
from .head import LossSpec, make_train_op
from .model_fn import EstimatorSpec, ModeKeys

__all__ = ["MultiHead", "multi_head"]

_PREDICT_KEY = "predict"


class MultiHead:
    """Combines named heads: their losses weighted by head_weights (default 1) and summed."""

    def __init__(self, heads: Sequence[Any], head_weights: Optional[Sequence[float]] = None):
        if not heads:
            raise ValueError(f"Must specify heads. Given: {heads}")
        if head_weights and len(head_weights) != len(heads):
            raise ValueError(f"heads and head_weights must have the same size. Given len(heads): {len(heads)}. "
                             f"Given len(head_weights): {len(head_weights)}.")
        for head in heads:
            if not getattr(head, "name", None):
                raise ValueError(f"All given heads must have name specified. Given: {head}")
        self._heads = tuple(heads)
        self._head_weights = tuple(head_weights) if head_weights else ()
        self.logits_dimension = sum(int(h.logits_dimension) for h in heads)

    name = property(lambda self: "_".join(h.name for h in self._heads))
    heads = property(lambda self: self._heads)

    def _split_logits(self, logits: Any) -> Dict[str, Any]:
        """The logits by head name: a dict as given, or a tensor split along its last axis."""
        if isinstance(logits, dict):
            missing = [h.name for h in self._heads if h.name not in logits]
            if missing:
                raise ValueError(f"logits has no entries for the heads {missing}. Given keys: {sorted(logits)}")
            return dict(logits)
        t = _g.convert_to_tensor(logits)
        with _g.name_scope("split_logits"):
            parts = _a.split(t, [int(h.logits_dimension) for h in self._heads], axis=-1)
        return {h.name: p for h, p in zip(self._heads, parts)}

    def _merge_losses(self, losses: List[Any]) -> Any:
        with _g.name_scope("merge_losses"):
            if self._head_weights:
                losses = [_m.multiply(loss, float(w)) for loss, w in zip(losses, self._head_weights)]
            return _m.add_n(losses)

    def _check_labels(self, labels: Any) -> Dict[str, Any]:
        if not isinstance(labels, dict):
            raise ValueError(f"labels must be a dict. Given: {labels}")
        missing = [h.name for h in self._heads if h.name not in labels]
        if missing:
            raise ValueError(f"labels has no entries for the heads {missing}. Given keys: {sorted(labels)}")
        return labels

    def create_loss(self, features: Dict[str, Any], mode: str, logits: Any, labels: Any) -> LossSpec:
        """LossSpec of the weighted sum, with the heads' unreduced losses, weights and labels by name."""
        logits_by = self._split_logits(logits)
        labels = self._check_labels(labels)
        specs = {h.name: h.create_loss(features, mode, logits_by[h.name], labels[h.name]) for h in self._heads}
        merged = self._merge_losses([specs[h.name].training_loss for h in self._heads])
        return LossSpec(merged, {k: s.unreduced_loss for k, s in specs.items()},
                        {k: s.weights for k, s in specs.items()}, {k: s.processed_labels for k, s in specs.items()})

    def _merged_predictions(self, specs: Sequence[EstimatorSpec]) -> Dict[Any, Any]:
        return {(h.name, k): v for h, s in zip(self._heads, specs) for k, v in s.predictions.items()}

    def _merged_export_outputs(self, specs: Sequence[EstimatorSpec]) -> dict:
        """TF1's: each head's outputs as `<head>` (its default) or `<head>/<key>`, the first head's
        default as serving_default, and one predict output of every `<head>/<prediction>`."""
        outputs: dict = {}
        predict: dict = {}
        for h, s in zip(self._heads, specs):
            for k, v in (s.export_outputs or {}).items():
                outputs[h.name if k == DEFAULT_SERVING_KEY else f"{h.name}/{k}"] = v
                if k == _PREDICT_KEY and isinstance(v, PredictOutput):
                    predict.update({f"{h.name}/{pk}": pv for pk, pv in v.outputs.items()})
        outputs[_PREDICT_KEY] = PredictOutput(predict)
        outputs[DEFAULT_SERVING_KEY] = specs[0].export_outputs[DEFAULT_SERVING_KEY]
        return outputs

    def create_estimator_spec(self, features: Dict[str, Any], mode: str, logits: Any, labels: Any = None,
                              optimizer: Any = None, train_op_fn: Optional[Callable] = None,
                              regularization_losses: Optional[Sequence[Any]] = None) -> EstimatorSpec:
        logits_by = self._split_logits(logits)
        if mode == ModeKeys.PREDICT:
            specs = [h.create_estimator_spec(features, mode, logits_by[h.name]) for h in self._heads]
            return EstimatorSpec(mode, predictions=self._merged_predictions(specs),
                                 export_outputs=self._merged_export_outputs(specs))
        labels = self._check_labels(labels)
        kwargs = {} if mode == ModeKeys.EVAL else {"train_op_fn": lambda loss: no_op()}  # the heads train nothing
        specs = [h.create_estimator_spec(features, mode, logits_by[h.name], labels[h.name], **kwargs)
                 for h in self._heads]
        loss = self._merge_losses([s.loss for s in specs])
        reg = _m.add_n(list(regularization_losses)) if regularization_losses else None
        if reg is not None:
            loss = _m.add(loss, reg)
        predictions = self._merged_predictions(specs)
        if mode == ModeKeys.EVAL:
            ops: dict = {}
            for s in specs:
                ops.update(s.eval_metric_ops or {})
            if reg is not None:
                with _g.name_scope("metrics"):
                    ops["regularization_loss"] = _metrics.mean(reg, name="regularization_loss")
            return EstimatorSpec(mode, predictions=predictions, loss=loss, eval_metric_ops=ops)
        train_op = make_train_op(loss, train_op_fn, optimizer)
        _summary.scalar("loss", loss)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)


def multi_head(heads: Sequence[Any], head_weights: Optional[Sequence[float]] = None) -> MultiHead:
    """tf.contrib.estimator.multi_head."""
    return MultiHead(heads, head_weights)
