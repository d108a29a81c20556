"""slim.nets.overfeat: OverFeat (Sermanet et al. 2014, the fast model) as in TF 1.x's
tf.contrib.slim.nets, with its variable names (overfeat/conv1/weights, ..., fc8)."""
from __future__ import annotations

from typing import Any, Tuple

from ._common import ops, slim
from ._convnet import conv_classifier
from .alexnet import head_initializers

__all__ = ["overfeat_arg_scope", "overfeat"]

_TRUNK = [("conv", None, 64, [11, 11], 4, "VALID", "conv1"), ("pool", [2, 2], 2, "pool1"),
          ("conv", None, 256, [5, 5], 1, "VALID", "conv2"), ("pool", [2, 2], 2, "pool2"),
          ("conv", None, 512, [3, 3], 1, None, "conv3"), ("conv", None, 1024, [3, 3], 1, None, "conv4"),
          ("conv", None, 1024, [3, 3], 1, None, "conv5"), ("pool", [2, 2], 2, "pool5")]


def overfeat_arg_scope(weight_decay: float = 0.0005) -> Any:
    """ReLU, L2 weight decay and zero biases on conv/fc layers; SAME convs, VALID max pools."""
    with slim.arg_scope([slim.conv2d, slim.fully_connected], activation_fn=ops.relu,
                        weights_regularizer=slim.l2_regularizer(weight_decay),
                        biases_initializer=ops.zeros_initializer()):
        with slim.arg_scope([slim.conv2d], padding="SAME"):
            with slim.arg_scope([slim.max_pool2d], padding="VALID") as sc:
                return sc


def overfeat(inputs: Any, num_classes: int = 1000, is_training: Any = True, dropout_keep_prob: float = 0.5,
             spatial_squeeze: bool = True, scope: Any = "overfeat") -> Tuple[Any, dict]:
    """OverFeat (231x231 inputs for [batch, num_classes] logits); returns (logits, end_points)."""
    return conv_classifier(inputs, _TRUNK, (3072, [6, 6]), 4096, num_classes, is_training, dropout_keep_prob,
                           spatial_squeeze, scope, "overfeat", True, True, head_initializers)


overfeat.default_image_size = 231
