"""tf.keras.applications.vgg16: VGG16 (Simonyan & Zisserman, ICLR 2015) with Keras's layer
names, so Keras's ImageNet weights load; its inputs take 'caffe' preprocessing."""
from __future__ import annotations

from typing import Any, Optional

from . import imagenet_utils as _iu
from ._vgg import build_vgg

__all__ = ["VGG16", "preprocess_input", "decode_predictions"]

# md5 of Keras's weights files: with the classifier, without
_HASHES = ("64373286793e3c8b2b4e3219cbf3544b", "6d6bbae143d832006294945121d1f1fc")


def VGG16(include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,  # noqa: N802
          input_shape: Any = None, pooling: Optional[str] = None, classes: int = 1000,
          classifier_activation: Any = "softmax") -> Any:
    """The VGG16 model (13 convolutions, 3 dense layers with the top)."""
    return build_vgg("vgg16", (2, 2, 3, 3, 3), _HASHES, include_top, weights, input_tensor, input_shape, pooling,
                     classes, classifier_activation)


preprocess_input, decode_predictions = _iu.model_functions("caffe", "VGG16")
