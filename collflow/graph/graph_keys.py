"""TensorFlow's standard collection names (`tf.GraphKeys`), and collflow's own."""
from __future__ import annotations

__all__ = ["GraphKeys"]


class GraphKeys:
    """Standard collection names (TensorFlow's)."""
    GLOBAL_VARIABLES = "variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    LOCAL_VARIABLES = "local_variables"
    UPDATE_OPS = "update_ops"
    SUMMARIES = "summaries"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    QUEUE_RUNNERS = "queue_runners"
    GLOBAL_STEP = "global_step"
    INIT_OP = "init_op"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    MODEL_VARIABLES = "model_variables"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    METRIC_VARIABLES = "metric_variables"
    TABLE_INITIALIZERS = "table_initializer"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    # the rest of TF1's keys: programs and tf.train helpers store into them by these names
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    SAVERS = "savers"
    ASSET_FILEPATHS = "asset_filepaths"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"
    # collflow: (broadcast op, training step ops) records: a Session runs the broadcast of rank
    # 0's variables before its first run of such a step, unless a broadcast already ran
    REPLICA_SYNC = "replica_sync"
