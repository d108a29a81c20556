"""tf.contrib.seq2seq (TensorFlow 1.x): sequence_loss, the decoders and helpers, dynamic_decode,
and the attention mechanisms with AttentionWrapper, under TF 1.x's names, signatures and
variable names."""
from .decoder import (BasicDecoder, BasicDecoderOutput, CustomHelper, Decoder, GreedyEmbeddingHelper, Helper,
                      SampleEmbeddingHelper, TrainingHelper, dynamic_decode)
from .attention import AttentionMechanism, AttentionWrapper, AttentionWrapperState, BahdanauAttention, LuongAttention
from .beam_search import (BeamSearchDecoder, BeamSearchDecoderOutput, BeamSearchDecoderState,
                          FinalBeamSearchDecoderOutput, gather_tree, tile_batch)
from .helpers_more import InferenceHelper, ScheduledEmbeddingTrainingHelper, ScheduledOutputTrainingHelper
from .loss import sequence_loss
from .monotonic import (BahdanauMonotonicAttention, LuongMonotonicAttention, hardmax, monotonic_attention,
                        safe_cumprod)

__all__ = ["sequence_loss", "Decoder", "dynamic_decode", "Helper", "CustomHelper", "TrainingHelper",
           "GreedyEmbeddingHelper", "SampleEmbeddingHelper", "BasicDecoder", "BasicDecoderOutput",
           "AttentionMechanism", "BahdanauAttention", "LuongAttention", "AttentionWrapper", "AttentionWrapperState",
           "BeamSearchDecoder", "BeamSearchDecoderOutput", "BeamSearchDecoderState", "FinalBeamSearchDecoderOutput",
           "gather_tree", "tile_batch", "InferenceHelper", "ScheduledEmbeddingTrainingHelper",
           "ScheduledOutputTrainingHelper", "BahdanauMonotonicAttention", "LuongMonotonicAttention", "hardmax",
           "monotonic_attention", "safe_cumprod"]
