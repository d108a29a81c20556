"""The graph ops the distributions are written with, gathered in one namespace (`o.log`,
`o.where`, ...) so each distribution module reads like TF1 code."""
from __future__ import annotations

from ...graph.graph import control_dependencies, convert_to_tensor, name_scope  # noqa: F401
from ...graph.ops.array_ops import (shape, concat, broadcast_to, reshape, ones_like, zeros_like,  # noqa: F401
                                    where, one_hot, fill, expand_dims, rank, squeeze, transpose, ones, zeros,
                                    stack, tile)
from ...graph.ops.misc_ops import range  # noqa: F401,A004
from ...graph.ops.math_ops import (log, exp, log1p, reduce_sum, reduce_logsumexp, reduce_max, argmax,  # noqa: F401
                                   cast, sqrt, square, abs, sign, maximum, minimum, equal, greater, less,
                                   less_equal, greater_equal, logical_and, logical_or, reduce_mean,
                                   reciprocal, clip_by_value, reduce_prod)
from ...graph.ops.math_more_ops import expm1  # noqa: F401
from ...graph.ops.matrix_ops import matrix_diag  # noqa: F401
from ...graph.ops.math_extra_ops import erf, is_finite, floor, is_nan  # noqa: F401
from ...graph.ops.nn_ops import sigmoid, log_softmax, softmax, tanh  # noqa: F401
from ...graph.ops.nn_extra_ops import softplus  # noqa: F401
from ...graph.ops.random_ops import random_normal, random_uniform  # noqa: F401
from ...graph.ops.categorical_ops import multinomial  # noqa: F401
from ...graph.ops.special_ops import erfc, lgamma, digamma, lbeta  # noqa: F401
from ...graph.ops.special_more_ops import igamma, betainc, random_gamma  # noqa: F401
from ...graph.ops.constant_op import constant, stop_gradient, identity  # noqa: F401
from ...graph.ops.check_ops import assert_positive, assert_less, assert_non_negative  # noqa: F401
from ...graph.ops.misc_more_ops import broadcast_dynamic_shape, broadcast_static_shape  # noqa: F401
from ...graph.ops.tally_ops import xlogy  # noqa: F401
from ...graph.ops.nan_safe_ops import xlog1py  # noqa: F401
