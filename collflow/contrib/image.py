"""tf.contrib.image: projective transforms of images (transform, rotate, translate and the
transform-vector helpers, graph/ops/image_transform_ops.py), dense and sparse image warps
with the bilinear and polyharmonic-spline interpolation under them (image_warp_ops.py,
image_spline_ops.py), connected_components and bipartite_match (image_label_ops.py), the
YIQ-space colour adjustments (image_yiq_ops.py) and single_image_random_dot_stereograms
(image_sirds_ops.py)."""
from ..graph.ops.image_label_ops import bipartite_match, connected_components  # noqa: F401
from ..graph.ops.image_sirds_ops import single_image_random_dot_stereograms  # noqa: F401
from ..graph.ops.image_spline_ops import interpolate_spline, sparse_image_warp  # noqa: F401
from ..graph.ops.image_transform_ops import (angles_to_projective_transforms, compose_transforms,  # noqa: F401
                                             flat_transforms_to_matrices, matrices_to_flat_transforms, rotate,
                                             transform, translate, translations_to_projective_transforms)
from ..graph.ops.image_warp_ops import dense_image_warp, interpolate_bilinear  # noqa: F401
from ..graph.ops.image_yiq_ops import adjust_hsv_in_yiq, random_hsv_in_yiq  # noqa: F401

__all__ = ["transform", "rotate", "translate", "angles_to_projective_transforms",
           "translations_to_projective_transforms", "compose_transforms", "flat_transforms_to_matrices",
           "matrices_to_flat_transforms", "dense_image_warp", "interpolate_bilinear", "interpolate_spline",
           "sparse_image_warp", "connected_components", "bipartite_match", "adjust_hsv_in_yiq",
           "random_hsv_in_yiq", "single_image_random_dot_stereograms"]
