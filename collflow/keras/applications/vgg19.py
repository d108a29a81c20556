"""tf.keras.applications.vgg19: VGG19 (Simonyan & Zisserman, ICLR 2015) with Keras's layer
names, so Keras's ImageNet weights load; its inputs take 'caffe' preprocessing."""
from __future__ import annotations

from typing import Any, Optional

from . import imagenet_utils as _iu
from ._vgg import build_vgg

__all__ = ["VGG19", "preprocess_input", "decode_predictions"]

# md5 of Keras's weights files: with the classifier, without
_HASHES = ("cbe5617147190e668d6c5d5026f83318", "253f8cb515780f3b799900260a226db6")


def VGG19(include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,  # noqa: N802
          input_shape: Any = None, pooling: Optional[str] = None, classes: int = 1000,
          classifier_activation: Any = "softmax") -> Any:
    """The VGG19 model (16 convolutions, 3 dense layers with the top)."""
    return build_vgg("vgg19", (2, 2, 4, 4, 4), _HASHES, include_top, weights, input_tensor, input_shape, pooling,
                     classes, classifier_activation)


preprocess_input, decode_predictions = _iu.model_functions("caffe", "VGG19")
