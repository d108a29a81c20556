"""tf.keras's IoU metrics beyond TF 1.15's MeanIoU (tf_keras 2.x names): IoU (the mean IoU of
some classes), BinaryIoU (scores thresholded to classes 0/1), OneHotIoU and OneHotMeanIoU
(one-hot labels, scores by their argmax), with ignore_class, sparse_y_true/sparse_y_pred and
axis as tf_keras has them. The confusion matrix is float32 (tf_keras's; TF 1.15's MeanIoU in
metric_confusion.py keeps float64)."""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import numpy as np

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.ops import math_ops as _m
from ..graph.ops import state_ops as _s
from ..graph.ops.slicing_ops import gather as _gather
from ..graph.ops.tally_ops import confusion_matrix as _confusion_matrix
from .metric_classes import Metric, div_no_nan

__all__ = ["IoU", "BinaryIoU", "OneHotIoU", "OneHotMeanIoU"]


class IoU(Metric):
    """The mean over target_class_ids of intersection / union (classes never seen left out)."""

    def __init__(self, num_classes: int, target_class_ids: Sequence[int], name: Optional[str] = None,
                 dtype: Any = None, ignore_class: Optional[int] = None, sparse_y_true: bool = True,
                 sparse_y_pred: bool = True, axis: int = -1):
        super().__init__(name=name, dtype=dtype)
        self.num_classes = int(num_classes)
        self.target_class_ids = list(target_class_ids)
        if max(self.target_class_ids, default=0) >= self.num_classes:
            raise ValueError(f"Target class id {max(self.target_class_ids)} is out of range, which is "
                             f"[0, {self.num_classes}).")
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis
        self.total_cm = self.add_weight("total_confusion_matrix", shape=(self.num_classes, self.num_classes),
                                        initializer="zeros")

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true, y_pred = _g.convert_to_tensor(y_true), _g.convert_to_tensor(y_pred)
        if not self.sparse_y_true:
            y_true = _m.argmax(y_true, self.axis)
        if not self.sparse_y_pred:
            y_pred = _m.argmax(y_pred, self.axis)
        y_true = _a.reshape(_m.cast(y_true, self._dtype), [-1])
        y_pred = _a.reshape(_m.cast(y_pred, self._dtype), [-1])
        w = None if sample_weight is None else _a.reshape(_m.cast(sample_weight, self._dtype) *
                                                           _a.ones_like(y_true), [-1])
        if self.ignore_class is not None:
            # ignored samples weigh 0 (their label made a valid index so the matrix takes them)
            keep = _m.not_equal(y_true, float(self.ignore_class))
            y_true = _a.where(keep, y_true, _a.zeros_like(y_true))
            kw = _m.cast(keep, self._dtype)
            w = kw if w is None else w * kw
        cm = _confusion_matrix(_m.cast(y_true, _dt.int64), _m.cast(y_pred, _dt.int64), self.num_classes,
                               weights=w, dtype=self._dtype)
        return _s.assign_add(self.total_cm, cm)

    def result(self) -> _g.Tensor:
        cm = self.total_cm
        rows = _m.reduce_sum(cm, 0)
        cols = _m.reduce_sum(cm, 1)
        tp = _m.reduce_sum(cm * _g.convert_to_tensor(np.eye(self.num_classes, dtype=self._dtype.np)), 1)
        den = rows + cols - tp
        ids = _g.convert_to_tensor(np.asarray(self.target_class_ids, np.int32))
        tp, den = _gather(tp, ids), _gather(den, ids)
        valid = _m.reduce_sum(_m.cast(_m.not_equal(den, 0.0), self._dtype))
        return div_no_nan(_m.reduce_sum(div_no_nan(tp, den)), valid)

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "num_classes": self.num_classes, "target_class_ids": self.target_class_ids,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class BinaryIoU(IoU):
    """IoU of two classes, a score >= threshold predicting class 1."""

    def __init__(self, target_class_ids: Sequence[int] = (0, 1), threshold: float = 0.5, name: Optional[str] = None,
                 dtype: Any = None):
        super().__init__(num_classes=2, target_class_ids=target_class_ids, name=name, dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_pred = _m.cast(_m.greater_equal(_m.cast(y_pred, self._dtype), self.threshold), self._dtype)
        return super().update_state(y_true, y_pred, sample_weight)

    def get_config(self) -> Dict[str, Any]:
        return {"target_class_ids": self.target_class_ids, "threshold": self.threshold, "name": self.name,
                "dtype": self.dtype}


class OneHotIoU(IoU):
    """IoU of one-hot labels and class scores (their argmax)."""

    def __init__(self, num_classes: int, target_class_ids: Sequence[int], name: Optional[str] = None,
                 dtype: Any = None, ignore_class: Optional[int] = None, sparse_y_pred: bool = False, axis: int = -1):
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> Dict[str, Any]:
        cfg = super().get_config()
        cfg.pop("sparse_y_true")
        return cfg


class OneHotMeanIoU(IoU):
    """MeanIoU of one-hot labels and class scores (their argmax)."""

    def __init__(self, num_classes: int, name: Optional[str] = None, dtype: Any = None,
                 ignore_class: Optional[int] = None, sparse_y_pred: bool = False, axis: int = -1):
        super().__init__(num_classes, list(range(num_classes)), name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> Dict[str, Any]:
        cfg = super().get_config()
        cfg.pop("sparse_y_true")
        cfg.pop("target_class_ids")
        return cfg
