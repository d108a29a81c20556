"""tf.contrib.framework.python.ops.audio_ops (TF1's speech-commands tutorial imports it as
`contrib_audio`): audio_spectrogram, mfcc and the WAV codec.

    from collflow.contrib.framework.python.ops import audio_ops as contrib_audio
    spec = contrib_audio.audio_spectrogram(wav, window_size=480, stride=160, magnitude_squared=True)
    feats = contrib_audio.mfcc(spec, sample_rate, dct_coefficient_count=40)
"""
from ..graph.ops.audio_ops import decode_wav, encode_wav
from ..graph.ops.speech_ops import audio_spectrogram, mfcc

__all__ = ["audio_spectrogram", "mfcc", "decode_wav", "encode_wav"]
