"""tf.saved_model (TF1): a model directory that serves without the code that built it.

`export_dir/saved_model.cfmodel` holds one meta graph per tag set (train/meta_graph.py's
format: ops, collections, Saver, signatures), `export_dir/variables/variables.h5` the
variables (a Saver checkpoint).  SavedModelBuilder assembles the directory beside the target
and renames it into place in save(), so a reader sees a whole SavedModel or none.  The files
are collflow's own: TensorFlow cannot load them, nor collflow TensorFlow's.  Asset files are
not copied (the graph keeps the paths they had).
"""
from __future__ import annotations

import os
import shutil
from typing import Any, Dict, List, Mapping, Optional

from ..errors import DataLossError, NotFoundError
from ..graph import graph as _g
from ..graph.ops.constant_op import group
from ..graph.variables import local_variables_initializer, tables_initializer
from ..platform.atomic_files import atomic_write_bytes, fsync_directory
from ..train.meta_graph import MetaGraphDef, export_meta_graph, frame, import_meta_graph, unframe
from ..train.saver import Saver
from ..train.signature_def import (SignatureDef, TensorInfo, build_signature_def, build_tensor_info,
                                   classification_signature_def, get_tensor_from_tensor_info, is_valid_signature,
                                   predict_signature_def, regression_signature_def, signature_constants,
                                   tag_constants)

__all__ = ["SavedModelBuilder", "Builder", "load", "simple_save", "contains_saved_model",
           "maybe_saved_model_directory", "builder", "loader", "utils", "signature_def_utils", "signature_constants",
           "tag_constants", "main_op", "TensorInfo", "SignatureDef", "build_tensor_info", "build_signature_def",
           "predict_signature_def", "classification_signature_def", "regression_signature_def",
           "get_tensor_from_tensor_info", "is_valid_signature"]

MODEL_FILENAME = "saved_model.cfmodel"
FORMAT = "collflow.SavedModel"
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"
ASSETS_DIRECTORY = "assets"
MAIN_OP_KEY = "saved_model_main_op"
LEGACY_INIT_OP_KEY = "legacy_init_op"
TRAIN_OP_KEY = "saved_model_train_op"

SERVING, TRAINING, GPU, TPU = tag_constants.SERVING, tag_constants.TRAINING, tag_constants.GPU, tag_constants.TPU
DEFAULT_SERVING_SIGNATURE_DEF_KEY = signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY
PREDICT_METHOD_NAME = signature_constants.PREDICT_METHOD_NAME
PREDICT_INPUTS, PREDICT_OUTPUTS = signature_constants.PREDICT_INPUTS, signature_constants.PREDICT_OUTPUTS
CLASSIFY_METHOD_NAME = signature_constants.CLASSIFY_METHOD_NAME
REGRESS_METHOD_NAME = signature_constants.REGRESS_METHOD_NAME


def _tags(tags: Any) -> List[str]:
    if isinstance(tags, str):
        return [tags]
    return [str(t) for t in (tags or [])]


def contains_saved_model(export_dir: str) -> bool:
    """Whether `export_dir` holds a SavedModel collflow wrote (tf.saved_model.contains_saved_model)."""
    return os.path.isfile(os.path.join(str(export_dir), MODEL_FILENAME))


maybe_saved_model_directory = contains_saved_model


class SavedModelBuilder:
    """Builds a SavedModel: the variables once, then a meta graph per tag set (TF1's
    tf.saved_model.builder.SavedModelBuilder).  Nothing appears at export_dir before save()."""

    def __init__(self, export_dir: str):
        self._export_dir = os.path.abspath(str(export_dir))
        if os.path.exists(self._export_dir) and (not os.path.isdir(self._export_dir)
                                                 or os.listdir(self._export_dir)):
            raise AssertionError(
                f"Export directory already exists, and isn't empty. Please choose a different export directory, "
                f"or delete all the contents of the specified directory: {self._export_dir}")
        self._staging = f"{self._export_dir}.{os.getpid()}-{id(self)}.tmp"
        self._meta_graphs: List[Dict[str, Any]] = []
        self._has_variables = False
        self._graph: Optional[_g.Graph] = None

    def _check_tags(self, tags: List[str]) -> None:
        if any(sorted(m["meta_info_def"]["tags"]) == sorted(tags) for m in self._meta_graphs):
            raise AssertionError(f"a meta graph with tags {tags} was already added to this SavedModel")

    def _add(self, sess_graph: _g.Graph, tags: Any, signature_def_map: Optional[Mapping[str, Any]],
             main_op: Any, legacy_init_op: Any, train_op: Any, saver: Optional[Saver], clear_devices: bool) -> None:
        tags_l = _tags(tags)
        self._check_tags(tags_l)
        sigs = dict(signature_def_map or {})
        for k, sig in sigs.items():
            if not isinstance(sig, SignatureDef):
                raise TypeError(f"signature_def_map[{k!r}] must be a SignatureDef, got {type(sig).__name__}")
            for info in list(sig.inputs.values()) + list(sig.outputs.values()):
                sess_graph.get_tensor_by_name(info.name)  # a KeyError names a tensor the graph lacks
        # the ops to run after loading go in collections of the graph for the export only
        extra = [(MAIN_OP_KEY, main_op), (LEGACY_INIT_OP_KEY, legacy_init_op), (TRAIN_OP_KEY, train_op)]
        saved = {k: list(sess_graph.get_collection_ref(k)) for k, _ in extra}
        try:
            for k, op in extra:
                if op is not None:
                    ref = sess_graph.get_collection_ref(k)
                    del ref[:]
                    ref.append(op if isinstance(op, _g.Operation) else _g.convert_to_tensor(op).op)
            if saver is None and self._has_variables:
                with sess_graph.as_default():
                    saver = Saver(allow_empty=True)
            saver_def = saver._saver_def() if saver is not None else None
            m = export_meta_graph(graph=sess_graph, saver_def=saver_def, clear_devices=clear_devices,
                                  meta_info_def={"tags": tags_l}, signature_def=sigs)
        finally:
            for k, items in saved.items():
                ref = sess_graph.get_collection_ref(k)
                ref[:] = items
        self._meta_graphs.append(m.to_data())

    def add_meta_graph_and_variables(self, sess: Any, tags: Any, signature_def_map: Optional[Mapping[str, Any]] = None,
                                     assets_collection: Any = None, legacy_init_op: Any = None,
                                     clear_devices: bool = False, main_op: Any = None, strip_default_attrs: bool = False,
                                     saver: Optional[Saver] = None, train_op: Any = None) -> None:
        """Saves the session's variables and the first meta graph, tagged `tags`."""
        if self._meta_graphs:
            raise AssertionError("Graph state including variables and assets has already been saved. Please invoke "
                                 "`add_meta_graph()` instead.")
        if saver is None:
            with sess.graph.as_default():
                saver = Saver(allow_empty=True)
        self._graph = sess.graph
        os.makedirs(os.path.join(self._staging, VARIABLES_DIRECTORY), exist_ok=True)
        if saver.var_list:
            saver.save(sess, os.path.join(self._staging, VARIABLES_DIRECTORY, VARIABLES_FILENAME),
                       write_meta_graph=False, write_state=False)
            self._has_variables = True
        self._add(sess.graph, tags, signature_def_map, main_op, legacy_init_op, train_op, saver, clear_devices)

    def add_meta_graph(self, tags: Any, signature_def_map: Optional[Mapping[str, Any]] = None,
                       assets_collection: Any = None, legacy_init_op: Any = None, clear_devices: bool = False,
                       main_op: Any = None, strip_default_attrs: bool = False, saver: Optional[Saver] = None,
                       train_op: Any = None) -> None:
        """Adds another meta graph (of the default graph) over the variables already saved."""
        if not self._meta_graphs:
            raise AssertionError("Graph state including variables and assets has not been saved yet. Please invoke "
                                 "`add_meta_graph_and_variables()` first.")
        self._add(_g.get_default_graph(), tags, signature_def_map, main_op, legacy_init_op, train_op, saver,
                  clear_devices)

    def save(self, as_text: bool = False) -> str:
        """Writes the SavedModel and moves it to export_dir; returns export_dir."""
        if not self._meta_graphs:
            raise AssertionError("nothing to save: call add_meta_graph_and_variables() first")
        path = os.path.join(self._staging, MODEL_FILENAME)
        atomic_write_bytes(path, frame({"meta_graphs": self._meta_graphs}, FORMAT))
        if os.path.isdir(self._export_dir):
            os.rmdir(self._export_dir)  # empty (checked at construction)
        os.makedirs(os.path.dirname(self._export_dir), exist_ok=True)
        os.replace(self._staging, self._export_dir)
        fsync_directory(os.path.dirname(self._export_dir))
        return self._export_dir

    def __del__(self) -> None:
        staging = getattr(self, "_staging", None)
        if staging and os.path.isdir(staging):
            shutil.rmtree(staging, ignore_errors=True)


Builder = SavedModelBuilder


def _read(export_dir: str) -> List[MetaGraphDef]:
    path = os.path.join(str(export_dir), MODEL_FILENAME)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        hint = (" (it holds TensorFlow's saved_model.pb, which collflow does not read)"
                if os.path.isfile(os.path.join(str(export_dir), "saved_model.pb")) else "")
        raise NotFoundError(f"SavedModel file does not exist at: {export_dir}/{{{MODEL_FILENAME}}}{hint}") from None
    doc = unframe(data, FORMAT, f"SavedModel {path!r}")
    if not isinstance(doc, dict) or not isinstance(doc.get("meta_graphs"), list):
        raise DataLossError(f"SavedModel {path!r} is damaged: it has no meta graphs")
    return [MetaGraphDef(m) for m in doc["meta_graphs"]]


def load(sess: Any, tags: Any, export_dir: str, import_scope: Optional[str] = None, **saver_kwargs: Any) -> MetaGraphDef:
    """Loads the meta graph tagged `tags` into sess's graph, restores the variables, runs its
    main op (or legacy init op), and returns the MetaGraphDef (TF1's tf.saved_model.loader.load)."""
    tags_l = _tags(tags)
    metas = _read(export_dir)
    meta = next((m for m in metas if sorted(m.meta_info_def.get("tags", [])) == sorted(tags_l)), None)
    if meta is None:
        have = [m.meta_info_def.get("tags", []) for m in metas]
        raise RuntimeError(f"MetaGraphDef associated with tags {tags_l} could not be found in SavedModel. To inspect "
                           f"available tag-sets in the SavedModel, please use the SavedModel CLI: `saved_model_cli`. "
                           f"available_tags: {have}")
    with sess.graph.as_default():
        saver = import_meta_graph(meta, import_scope=import_scope, **saver_kwargs)
        if saver is not None:
            saver.restore(sess, os.path.join(str(export_dir), VARIABLES_DIRECTORY, VARIABLES_FILENAME))
        g = sess.graph
        scope = (import_scope.rstrip("/") + "/") if import_scope else ""
        for key in (MAIN_OP_KEY, LEGACY_INIT_OP_KEY):
            ops = [o for o in g.get_collection(key) if o.name.startswith(scope)]
            if ops:
                sess.run(ops[-1])
                break
    return meta


class _Module:
    """A TF1 sub-module of tf.saved_model (builder, loader, utils, ...)."""

    def __init__(self, name: str, **members: Any):
        self.__dict__.update(members)
        self._name = name

    def __repr__(self) -> str:
        return f"<collflow namespace tf.saved_model.{self._name}>"


def _main_op() -> _g.Operation:
    """tf.saved_model.main_op.main_op(): initializes the local variables and the tables."""
    return group(local_variables_initializer(), tables_initializer(), name="main_op")


def simple_save(session: Any, export_dir: str, inputs: Mapping[str, Any], outputs: Mapping[str, Any],
                legacy_init_op: Any = None) -> None:
    """A SavedModel of the session's graph for serving: tag "serve", one predict signature
    "serving_default" of `inputs` and `outputs` (TF1's tf.saved_model.simple_save)."""
    b = SavedModelBuilder(export_dir)
    b.add_meta_graph_and_variables(
        session, [SERVING], signature_def_map={DEFAULT_SERVING_SIGNATURE_DEF_KEY: predict_signature_def(inputs, outputs)},
        main_op=legacy_init_op, clear_devices=True)
    b.save()


builder = _Module("builder", SavedModelBuilder=SavedModelBuilder)
loader = _Module("loader", load=load, maybe_saved_model_directory=maybe_saved_model_directory)
utils = _Module("utils", build_tensor_info=build_tensor_info, get_tensor_from_tensor_info=get_tensor_from_tensor_info)
signature_def_utils = _Module("signature_def_utils", build_signature_def=build_signature_def,
                              predict_signature_def=predict_signature_def,
                              classification_signature_def=classification_signature_def,
                              regression_signature_def=regression_signature_def, is_valid_signature=is_valid_signature)
main_op = _Module("main_op", main_op=_main_op, main_op_with_restore=lambda restore_op_name: _main_op())

