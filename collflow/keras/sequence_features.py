"""tf.keras.experimental.SequenceFeatures (TF 1.15 and tf_keras): the sequence feature
columns' outputs for a dict of features as one [batch, T, D] tensor plus the sequence lengths,
what contrib's sequence_input_layer makes, with the variables under the layer's scope
(sequence_features/<column>/...)."""
from __future__ import annotations

from typing import Any, Optional, Tuple

from ..graph import graph as _g
from ..graph.ops import array_ops as _a
from ..graph.variable_scope import variable_scope
from ..nn.feature_column import sequence_columns as _seq
from .base_layer import Layer
from .layers_wrap import feature_layer_call

__all__ = ["SequenceFeatures"]


class SequenceFeatures(Layer):
    """Sequence dense columns (sequence_numeric_column, embedding / indicator columns over
    sequence_categorical_column_with_*) into (input [batch, T, D], sequence_length [batch]),
    the columns in name order; all of them must give the same lengths (checked at run time)."""

    def __init__(self, feature_columns: Any, trainable: bool = True, name: Optional[str] = None, **kwargs: Any):
        from ..nn.feature_column.models import _normalize
        super().__init__(trainable=trainable, name=name, **kwargs)
        cols = _normalize(feature_columns)
        for c in cols:
            if not isinstance(c, _seq._SEQUENCE_DENSE):
                raise ValueError(f"All feature_columns must be of type SequenceDenseColumn. You can wrap a "
                                 f"sequence_categorical_column with an embedding_column or indicator_column. Given "
                                 f"(type {type(c)}): {c}")
        self._feature_columns = sorted(cols, key=lambda c: c.name)
        self._keys: Optional[list] = None

    def __call__(self, features: Any, training: Any = None) -> Tuple[_g.Tensor, _g.Tensor]:
        return feature_layer_call(self, features, self._outputs)

    def _outputs(self, builder: Any) -> Tuple[_g.Tensor, _g.Tensor]:
        from ..nn.feature_column.models import _check_batch_sizes
        outputs, lengths = [], []
        for c in self._feature_columns:
            with variable_scope(c._var_scope_name):
                dense, length = c._get_sequence_dense_tensor(builder, trainable=self.trainable)
                n = c._variable_shape.num_elements()
                shape = _a.shape(dense)
                out = _a.reshape(dense, _a.stack([shape[0], shape[1], n]))
                out.set_shape([dense.shape.dims[0] if dense.shape.rank else None, None, n])
            outputs.append(out)
            lengths.append(length)
        _check_batch_sizes(outputs, self._feature_columns)
        return _a.concat(outputs, -1), _seq._all_equal(lengths)

    def get_config(self) -> dict:
        raise NotImplementedError("SequenceFeatures.get_config: collflow does not serialize feature columns; a "
                                  "model with SequenceFeatures is saved with save_weights, not to a config")
