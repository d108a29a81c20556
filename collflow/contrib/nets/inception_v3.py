"""Inception V3 (Szegedy et al. 2015, "Rethinking the Inception Architecture", arXiv:1512.00567)
as TF 1.x's `tf.contrib.slim.nets.inception_v3`: TF-Slim's variable scopes, names, shapes and
end points (AuxLogits included), so its checkpoints load as they are.  Written as tables of
layers (see inception_v1)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from ._common import ops, slim
from .inception_v1 import _Block, _Stage, _batch_norm_arg_scope, _build_stages, _conv, _pool
from .inception_v2 import _depth_fn, _reduced_kernel_size_for_small_input

__all__ = ["inception_v3", "inception_v3_base", "inception_v3_arg_scope"]


def _block_35(name: str, d3: int, b1_names: Tuple[str, str] = ("Conv2d_0a_1x1", "Conv2d_0b_5x5")) -> _Block:
    """The 35x35 module: 1x1 | 1x1 -> 5x5 | 1x1 -> 3x3 -> 3x3 | avg -> 1x1 (d3)."""
    return (name, [
        [_conv("Conv2d_0a_1x1", 64)],
        [_conv(b1_names[0], 48), _conv(b1_names[1], 64, (5, 5))],
        [_conv("Conv2d_0a_1x1", 64), _conv("Conv2d_0b_3x3", 96, (3, 3)), _conv("Conv2d_0c_3x3", 96, (3, 3))],
        [_pool("avg", "AvgPool_0a_3x3"), _conv("Conv2d_0b_1x1", d3)],
    ])


def _block_17(name: str, c: int) -> _Block:
    """The 17x17 module, 7x7 convs factored into 1x7 and 7x1 with c inner channels:
    1x1 | 1x1 -> 1x7 -> 7x1 | 1x1 -> 7x1 -> 1x7 -> 7x1 -> 1x7 | avg -> 1x1."""
    return (name, [
        [_conv("Conv2d_0a_1x1", 192)],
        [_conv("Conv2d_0a_1x1", c), _conv("Conv2d_0b_1x7", c, (1, 7)), _conv("Conv2d_0c_7x1", 192, (7, 1))],
        [_conv("Conv2d_0a_1x1", c), _conv("Conv2d_0b_7x1", c, (7, 1)), _conv("Conv2d_0c_1x7", c, (1, 7)),
         _conv("Conv2d_0d_7x1", c, (7, 1)), _conv("Conv2d_0e_1x7", 192, (1, 7))],
        [_pool("avg", "AvgPool_0a_3x3"), _conv("Conv2d_0b_1x1", 192)],
    ])


def _block_8(name: str, b1_second: str) -> _Block:
    """The 8x8 module, whose middle branches end in a 1x3 and a 3x1 side by side:
    1x1 | 1x1 -> (1x3, 3x1) | 1x1 -> 3x3 -> (1x3, 3x1) | avg -> 1x1."""
    return (name, [
        [_conv("Conv2d_0a_1x1", 320)],
        [_conv("Conv2d_0a_1x1", 384), [_conv("Conv2d_0b_1x3", 384, (1, 3)), _conv(b1_second, 384, (3, 1))]],
        [_conv("Conv2d_0a_1x1", 448), _conv("Conv2d_0b_3x3", 384, (3, 3)),
         [_conv("Conv2d_0c_1x3", 384, (1, 3)), _conv("Conv2d_0d_3x1", 384, (3, 1))]],
        [_pool("avg", "AvgPool_0a_3x3"), _conv("Conv2d_0b_1x1", 192)],
    ])


# the blocks run under padding SAME; the stem's and the grid reductions' VALID layers say so
_V3_STAGES: List[_Stage] = [
    _conv("Conv2d_1a_3x3", 32, (3, 3), stride=2, padding="VALID"),
    _conv("Conv2d_2a_3x3", 32, (3, 3), padding="VALID"),
    _conv("Conv2d_2b_3x3", 64, (3, 3)),
    _pool("max", "MaxPool_3a_3x3", stride=2, padding="VALID"),
    _conv("Conv2d_3b_1x1", 80, padding="VALID"),
    _conv("Conv2d_4a_3x3", 192, (3, 3), padding="VALID"),
    _pool("max", "MaxPool_5a_3x3", stride=2, padding="VALID"),
    _block_35("Mixed_5b", 32),
    # TF-Slim's checkpoints give this one module's 5x5 branch odd names
    _block_35("Mixed_5c", 64, b1_names=("Conv2d_0b_1x1", "Conv_1_0c_5x5")),
    _block_35("Mixed_5d", 64),
    ("Mixed_6a", [  # 35x35 -> 17x17 (its 3x3s are named 1x1 in TF-Slim's checkpoints)
        [_conv("Conv2d_1a_1x1", 384, (3, 3), stride=2, padding="VALID")],
        [_conv("Conv2d_0a_1x1", 64), _conv("Conv2d_0b_3x3", 96, (3, 3)),
         _conv("Conv2d_1a_1x1", 96, (3, 3), stride=2, padding="VALID")],
        [_pool("max", "MaxPool_1a_3x3", stride=2, padding="VALID")],
    ]),
    _block_17("Mixed_6b", 128),
    _block_17("Mixed_6c", 160),
    _block_17("Mixed_6d", 160),
    _block_17("Mixed_6e", 192),
    ("Mixed_7a", [  # 17x17 -> 8x8
        [_conv("Conv2d_0a_1x1", 192), _conv("Conv2d_1a_3x3", 320, (3, 3), stride=2, padding="VALID")],
        [_conv("Conv2d_0a_1x1", 192), _conv("Conv2d_0b_1x7", 192, (1, 7)), _conv("Conv2d_0c_7x1", 192, (7, 1)),
         _conv("Conv2d_1a_3x3", 192, (3, 3), stride=2, padding="VALID")],
        [_pool("max", "MaxPool_1a_3x3", stride=2, padding="VALID")],
    ]),
    _block_8("Mixed_7b", "Conv2d_0b_3x1"),
    _block_8("Mixed_7c", "Conv2d_0c_3x1"),
]


def inception_v3_base(inputs: Any, final_endpoint: str = "Mixed_7c", min_depth: int = 16,
                      depth_multiplier: float = 1.0, scope: Any = None) -> Tuple[Any, Dict[str, Any]]:
    """Inception V3 from `inputs` up to `final_endpoint` ('Conv2d_1a_3x3' ... 'Mixed_7c');
    returns (its output, {end point: tensor}).  Every conv has max(int(d * depth_multiplier),
    min_depth) channels.  Raises ValueError for depth_multiplier <= 0 or an unknown
    final_endpoint."""
    depth = _depth_fn(depth_multiplier, min_depth)
    with ops.variable_scope(scope, "InceptionV3", [inputs]):
        with slim.arg_scope([slim.conv2d, slim.max_pool2d, slim.avg_pool2d], stride=1, padding="SAME"):
            return _build_stages(inputs, _V3_STAGES, final_endpoint, depth)


def _aux_logits(net: Any, num_classes: int, depth: Callable[[int], int], spatial_squeeze: bool) -> Any:
    """The auxiliary classifier on Mixed_6e (a training-time regularizer)."""
    with slim.arg_scope([slim.conv2d, slim.max_pool2d, slim.avg_pool2d], stride=1, padding="SAME"):
        with ops.variable_scope("AuxLogits"):
            net = slim.avg_pool2d(net, [5, 5], stride=3, padding="VALID", scope="AvgPool_1a_5x5")
            net = slim.conv2d(net, depth(128), [1, 1], scope="Conv2d_1b_1x1")
            kernel = _reduced_kernel_size_for_small_input(net, [5, 5])
            net = slim.conv2d(net, depth(768), kernel, padding="VALID",
                              weights_initializer=ops.truncated_normal_initializer(0.0, 0.01),
                              scope="Conv2d_2a_%dx%d" % tuple(kernel))
            net = slim.conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                              weights_initializer=ops.truncated_normal_initializer(0.0, 0.001),
                              scope="Conv2d_2b_1x1")
            if spatial_squeeze:
                net = ops.squeeze(net, [1, 2], name="SpatialSqueeze")
            return net


def inception_v3(inputs: Any, num_classes: Optional[int] = 1000, is_training: bool = True,
                 dropout_keep_prob: float = 0.8, min_depth: int = 16, depth_multiplier: float = 1.0,
                 prediction_fn: Callable = slim.softmax, spatial_squeeze: bool = True, reuse: Any = None,
                 create_aux_logits: bool = True, scope: Any = "InceptionV3",
                 global_pool: bool = False) -> Tuple[Any, Dict[str, Any]]:
    """Inception V3 classifier (299x299 inputs): returns (logits, end points with 'AuxLogits'
    (when create_aux_logits), 'PreLogits', 'Logits' and 'Predictions').  The final average
    pool covers up to 8x8 of the last feature map (less when that is smaller); global_pool
    averages all of it (end point 'global_pool').  num_classes 0 or None returns the pooled
    features instead of logits (and builds no AuxLogits).  Raises ValueError for
    depth_multiplier <= 0."""
    depth = _depth_fn(depth_multiplier, min_depth)
    with ops.variable_scope(scope, "InceptionV3", [inputs], reuse=reuse) as sc:
        with slim.arg_scope([slim.batch_norm, slim.dropout], is_training=is_training):
            net, end_points = inception_v3_base(inputs, scope=sc, min_depth=min_depth,
                                                depth_multiplier=depth_multiplier)
            if create_aux_logits and num_classes:
                end_points["AuxLogits"] = _aux_logits(end_points["Mixed_6e"], num_classes, depth, spatial_squeeze)
            with ops.variable_scope("Logits"):
                if global_pool:
                    net = ops.reduce_mean(net, [1, 2], keepdims=True, name="GlobalPool")
                    end_points["global_pool"] = net
                else:
                    kernel = _reduced_kernel_size_for_small_input(net, [8, 8])
                    net = slim.avg_pool2d(net, kernel, padding="VALID", scope="AvgPool_1a_%dx%d" % tuple(kernel))
                if not num_classes:
                    return net, end_points
                net = slim.dropout(net, keep_prob=dropout_keep_prob, scope="Dropout_1b")
                end_points["PreLogits"] = net
                logits = slim.conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                                     scope="Conv2d_1c_1x1")
                if spatial_squeeze:
                    logits = ops.squeeze(logits, [1, 2], name="SpatialSqueeze")
            end_points["Logits"] = logits
            end_points["Predictions"] = prediction_fn(logits, scope="Predictions")
    return logits, end_points


inception_v3.default_image_size = 299  # type: ignore[attr-defined]


def inception_v3_arg_scope(weight_decay: float = 0.00004, batch_norm_var_collection: str = "moving_vars",
                           batch_norm_decay: float = 0.9997, batch_norm_epsilon: float = 0.001,
                           updates_collections: Any = ops.GraphKeys.UPDATE_OPS, use_fused_batchnorm: bool = True, *,
                           use_batch_norm: bool = True, activation_fn: Optional[Callable] = ops.relu,
                           batch_norm_scale: bool = False) -> dict:
    """The arg_scope Inception V3 is trained under: L2 weight decay, He-initialized convs with
    (fused) batch norm and ReLU."""
    return _batch_norm_arg_scope(weight_decay, use_batch_norm, batch_norm_var_collection, batch_norm_decay,
                                 batch_norm_epsilon, updates_collections, activation_fn, batch_norm_scale,
                                 fused=use_fused_batchnorm)
