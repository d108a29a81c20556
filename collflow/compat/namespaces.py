"""TensorFlow 1.x's sub-namespaces that only gather ops collflow has at the top level or in
cf.nn: `tf.math`, `tf.random`, `tf.linalg` (as in TF 1.15's `tensorflow.compat.v1`).

Where a name means something else there than at the top level, the namespace holds TF's
meaning: `tf.linalg.diag` is the batch `matrix_diag` (the top-level `tf.diag` is the tensor
diag, `tf.linalg.tensor_diag`), `tf.linalg.transpose` swaps a batch of matrices' last two
dimensions, `tf.random.normal` is `tf.random_normal`.  A name TensorFlow has there and
collflow does not raises AttributeError saying so.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import collflow as _cf
from collflow import nn as _nn
from collflow.platform import gfile as _gfile
from collflow.platform import tfrecord as _tfrecord
from collflow.graph.ops import audio_ops as _audio_ops
from collflow.graph.ops import parsing_ops as _parsing
from collflow.graph.ops import bitwise_ops as _bw
from collflow.graph.ops import linalg_ops as _la
from collflow.graph.ops import linalg_extra_ops as _lx
from collflow.graph.ops import linalg_more_ops as _lm
from collflow.graph.ops import tally_ops as _tally
from collflow.graph.ops import sparse_ops as _sp
from collflow.graph.ops import sparse_more_ops as _spm
from collflow.graph.ops import sparse_cross_ops as _spx
from collflow.graph.ops import sparse_extra_ops as _spe
from collflow.graph.ops import string_format_ops as _string_format
from collflow.graph.ops import sparse_misc_ops as _spmisc
from collflow.graph.ops.sparse_accumulator_ops import SparseConditionalAccumulator as _SparseCondAcc
from collflow.graph.ops import special_ops as _special
from collflow.graph.ops import special_fn_ops as _sfn
from collflow.graph.ops import text_ops as _text
from collflow.graph.ops import lookup_ops as _lookup
from collflow.graph.ops.scan_ops import cumprod as _cumprod, cumsum as _cumsum
from collflow.graph.ops import complex_ops as _complex_ops
from collflow.graph.ops import fft_ops as _fft_ops

__all__ = ["math", "random", "linalg", "io", "python_io", "bitwise", "sparse", "strings", "debugging", "lookup",
           "audio", "spectral", "signal"]


class _Namespace:
    """A TF1 sub-namespace: the members given, and a clear error for the rest."""

    def __init__(self, path: str, doc: str, members: Dict[str, Any]):
        self.__dict__.update(members)
        self.__dict__["_path"] = path
        self.__doc__ = doc

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"collflow.compat.v1.{self._path} has no attribute {name!r}: TensorFlow 1.x's "
                             f"tf.{self._path}.{name} is not implemented in collflow (see docs/tf1_compat.md)")

    def __dir__(self) -> List[str]:
        return sorted(k for k in self.__dict__ if not k.startswith("_"))

    def __repr__(self) -> str:
        return f"<collflow namespace tf.{self._path}>"


# tf.math names that are the top-level op of the same name (TF 1.15)
_MATH_TOP = (
    "abs add add_n argmax argmin atan2 ceil cos count_nonzero divide equal erf exp floor floordiv "
    "floormod greater greater_equal is_finite is_inf is_nan less less_equal log log1p logical_and logical_not "
    "logical_or maximum minimum mod multiply negative not_equal pow reciprocal reduce_all reduce_any "
    "reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_sum rint round rsqrt segment_max "
    "segment_mean segment_min segment_sum sigmoid sign sin sqrt square squared_difference subtract tanh truediv "
    "unsorted_segment_max unsorted_segment_mean unsorted_segment_min unsorted_segment_sum").split()
# ... and those that are cf.nn's
_MATH_NN = "in_top_k l2_normalize log_softmax softmax softplus softsign top_k".split()


def _log_sigmoid(x: Any, name: Optional[str] = None) -> Any:
    """log(sigmoid(x)) = -softplus(-x), finite for every x (tf.math.log_sigmoid)."""
    return _cf.negative(_nn.softplus(_cf.negative(x)), name=name or "LogSigmoid")


def _logical_xor(x: Any, y: Any, name: Optional[str] = None) -> Any:
    """x != y for booleans (tf.math.logical_xor)."""
    return _cf.logical_and(_cf.logical_or(x, y), _cf.logical_not(_cf.logical_and(x, y)), name=name or "LogicalXor")


def _categorical(logits: Any, num_samples: Any, dtype: Any = None, seed: Optional[int] = None,
                 name: Optional[str] = None) -> Any:
    """tf.random.categorical: tf.multinomial with TF2's argument names."""
    return _cf.multinomial(logits, num_samples, seed=seed, name=name, output_dtype=dtype)


math = _Namespace("math", "tf.math: TensorFlow 1.x's math ops under their tf.math names.", {
    **{n: getattr(_cf, n) for n in _MATH_TOP}, **{n: getattr(_nn, n) for n in _MATH_NN},
    "cumsum": _cumsum, "cumprod": _cumprod, "log_sigmoid": _log_sigmoid, "logical_xor": _logical_xor,
    **{n: getattr(_complex_ops, n) for n in ("real", "imag", "conj", "angle")},
    **{n: getattr(_cf, n) for n in ("expm1", "tan", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh",
                                    "atanh")},
    "divide_no_nan": _cf.div_no_nan,
    "lgamma": _cf.lgamma, "digamma": _cf.digamma, "erfc": _cf.erfc, "lbeta": _cf.lbeta,
    "polygamma": _special.polygamma,
    **{n: getattr(_cf, n) for n in ("igamma", "igammac", "betainc", "zeta")},
    **{n: getattr(_tally, n) for n in ("reduce_variance", "reduce_std", "xlogy", "bincount", "confusion_matrix",
                                       "invert_permutation")},
    **{n: getattr(_cf, n) for n in ("multiply_no_nan", "reciprocal_no_nan", "xdivy", "xlog1py", "is_non_decreasing",
                                    "is_strictly_increasing", "reduce_euclidean_norm", "unsorted_segment_sqrt_n",
                                    "accumulate_n", "scalar_mul")},
    **{n: getattr(_sfn, n) for n in ("bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "ndtri", "erfinv",
                                     "erfcinv")}})
# tf.math.special (TF 2.x's names, present in tensorflow.compat.v1)
math.special = _Namespace("math.special", "tf.math.special: Bessel functions, dawsn, expint, Fresnel, spence.", {
    n: getattr(_sfn, n) for n in ("bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "bessel_j0", "bessel_j1",
                                  "bessel_y0", "bessel_y1", "bessel_k0", "bessel_k0e", "bessel_k1", "bessel_k1e",
                                  "dawsn", "expint", "fresnel_cos", "fresnel_sin", "spence")})

random = _Namespace("random", "tf.random: the random ops under their tf.random names.", {
    "normal": _cf.random_normal, "uniform": _cf.random_uniform, "truncated_normal": _cf.truncated_normal,
    "shuffle": _cf.random_shuffle, "categorical": _categorical, "multinomial": _cf.multinomial,
    "gamma": _cf.random_gamma,
    "set_random_seed": _cf.set_random_seed, "uniform_candidate_sampler": _nn.uniform_candidate_sampler,
    "log_uniform_candidate_sampler": _nn.log_uniform_candidate_sampler,
    "fixed_unigram_candidate_sampler": _nn.fixed_unigram_candidate_sampler,
    "all_candidate_sampler": _nn.all_candidate_sampler})
# TF 1.15's stateless ops (bit for bit TF's CPU values), tf.random.poisson, get_seed
from collflow.graph.ops import stateless_random_ops as _srand  # noqa: E402
from collflow.graph.ops import math_nn_more_ops as _mnm  # noqa: E402
for _k in ("stateless_uniform", "stateless_normal", "stateless_truncated_normal", "stateless_categorical",
           "stateless_multinomial", "get_seed"):
    setattr(random, _k, getattr(_srand, _k))
random.poisson = _srand.random_poisson
random.learned_unigram_candidate_sampler = _mnm.learned_unigram_candidate_sampler
# tf.random.experimental: TF 1.15's stateful Generator API (graph/random_generator.py)
from collflow.graph import random_generator as _rgen  # noqa: E402
random.experimental = _Namespace("random.experimental", "tf.random.experimental: the stateful Generator.",
                                 {n: getattr(_rgen, n) for n in _rgen.__all__})
for _k in _rgen.__all__:   # tensorflow.compat.v1 (TF >= 2.2) has them at tf.random too
    setattr(random, _k, getattr(_rgen, _k))
for _k in ("cumulative_logsumexp", "polyval", "segment_prod", "unsorted_segment_prod", "zero_fraction", "nextafter"):
    setattr(math, _k, getattr(_mnm, _k))

linalg = _Namespace("linalg", "tf.linalg: the matrix ops under their tf.linalg names (batch semantics).", {
    "matmul": _cf.matmul, "einsum": _cf.einsum, "eye": _cf.eye, "tensordot": _cf.tensordot, "norm": _cf.norm,
    "global_norm": _cf.global_norm, "l2_normalize": _nn.l2_normalize,
    "diag": _cf.matrix_diag, "diag_part": _cf.matrix_diag_part, "set_diag": _cf.matrix_set_diag,
    "tensor_diag": _cf.diag, "tensor_diag_part": _cf.diag_part,
    "transpose": _cf.matrix_transpose, "matrix_transpose": _cf.matrix_transpose,
    "inv": _cf.matrix_inverse, "det": _cf.matrix_determinant, "slogdet": _la.log_matrix_determinant,
    "logdet": _la.logdet, "cholesky": _cf.cholesky, "solve": _cf.matrix_solve,
    "triangular_solve": _cf.matrix_triangular_solve, "band_part": _cf.matrix_band_part,
    "cholesky_solve": _cf.cholesky_solve, "trace": _cf.trace, "qr": _cf.qr,
    "eigh": _cf.self_adjoint_eig, "eigvalsh": _cf.self_adjoint_eigvals, "lstsq": _cf.matrix_solve_ls,
    "svd": _cf.svd, "sqrtm": _cf.matrix_square_root, "expm": _lx.matrix_exponential, "lu": _lm.lu,
    "cross": _cf.cross,
    **{n: getattr(_lx, n) for n in ("pinv", "matrix_rank", "lu_reconstruct", "lu_solve", "lu_matrix_inverse",
                                    "adjoint", "matvec", "normalize", "tridiagonal_matmul", "tridiagonal_solve")}})
# tf.linalg.LinearOperator* (graph/linear_operator/) and tf.linalg.eigh_tridiagonal
from collflow.graph import linear_operator as _linop  # noqa: E402
from collflow.graph.ops.eigh_tridiagonal_ops import eigh_tridiagonal as _eigh_tridiagonal  # noqa: E402
linalg.__dict__.update({n: getattr(_linop, n) for n in _linop.__all__})
linalg.__dict__["eigh_tridiagonal"] = _eigh_tridiagonal
from collflow.graph.ops.complex_linalg_ops import logm as _logm  # noqa: E402
linalg.__dict__["logm"] = _logm

# TFRecord files: tf.python_io, and the same names under tf.io
_TFRECORD = {n: getattr(_tfrecord, n) for n in ("TFRecordWriter", "tf_record_iterator", "TFRecordOptions",
                                                "TFRecordCompressionType")}
python_io = _Namespace("python_io", "tf.python_io: TFRecord files (writer, iterator, options).", dict(_TFRECORD))

io = _Namespace("io", "tf.io: gfile (TF2's lower-case names) and the parsing ops under their tf.io names.", {
    "gfile": _gfile.io_gfile, "decode_csv": _cf.decode_csv, "encode_base64": _cf.encode_base64,
    "decode_base64": _cf.decode_base64, "matching_files": _cf.matching_files, "read_file": _cf.read_file,
    "write_file": _cf.write_file, **_TFRECORD,
    "decode_raw": _cf.decode_raw, "decode_compressed": _cf.decode_compressed,
    **{n: getattr(_cf.image, n) for n in ("decode_jpeg", "decode_png", "decode_gif", "decode_bmp", "decode_image",
                                          "encode_jpeg", "encode_png", "is_jpeg", "extract_jpeg_shape")},
    "parse_sequence_example": _parsing.parse_sequence_example,
    **{n: getattr(_cf, n) for n in ("parse_example", "parse_single_example", "parse_single_sequence_example",
                                    "FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature", "SparseFeature")}})

audio = _Namespace("audio", "tf.audio: the WAV codec (16-bit PCM).", {
    n: getattr(_audio_ops, n) for n in ("encode_wav", "decode_wav")})

debugging = _Namespace("debugging", "tf.debugging: the assertions and numeric checks.", {
    **{n: getattr(_cf, n) for n in ("Assert", "assert_equal", "assert_less", "assert_less_equal", "assert_positive",
                                    "assert_non_negative", "assert_rank", "assert_greater", "assert_greater_equal",
                                    "assert_none_equal", "assert_negative", "assert_non_positive", "assert_near",
                                    "assert_rank_at_least", "assert_rank_in", "assert_integer", "assert_type",
                                    "assert_scalar", "check_numerics", "is_nan", "is_finite", "is_inf")},
    "assert_all_finite": _cf.verify_tensor_all_finite})

bitwise = _Namespace("bitwise", "tf.bitwise: bitwise ops on integer tensors.", {
    n: getattr(_bw, n) for n in _bw.__all__})

sparse = _Namespace("sparse", "tf.sparse: SparseTensor and the ops on it.", {
    "SparseTensor": _cf.SparseTensor, "SparseTensorValue": _cf.SparseTensorValue, "placeholder": _sp.sparse_placeholder,
    "to_dense": _sp.sparse_tensor_to_dense, "reduce_sum": _sp.sparse_reduce_sum,
    "sparse_dense_matmul": _sp.sparse_tensor_dense_matmul, "matmul": _sp.sparse_tensor_dense_matmul,
    "add": _sp.sparse_add, "reorder": _sp.sparse_reorder, "retain": _sp.sparse_retain,
    "concat": _spm.sparse_concat, "reshape": _spm.sparse_reshape, "slice": _spm.sparse_slice,
    "fill_empty_rows": _spm.sparse_fill_empty_rows, "transpose": _spm.sparse_transpose,
    "cross": _spx.sparse_cross, "cross_hashed": _spx.sparse_cross_hashed,
    **{n[len("sparse_"):]: getattr(_spe, n) for n in (
        "sparse_softmax", "sparse_reduce_max", "sparse_reduce_max_sparse", "sparse_reduce_sum_sparse",
        "sparse_maximum", "sparse_minimum", "sparse_split", "sparse_to_indicator", "sparse_merge",
        "sparse_reset_shape", "sparse_segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n", "sparse_mask")},
    "bincount": _spmisc.sparse_bincount, "expand_dims": _spmisc.sparse_expand_dims, "eye": _spmisc.sparse_eye,
    "from_dense": _spmisc.sparse_from_dense, "SparseConditionalAccumulator": _SparseCondAcc})
# TF's tf.io names of the sparse serialization ops (TF has them under tf.io, not tf.sparse)
io.__dict__.update({n: getattr(_cf, n) for n in ("serialize_sparse", "serialize_many_sparse",
                                                  "deserialize_many_sparse")})

strings = _Namespace("strings", "tf.strings: the string ops under their tf.strings names.", {
    "join": _text.string_join, "reduce_join": _text.reduce_join, "substr": _text.substr,
    "regex_replace": _text.regex_replace, "regex_full_match": _text.regex_full_match, "strip": _text.string_strip,
    "length": _text.string_length, "lower": _text.string_lower, "upper": _text.string_upper,
    "split": _text.strings_split, "to_number": _cf.string_to_number, "as_string": _cf.as_string,
    "to_hash_bucket_strong": _cf.string_to_hash_bucket_strong,
    "to_hash_bucket_fast": _cf.string_to_hash_bucket_fast, "to_hash_bucket": _cf.string_to_hash_bucket,
    "format": _string_format.string_format, "unsorted_segment_join": _string_format.unsorted_segment_join})
# tf.strings.unicode_* and split's result_type="RaggedTensor" (graph/ops/unicode_ops.py); tf.ragged
from collflow.graph.ops import unicode_ops as _uni, ragged_math as _rgm, ragged_tensor as _rgt  # noqa: E402
strings.__dict__.update({n: getattr(_uni, n) for n in _uni.__all__ if n.startswith("unicode_")})
strings.__dict__["split"] = _uni.strings_split
from collflow.graph.ops.ngram_ops import ngrams as _ngrams  # noqa: E402
strings.__dict__["ngrams"] = _ngrams
ragged = _Namespace("ragged", "tf.ragged: RaggedTensor helpers (TF 1.15's names).", {
    "constant": _rgm.constant, "constant_value": _rgm.constant_value, "map_flat_values": _rgm.map_flat_values,
    "row_splits_to_segment_ids": _rgm.row_splits_to_segment_ids, "boolean_mask": _rgm.boolean_mask,
    "segment_ids_to_row_splits": _rgm.segment_ids_to_row_splits, "range": _rgm.ragged_range,
    "placeholder": _rgm.placeholder, "RaggedTensorValue": _rgt.RaggedTensorValue, "stack": _rgm.stack})

lookup = _Namespace("lookup", "tf.lookup: static hash and vocabulary tables (also tf.contrib.lookup's names).", {
    n: getattr(_lookup, n) for n in _lookup.__all__})
lookup.experimental = _Namespace("lookup.experimental", "tf.lookup.experimental: the mutable tables.", {
    "MutableHashTable": _lookup._mutable_lookup_ops.MutableHashTable,
    "DenseHashTable": _lookup._mutable_lookup_ops.DenseHashTable})

# tf.spectral and tf.signal (TF 1.15 has both): the FFTs and DCTs; tf.signal also framing, windows,
# stft and the mel/MFCC helpers (graph/ops/signal_ops.py, signal_mel_ops.py)
from collflow.graph.ops import signal_ops as _signal_ops  # noqa: E402
from collflow.graph.ops import signal_mel_ops as _signal_mel_ops  # noqa: E402
_FFT_NAMES = ("fft", "ifft", "fft2d", "ifft2d", "fft3d", "ifft3d", "rfft", "irfft", "rfft2d", "irfft2d", "rfft3d",
              "irfft3d")
spectral = _Namespace("spectral", "tf.spectral: the FFTs and DCTs.", {
    **{n: getattr(_fft_ops, n) for n in _FFT_NAMES}, "dct": _signal_mel_ops.dct, "idct": _signal_mel_ops.idct})
signal = _Namespace("signal", "tf.signal: FFTs, DCTs, frames, windows, STFTs, mel and MFCC helpers.", {
    **{n: getattr(_fft_ops, n) for n in _FFT_NAMES}, **{n: getattr(_signal_ops, n) for n in _signal_ops.__all__},
    **{n: getattr(_signal_mel_ops, n) for n in _signal_mel_ops.__all__}})
