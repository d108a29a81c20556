"""tf.keras.applications.resnet50: ResNet50 and its preprocessing (the names resnet.py has)."""
from .resnet import ResNet50, decode_predictions, preprocess_input  # noqa: F401

__all__ = ["ResNet50", "preprocess_input", "decode_predictions"]
