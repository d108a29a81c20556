"""slim.nets.vgg: VGG 11 (A), 16 (D) and 19 (E) as in TF 1.x's tf.contrib.slim.nets, with its
variable names (vgg_16/conv1/conv1_1/weights, ..., vgg_16/fc8/biases), so TF's checkpoints of
these nets restore.  The fully connected layers are convolutions: fc6 is a 7x7 VALID one, so a
224x224 input gives [batch, num_classes] logits and a larger one a map of them
(spatial_squeeze=False)."""
from __future__ import annotations

from typing import Any, Tuple

from ._common import ops, slim
from ._convnet import conv_classifier

__all__ = ["vgg_arg_scope", "vgg_a", "vgg_16", "vgg_19", "vgg_d", "vgg_e"]


def vgg_arg_scope(weight_decay: float = 0.0005) -> Any:
    """The VGG arg_scope: ReLU, L2 weight decay and zero biases on conv/fc layers, SAME convs."""
    with slim.arg_scope([slim.conv2d, slim.fully_connected], activation_fn=ops.relu,
                        weights_regularizer=slim.l2_regularizer(weight_decay),
                        biases_initializer=ops.zeros_initializer()):
        with slim.arg_scope([slim.conv2d], padding="SAME") as sc:
            return sc


def _trunk(repeats: Tuple[int, ...]) -> list:
    # five stages of 3x3 convolutions, each followed by a 2x2 max pool
    layers = []
    for i, (n, depth) in enumerate(zip(repeats, (64, 128, 256, 512, 512)), start=1):
        layers.append(("conv", n, depth, [3, 3], 1, None, f"conv{i}"))
        layers.append(("pool", [2, 2], 2, f"pool{i}"))
    return layers


def _vgg(inputs: Any, repeats: Tuple[int, ...], num_classes: int, is_training: Any, dropout_keep_prob: float,
         spatial_squeeze: bool, scope: Any, default: str, by_name: bool, collect_fc: bool) -> Tuple[Any, dict]:
    return conv_classifier(inputs, _trunk(repeats), (4096, [7, 7]), 4096, num_classes, is_training,
                           dropout_keep_prob, spatial_squeeze, scope, default, by_name, collect_fc)


def vgg_a(inputs: Any, num_classes: int = 1000, is_training: Any = True, dropout_keep_prob: float = 0.5,
          spatial_squeeze: bool = True, scope: Any = "vgg_a") -> Tuple[Any, dict]:
    """VGG 11 layers (configuration A); returns (logits, end_points)."""
    return _vgg(inputs, (1, 1, 2, 2, 2), num_classes, is_training, dropout_keep_prob, spatial_squeeze, scope,
                "vgg_a", False, False)


def vgg_16(inputs: Any, num_classes: int = 1000, is_training: Any = True, dropout_keep_prob: float = 0.5,
           spatial_squeeze: bool = True, scope: Any = "vgg_16") -> Tuple[Any, dict]:
    """VGG 16 layers (configuration D); returns (logits, end_points)."""
    return _vgg(inputs, (2, 2, 3, 3, 3), num_classes, is_training, dropout_keep_prob, spatial_squeeze, scope,
                "vgg_16", False, True)


def vgg_19(inputs: Any, num_classes: int = 1000, is_training: Any = True, dropout_keep_prob: float = 0.5,
           spatial_squeeze: bool = True, scope: Any = "vgg_19") -> Tuple[Any, dict]:
    """VGG 19 layers (configuration E); returns (logits, end_points)."""
    return _vgg(inputs, (2, 2, 4, 4, 4), num_classes, is_training, dropout_keep_prob, spatial_squeeze, scope,
                "vgg_19", True, True)


vgg_a.default_image_size = vgg_16.default_image_size = vgg_19.default_image_size = 224
vgg_d = vgg_16
vgg_e = vgg_19
