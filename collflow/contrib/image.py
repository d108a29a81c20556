"""tf.contrib.image: projective transforms of images (transform, rotate, translate and the
transform-vector helpers), TF 1.x's augmentation ops (graph/ops/image_transform_ops.py)."""
from ..graph.ops.image_transform_ops import (angles_to_projective_transforms, compose_transforms,  # noqa: F401
                                             flat_transforms_to_matrices, matrices_to_flat_transforms, rotate,
                                             transform, translate, translations_to_projective_transforms)

__all__ = ["transform", "rotate", "translate", "angles_to_projective_transforms",
           "translations_to_projective_transforms", "compose_transforms", "flat_transforms_to_matrices",
           "matrices_to_flat_transforms"]
