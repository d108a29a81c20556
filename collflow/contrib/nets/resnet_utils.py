"""slim.nets.resnet_utils: what ResNet v1 and v2 share in TF 1.x's tf.contrib.slim.nets: the
`Block` description, `subsample`, `conv2d_same` (TF's padding for strided SAME convolutions that
keeps the output aligned with the input's corners), `stack_blocks_dense` (output_stride by
atrous convolution) and `resnet_arg_scope`; also the network both versions build around them."""
from __future__ import annotations

import collections
from typing import Any, Callable, List, Optional, Tuple

from ._common import ops, slim

__all__ = ["Block", "subsample", "conv2d_same", "stack_blocks_dense", "resnet_arg_scope"]


class Block(collections.namedtuple("Block", ["scope", "unit_fn", "args"])):
    """A ResNet block: its scope, the unit function, and one dict of unit_fn arguments
    (depth, depth_bottleneck, stride) per unit."""


def last_dimension(inputs: Any, min_rank: int = 4) -> int:
    """The static size of the last dimension (ValueError when unknown or the rank is too small)."""
    shape = inputs.get_shape()
    if shape.ndims is None:
        raise ValueError("dims of shape must be known but is None")
    if shape.ndims < min_rank:
        raise ValueError(f"rank of shape must be at least {min_rank} not: {shape.ndims}")
    value = shape.as_list()[-1]
    if value is None:
        raise ValueError("last dimension shape must be known but is None")
    return int(value)


def subsample(inputs: Any, factor: int, scope: Optional[str] = None) -> Any:
    """Every `factor`-th position of each spatial dimension (the input itself for factor 1)."""
    if factor == 1:
        return inputs
    return slim.max_pool2d(inputs, [1, 1], stride=factor, scope=scope)


def conv2d_same(inputs: Any, num_outputs: int, kernel_size: int, stride: int, rate: int = 1,
                scope: Optional[str] = None) -> Any:
    """A SAME convolution whose strided form equals the stride-1 one subsampled: for stride > 1
    the input is zero-padded explicitly (the padding split as SAME's for stride 1) and the
    convolution is VALID, which differs from a strided SAME conv on even sizes."""
    if stride == 1:
        return slim.conv2d(inputs, num_outputs, kernel_size, stride=1, rate=rate, padding="SAME", scope=scope)
    pad_total = kernel_size + (kernel_size - 1) * (rate - 1) - 1
    begin = pad_total // 2
    inputs = ops.pad(inputs, [[0, 0], [begin, pad_total - begin], [begin, pad_total - begin], [0, 0]])
    return slim.conv2d(inputs, num_outputs, kernel_size, stride=stride, rate=rate, padding="VALID", scope=scope)


@slim.add_arg_scope
def stack_blocks_dense(net: Any, blocks: List[Block], output_stride: Optional[float] = None,
                       outputs_collections: Any = None) -> Any:
    """Runs the blocks' units in scopes block/unit_1, unit_2, ...  With `output_stride`, once the
    units' strides reach it the remaining units run with stride 1 and an atrous rate that grows
    by their strides instead, so the features stay that dense (ValueError when no prefix of the
    strides multiplies to it)."""
    stride_so_far, rate = 1, 1
    for block in blocks:
        with ops.variable_scope(block.scope, "block", [net]) as sc:
            for i, unit in enumerate(block.args):
                if output_stride is not None and stride_so_far > output_stride:
                    raise ValueError("The target output_stride cannot be reached.")
                with ops.variable_scope(f"unit_{i + 1}", values=[net]):
                    if output_stride is not None and stride_so_far == output_stride:
                        net = block.unit_fn(net, rate=rate, **dict(unit, stride=1))
                        rate *= unit.get("stride", 1)
                    else:
                        net = block.unit_fn(net, rate=1, **unit)
                        stride_so_far *= unit.get("stride", 1)
            net = slim.utils.collect_named_outputs(outputs_collections, sc.name, net)
    if output_stride is not None and stride_so_far != output_stride:
        raise ValueError("The target output_stride cannot be reached.")
    return net


def resnet_arg_scope(weight_decay: float = 0.0001, batch_norm_decay: float = 0.997,
                     batch_norm_epsilon: float = 1e-5, batch_norm_scale: bool = True) -> Any:
    """The ResNet arg_scope: conv2d with L2 decay, He initialization, batch norm and ReLU; batch
    norm's decay/epsilon/scale with its updates in UPDATE_OPS; SAME max pools."""
    bn = {"decay": batch_norm_decay, "epsilon": batch_norm_epsilon, "scale": batch_norm_scale,
          "updates_collections": ops.GraphKeys.UPDATE_OPS}
    with slim.arg_scope([slim.conv2d], weights_regularizer=slim.l2_regularizer(weight_decay),
                        weights_initializer=slim.variance_scaling_initializer(), activation_fn=ops.relu,
                        normalizer_fn=slim.batch_norm, normalizer_params=bn):
        with slim.arg_scope([slim.batch_norm], **bn):
            with slim.arg_scope([slim.max_pool2d], padding="SAME") as sc:
                return sc


# units per block of the standard depths (the blocks' base depths are 64, 128, 256, 512)
DEPTHS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3), 200: (3, 24, 36, 3)}


def bottleneck_block(unit_fn: Callable, scope: str, base_depth: int, num_units: int, stride: int) -> Block:
    """A block of bottleneck units (depth 4 * base_depth); its stride is in the last unit."""
    unit = {"depth": base_depth * 4, "depth_bottleneck": base_depth}
    return Block(scope, unit_fn, [dict(unit, stride=1)] * (num_units - 1) + [dict(unit, stride=stride)])


def standard_blocks(unit_fn: Callable, depth: int) -> List[Block]:
    """The four blocks of ResNet-`depth` (block4 keeps stride 1: the root and blocks 1-3 give 32)."""
    return [bottleneck_block(unit_fn, f"block{i + 1}", base, n, 2 if i < 3 else 1)
            for i, (base, n) in enumerate(zip((64, 128, 256, 512), DEPTHS[depth]))]


def standard_net(generic: Callable, unit_fn: Callable, version: str, depth: int) -> Callable:
    """resnet_<version>_<depth>(inputs, num_classes, is_training, global_pool, output_stride,
    reuse, scope): `generic` (resnet_v1 or resnet_v2) over the standard blocks of that depth."""
    name = f"resnet_{version}_{depth}"

    def net(inputs: Any, num_classes: Optional[int] = None, is_training: Any = True, global_pool: bool = True,
            output_stride: Optional[int] = None, reuse: Any = None, scope: str = name) -> Tuple[Any, dict]:
        return generic(inputs, standard_blocks(unit_fn, depth), num_classes, is_training, global_pool, output_stride,
                       include_root_block=True, reuse=reuse, scope=scope)
    net.__name__ = net.__qualname__ = name
    net.__doc__ = f"ResNet-{depth} {version}; see resnet_{version} for the arguments and the result."
    net.default_image_size = 224
    return net


def build_resnet(inputs: Any, blocks: List[Block], unit_fn: Callable, preactivation: bool, num_classes: Optional[int],
                 is_training: Any, global_pool: bool, output_stride: Optional[int], include_root_block: bool,
                 reuse: Any, scope: Optional[str], default_scope: str) -> Tuple[Any, dict]:
    """The network around the blocks: root conv 7x7/2 and max pool 3x3/2, the blocks, for v2
    (`preactivation`) a final batch norm + ReLU ("postnorm") and a root conv without either,
    global average pool ("pool5", kept 4-D), 1x1 "logits" conv and "predictions" softmax."""
    with ops.variable_scope(scope, default_scope, [inputs], reuse=reuse) as sc:
        collection = sc.original_name_scope + "_end_points"
        with slim.arg_scope([slim.conv2d, unit_fn, stack_blocks_dense], outputs_collections=collection):
            with slim.arg_scope([slim.batch_norm], is_training=is_training):
                net = inputs
                if include_root_block:
                    if output_stride is not None:
                        if output_stride % 4 != 0:
                            raise ValueError("The output_stride needs to be a multiple of 4.")
                        output_stride = output_stride / 4
                    # v2's first unit normalizes and activates its input itself
                    root = (slim.arg_scope([slim.conv2d], activation_fn=None, normalizer_fn=None)
                            if preactivation else slim.arg_scope([]))
                    with root:
                        net = conv2d_same(net, 64, 7, stride=2, scope="conv1")
                    net = slim.max_pool2d(net, [3, 3], stride=2, scope="pool1")
                net = stack_blocks_dense(net, blocks, output_stride)
                if preactivation:
                    net = slim.batch_norm(net, activation_fn=ops.relu, scope="postnorm")
                if global_pool:
                    net = ops.reduce_mean(net, [1, 2], name="pool5", keepdims=True)
                if num_classes is not None:
                    net = slim.conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                                      scope="logits")
                end_points = slim.utils.convert_collection_to_dict(collection)
                if num_classes is not None:
                    end_points["predictions"] = slim.softmax(net, scope="predictions")
                return net, end_points
