"""tf.contrib.predictor: a model loaded once and called like a function on dicts of arrays,
TF 1.x's way to serve an exported Estimator or SavedModel from Python.

    predict_fn = tf.contrib.predictor.from_saved_model(export_dir)
    out = predict_fn({"x": batch})                  # {output key: array}

`from_saved_model` feeds and fetches a signature's tensors (by default "serving_default" of the
"serve" meta graph); `from_estimator` builds the Estimator's PREDICT graph over a serving input
receiver and restores its latest checkpoint.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional

from .. import saved_model as _sm
from ..estimator.export import DEFAULT_SERVING_KEY, serving_model
from ..graph import graph as _g
from ..graph.variables import local_variables_initializer, tables_initializer
from ..runtime.session import Session
from ..train.saver import Saver

__all__ = ["Predictor", "from_saved_model", "from_estimator"]


class Predictor:
    """Runs `fetch_tensors` (a dict) in `session` with a dict of input arrays fed to
    `feed_tensors` by the same keys."""

    def __init__(self, session: Any, feed_tensors: Mapping[str, Any], fetch_tensors: Mapping[str, Any]):
        self._session = session
        self._feed_tensors = dict(feed_tensors)
        self._fetch_tensors = dict(fetch_tensors)

    @property
    def session(self) -> Any:
        return self._session

    @property
    def graph(self) -> _g.Graph:
        return self._session.graph

    @property
    def feed_tensors(self) -> Dict[str, Any]:
        return self._feed_tensors

    @property
    def fetch_tensors(self) -> Dict[str, Any]:
        return self._fetch_tensors

    def __call__(self, input_dict: Mapping[str, Any]) -> Dict[str, Any]:
        """The fetched outputs {key: array} for the inputs {key: value}."""
        unknown = sorted(set(input_dict) - set(self._feed_tensors))
        if unknown:
            raise ValueError(f"Unknown input key(s) {unknown}: this predictor takes {sorted(self._feed_tensors)}")
        # a None value is not fed (TF's): a placeholder_with_default keeps its default
        feed = {self._feed_tensors[k]: v for k, v in input_dict.items() if v is not None}
        return self._session.run(self._fetch_tensors, feed_dict=feed)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(inputs={sorted(self._feed_tensors)}, "
                f"outputs={sorted(self._fetch_tensors)})")


def _check_signature_arguments(signature_def_key: Optional[str], signature_def: Any,
                               input_names: Optional[Mapping[str, str]],
                               output_names: Optional[Mapping[str, str]]) -> None:
    # TF's rule: one way of naming the tensors, and input/output names only together
    if (input_names is None) != (output_names is None):
        raise ValueError("input_names and output_names must both be specified or both be unspecified.")
    given = [signature_def_key is not None, signature_def is not None, input_names is not None]
    if sum(given) > 1:
        raise ValueError("Cannot specify more than one of signature_def_key, signature_def, or "
                         "(input_names, output_names).")


def from_saved_model(export_dir: str, signature_def_key: Optional[str] = None, signature_def: Any = None,
                     input_names: Optional[Mapping[str, str]] = None,
                     output_names: Optional[Mapping[str, str]] = None, tags: Any = None,
                     graph: Optional[_g.Graph] = None, config: Any = None) -> Predictor:
    """A Predictor over a SavedModel: the meta graph of `tags` (default "serve") loaded into
    `graph` (a new one by default), fed and fetched through a signature (by key, default
    "serving_default", or given) or through explicit {key: tensor name} maps."""
    _check_signature_arguments(signature_def_key, signature_def, input_names, output_names)
    if signature_def_key is None and signature_def is None and input_names is None:
        signature_def_key = _sm.DEFAULT_SERVING_SIGNATURE_DEF_KEY
    if tags is None:
        tags = [_sm.SERVING]
    elif isinstance(tags, str):
        tags = tags.split(",")
    graph = graph if graph is not None else _g.Graph()
    session = Session(graph=graph, config=config)
    try:
        meta = _sm.load(session, tags, export_dir)
        if input_names is None:
            if signature_def is None:
                signatures = meta.signature_def
                if signature_def_key not in signatures:
                    raise ValueError(f'Got signature_def_key "{signature_def_key}". Available signatures are '
                                     f"{sorted(signatures)}.")
                signature_def = signatures[signature_def_key]
            input_names = {k: v.name for k, v in signature_def.inputs.items()}
            output_names = {k: v.name for k, v in signature_def.outputs.items()}
        feeds = {k: graph.get_tensor_by_name(v) for k, v in input_names.items()}
        fetches = {k: graph.get_tensor_by_name(v) for k, v in (output_names or {}).items()}
    except BaseException:
        session.close()  # a failed load leaves no open session behind
        raise
    return Predictor(session, feeds, fetches)


def from_estimator(estimator: Any, serving_input_receiver_fn: Callable[[], Any], output_key: Optional[str] = None,
                   graph: Optional[_g.Graph] = None, config: Any = None) -> Predictor:
    """A Predictor over an Estimator: its model_fn in PREDICT mode on the receiver's features,
    the newest checkpoint restored; fed by the receiver's tensors and fetching the export
    output `output_key` (default "serving_default"; the predictions when the model has none)."""
    checkpoint = estimator.latest_checkpoint()
    if not checkpoint:
        raise ValueError(f"Couldn't find trained model at {estimator.model_dir}.")
    graph = graph if graph is not None else _g.Graph()
    with graph.as_default():
        receiver, outputs = serving_model(estimator, serving_input_receiver_fn)
        key = output_key or DEFAULT_SERVING_KEY
        if key not in outputs:
            raise KeyError(f"output_key {key!r} is not among the model's export outputs {sorted(outputs)}")
        signature = outputs[key].as_signature_def(receiver.receiver_tensors)
        session = Session(graph=graph, config=config)
        try:
            Saver(allow_empty=True).restore(session, checkpoint)
            session.run([local_variables_initializer(), tables_initializer()])
        except BaseException:
            session.close()
            raise
    feeds = {k: graph.get_tensor_by_name(v.name) for k, v in signature.inputs.items()}
    fetches = {k: graph.get_tensor_by_name(v.name) for k, v in signature.outputs.items()}
    return Predictor(session, feeds, fetches)
