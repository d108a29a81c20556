"""TF1's names around queues, I/O, training utilities and saved-model constants that
`collflow.compat.v1` gathers from collflow's modules: `tf.queue`, `tf.manip`,
`tf.PriorityQueue`, `tf.io.serialize_tensor`/`parse_tensor`/`match_filenames_once`/
`write_graph` and the tf.io queue aliases, `tf.train.queue_runner`, `tf.train.warm_start`,
`tf.train.VocabInfo`, `tf.train.AdagradDAOptimizer`, `tf.train.ProfilerHook`,
`tf.train.update_checkpoint_state`/`generate_checkpoint_state_proto`,
`tf.summary.tensor_summary` (and SummaryDescription, TaggedRunMetadata,
get_summary_description), `tf.saved_model.constants` and TF's saved-model constant names,
`tf.bitcast`, `tf.batch_scatter_update`, `tf.create_partitioned_variables`,
`tf.extract_volume_patches`, `tf.decode_json_example` (also tf.io).

Importing this module adds the sub-namespace members (tf.io, tf.train, tf.summary,
tf.saved_model); `__all__` lists the top-level names v1 takes from it.
"""
from __future__ import annotations

from typing import Any

import collflow as _cf
from collflow import saved_model as _saved_model
from collflow import summary as _summary
from collflow import train as _train
from collflow.compat import namespaces as _ns
from collflow.data import pipeline as _pipeline
from collflow.estimator.warm_start_api import VocabInfo, warm_start
from collflow.graph.ops import data_flow_ops as _dfo
from collflow.graph.ops.bitcast_ops import batch_scatter_update, bitcast
from collflow.graph.ops.file_ops import match_filenames_once
from collflow.graph.ops.json_example_ops import decode_json_example
from collflow.graph.ops.priority_queue_ops import PriorityQueue
from collflow.graph.ops.tensor_serialize_ops import parse_tensor, serialize_tensor
from collflow.graph.ops.volume_patches_ops import extract_volume_patches
from collflow.graph.partitioned_variables import create_partitioned_variables
from collflow.summary.proto import write_graph
from collflow.summary.tensor_summary import (SummaryDescription, TaggedRunMetadata, get_summary_description,
                                             tensor_summary)
from collflow.train.adagrad_da import AdagradDAOptimizer
from collflow.train.checkpoint_state import generate_checkpoint_state_proto, update_checkpoint_state
from collflow.train.profiler_hook import ProfilerHook

__all__ = ["queue", "manip", "PriorityQueue", "serialize_tensor", "parse_tensor", "bitcast", "batch_scatter_update",
           "create_partitioned_variables", "extract_volume_patches", "decode_json_example"]

_Namespace: Any = _ns._Namespace

queue = _Namespace("queue", "tf.queue: the queue classes.", {
    "FIFOQueue": _dfo.FIFOQueue, "PaddingFIFOQueue": _dfo.PaddingFIFOQueue, "PriorityQueue": PriorityQueue,
    "QueueBase": _dfo.QueueBase, "RandomShuffleQueue": _dfo.RandomShuffleQueue})

manip = _Namespace("manip", "tf.manip: TF 1.15's aliases of the array manipulation ops.", {
    n: getattr(_cf, n) for n in ("batch_to_space_nd", "gather_nd", "reshape", "roll", "scatter_nd",
                                 "space_to_batch_nd", "tile")})
manip.__dict__["reverse"] = _cf.reverse_v2  # tf.manip.reverse takes an axis list, as tf.reverse_v2

# tf.io: TF's queue aliases (TF has no tf.io.FIFOQueue) and the I/O helpers
_ns.io.__dict__.update({
    "PaddingFIFOQueue": _dfo.PaddingFIFOQueue, "PriorityQueue": PriorityQueue, "QueueBase": _dfo.QueueBase,
    "RandomShuffleQueue": _dfo.RandomShuffleQueue, "serialize_tensor": serialize_tensor,
    "parse_tensor": parse_tensor, "match_filenames_once": match_filenames_once, "write_graph": write_graph,
    "decode_json_example": decode_json_example})

# tf.train: the queue_runner module's names, warm starting, TF's checkpoint state file
_train.queue_runner = _Namespace("train.queue_runner", "tf.train.queue_runner: the queue-runner threads.", {
    n: getattr(_pipeline, n) for n in ("QueueRunner", "add_queue_runner", "start_queue_runners")})
_train.VocabInfo = VocabInfo
_train.warm_start = warm_start
_train.update_checkpoint_state = update_checkpoint_state
_train.generate_checkpoint_state_proto = generate_checkpoint_state_proto
_train.AdagradDAOptimizer = AdagradDAOptimizer
_train.ProfilerHook = ProfilerHook

_summary.tensor_summary = tensor_summary  # tf.summary.tensor_summary
_summary.SummaryDescription = SummaryDescription
_summary.TaggedRunMetadata = TaggedRunMetadata
_summary.get_summary_description = get_summary_description

# tf.saved_model: TF's constants with TF's values (collflow's own files keep their own names:
# MODEL_FILENAME is saved_model.cfmodel; SAVED_MODEL_FILENAME_PB names TF's file)
_CONSTANTS = {
    "ASSETS_DIRECTORY": "assets", "ASSETS_KEY": "saved_model_assets", "DEBUG_DIRECTORY": "debug",
    "DEBUG_INFO_FILENAME_PB": "saved_model_debug_info.pb", "LEGACY_INIT_OP_KEY": "legacy_init_op",
    "MAIN_OP_KEY": "saved_model_main_op", "SAVED_MODEL_FILENAME_PB": "saved_model.pb",
    "SAVED_MODEL_FILENAME_PBTXT": "saved_model.pbtxt", "SAVED_MODEL_SCHEMA_VERSION": 1,
    "VARIABLES_DIRECTORY": "variables", "VARIABLES_FILENAME": "variables"}
_SIGNATURE = {"CLASSIFY_INPUTS": "inputs", "CLASSIFY_OUTPUT_CLASSES": "classes", "CLASSIFY_OUTPUT_SCORES": "scores",
              "REGRESS_INPUTS": "inputs", "REGRESS_OUTPUTS": "outputs"}
for _k, _v in {**_CONSTANTS, **_SIGNATURE}.items():
    if not hasattr(_saved_model, _k):
        setattr(_saved_model, _k, _v)
if not hasattr(_saved_model, "constants"):
    _saved_model.constants = _Namespace("saved_model.constants", "tf.saved_model.constants: TF's file and key names.",
                                        dict(_CONSTANTS))
