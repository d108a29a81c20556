"""tf.feature_column (TensorFlow 1.x): columns that turn a dict of raw features into a model's
inputs, and the input_layer / linear_model that consume them.  See columns.py for the
categorical columns, dense_columns.py for indicator and embedding columns, models.py for
input_layer, linear_model and make_parse_example_spec, sequence_columns.py for the sequence_*
columns (TF 2.x's tf.compat.v1.feature_column has them; sequence_input_layer is
tf.contrib.feature_column's)."""
from .columns import (bucketized_column, categorical_column_with_hash_bucket,  # noqa: F401
                      categorical_column_with_identity, categorical_column_with_vocabulary_file,
                      categorical_column_with_vocabulary_list, crossed_column, numeric_column,
                      weighted_categorical_column)
from .dense_columns import embedding_column, indicator_column, shared_embedding_columns  # noqa: F401
from .models import input_layer, linear_model, make_parse_example_spec  # noqa: F401
from .sequence_columns import (sequence_categorical_column_with_hash_bucket,  # noqa: F401
                               sequence_categorical_column_with_identity,
                               sequence_categorical_column_with_vocabulary_file,
                               sequence_categorical_column_with_vocabulary_list, sequence_numeric_column)

__all__ = ["numeric_column", "bucketized_column", "categorical_column_with_identity",
           "categorical_column_with_vocabulary_list", "categorical_column_with_vocabulary_file",
           "categorical_column_with_hash_bucket", "crossed_column", "weighted_categorical_column",
           "indicator_column", "embedding_column", "shared_embedding_columns", "input_layer", "linear_model",
           "make_parse_example_spec", "sequence_categorical_column_with_identity",
           "sequence_categorical_column_with_hash_bucket", "sequence_categorical_column_with_vocabulary_file",
           "sequence_categorical_column_with_vocabulary_list", "sequence_numeric_column"]
