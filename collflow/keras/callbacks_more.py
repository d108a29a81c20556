"""More of TF 1.15's tf.keras.callbacks: BaseLogger (epoch averages of the batch logs),
ProgbarLogger (the progress bar fit's verbose=1/2 draws) and RemoteMonitor (each epoch's logs
POSTed to a server with urllib; an unreachable server is a logged warning)."""
from __future__ import annotations

import json
from typing import Any, Dict, Iterable, Optional

import numpy as np

from ..platform import tf_logging as logging
from .callbacks import Callback
from .generic_utils import Progbar

__all__ = ["BaseLogger", "ProgbarLogger", "RemoteMonitor"]


class BaseLogger(Callback):
    """At each epoch's end, sets the logs of params["metrics"] to the sample-weighted means of
    their batch values (the stateful_metrics to their last batch value)."""

    def __init__(self, stateful_metrics: Optional[Iterable[str]] = None):
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or ())

    def on_epoch_begin(self, epoch: int, logs: Optional[dict] = None) -> None:
        self.seen = 0
        self.totals: Dict[str, Any] = {}

    def on_batch_end(self, batch: int, logs: Optional[dict] = None) -> None:
        logs = logs or {}
        size = logs.get("size", 0)
        steps = logs.get("num_steps", 1)
        self.seen += size * steps
        for k, v in logs.items():
            if k in self.stateful_metrics:
                self.totals[k] = v
            else:
                self.totals[k] = self.totals.get(k, 0) + v * size

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        if logs is None:
            return
        for k in self.params.get("metrics", []):
            if k in self.totals:
                logs[k] = self.totals[k] if k in self.stateful_metrics else self.totals[k] / self.seen


class ProgbarLogger(Callback):
    """Prints "Epoch i/n" (when there are several epochs) and a Progbar per epoch, counted in
    samples (count_mode="samples") or steps, with params["metrics"]'s values."""

    def __init__(self, count_mode: str = "samples", stateful_metrics: Optional[Iterable[str]] = None):
        super().__init__()
        if count_mode not in ("samples", "steps"):
            raise ValueError("Unknown `count_mode`: " + str(count_mode))
        self.use_steps = count_mode == "steps"
        self.stateful_metrics = set(stateful_metrics or ())

    def on_train_begin(self, logs: Optional[dict] = None) -> None:
        self.verbose = self.params.get("verbose", 1)
        self.epochs = self.params.get("epochs", 1)

    def on_epoch_begin(self, epoch: int, logs: Optional[dict] = None) -> None:
        self.seen = 0
        self.target = self.params.get("steps") if self.use_steps else self.params.get("samples")
        if self.verbose and self.epochs > 1:
            print("Epoch %d/%d" % (epoch + 1, self.epochs))
        self.progbar: Optional[Progbar] = None

    def _bar(self) -> Progbar:
        if self.progbar is None:
            self.progbar = Progbar(self.target, verbose=self.verbose, stateful_metrics=self.stateful_metrics,
                                   unit_name="step" if self.use_steps else "sample")
        return self.progbar

    def _values(self, logs: dict) -> list:
        return [(k, logs[k]) for k in self.params.get("metrics", []) if k in logs]

    def on_batch_end(self, batch: int, logs: Optional[dict] = None) -> None:
        logs = logs or {}
        steps = logs.get("num_steps", 1)
        self.seen += steps if self.use_steps else logs.get("size", 0) * steps
        bar = self._bar()
        if self.verbose and (self.target is None or self.seen < self.target):
            bar.update(self.seen, self._values(logs))

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        bar = self._bar()
        if self.verbose:
            if self.target is None:  # the total is known now: the bar ends here
                bar.target = self.target = self.seen
            bar.update(self.seen, self._values(logs or {}))


class RemoteMonitor(Callback):
    """POSTs {"epoch": epoch, **logs} to root + path at each epoch's end: as form field `field`
    holding the JSON text, or (send_as_json) as a JSON body."""

    def __init__(self, root: str = "http://localhost:9000", path: str = "/publish/epoch/end/", field: str = "data",
                 headers: Optional[Dict[str, str]] = None, send_as_json: bool = False):
        super().__init__()
        self.root, self.path, self.field = root, path, field
        self.headers, self.send_as_json = headers, send_as_json

    def on_epoch_end(self, epoch: int, logs: Optional[dict] = None) -> None:
        from urllib.error import URLError
        from urllib.parse import urlencode
        from urllib.request import Request, urlopen
        send: Dict[str, Any] = {"epoch": epoch}
        for k, v in (logs or {}).items():
            send[k] = v.item() if isinstance(v, (np.ndarray, np.generic)) else v
        headers = dict(self.headers or {})
        if self.send_as_json:
            body = json.dumps(send).encode("utf-8")
            headers.setdefault("Content-Type", "application/json")
        else:
            body = urlencode({self.field: json.dumps(send)}).encode("utf-8")
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        try:
            with urlopen(Request(self.root + self.path, data=body, headers=headers, method="POST"), timeout=10):
                pass
        except (URLError, OSError, ValueError):
            logging.warning("Warning: could not reach RemoteMonitor root server at " + str(self.root))
