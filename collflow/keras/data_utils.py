"""tf.keras.utils' data helpers (TF 1.15): get_file (download to Keras's cache, hash check,
extraction), the enqueuers (SequenceEnqueuer, OrderedEnqueuer, GeneratorEnqueuer; worker
threads, never processes) and plot_model / model_to_dot (pydot and GraphViz)."""
from __future__ import annotations

import hashlib
import os
import queue
import shutil
import sys
import tarfile
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator, List, Optional

import numpy as np

from .generic_utils import Progbar

__all__ = ["get_file", "validate_file", "SequenceEnqueuer", "OrderedEnqueuer", "GeneratorEnqueuer", "plot_model",
           "model_to_dot"]


# -- get_file ----------------------------------------------------------------------------------

def _hash_file(fpath: str, algorithm: str = "sha256", chunk_size: int = 65535) -> str:
    hasher = hashlib.sha256() if algorithm in ("sha256", "auto") else hashlib.md5()
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def validate_file(fpath: str, file_hash: str, algorithm: str = "auto", chunk_size: int = 65535) -> bool:
    """Whether the file's hash is file_hash (sha256, or md5; "auto": sha256 for a 64-digit hash)."""
    algo = "sha256" if algorithm == "sha256" or (algorithm == "auto" and len(file_hash) == 64) else "md5"
    return str(_hash_file(fpath, algo, chunk_size)) == str(file_hash)


def _extract_archive(file_path: str, path: str = ".", archive_format: Any = "auto") -> bool:
    """Extracts a tar or zip archive into `path`; False when it is none of archive_format's."""
    if archive_format is None:
        return False
    formats = ["tar", "zip"] if archive_format == "auto" else \
        [archive_format] if isinstance(archive_format, str) else list(archive_format)
    for fmt in formats:
        opener, is_match = (tarfile.open, tarfile.is_tarfile) if fmt == "tar" else (zipfile.ZipFile, zipfile.is_zipfile)
        if not is_match(file_path):
            continue
        with opener(file_path) as archive:
            # tar's "data" filter (where Python has it) refuses members outside `path`
            kwargs = {"filter": "data"} if fmt == "tar" and hasattr(tarfile, "data_filter") else {}
            try:
                archive.extractall(path, **kwargs)
            except (tarfile.TarError, RuntimeError, KeyboardInterrupt):
                if os.path.exists(path):  # what was half extracted goes
                    if os.path.isfile(path):
                        os.remove(path)
                    else:
                        shutil.rmtree(path)
                raise
        return True
    return False


def get_file(fname: str, origin: str, untar: bool = False, md5_hash: Optional[str] = None,
             file_hash: Optional[str] = None, cache_subdir: str = "datasets", hash_algorithm: str = "auto",
             extract: bool = False, archive_format: Any = "auto", cache_dir: Optional[str] = None) -> str:
    """The path of `fname` in cache_dir/cache_subdir (default ~/.keras/datasets, /tmp/.keras when
    that is not writable), downloaded from `origin` (any URL urllib opens, file:// too) unless a
    cached copy is there and matches file_hash; untar / extract unpack it beside."""
    from urllib.error import HTTPError, URLError
    from urllib.request import urlretrieve
    if cache_dir is None:
        cache_dir = os.path.join(os.path.expanduser("~"), ".keras")
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    base = os.path.expanduser(cache_dir)
    if not os.access(base, os.W_OK):
        base = os.path.join("/tmp", ".keras")
    datadir = os.path.join(base, cache_subdir)
    os.makedirs(datadir, exist_ok=True)
    if untar:
        untar_fpath = os.path.join(datadir, fname)
        fpath = untar_fpath + ".tar.gz"
    else:
        fpath = os.path.join(datadir, fname)
    download = not os.path.exists(fpath)
    if not download and file_hash is not None and not validate_file(fpath, file_hash, hash_algorithm):
        print("A local file was found, but it seems to be incomplete or outdated because the " + hash_algorithm +
              " file hash does not match the original value of " + file_hash + " so we will re-download the data.")
        download = True
    if download:
        print("Downloading data from", origin)
        bar: List[Optional[Progbar]] = [None]

        def report(count: int, block_size: int, total_size: int) -> None:
            if bar[0] is None:  # the first call (count 0) only makes the bar, as Keras
                bar[0] = Progbar(None if total_size == -1 else total_size)
                return
            bar[0].update(min(count * block_size, total_size) if total_size > 0 else count * block_size)
        error_msg = "URL fetch failure on {}: {} -- {}"
        try:
            try:
                urlretrieve(origin, fpath, report)
            except HTTPError as e:
                raise Exception(error_msg.format(origin, e.code, e.msg))
            except URLError as e:
                raise Exception(error_msg.format(origin, e.errno, e.reason))
        except (Exception, KeyboardInterrupt):
            if os.path.exists(fpath):
                os.remove(fpath)
            raise
    if untar:
        if not os.path.exists(untar_fpath):
            _extract_archive(fpath, datadir, archive_format="tar")
        return untar_fpath
    if extract:
        _extract_archive(fpath, datadir, archive_format)
    return fpath


# -- enqueuers ---------------------------------------------------------------------------------

class SequenceEnqueuer:
    """Feeds batches from worker threads through a queue: start(workers, max_queue_size),
    get() (a generator of batches), stop()."""

    def __init__(self, sequence: Any, use_multiprocessing: bool = False):
        self.sequence = sequence
        # processes are not used: collflow's workers are threads either way
        self.use_multiprocessing = use_multiprocessing
        self.workers = 0
        self.queue: Optional[queue.Queue] = None
        self.stop_signal: Optional[threading.Event] = None
        self.run_thread: Optional[threading.Thread] = None

    def is_running(self) -> bool:
        return self.stop_signal is not None and not self.stop_signal.is_set()

    def start(self, workers: int = 1, max_queue_size: int = 10) -> None:
        self.workers = max(1, int(workers))
        self.queue = queue.Queue(max(0, int(max_queue_size)))
        self.stop_signal = threading.Event()
        self.run_thread = threading.Thread(target=self._run, daemon=True)
        self.run_thread.start()

    def _put(self, item: Any) -> bool:
        """Puts item on the queue unless stopped first (False then)."""
        while not self.stop_signal.is_set():
            try:
                self.queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def stop(self, timeout: Optional[float] = None) -> None:
        if self.stop_signal is None:
            return
        self.stop_signal.set()
        while True:  # unblock a producer waiting on a full queue
            try:
                self.queue.get_nowait()
            except queue.Empty:
                break
        if self.run_thread is not None:
            self.run_thread.join(timeout)
        self.run_thread = None

    def _run(self) -> None:
        raise NotImplementedError

    def get(self) -> Iterator[Any]:
        raise NotImplementedError


class OrderedEnqueuer(SequenceEnqueuer):
    """Loads a keras.utils.Sequence's batches with worker threads and yields them in order
    (shuffled per epoch with np.random when shuffle), epoch after epoch, calling the sequence's
    on_epoch_end between epochs."""

    def __init__(self, sequence: Any, use_multiprocessing: bool = False, shuffle: bool = False):
        super().__init__(sequence, use_multiprocessing)
        self.shuffle = shuffle

    def _run(self) -> None:
        with ThreadPoolExecutor(self.workers) as pool:
            while not self.stop_signal.is_set():
                order = list(range(len(self.sequence)))
                if self.shuffle:
                    np.random.shuffle(order)
                futures = []
                for i in order:
                    fut = pool.submit(self.sequence.__getitem__, i)
                    futures.append(fut)
                    if not self._put(fut):
                        return
                for fut in futures:  # the epoch ends when every batch of it was loaded
                    try:
                        fut.result()
                    except Exception:  # noqa: BLE001  (get() raises it)
                        pass
                if self.stop_signal.is_set():
                    return
                self.sequence.on_epoch_end()

    def get(self) -> Iterator[Any]:
        while self.is_running():
            try:
                fut = self.queue.get(timeout=0.1)
            except queue.Empty:
                continue
            try:
                item = fut.result()
            except Exception:
                self.stop()
                raise
            yield item


_DONE = object()


class GeneratorEnqueuer(SequenceEnqueuer):
    """Pulls a Python generator's items with worker threads (one at a time: the generator is
    called under a lock) into a queue; get() yields them until the generator ends."""

    def __init__(self, sequence: Any, use_multiprocessing: bool = False, random_seed: Optional[int] = None):
        super().__init__(sequence, use_multiprocessing)
        self.random_seed = random_seed
        self._lock = threading.Lock()
        self._live = 0

    def _worker(self) -> None:
        while not self.stop_signal.is_set():
            try:
                with self._lock:
                    item = next(self.sequence)
            except StopIteration:
                break
            except Exception as e:  # noqa: BLE001  (get() raises it)
                self._put(("error", e, sys.exc_info()[2]))
                return
            if not self._put(("item", item, None)):
                return
        self._put(("done", _DONE, None))

    def _run(self) -> None:
        if self.random_seed is not None:
            np.random.seed(self.random_seed)
        threads = [threading.Thread(target=self._worker, daemon=True) for _ in range(self.workers)]
        self._live = len(threads)
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def get(self) -> Iterator[Any]:
        finished = 0
        while self.is_running():
            try:
                kind, value, tb = self.queue.get(timeout=0.1)
            except queue.Empty:
                continue
            if kind == "item":
                yield value
            elif kind == "error":
                self.stop()
                raise value.with_traceback(tb)
            else:
                finished += 1
                if finished >= self._live:  # every worker saw the generator end
                    self.stop()
                    return


# -- plot_model ----------------------------------------------------------------------------------

_PYDOT_MESSAGE = "Failed to import pydot. You must install pydot and graphviz for `pydotprint` to work."


def _pydot() -> Any:
    try:
        import pydot  # noqa: F401  (an optional package)
    except ImportError:
        raise ImportError(_PYDOT_MESSAGE) from None
    try:
        pydot.Dot.create(pydot.Dot())  # GraphViz's dot must run
    except Exception:  # noqa: BLE001
        raise ImportError(_PYDOT_MESSAGE) from None
    return pydot


def model_to_dot(model: Any, show_shapes: bool = False, show_layer_names: bool = True, rankdir: str = "TB",
                 expand_nested: bool = False, dpi: int = 96, subgraph: bool = False) -> Any:
    """A pydot.Dot of the model's layers (records "name: Class", with input/output shapes when
    show_shapes) and the tensors between them; needs pydot and GraphViz."""
    pydot = _pydot()
    from .layers import history_of
    dot = pydot.Dot()
    dot.set("rankdir", rankdir)
    dot.set("concentrate", True)
    dot.set("dpi", dpi)
    dot.set_node_defaults(shape="record")
    layers = list(model.layers)
    by_output = {}
    for layer in layers:
        label = type(layer).__name__
        if show_layer_names:
            label = f"{layer.name}: {label}"
        if show_shapes:
            def shape(attr: str) -> str:
                try:
                    t = getattr(layer, attr)
                except (AttributeError, ValueError):
                    return "multiple"
                ts = t if isinstance(t, (list, tuple)) else [t]
                text = [str(tuple(x.shape.as_list())).replace("None", "?") for x in ts]
                return text[0] if len(text) == 1 else "[" + ", ".join(text) + "]"
            label = f"{label}\n|{{input:|output:}}|{{{{{shape('input')}}}|{{{shape('output')}}}}}"
        dot.add_node(pydot.Node(str(id(layer)), label=label))
        for call in layer.__dict__.get("_keras_calls", []):
            outs = call[1] if isinstance(call[1], (list, tuple)) else [call[1]]
            for o in outs:
                by_output[id(o)] = layer
        out = getattr(layer, "output", None)
        if out is not None and not isinstance(out, (list, tuple)):
            by_output.setdefault(id(out), layer)
    for layer in layers:
        for call in layer.__dict__.get("_keras_calls", []):
            ins = call[0] if isinstance(call[0], (list, tuple)) else [call[0]]
            for t in ins:
                src = by_output.get(id(t))
                if src is None and history_of(t) is not None:
                    src = history_of(t)[0]
                if src is not None and src in layers:
                    dot.add_edge(pydot.Edge(str(id(src)), str(id(layer))))
    return dot


def plot_model(model: Any, to_file: str = "model.png", show_shapes: bool = False, show_layer_names: bool = True,
               rankdir: str = "TB", expand_nested: bool = False, dpi: int = 96) -> Any:
    """Draws model_to_dot's graph to to_file (its extension names the format)."""
    dot = model_to_dot(model, show_shapes, show_layer_names, rankdir, expand_nested, dpi)
    _, ext = os.path.splitext(to_file)
    dot.write(to_file, format=ext[1:] if ext else "png")
    return None
