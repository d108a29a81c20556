"""Neural-network ops (cf.nn.relu, cf.nn.conv2d, ...), layers and initializers.

`cf.nn.conv2d` is the raw op (input, filter, strides, padding); the layer that creates
its own kernel is `cf.layers.conv2d` (also `cf.nn.layers.conv2d`).
"""
from ..graph.ops.nn_ops import *  # noqa: F401,F403
from ..graph.ops.nn_impl import *  # noqa: F401,F403
from ..graph.ops.candidate_sampling_ops import *  # noqa: F401,F403
from ..graph.ops.misc_ops import top_k, in_top_k  # noqa: F401
from ..graph.ops.nn_extra_ops import *  # noqa: F401,F403  (relu6, elu, selu, softplus, softsign, conv2d_transpose, lrn)
from ..graph.ops.nn_more_tf1_ops import *  # noqa: F401,F403  (conv1d_transpose, max_pool_with_argmax, ...)
from ..graph.ops.block_ops import with_space_to_batch  # noqa: F401
from ..graph.ops.depthwise_ops import *  # noqa: F401,F403  (depthwise, separable and atrous convolutions)
from ..graph.ops.nn_composites import *  # noqa: F401,F403  (zero_fraction, swish, crelu, space_to_depth, fused_batch_norm, ...)
from ..graph.ops.sparse_ops import embedding_lookup_sparse, safe_embedding_lookup_sparse  # noqa: F401
from ..graph.ops.conv3d_ops import conv3d, max_pool3d, avg_pool3d, conv3d_transpose  # noqa: F401
from ..graph.ops.conv_dispatch_ops import convolution, pool, max_pool1d, avg_pool1d, max_pool_v2, avg_pool_v2  # noqa: F401
from ..graph.ops.ctc_ops import ctc_loss, ctc_greedy_decoder, ctc_beam_search_decoder  # noqa: F401
from ..graph.ops.ctc_v2_ops import ctc_loss_v2, ctc_beam_search_decoder_v2  # noqa: F401
from .replica_losses import compute_average_loss, scale_regularization_loss  # noqa: F401,E402
from ..graph.ops.math_nn_more_ops import collapse_repeated, ctc_unique_labels, learned_unigram_candidate_sampler  # noqa: F401,E501
from ..graph.ops.block_ops import space_to_batch  # noqa: F401  (tf.nn.space_to_batch: the top-level op)
from ..graph.ops.morph_ops import (dilation2d, erosion2d, conv3d_backprop_filter,  # noqa: F401
                                   conv3d_backprop_filter_v2)
from ..graph.ops.fractional_pool_ops import fractional_max_pool, fractional_avg_pool  # noqa: F401
from . import initializers, layers  # noqa: F401,E402
from .rnn import *  # noqa: F401,F403
from .raw_rnn import raw_rnn  # noqa: F401
from . import rnn  # noqa: F401
from .embedding_ps import Embedding  # noqa: F401
from . import losses  # noqa: F401,E402  (also cf.losses)
