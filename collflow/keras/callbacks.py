"""tf.keras.callbacks (TF1): Callback, History, EarlyStopping, LambdaCallback, ModelCheckpoint
(weights only), LearningRateScheduler, ReduceLROnPlateau, CSVLogger, TerminateOnNaN and
TensorBoard (epoch scalars)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np

__all__ = ["Callback", "History", "EarlyStopping", "LambdaCallback", "ModelCheckpoint", "CallbackList",
           "LearningRateScheduler", "ReduceLROnPlateau", "CSVLogger", "TerminateOnNaN", "TensorBoard"]


class Callback:
    """Hooks fit() calls: on_train_begin/end, on_epoch_begin/end, on_(train_)batch_begin/end."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: Dict[str, Any] = {}
        self.validation_data = None

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: Dict[str, Any]) -> None:
        self.params = params

    def on_train_begin(self, logs: Optional[dict] = None) -> None: ...
    def on_train_end(self, logs: Optional[dict] = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: Optional[dict] = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None: ...
    def on_batch_begin(self, batch: int, logs: Optional[dict] = None) -> None: ...
    def on_batch_end(self, batch: int, logs: Optional[dict] = None) -> None: ...

    def on_train_batch_begin(self, batch: int, logs: Optional[dict] = None) -> None:
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch: int, logs: Optional[dict] = None) -> None:
        self.on_batch_end(batch, logs)


class History(Callback):
    """Records each epoch's logs: `history` is {name: [value per epoch]}, `epoch` the epochs."""

    def on_train_begin(self, logs: Optional[dict] = None) -> None:
        self.epoch: List[int] = []
        self.history: Dict[str, List[float]] = {}

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


class LambdaCallback(Callback):
    """A callback from functions (on_epoch_begin(epoch, logs), on_batch_end(batch, logs), ...)."""

    def __init__(self, on_epoch_begin: Optional[Callable] = None, on_epoch_end: Optional[Callable] = None,
                 on_batch_begin: Optional[Callable] = None, on_batch_end: Optional[Callable] = None,
                 on_train_begin: Optional[Callable] = None, on_train_end: Optional[Callable] = None, **kwargs: Any):
        super().__init__()
        for name, fn in dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end, on_batch_begin=on_batch_begin,
                             on_batch_end=on_batch_end, on_train_begin=on_train_begin,
                             on_train_end=on_train_end).items():
            if fn is not None:
                setattr(self, name, fn)


class EarlyStopping(Callback):
    """Stops fit() when `monitor` has not improved by min_delta for `patience` epochs."""

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0, patience: int = 0, verbose: int = 0,
                 mode: str = "auto", baseline: Optional[float] = None, restore_best_weights: bool = False):
        super().__init__()
        self.monitor, self.patience, self.verbose, self.baseline = monitor, patience, verbose, baseline
        self.restore_best_weights = restore_best_weights
        if mode not in ("auto", "min", "max"):
            mode = "auto"
        if mode == "min" or (mode == "auto" and "acc" not in monitor):
            self.monitor_op, self.min_delta = np.less, -abs(min_delta)
        else:
            self.monitor_op, self.min_delta = np.greater, abs(min_delta)
        self.stopped_epoch = 0

    def on_train_begin(self, logs: Optional[dict] = None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best = self.baseline if self.baseline is not None else (
            np.inf if self.monitor_op is np.less else -np.inf)
        self.best_weights = None

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        current = (logs or {}).get(self.monitor)
        if current is None:
            return
        if self.monitor_op(current - self.min_delta, self.best):
            self.best = current
            self.wait = 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = epoch
                self.model.stop_training = True
                if self.restore_best_weights and self.best_weights is not None:
                    self.model.set_weights(self.best_weights)

    def on_train_end(self, logs: Optional[dict] = None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1:05d}: early stopping")


class ModelCheckpoint(Callback):
    """Saves the model's weights after each epoch (or the best by `monitor`) to filepath,
    formatted with epoch and the logs ("w.{epoch:02d}-{val_loss:.2f}.h5")."""

    def __init__(self, filepath: str, monitor: str = "val_loss", verbose: int = 0, save_best_only: bool = False,
                 save_weights_only: bool = False, mode: str = "auto", period: int = 1, save_freq: Any = "epoch"):
        super().__init__()
        if not save_weights_only:
            raise NotImplementedError("ModelCheckpoint(save_weights_only=False) saves a whole Keras model, which "
                                      "collflow does not write; pass save_weights_only=True")
        self.filepath, self.monitor, self.verbose = filepath, monitor, verbose
        self.save_best_only, self.period = save_best_only, max(1, int(period))
        self._less = mode == "min" or (mode == "auto" and "acc" not in monitor)
        self.best = np.inf if self._less else -np.inf

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        logs = logs or {}
        if (epoch + 1) % self.period:
            return
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None or not (current < self.best if self._less else current > self.best):
                return
            self.best = current
        self.model.save_weights(path, overwrite=True)


def _lr_variable(model: Any) -> Any:
    lr = getattr(model.optimizer, "lr", None)
    if lr is None:
        raise ValueError('Optimizer must have a "lr" attribute (a Keras optimizer given to compile).')
    return lr


class LearningRateScheduler(Callback):
    """Sets the learning rate at each epoch's start to schedule(epoch, lr) (or schedule(epoch))."""

    def __init__(self, schedule: Callable, verbose: int = 0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch: int, logs: Optional[dict] = None) -> None:
        from . import backend as K
        var = _lr_variable(self.model)
        try:
            lr = self.schedule(epoch, float(K.get_value(var)))
        except TypeError:  # an old-style schedule(epoch)
            lr = self.schedule(epoch)
        if not isinstance(lr, (float, int, np.floating, np.integer)):
            raise ValueError('The output of the "schedule" function should be float.')
        K.set_value(var, float(lr))
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1:05d}: LearningRateScheduler reducing learning rate to {lr}.")

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        from . import backend as K
        if logs is not None:
            logs["lr"] = float(K.get_value(_lr_variable(self.model)))


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by `factor` when `monitor` has not improved by min_delta for
    `patience` epochs (then waits `cooldown` epochs), down to min_lr."""

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10, verbose: int = 0,
                 mode: str = "auto", min_delta: float = 1e-4, cooldown: int = 0, min_lr: float = 0, **kwargs: Any):
        super().__init__()
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0.")
        self.monitor, self.factor, self.patience, self.verbose = monitor, float(factor), patience, verbose
        self.min_delta, self.cooldown, self.min_lr = min_delta, cooldown, min_lr
        self._less = mode == "min" or (mode != "max" and "acc" not in monitor)
        self._reset()

    def _reset(self) -> None:
        self.best = np.inf if self._less else -np.inf
        self.wait = 0
        self.cooldown_counter = 0

    def on_train_begin(self, logs: Optional[dict] = None) -> None:
        self._reset()

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        from . import backend as K
        logs = logs if logs is not None else {}
        var = _lr_variable(self.model)
        logs["lr"] = float(K.get_value(var))
        current = logs.get(self.monitor)
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        better = current < self.best - self.min_delta if self._less else current > self.best + self.min_delta
        if better:
            self.best = current
            self.wait = 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = float(K.get_value(var))
                if old > np.float32(self.min_lr):
                    new = max(old * self.factor, self.min_lr)
                    K.set_value(var, new)
                    if self.verbose > 0:
                        print(f"\nEpoch {epoch + 1:05d}: ReduceLROnPlateau reducing learning rate to {new}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


class CSVLogger(Callback):
    """Writes each epoch's logs as a CSV row (epoch first, the keys sorted)."""

    def __init__(self, filename: str, separator: str = ",", append: bool = False):
        super().__init__()
        self.filename, self.sep, self.append = str(filename), separator, append
        self._file: Any = None
        self._keys: Optional[List[str]] = None

    def on_train_begin(self, logs: Optional[dict] = None) -> None:
        import os
        exists = self.append and os.path.exists(self.filename) and os.path.getsize(self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w")
        self._keys = None
        self._header_done = exists

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        logs = logs or {}
        if self._keys is None:
            self._keys = sorted(logs)
            if not self._header_done:
                self._file.write(self.sep.join(["epoch"] + self._keys) + "\n")
        self._file.write(self.sep.join([str(epoch)] + [str(logs.get(k, "NA")) for k in self._keys]) + "\n")
        self._file.flush()

    def on_train_end(self, logs: Optional[dict] = None) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TerminateOnNaN(Callback):
    """Stops training when a batch's loss is NaN or infinite."""

    def on_batch_end(self, batch: int, logs: Optional[dict] = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(loss):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class TensorBoard(Callback):
    """Writes each epoch's logs as scalar summaries to log_dir (TensorBoard's event files);
    histograms, images and embeddings are not written."""

    def __init__(self, log_dir: str = "./logs", histogram_freq: int = 0, write_graph: bool = True, **kwargs: Any):
        super().__init__()
        self.log_dir, self.write_graph = str(log_dir), write_graph
        self._writer: Any = None

    def on_train_begin(self, logs: Optional[dict] = None) -> None:
        from ..summary.writer import FileWriter
        graph = self.model.outputs[0].graph if self.write_graph and self.model.outputs else None
        self._writer = FileWriter(self.log_dir, graph=graph)

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        from ..summary.proto import Summary
        values = [Summary.Value(tag=k, simple_value=float(v)) for k, v in sorted((logs or {}).items())
                  if isinstance(v, (int, float, np.floating))]
        self._writer.add_summary(Summary(value=values), epoch)
        self._writer.flush()

    def on_train_end(self, logs: Optional[dict] = None) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class CallbackList:
    """Calls every callback's hook in order."""

    def __init__(self, callbacks: List[Callback]):
        self.callbacks = callbacks

    def __getattr__(self, hook: str) -> Callable:
        def call(*args: Any) -> None:
            for c in self.callbacks:
                getattr(c, hook)(*args)
        return call
