"""slim.nets.resnet_v1: ResNet v1 (He et al. 2015; BN after each convolution) of depths 50, 101,
152 and 200 as in TF 1.x's tf.contrib.slim.nets, with its variable names
(resnet_v1_50/block1/unit_1/bottleneck_v1/conv1/weights, .../BatchNorm/moving_mean, ...), so
TF's checkpoints restore.  Logits stay [batch, 1, 1, num_classes] as TF's; output_stride runs
the last blocks atrous for dense prediction."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from . import resnet_utils
from ._common import ops, slim
from .resnet_utils import Block, build_resnet, conv2d_same, last_dimension, subsample

__all__ = ["bottleneck", "resnet_v1", "resnet_v1_block", "resnet_v1_50", "resnet_v1_101", "resnet_v1_152",
           "resnet_v1_200", "resnet_arg_scope"]

resnet_arg_scope = resnet_utils.resnet_arg_scope


@slim.add_arg_scope
def bottleneck(inputs: Any, depth: int, depth_bottleneck: int, stride: int, rate: int = 1,
               outputs_collections: Any = None, scope: Optional[str] = None) -> Any:
    """relu(shortcut + conv1x1(conv3x3(conv1x1(x)))), each conv batch-normed (the arg_scope's)
    and the last without ReLU; the shortcut is x subsampled when the depth is kept, else a
    strided 1x1 projection."""
    with ops.variable_scope(scope, "bottleneck_v1", [inputs]) as sc:
        if depth == last_dimension(inputs, min_rank=4):
            shortcut = subsample(inputs, stride, "shortcut")
        else:
            shortcut = slim.conv2d(inputs, depth, [1, 1], stride=stride, activation_fn=None, scope="shortcut")
        residual = slim.conv2d(inputs, depth_bottleneck, [1, 1], stride=1, scope="conv1")
        residual = conv2d_same(residual, depth_bottleneck, 3, stride, rate=rate, scope="conv2")
        residual = slim.conv2d(residual, depth, [1, 1], stride=1, activation_fn=None, scope="conv3")
        return slim.utils.collect_named_outputs(outputs_collections, sc.name, ops.relu(shortcut + residual))


def resnet_v1(inputs: Any, blocks: List[Block], num_classes: Optional[int] = None, is_training: Any = True,
              global_pool: bool = True, output_stride: Optional[int] = None, include_root_block: bool = True,
              reuse: Any = None, scope: Optional[str] = None) -> Tuple[Any, dict]:
    """A ResNet v1 of the given blocks; returns (net, end_points): the logits when num_classes is
    given (and end_points["predictions"]), else the last block's features (pooled if
    global_pool)."""
    return build_resnet(inputs, blocks, bottleneck, False, num_classes, is_training, global_pool, output_stride,
                        include_root_block, reuse, scope, "resnet_v1")


resnet_v1.default_image_size = 224


def resnet_v1_block(scope: str, base_depth: int, num_units: int, stride: int) -> Block:
    """A block of `num_units` v1 bottleneck units; the stride is in its last unit."""
    return resnet_utils.bottleneck_block(bottleneck, scope, base_depth, num_units, stride)


resnet_v1_50, resnet_v1_101, resnet_v1_152, resnet_v1_200 = (
    resnet_utils.standard_net(resnet_v1, bottleneck, "v1", d) for d in (50, 101, 152, 200))
