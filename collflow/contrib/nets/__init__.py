"""tf.contrib.slim.nets: TF 1.x's reference image networks, written on the slim layers with TF's
variable, scope and end-point names, so checkpoints trained with TF's restore onto them:
`alexnet` (alexnet_v2), `overfeat`, `vgg` (vgg_a, vgg_16, vgg_19), `resnet_utils`, `resnet_v1`
and `resnet_v2` (50, 101, 152, 200, output_stride) and `inception` (v1, v2, v3).

    with slim.arg_scope(resnet_v1.resnet_arg_scope()):
        logits, end_points = resnet_v1.resnet_v1_50(images, num_classes=1000, is_training=False)
"""
from types import SimpleNamespace as _SimpleNamespace

from . import alexnet, overfeat, resnet_utils, resnet_v1, resnet_v2, vgg
from . import inception_v1 as _inception_v1, inception_v2 as _inception_v2, inception_v3 as _inception_v3

__all__ = ["alexnet", "overfeat", "vgg", "resnet_utils", "resnet_v1", "resnet_v2", "inception"]

# TF's `inception` module: the three versions' nets, bases and arg scopes under one name
inception = _SimpleNamespace(**{n: getattr(m, n) for m in (_inception_v1, _inception_v2, _inception_v3)
                                for n in m.__all__})
inception.__doc__ = "tf.contrib.slim.nets.inception: inception_v1/v2/v3, their _base networks and arg scopes."
