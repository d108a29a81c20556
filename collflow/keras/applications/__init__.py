"""tf.keras.applications: Keras's ImageNet models built from collflow's Keras layers, with
Keras's layer and weight names so its weights files load (weights='imagenet' downloads them).

    model = tf.keras.applications.ResNet50(weights=None, input_shape=(64, 64, 3), classes=10)
    x = tf.keras.applications.resnet50.preprocess_input(images)
"""
from . import imagenet_utils
from . import vgg16, vgg19
from . import resnet, resnet50, resnet_v2
from . import mobilenet, mobilenet_v2
from . import inception_v3, xception, densenet
from . import inception_resnet_v2, nasnet
from .vgg16 import VGG16
from .vgg19 import VGG19
from .resnet import ResNet50, ResNet101, ResNet152
from .resnet_v2 import ResNet50V2, ResNet101V2, ResNet152V2
from .mobilenet import MobileNet
from .mobilenet_v2 import MobileNetV2
from .inception_v3 import InceptionV3
from .xception import Xception
from .densenet import DenseNet121, DenseNet169, DenseNet201
from .inception_resnet_v2 import InceptionResNetV2
from .nasnet import NASNetLarge, NASNetMobile

__all__ = ["imagenet_utils", "vgg16", "vgg19", "resnet", "resnet50", "resnet_v2", "mobilenet", "mobilenet_v2",
           "inception_v3", "xception", "densenet", "inception_resnet_v2", "nasnet", "VGG16", "VGG19", "ResNet50",
           "ResNet101", "ResNet152", "ResNet50V2", "ResNet101V2", "ResNet152V2", "MobileNet", "MobileNetV2",
           "InceptionV3", "Xception", "DenseNet121", "DenseNet169", "DenseNet201", "InceptionResNetV2", "NASNetMobile",
           "NASNetLarge"]
