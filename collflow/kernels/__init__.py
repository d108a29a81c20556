"""Kernels per (op, device); importing this package registers all of them."""
from . import (basic_kernels, state_kernels, math_kernels, array_kernels, sparse_kernels,  # noqa: F401
               nn_kernels, random_kernels, queue_kernels, control_flow_kernels, debug_kernels,
               inplace_kernels, into_kernels, training_kernels, fused_kernels)
from . import tensor_array_kernels, reverse_kernels  # noqa: F401
from . import rnn_kernels  # noqa: F401
from . import scan_kernels  # noqa: F401
from . import misc_kernels, script_kernels, candidate_sampling_kernels  # noqa: F401
from . import string_kernels  # noqa: F401
from . import (math_extra_kernels, matrix_kernels, index_kernels, segment_kernels,  # noqa: F401
               logging_kernels, nn_extra_kernels, image_kernels, categorical_kernels)  # (TF1 fidelity part 3)
from . import partition_kernels, math_more_kernels, depthwise_kernels, linalg_kernels, special_kernels, text_kernels, ctc_kernels  # noqa: F401
from . import string_more_kernels, file_kernels  # noqa: F401,E402
from . import sparse_cross_kernels  # noqa: F401,E402  (tf.sparse.cross, crossed feature columns)
from . import parsing_kernels  # noqa: F401,E402
from . import lookup_kernels  # noqa: F401,E402  (tf.contrib.lookup / tf.lookup tables)
from . import reader_kernels  # noqa: F401,E402  (the readers, decode_raw)
from . import special_more_kernels  # noqa: F401,E402  (igamma, betainc, zeta, polygamma, random_gamma)
from . import image_codec_kernels  # noqa: F401,E402  (tf.image.decode_jpeg/png/gif/bmp, encode_*)
from . import audio_kernels  # noqa: F401,E402  (tf.audio.encode_wav/decode_wav)
from . import speech_kernels  # noqa: F401,E402  (AudioSpectrogram, Mfcc)
from . import image_kernels2  # noqa: F401,E402  (crop_and_resize, NMS, bicubic/area resize, boxes)
from . import complex_kernels  # noqa: F401,E402  (tf.complex, tf.real, ..., the FFTs)
from . import complex_more_kernels  # noqa: F401,E402  (tf.linalg.logm)
from . import ragged_kernels, unicode_kernels  # noqa: F401,E402  (tf.RaggedTensor's index helpers, tf.strings.unicode_*)
from . import priority_queue_kernels  # noqa: F401,E402  (tf.PriorityQueue)
from . import tensor_serialize_kernels  # noqa: F401,E402  (tf.io.serialize_tensor / parse_tensor)
from . import json_example_kernels  # noqa: F401,E402  (tf.decode_json_example)
from . import sets_kernels  # noqa: F401,E402  (tf.sets)
from . import stateless_random_kernels, math_nn_more_kernels, morph_kernels, fractional_pool_kernels, pool3d_kernels  # noqa: F401,E402  (tf.random.stateless_*; tf.math/tf.nn additions)
from . import scatter_more_kernels, core_misc_kernels, quant_kernels, critical_section_kernels  # noqa: F401,E402  (ScatterMul/Div/Min/Max, TensorScatterMin/Max; Timestamp, Fingerprint; FakeQuant*; CriticalSection)
from . import matrix_band_diag_kernels  # noqa: F401,E402  (MatrixDiagV3, MatrixDiagPartV3, MatrixSetDiagV3)
from . import string_format_kernels  # noqa: F401,E402  (StringFormat, UnsortedSegmentJoin)
from . import dynamic_reduce_kernels  # noqa: F401,E402  (ReduceDynamic, ReducedShape)
from . import dynamic_layout_kernels  # noqa: F401,E402  (TransposeDynamic, ExpandDimsDynamic)
from . import dynamic_shape_kernels  # noqa: F401,E402  (TileDynamic, PadDynamic, OneHotDynamic, BroadcastToDynamic, ...)
from .registry import register_kernel, get_kernel, AsyncHandle, ThreadHandle  # noqa: F401
from .device import get_array_module  # noqa: F401
from . import image_transform_kernels  # noqa: F401,E402  (ImageProjectiveTransformV2: contrib.image.transform/rotate)
from . import image_label_kernels, image_sirds_kernels  # noqa: F401,E402  (contrib.image: ImageConnectedComponents, BipartiteMatch, SingleImageRandomDotStereograms)
from . import stateful_random_kernels  # noqa: F401,E402  (tf.random.experimental.Generator's ops)
from . import quantized_kernels  # noqa: F401,E402  (QuantizeV2, Dequantize, QuantizedConcat, QuantizedConv2D/AvgPool/MaxPool/ReluX)
