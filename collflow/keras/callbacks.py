"""tf.keras.callbacks (TF1): Callback, History, EarlyStopping, LambdaCallback, ModelCheckpoint
(weights only)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np

__all__ = ["Callback", "History", "EarlyStopping", "LambdaCallback", "ModelCheckpoint", "CallbackList"]


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


class CallbackList:
    """Calls every callback's hook in order."""

    def __init__(self, callbacks: List[Callback]):
        self.callbacks = callbacks

    def __getattr__(self, hook: str) -> Callable:
        def call(*args: Any) -> None:
            for c in self.callbacks:
                getattr(c, hook)(*args)
        return call
