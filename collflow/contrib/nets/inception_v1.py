"""Inception V1 (GoogLeNet, Szegedy et al. 2014, arXiv:1409.4842) as TF 1.x's
`tf.contrib.slim.nets.inception_v1`: the same variable scopes, variable names and shapes,
and end-point names, so checkpoints trained with TF-Slim load as they are.

The network is written as data: the stem and each Inception module are a table of layers
(`_Layer`), and `_build_stages` turns a list of such stages into the graph.  inception_v2 and
inception_v3 describe their networks with the same tables and builder.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from ._common import ops, slim

__all__ = ["inception_v1", "inception_v1_base", "inception_v1_arg_scope"]


# -- the table format and its builder (shared by the three Inception nets) ---------------------

class _Layer(NamedTuple):
    """One layer of a table.  kind: 'conv', 'sep' (separable conv), 'max' or 'avg' (pools);
    depth: output channels before the depth multiplier (convs only); padding / stddev: None
    leaves the enclosing arg_scope's padding / weights initializer in force; extra: more
    keyword arguments of the layer."""
    kind: str
    name: str
    depth: int = 0
    kernel: Tuple[int, int] = (1, 1)
    stride: int = 1
    padding: Optional[str] = None
    stddev: Optional[float] = None
    extra: Optional[Dict[str, Any]] = None


def _conv(name: str, depth: int, kernel: Tuple[int, int] = (1, 1), stride: int = 1,
          padding: Optional[str] = None, stddev: Optional[float] = None) -> _Layer:
    return _Layer("conv", name, depth, kernel, stride, padding, stddev)


def _pool(kind: str, name: str, kernel: Tuple[int, int] = (3, 3), stride: int = 1,
          padding: Optional[str] = None) -> _Layer:
    return _Layer(kind, name, 0, kernel, stride, padding)


# A branch is a list of items applied in turn; an item is a _Layer or, for the branches that
# split (Inception v3's 8x8 modules), a list of _Layers all applied to the same input and
# concatenated along the channels.  A block is (name, [branch, ...]), run in Branch_0, 1, ...
_Item = Union[_Layer, List[_Layer]]
_Block = Tuple[str, Sequence[Sequence[_Item]]]
_Stage = Union[_Layer, _Block]


def _apply(net: Any, item: _Item, depth: Callable[[int], int], channel_axis: int) -> Any:
    if isinstance(item, list):
        return ops.concat([_apply(net, part, depth, channel_axis) for part in item], channel_axis)
    kwargs: Dict[str, Any] = dict(item.extra or {})
    if item.padding is not None:
        kwargs["padding"] = item.padding
    if item.kind in ("max", "avg"):
        pool = slim.max_pool2d if item.kind == "max" else slim.avg_pool2d
        return pool(net, list(item.kernel), stride=item.stride, scope=item.name, **kwargs)
    if item.stddev is not None:
        kwargs["weights_initializer"] = ops.truncated_normal_initializer(0.0, item.stddev)
    layer = slim.separable_conv2d if item.kind == "sep" else slim.conv2d
    return layer(net, depth(item.depth), list(item.kernel), stride=item.stride, scope=item.name, **kwargs)


def _stage_name(stage: _Stage) -> str:
    return stage.name if isinstance(stage, _Layer) else stage[0]


def _build_stages(net: Any, stages: Sequence[_Stage], final_endpoint: str,
                  depth: Callable[[int], int] = int, channel_axis: int = 3) -> Tuple[Any, Dict[str, Any]]:
    """Runs `stages` in order up to and including `final_endpoint`; returns its output and
    {stage name: output} of every stage built."""
    # checked before building anything, so a typo costs no half-built graph
    if final_endpoint not in [_stage_name(s) for s in stages]:
        raise ValueError("Unknown final endpoint %s" % final_endpoint)
    end_points: Dict[str, Any] = {}
    for stage in stages:
        if isinstance(stage, _Layer):
            net = _apply(net, stage, depth, channel_axis)
        else:
            name, branches = stage
            with ops.variable_scope(name):
                outs = []
                for i, branch in enumerate(branches):
                    with ops.variable_scope("Branch_%d" % i):
                        y = net
                        for item in branch:
                            y = _apply(y, item, depth, channel_axis)
                    outs.append(y)
                net = ops.concat(outs, channel_axis)
        end_points[_stage_name(stage)] = net
        if _stage_name(stage) == final_endpoint:
            break
    return net, end_points


def _batch_norm_arg_scope(weight_decay: float, use_batch_norm: bool, batch_norm_var_collection: str,
                          batch_norm_decay: float, batch_norm_epsilon: float, updates_collections: Any,
                          activation_fn: Optional[Callable], batch_norm_scale: bool,
                          fused: Optional[bool] = None) -> dict:
    """The arg_scope all three nets train with: L2 weight decay on conv and fully-connected
    weights; convs He-initialized, batch-normalized (moving statistics also put in
    `batch_norm_var_collection`) and ReLU-activated."""
    bn_params: Dict[str, Any] = {
        "decay": batch_norm_decay, "epsilon": batch_norm_epsilon, "scale": batch_norm_scale,
        "updates_collections": updates_collections,
        "variables_collections": {"beta": None, "gamma": None, "moving_mean": [batch_norm_var_collection],
                                  "moving_variance": [batch_norm_var_collection]},
    }
    if fused is not None:
        bn_params["fused"] = fused
    with slim.arg_scope([slim.conv2d, slim.fully_connected],
                        weights_regularizer=slim.l2_regularizer(weight_decay)):
        with slim.arg_scope([slim.conv2d], weights_initializer=slim.variance_scaling_initializer(),
                            activation_fn=activation_fn,
                            normalizer_fn=slim.batch_norm if use_batch_norm else None,
                            normalizer_params=bn_params if use_batch_norm else {}) as sc:
            return sc


# -- Inception V1 ------------------------------------------------------------------------------

def _v1_module(name: str, d0: int, d1: Tuple[int, int], d2: Tuple[int, int], d3: int,
               b2_second: str = "Conv2d_0b_3x3") -> _Block:
    """The GoogLeNet module: 1x1 | 1x1 -> 3x3 | 1x1 -> 3x3 ("5x5" in the paper) | max -> 1x1."""
    return (name, [
        [_conv("Conv2d_0a_1x1", d0)],
        [_conv("Conv2d_0a_1x1", d1[0]), _conv("Conv2d_0b_3x3", d1[1], (3, 3))],
        [_conv("Conv2d_0a_1x1", d2[0]), _conv(b2_second, d2[1], (3, 3))],
        [_pool("max", "MaxPool_0a_3x3"), _conv("Conv2d_0b_1x1", d3)],
    ])


_V1_STEM: List[_Stage] = [
    _conv("Conv2d_1a_7x7", 64, (7, 7), stride=2),
    _pool("max", "MaxPool_2a_3x3", stride=2),
    _conv("Conv2d_2b_1x1", 64),
    _conv("Conv2d_2c_3x3", 192, (3, 3)),
    _pool("max", "MaxPool_3a_3x3", stride=2),
]

_V1_BODY: List[_Stage] = [
    _v1_module("Mixed_3b", 64, (96, 128), (16, 32), 32),
    _v1_module("Mixed_3c", 128, (128, 192), (32, 96), 64),
    _pool("max", "MaxPool_4a_3x3", stride=2),
    _v1_module("Mixed_4b", 192, (96, 208), (16, 48), 64),
    _v1_module("Mixed_4c", 160, (112, 224), (24, 64), 64),
    _v1_module("Mixed_4d", 128, (128, 256), (24, 64), 64),
    _v1_module("Mixed_4e", 112, (144, 288), (32, 64), 64),
    _v1_module("Mixed_4f", 256, (160, 320), (32, 128), 128),
    _pool("max", "MaxPool_5a_2x2", (2, 2), stride=2),
    # TF-Slim's checkpoints name this one layer 0a, not 0b
    _v1_module("Mixed_5b", 256, (160, 320), (32, 128), 128, b2_second="Conv2d_0a_3x3"),
    _v1_module("Mixed_5c", 384, (192, 384), (48, 128), 128),
]


def inception_v1_base(inputs: Any, final_endpoint: str = "Mixed_5c", scope: Any = "InceptionV1", *,
                      include_root_block: bool = True) -> Tuple[Any, Dict[str, Any]]:
    """Inception V1 from `inputs` [batch, height, width, channels] up to `final_endpoint`
    (a stage name: 'Conv2d_1a_7x7' ... 'Mixed_5c'); returns (its output, {end point: tensor}).
    include_root_block=False starts at Mixed_3b (no layers before it).  Raises ValueError for
    an unknown final_endpoint."""
    stages = (_V1_STEM if include_root_block else []) + _V1_BODY
    with ops.variable_scope(scope, "InceptionV1", [inputs]):
        # every conv here starts from N(0, 0.01), whatever the outer arg_scope says
        with slim.arg_scope([slim.conv2d, slim.fully_connected],
                            weights_initializer=ops.truncated_normal_initializer(0.0, 0.01)):
            with slim.arg_scope([slim.conv2d, slim.max_pool2d], stride=1, padding="SAME"):
                return _build_stages(inputs, stages, final_endpoint)


def inception_v1(inputs: Any, num_classes: Optional[int] = 1000, is_training: bool = True,
                 dropout_keep_prob: float = 0.8, prediction_fn: Callable = slim.softmax,
                 spatial_squeeze: bool = True, reuse: Any = None, scope: Any = "InceptionV1",
                 global_pool: bool = False) -> Tuple[Any, Dict[str, Any]]:
    """Inception V1 classifier (224x224 inputs): returns (logits [batch, num_classes], or
    [batch, 1, 1, num_classes] without spatial_squeeze, and the end points, with 'Logits' and
    'Predictions').  global_pool averages the whole final feature map instead of a 7x7 window
    (end point 'global_pool'); a num_classes of 0 or None returns the pooled features instead
    of logits."""
    with ops.variable_scope(scope, "InceptionV1", [inputs], reuse=reuse) as sc:
        with slim.arg_scope([slim.batch_norm, slim.dropout], is_training=is_training):
            net, end_points = inception_v1_base(inputs, scope=sc)
            with ops.variable_scope("Logits"):
                if global_pool:
                    net = ops.reduce_mean(net, [1, 2], keepdims=True, name="global_pool")
                    end_points["global_pool"] = net
                else:
                    # TF-Slim names this average pool MaxPool_0a_7x7
                    net = slim.avg_pool2d(net, [7, 7], stride=1, scope="MaxPool_0a_7x7")
                if not num_classes:
                    return net, end_points
                net = slim.dropout(net, dropout_keep_prob, scope="Dropout_0b")
                logits = slim.conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                                     scope="Conv2d_0c_1x1")
                if spatial_squeeze:
                    logits = ops.squeeze(logits, [1, 2], name="SpatialSqueeze")
                end_points["Logits"] = logits
                end_points["Predictions"] = prediction_fn(logits, scope="Predictions")
    return logits, end_points


inception_v1.default_image_size = 224  # type: ignore[attr-defined]


def inception_v1_arg_scope(weight_decay: float = 0.00004, use_batch_norm: bool = True,
                           batch_norm_var_collection: str = "moving_vars", *,
                           batch_norm_decay: float = 0.9997, batch_norm_epsilon: float = 0.001,
                           activation_fn: Optional[Callable] = ops.relu, batch_norm_scale: bool = False,
                           batch_norm_updates_collections: Any = ops.GraphKeys.UPDATE_OPS) -> dict:
    """The arg_scope Inception V1 is trained under: L2 weight decay, He-initialized convs with
    batch norm (unless use_batch_norm=False) and ReLU."""
    return _batch_norm_arg_scope(weight_decay, use_batch_norm, batch_norm_var_collection, batch_norm_decay,
                                 batch_norm_epsilon, batch_norm_updates_collections, activation_fn,
                                 batch_norm_scale)
