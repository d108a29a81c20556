"""slim.nets.alexnet: AlexNet v2 (one-GPU cuda-convnet2 layout, no LRN) as in TF 1.x's
tf.contrib.slim.nets, with its variable names (alexnet_v2/conv1/weights, ..., fc8)."""
from __future__ import annotations

from typing import Any, Tuple

from ._common import ops, slim
from ._convnet import conv_classifier

__all__ = ["alexnet_v2_arg_scope", "alexnet_v2"]

_TRUNK = [("conv", None, 64, [11, 11], 4, "VALID", "conv1"), ("pool", [3, 3], 2, "pool1"),
          ("conv", None, 192, [5, 5], 1, None, "conv2"), ("pool", [3, 3], 2, "pool2"),
          ("conv", None, 384, [3, 3], 1, None, "conv3"), ("conv", None, 384, [3, 3], 1, None, "conv4"),
          ("conv", None, 256, [3, 3], 1, None, "conv5"), ("pool", [3, 3], 2, "pool5")]


def head_initializers() -> Any:
    """The classifier's initializers in AlexNet v2 and OverFeat: truncated normal (0.005) weights,
    0.1 biases (fc8's biases stay zero)."""
    return slim.arg_scope([slim.conv2d], weights_initializer=ops.truncated_normal_initializer(0.0, 0.005),
                          biases_initializer=ops.constant_initializer(0.1))


def alexnet_v2_arg_scope(weight_decay: float = 0.0005) -> Any:
    """ReLU, L2 weight decay and 0.1 biases on conv/fc layers; SAME convs, VALID max pools."""
    with slim.arg_scope([slim.conv2d, slim.fully_connected], activation_fn=ops.relu,
                        biases_initializer=ops.constant_initializer(0.1),
                        weights_regularizer=slim.l2_regularizer(weight_decay)):
        with slim.arg_scope([slim.conv2d], padding="SAME"):
            with slim.arg_scope([slim.max_pool2d], padding="VALID") as sc:
                return sc


def alexnet_v2(inputs: Any, num_classes: int = 1000, is_training: Any = True, dropout_keep_prob: float = 0.5,
               spatial_squeeze: bool = True, scope: Any = "alexnet_v2") -> Tuple[Any, dict]:
    """AlexNet v2 (224x224 inputs for [batch, num_classes] logits); returns (logits, end_points)."""
    return conv_classifier(inputs, _TRUNK, (4096, [5, 5]), 4096, num_classes, is_training, dropout_keep_prob,
                           spatial_squeeze, scope, "alexnet_v2", False, True, head_initializers)


alexnet_v2.default_image_size = 224
