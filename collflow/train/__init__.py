"""Optimizers, learning-rate schedules and training utilities (TensorFlow 1.x `tf.train`)."""
from ..graph.ops import training_ops as _training_ops  # noqa: F401  (registers the Apply* ops)
from ..kernels import training_kernels as _training_kernels  # noqa: F401  (and their kernels)
from .optimizer import Optimizer  # noqa: F401
from .optimizers import *  # noqa: F401,F403
from .learning_rate import *  # noqa: F401,F403
from .global_step import *  # noqa: F401,F403
from .sync_replicas import *  # noqa: F401,F403
from .distributed import *  # noqa: F401,F403
from .saver import (Saver, RestoreResult, latest_checkpoint, checkpoint_exists, get_checkpoint_mtimes,  # noqa: F401
                    remove_checkpoint)
from ..summary.proto import write_graph  # noqa: F401,E402  (tf.train.write_graph)
from .meta_graph import MetaGraphDef, export_meta_graph, import_meta_graph  # noqa: F401
from . import graph_def_io as _graph_def_io  # noqa: F401,E402  (Graph.as_graph_def with attributes)
from .moving_averages import ExponentialMovingAverage  # noqa: F401
from .checkpoint_utils import (CheckpointState, get_checkpoint_state, list_variables, load_variable,  # noqa: F401
                               load_checkpoint, NewCheckpointReader, init_from_checkpoint, checkpoints_iterator)
from .checkpoint_manager import CheckpointManager, add_checkpoint_arguments, manager_from_args  # noqa: F401
from .preemption import PreemptionHandler  # noqa: F401
from .object_checkpoint import Checkpoint  # noqa: F401,E402  (TF's object-based checkpoints)
from .module import Module  # noqa: F401,E402  (tf.Module)
from ..errors import DataLossError  # noqa: F401
from . import sharded, sharded_checkpoint  # noqa: F401
from .sharded import ShardedSyncReplicasOptimizer, ShardedVariable, get_variable  # noqa: F401
from .sharded_checkpoint import ShardedSaver  # noqa: F401
from .hooks import *  # noqa: F401,F403
from .monitored_session import *  # noqa: F401,F403
from ..summary.writer import summary_iterator  # noqa: F401  (TensorFlow 1.x's tf.train.summary_iterator)
from .example import (BytesList, Example, Feature, FeatureList, FeatureLists, Features, FloatList,  # noqa: F401,E402
                      Int64List, SequenceExample)
from .cluster import ClusterDef, ClusterSpec, JobDef, Server, ServerDef  # noqa: F401,E402  (TF1's cluster API over MPI ranks)
from .device_setter import GreedyLoadBalancingStrategy, byte_size_load_fn, replica_device_setter  # noqa: F401,E402
from .loss_scale import experimental  # noqa: F401,E402  (tf.train.experimental: TF 1.14/1.15's loss scaling)
from .saver_def import SaverDef  # noqa: F401,E402  (tf.train.SaverDef)
