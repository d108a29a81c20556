"""tf.estimator's exporters (TF1): what train_and_evaluate exports after an evaluation, to
model_dir/export/<name>/<timestamp> (Estimator.export_saved_model's SavedModels)."""
from __future__ import annotations

import glob
import os
import shutil
from typing import Any, Callable, Dict, Optional

from ..platform import tf_logging as logging

__all__ = ["Exporter", "LatestExporter", "FinalExporter", "BestExporter"]


class Exporter:
    """Base: `name` and export(estimator, export_path, checkpoint_path, eval_result,
    is_the_final_export) -> the export's path (or None)."""

    @property
    def name(self) -> str:
        raise NotImplementedError

    def export(self, estimator: Any, export_path: str, checkpoint_path: str, eval_result: Dict[str, Any],
               is_the_final_export: bool) -> Optional[bytes]:
        raise NotImplementedError


class _SavedModelExporter(Exporter):
    def __init__(self, name: str, serving_input_receiver_fn: Callable[[], Any], assets_extra: Any = None,
                 as_text: bool = False):
        if not name:
            raise ValueError("`name` must not be None or empty.")
        if not callable(serving_input_receiver_fn):
            raise ValueError(f"`serving_input_receiver_fn` must be callable, given: {serving_input_receiver_fn}")
        self._name = name
        self._receiver_fn = serving_input_receiver_fn
        self._assets_extra, self._as_text = assets_extra, as_text

    @property
    def name(self) -> str:
        return self._name

    def _export(self, estimator: Any, export_path: str, checkpoint_path: str) -> bytes:
        return estimator.export_saved_model(export_path, self._receiver_fn, assets_extra=self._assets_extra,
                                            as_text=self._as_text, checkpoint_path=checkpoint_path)


def _garbage_collect(export_path: str, keep: Optional[int]) -> None:
    """Deletes all but the newest `keep` timestamped exports under export_path."""
    if keep is None:
        return
    stamps = sorted((int(os.path.basename(p)), p) for p in glob.glob(os.path.join(glob.escape(export_path), "*"))
                    if os.path.basename(p).isdigit() and os.path.isdir(p))
    for _, p in stamps[:-keep] if keep > 0 else stamps:
        shutil.rmtree(p, ignore_errors=True)


class LatestExporter(_SavedModelExporter):
    """Exports after every evaluation, keeping the newest exports_to_keep (None: all)."""

    def __init__(self, name: str, serving_input_receiver_fn: Callable[[], Any], assets_extra: Any = None,
                 as_text: bool = False, exports_to_keep: Optional[int] = 5):
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("`exports_to_keep`, if provided, must be a positive number. Got "
                             f"{exports_to_keep}")
        self._keep = exports_to_keep

    def export(self, estimator: Any, export_path: str, checkpoint_path: str, eval_result: Dict[str, Any],
               is_the_final_export: bool) -> Optional[bytes]:
        path = self._export(estimator, export_path, checkpoint_path)
        _garbage_collect(export_path, self._keep)
        return path


class FinalExporter(_SavedModelExporter):
    """Exports once, after the final evaluation."""

    def export(self, estimator: Any, export_path: str, checkpoint_path: str, eval_result: Dict[str, Any],
               is_the_final_export: bool) -> Optional[bytes]:
        if not is_the_final_export:
            return None
        logging.info("Performing the final export in the end of training.")
        return self._export(estimator, export_path, checkpoint_path)


def _loss_smaller(best_eval_result: Dict[str, Any], current_eval_result: Dict[str, Any]) -> bool:
    """TF1's default compare_fn: the current loss is below the best one."""
    key = "loss"
    if not best_eval_result or key not in best_eval_result:
        raise ValueError("best_eval_result cannot be empty or no loss is found in it.")
    if not current_eval_result or key not in current_eval_result:
        raise ValueError("current_eval_result cannot be empty or no loss is found in it.")
    return best_eval_result[key] > current_eval_result[key]


class BestExporter(_SavedModelExporter):
    """Exports when an evaluation beats the best one so far by compare_fn (default: a smaller
    loss); the best so far starts from the earlier evaluations' event files in model_dir
    (event_file_pattern), so a resumed job does not export a worse model, while a new job's
    first evaluation is exported (TF 1.15 skipped it: it read that evaluation's own events)."""

    def __init__(self, name: str = "best_exporter", serving_input_receiver_fn: Optional[Callable[[], Any]] = None,
                 event_file_pattern: str = "eval/*.tfevents.*", compare_fn: Callable[..., bool] = _loss_smaller,
                 assets_extra: Any = None, as_text: bool = False, exports_to_keep: Optional[int] = 5):
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)  # type: ignore[arg-type]
        if not callable(compare_fn):
            raise ValueError("`compare_fn` must be callable.")
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("`exports_to_keep`, if provided, must be a positive number")
        self._compare, self._pattern, self._keep = compare_fn, event_file_pattern, exports_to_keep
        self._best: Optional[Dict[str, Any]] = None
        self._model_dir: Optional[str] = None

    def _best_from_events(self, model_dir: str, current_step: Any) -> Optional[Dict[str, Any]]:
        from ..summary.writer import summary_iterator
        best = None
        for path in sorted(glob.glob(os.path.join(glob.escape(model_dir), self._pattern))):
            try:
                for event in summary_iterator(path):
                    if current_step is not None and int(getattr(event, "step", -1)) == int(current_step):
                        continue  # the evaluation being exported wrote it: not an earlier best
                    values = {v.tag: v.simple_value for v in getattr(event.summary, "value", [])
                              if getattr(v, "simple_value", None) is not None}
                    if "loss" in values and (best is None or self._compare(best, values)):
                        best = values
            except Exception as e:  # noqa: BLE001  (a damaged event file only loses its history)
                logging.warning("BestExporter: could not read %s: %s", path, e)
        return best

    def export(self, estimator: Any, export_path: str, checkpoint_path: str, eval_result: Dict[str, Any],
               is_the_final_export: bool) -> Optional[bytes]:
        if self._model_dir != estimator.model_dir:
            self._model_dir = estimator.model_dir
            self._best = self._best_from_events(estimator.model_dir, eval_result.get("global_step"))
        if self._best is None or self._compare(self._best, eval_result):
            self._best = dict(eval_result)
            path = self._export(estimator, export_path, checkpoint_path)
            _garbage_collect(export_path, self._keep)
            return path
        return None
