"""What the slim.nets definitions share: the slim layers and scopes they are written with, and
the few core ops between layers (one import site, so each net reads like the TF1 program it is)."""
from __future__ import annotations

from types import SimpleNamespace

from ...graph import graph as _g
from ...graph import initializers as _init
from ...graph.graph_keys import GraphKeys
from ...graph.ops import array_ops, math_ops, nn_extra_ops, nn_ops, slicing_ops
from ...graph.ops.constant_op import identity
from ...graph.variable_scope import variable_scope
from .. import framework as _framework
from .. import layers as _layers

# the slim names the nets use (layers are arg_scope-able, as slim's)
slim = SimpleNamespace(
    arg_scope=_framework.arg_scope, add_arg_scope=_framework.add_arg_scope,
    conv2d=_layers.conv2d, separable_conv2d=_layers.separable_conv2d, fully_connected=_layers.fully_connected,
    max_pool2d=_layers.max_pool2d, avg_pool2d=_layers.avg_pool2d, dropout=_layers.dropout,
    batch_norm=_layers.batch_norm, flatten=_layers.flatten, repeat=_layers.repeat, softmax=_layers.softmax,
    l2_regularizer=_layers.l2_regularizer, variance_scaling_initializer=_layers.variance_scaling_initializer,
    xavier_initializer=_layers.xavier_initializer, utils=_layers.utils)

# the core ops between layers
ops = SimpleNamespace(
    concat=array_ops.concat, squeeze=array_ops.squeeze, shape=array_ops.shape, reduce_mean=math_ops.reduce_mean,
    pad=slicing_ops.pad, identity=identity, variable_scope=variable_scope, name_scope=_g.name_scope,
    get_default_graph=_g.get_default_graph, GraphKeys=GraphKeys,
    relu=nn_ops.relu, relu6=nn_extra_ops.relu6, softmax=nn_ops.softmax,
    truncated_normal_initializer=_init.truncated_normal_initializer, zeros_initializer=_init.zeros_initializer,
    constant_initializer=_init.constant_initializer)


def end_points_of(collection: str) -> dict:
    """The end points a net collected in `collection` ({alias: tensor}, in the order added)."""
    return slim.utils.convert_collection_to_dict(collection)
