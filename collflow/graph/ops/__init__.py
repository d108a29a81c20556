"""Op constructors, one module per family; importing this package registers them all."""
from . import constant_op, state_ops, math_ops, array_ops, nn_ops, random_ops, data_flow_ops, control_flow_ops, fusion_ops, debug_ops, training_ops, io_ops  # noqa: F401
from . import reverse_ops  # noqa: F401  (tf.reverse, tf.reverse_sequence)
from . import rnn_ops  # noqa: F401  (the fused LSTM cell)
from . import scan_ops  # noqa: F401  (tf.cumsum, tf.cumprod)
from . import dynamic_shape_ops  # noqa: F401  (reshape to a run-time shape)
from . import (math_extra_ops, matrix_ops, index_ops, segment_ops, logging_ops, check_ops,  # noqa: F401
               nn_extra_ops, image_ops, categorical_ops)  # (TF1 fidelity part 3: tf.div, tf.einsum, ...)
from . import partition_ops  # noqa: F401  (tf.unique, tf.dynamic_partition, tf.dynamic_stitch)
from . import math_more_ops  # noqa: F401  (tf.expm1, tf.atan, tf.sinh, ..., tf.div_no_nan)
from . import bitwise_ops  # noqa: F401  (tf.bitwise)
from . import special_ops  # noqa: F401  (tf.lgamma, tf.digamma, tf.erfc)
from . import special_more_ops  # noqa: F401  (tf.igamma, tf.betainc, tf.zeta, tf.polygamma, tf.random_gamma)
from . import text_ops  # noqa: F401  (tf.string_join, tf.string_split, tf.strings.*)
from . import eig_ops  # noqa: F401  (tf.self_adjoint_eig, tf.matrix_solve_ls)
from . import ctc_ops  # noqa: F401  (tf.nn.ctc_loss)
from . import svd_ops  # noqa: F401  (tf.svd)
from . import reader_ops  # noqa: F401  (tf.TFRecordReader and the other readers, tf.decode_raw)
from . import image_codec_ops  # noqa: F401  (tf.image.decode_jpeg/png/gif/bmp/image, encode_jpeg/png)
