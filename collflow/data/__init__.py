"""Datasets and input batching.

- `load_digits()`: the UCI 8x8 handwritten digits bundled as digits.npz (1797 examples,
  10 classes).  Source: E. Alpaydin and C. Kaynak, "Optical Recognition of Handwritten
  Digits", UCI Machine Learning Repository, 1998, https://doi.org/10.24432/C50P49,
  licensed under Creative Commons Attribution 4.0 (CC BY 4.0).  collflow ships the 8x8
  pixel counts (0..16) and labels unchanged, as uint8 arrays `x` (1797, 64) and `y` (1797,).
- `load_file(path)`: your own data in HDF5 (.h5/.hdf5) or NPZ with arrays x, y and
  optionally x_test, y_test.
- `synthetic(n, shape, num_classes, seed)`: a learnable synthetic set for benchmarks.
- `BatchIterator` / `batches(...)`: shuffled minibatches whose order is reproducible per
  epoch, whose position (epoch, offset) can be checkpointed, and which read one shard of
  each epoch per rank (`num_shards`, `shard_index`).
- `Dataset`, `Iterator`: TensorFlow 1.x's tf.data (dataset.py, iterator_ops.py); the
  loaders' train/test split class is `SplitDataset` here.
"""
from .datasets import Dataset as SplitDataset, load_digits, load_file, synthetic, split, DIGITS_PATH  # noqa: F401
from .batching import BatchIterator, batches, Position  # noqa: F401
from .dataset import Dataset  # noqa: F401
from .dataset_core import TensorSpec  # noqa: F401
from .dataset_more import TextLineDataset  # noqa: F401  (also installs padded_batch, flat_map, interleave, cache)
from . import dataset_window  # noqa: F401,E402  (installs Dataset.window)
from .record_datasets import TFRecordDataset, FixedLengthRecordDataset  # noqa: F401
from .iterator_ops import Iterator, make_one_shot_iterator, make_initializable_iterator  # noqa: F401

__all__ = ["Dataset", "DatasetSpec", "TensorSpec", "TextLineDataset", "Iterator", "make_one_shot_iterator", "make_initializable_iterator",
           "TFRecordDataset", "FixedLengthRecordDataset", "Options",
           "SplitDataset", "load_digits", "load_file", "synthetic", "split", "DIGITS_PATH",
           "BatchIterator", "batches", "Position", "get_output_shapes", "get_output_types", "get_output_classes"]


def get_output_shapes(dataset_or_iterator: object) -> object:
    """tf.data.get_output_shapes: the static shapes of the elements (TF1's accessor)."""
    return dataset_or_iterator.output_shapes  # type: ignore[attr-defined]


def get_output_types(dataset_or_iterator: object) -> object:
    """tf.data.get_output_types: the dtypes of the elements."""
    return dataset_or_iterator.output_types  # type: ignore[attr-defined]


def get_output_classes(dataset_or_iterator: object) -> object:
    """tf.data.get_output_classes: the classes of the elements (Tensor)."""
    return dataset_or_iterator.output_classes  # type: ignore[attr-defined]
from . import text  # noqa: F401
from .text import CharCorpus, load_stdlib_corpus  # noqa: F401


from . import dataset_experimental as _dx, dataset_grouping as _dg  # noqa: E402
from .dataset_experimental import Options  # noqa: F401,E402  (also installs list_files, with_options, unbatch)
from . import csv_dataset as _csv, cardinality as _cd, dataset_experimental_more as _dxm  # noqa: E402
from . import resampling as _rs, sql_dataset as _sql  # noqa: E402
from . import iterator_state as _its, input_pipeline_hook as _iph, structure as _st, stats_aggregator as _sa  # noqa: E402
from .structure import DatasetSpec  # noqa: F401,E402


class experimental:  # noqa: N801 - TF's name
    """tf.data.experimental: AUTOTUNE (-1), which num_parallel_calls and prefetch accept (collflow
    produces elements when get_next runs, so any count gives the same elements), and the
    transformation functions of dataset_experimental.py and dataset_grouping.py."""
    AUTOTUNE = -1
    Options = _dx.Options
    OptimizationOptions, ThreadingOptions = _dx.OptimizationOptions, _dx.ThreadingOptions
    DistributeOptions, StatsOptions = _dx.DistributeOptions, _dx.StatsOptions
    shuffle_and_repeat = staticmethod(_dx.shuffle_and_repeat)
    map_and_batch = staticmethod(_dx.map_and_batch)
    parallel_interleave = staticmethod(_dx.parallel_interleave)
    unbatch = staticmethod(_dx.unbatch)
    ignore_errors = staticmethod(_dx.ignore_errors)
    enumerate_dataset = staticmethod(_dx.enumerate_dataset)
    choose_from_datasets = staticmethod(_dx.choose_from_datasets)
    sample_from_datasets = staticmethod(_dx.sample_from_datasets)
    get_single_element = staticmethod(_dx.get_single_element)
    scan = staticmethod(_dg.scan)
    group_by_window = staticmethod(_dg.group_by_window)
    bucket_by_sequence_length = staticmethod(_dg.bucket_by_sequence_length)
    Reducer = _dg.Reducer
    group_by_reducer = staticmethod(_dg.group_by_reducer)
    # csv_dataset.py, cardinality.py, dataset_experimental_more.py
    CsvDataset = staticmethod(_csv.CsvDataset)
    make_csv_dataset = staticmethod(_csv.make_csv_dataset)
    INFINITE_CARDINALITY, UNKNOWN_CARDINALITY = _cd.INFINITE_CARDINALITY, _cd.UNKNOWN_CARDINALITY
    cardinality = staticmethod(_cd.cardinality)
    assert_cardinality = staticmethod(_cd.assert_cardinality)
    unique = staticmethod(_dxm.unique)
    take_while = staticmethod(_dxm.take_while)
    Counter = staticmethod(_dxm.Counter)
    RandomDataset = staticmethod(_dxm.RandomDataset)
    dense_to_sparse_batch = staticmethod(_dxm.dense_to_sparse_batch)
    copy_to_device = staticmethod(_dxm.copy_to_device)
    prefetch_to_device = staticmethod(_dxm.prefetch_to_device)
    TFRecordWriter = _dxm.TFRecordWriter
    parse_example_dataset = staticmethod(_dxm.parse_example_dataset)
    make_batched_features_dataset = staticmethod(_dxm.make_batched_features_dataset)
    Optional = _dxm.Optional
    get_next_as_optional = staticmethod(_dxm.get_next_as_optional)
    rejection_resample = staticmethod(_rs.rejection_resample)
    SqlDataset = staticmethod(_sql.SqlDataset)
    latency_stats = staticmethod(_dxm.latency_stats)
    bytes_produced_stats = staticmethod(_dxm.bytes_produced_stats)
    filter_for_shard = staticmethod(_dxm.filter_for_shard)
    map_and_batch_with_legacy_function = staticmethod(_dx.map_and_batch)
    # iterator_state.py, input_pipeline_hook.py: iterator positions in checkpoints
    make_saveable_from_iterator = staticmethod(_its.make_saveable_from_iterator)
    CheckpointInputPipelineHook = _iph.CheckpointInputPipelineHook
    # structure.py: TF 1.15's Structure names for the TypeSpecs
    Structure, DatasetStructure, OptionalStructure = _st.Structure, _st.DatasetStructure, _st.OptionalStructure
    TensorStructure = staticmethod(_st.TensorStructure)
    SparseTensorStructure = staticmethod(_st.SparseTensorStructure)
    RaggedTensorStructure = staticmethod(_st.RaggedTensorStructure)
    TensorArrayStructure = staticmethod(_st.TensorArrayStructure)
    get_structure = staticmethod(_st.get_structure)
    # stats_aggregator.py
    StatsAggregator = _sa.StatsAggregator
    MapVectorizationOptions = _dx.MapVectorizationOptions


# tf.data's own names for the constants (TF 2.x's; TF 1.15 had them under experimental only)
AUTOTUNE = experimental.AUTOTUNE
INFINITE_CARDINALITY, UNKNOWN_CARDINALITY = _cd.INFINITE_CARDINALITY, _cd.UNKNOWN_CARDINALITY
