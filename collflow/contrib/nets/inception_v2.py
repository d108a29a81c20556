"""Inception V2 (BN-Inception, Ioffe & Szegedy 2015, arXiv:1502.03167) as TF 1.x's
`tf.contrib.slim.nets.inception_v2`: TF-Slim's variable scopes, names, shapes and end points,
so its checkpoints load as they are.  Written as tables of layers (see inception_v1)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._common import ops, slim
from .inception_v1 import _Block, _Layer, _Stage, _batch_norm_arg_scope, _build_stages, _conv, _pool

__all__ = ["inception_v2", "inception_v2_base", "inception_v2_arg_scope"]


def _depth_fn(depth_multiplier: float, min_depth: int) -> Callable[[int], int]:
    """The thinned channel count of a layer, never below min_depth."""
    if depth_multiplier <= 0:
        raise ValueError("depth_multiplier is not greater than zero.")
    return lambda d: max(int(d * depth_multiplier), min_depth)


def _v2_module(name: str, d0: int, d1: Tuple[int, int], d2: Tuple[int, int], d3: int,
               pool: str = "avg") -> _Block:
    """The BN-Inception module: 1x1 | 1x1 -> 3x3 | 1x1 -> 3x3 -> 3x3 | pool -> 1x1; the 1x1s
    that reduce before a 3x3 start from N(0, 0.09), the pool's 1x1 from N(0, 0.1)."""
    return (name, [
        [_conv("Conv2d_0a_1x1", d0)],
        [_conv("Conv2d_0a_1x1", d1[0], stddev=0.09), _conv("Conv2d_0b_3x3", d1[1], (3, 3))],
        [_conv("Conv2d_0a_1x1", d2[0], stddev=0.09), _conv("Conv2d_0b_3x3", d2[1], (3, 3)),
         _conv("Conv2d_0c_3x3", d2[1], (3, 3))],
        [_pool(pool, "%sPool_0a_3x3" % pool.capitalize()), _conv("Conv2d_0b_1x1", d3, stddev=0.1)],
    ])


def _v2_reduction(name: str, d0: Tuple[int, int], d1: Tuple[int, int]) -> _Block:
    """The grid reduction: 1x1 -> 3x3/2 | 1x1 -> 3x3 -> 3x3/2 | max/2."""
    return (name, [
        [_conv("Conv2d_0a_1x1", d0[0], stddev=0.09), _conv("Conv2d_1a_3x3", d0[1], (3, 3), stride=2)],
        [_conv("Conv2d_0a_1x1", d1[0], stddev=0.09), _conv("Conv2d_0b_3x3", d1[1], (3, 3)),
         _conv("Conv2d_1a_3x3", d1[1], (3, 3), stride=2)],
        [_pool("max", "MaxPool_1a_3x3", stride=2)],
    ])


_V2_BODY: List[_Stage] = [
    _v2_module("Mixed_3b", 64, (64, 64), (64, 96), 32),
    _v2_module("Mixed_3c", 64, (64, 96), (64, 96), 64),
    _v2_reduction("Mixed_4a", (128, 160), (64, 96)),
    _v2_module("Mixed_4b", 224, (64, 96), (96, 128), 128),
    _v2_module("Mixed_4c", 192, (96, 128), (96, 128), 128),
    _v2_module("Mixed_4d", 160, (128, 160), (128, 160), 96),
    _v2_module("Mixed_4e", 96, (128, 192), (160, 192), 96),
    _v2_reduction("Mixed_5a", (128, 192), (192, 256)),
    _v2_module("Mixed_5b", 352, (192, 320), (160, 224), 128),
    _v2_module("Mixed_5c", 352, (192, 320), (192, 224), 128, pool="max"),
]


def _v2_stem(depth: Callable[[int], int], use_separable_conv: bool) -> List[_Stage]:
    if use_separable_conv:
        # the depthwise step's channel multiplier (not the net's depth_multiplier): kept small
        # enough that 3 input channels times it stay within the pointwise step's outputs
        first = _Layer("sep", "Conv2d_1a_7x7", 64, (7, 7), 2, stddev=1.0,
                       extra={"depth_multiplier": min(int(depth(64) / 3), 8)})
    else:
        first = _conv("Conv2d_1a_7x7", 64, (7, 7), stride=2, stddev=1.0)
    return [
        first,
        _pool("max", "MaxPool_2a_3x3", stride=2),
        _conv("Conv2d_2b_1x1", 64, stddev=0.1),
        _conv("Conv2d_2c_3x3", 192, (3, 3)),
        _pool("max", "MaxPool_3a_3x3", stride=2),
    ]


def inception_v2_base(inputs: Any, final_endpoint: str = "Mixed_5c", min_depth: int = 16,
                      depth_multiplier: float = 1.0, scope: Any = None, *, use_separable_conv: bool = True,
                      data_format: str = "NHWC", include_root_block: bool = True) -> Tuple[Any, Dict[str, Any]]:
    """Inception V2 from `inputs` up to `final_endpoint` ('Conv2d_1a_7x7' ... 'Mixed_5c');
    returns (its output, {end point: tensor}).  Every conv has max(int(d * depth_multiplier),
    min_depth) channels.  use_separable_conv=False makes the first layer a plain conv;
    data_format 'NCHW' needs it; include_root_block=False starts at Mixed_3b.  Raises
    ValueError for depth_multiplier <= 0, an unknown final_endpoint or a bad data_format."""
    depth = _depth_fn(depth_multiplier, min_depth)
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError("data_format must be either NHWC or NCHW.")
    if data_format == "NCHW" and use_separable_conv:
        raise ValueError("separable convolution only supports NHWC layout. NCHW data format can only be used "
                         "when use_separable_conv is False.")
    stages = (_v2_stem(depth, use_separable_conv) if include_root_block else []) + _V2_BODY
    with ops.variable_scope(scope, "InceptionV2", [inputs]):
        with slim.arg_scope([slim.conv2d, slim.max_pool2d, slim.avg_pool2d, slim.separable_conv2d],
                            stride=1, padding="SAME"):
            # only set when asked, so the default leaves an outer arg_scope's data_format alone
            fmt = {"data_format": data_format} if data_format == "NCHW" else {}
            with slim.arg_scope([slim.conv2d, slim.max_pool2d, slim.avg_pool2d], **fmt):
                return _build_stages(inputs, stages, final_endpoint, depth, 1 if data_format == "NCHW" else 3)


def _reduced_kernel_size_for_small_input(input_tensor: Any, kernel_size: Sequence[int]) -> List[int]:
    """`kernel_size` [height, width], each cut to the input's spatial size when that is known
    and smaller (a pool over the whole of a small final feature map)."""
    _, height, width = input_tensor.get_shape().as_list()[:3]
    if height is None or width is None:
        return list(kernel_size)
    return [min(height, kernel_size[0]), min(width, kernel_size[1])]


def inception_v2(inputs: Any, num_classes: Optional[int] = 1000, is_training: bool = True,
                 dropout_keep_prob: float = 0.8, min_depth: int = 16, depth_multiplier: float = 1.0,
                 prediction_fn: Callable = slim.softmax, spatial_squeeze: bool = True, reuse: Any = None,
                 scope: Any = "InceptionV2", global_pool: bool = False) -> Tuple[Any, Dict[str, Any]]:
    """Inception V2 classifier (224x224 inputs): returns (logits, end points with 'Logits' and
    'Predictions').  The final average pool covers up to 7x7 of the last feature map (less
    when that is smaller); global_pool averages all of it (end point 'global_pool').
    num_classes 0 or None returns the pooled features instead of logits.  Raises ValueError
    for depth_multiplier <= 0."""
    _depth_fn(depth_multiplier, min_depth)  # the error before any scope is opened
    with ops.variable_scope(scope, "InceptionV2", [inputs], reuse=reuse) as sc:
        with slim.arg_scope([slim.batch_norm, slim.dropout], is_training=is_training):
            net, end_points = inception_v2_base(inputs, scope=sc, min_depth=min_depth,
                                                depth_multiplier=depth_multiplier)
            with ops.variable_scope("Logits"):
                if global_pool:
                    net = ops.reduce_mean(net, [1, 2], keepdims=True, name="global_pool")
                    end_points["global_pool"] = net
                else:
                    kernel = _reduced_kernel_size_for_small_input(net, [7, 7])
                    net = slim.avg_pool2d(net, kernel, padding="VALID", scope="AvgPool_1a_%dx%d" % tuple(kernel))
                if not num_classes:
                    return net, end_points
                net = slim.dropout(net, keep_prob=dropout_keep_prob, scope="Dropout_1b")
                logits = slim.conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                                     scope="Conv2d_1c_1x1")
                if spatial_squeeze:
                    logits = ops.squeeze(logits, [1, 2], name="SpatialSqueeze")
            end_points["Logits"] = logits
            end_points["Predictions"] = prediction_fn(logits, scope="Predictions")
    return logits, end_points


inception_v2.default_image_size = 224  # type: ignore[attr-defined]


def inception_v2_arg_scope(weight_decay: float = 0.00004, batch_norm_var_collection: str = "moving_vars", *,
                           use_batch_norm: bool = True, batch_norm_decay: float = 0.9997,
                           batch_norm_epsilon: float = 0.001, activation_fn: Optional[Callable] = ops.relu,
                           batch_norm_scale: bool = False,
                           batch_norm_updates_collections: Any = ops.GraphKeys.UPDATE_OPS) -> dict:
    """The arg_scope Inception V2 is trained under: L2 weight decay, He-initialized convs with
    batch norm and ReLU.  (The first, separable, layer keeps its biases and ReLU.)"""
    return _batch_norm_arg_scope(weight_decay, use_batch_norm, batch_norm_var_collection, batch_norm_decay,
                                 batch_norm_epsilon, batch_norm_updates_collections, activation_fn,
                                 batch_norm_scale)
