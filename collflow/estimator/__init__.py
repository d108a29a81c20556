"""TensorFlow 1.x's tf.estimator: Estimator, EstimatorSpec, RunConfig, train_and_evaluate,
tf.estimator.inputs.numpy_input_fn and the canned linear/DNN models (see docs/tf1_compat.md)."""
import types as _types

from .model_fn import ModeKeys, EstimatorSpec, RunConfig  # noqa: F401
from .estimator import Estimator, WarmStartSettings, VocabInfo  # noqa: F401
from .training import TrainSpec, EvalSpec, train_and_evaluate  # noqa: F401
from .exporter import Exporter, LatestExporter, FinalExporter, BestExporter  # noqa: F401
from . import inputs as _inputs_module
from .canned import (LinearClassifier, LinearRegressor, DNNClassifier, DNNRegressor,  # noqa: F401
                     DNNLinearCombinedClassifier, DNNLinearCombinedRegressor)

from ..train.hooks import (SessionRunHook, SessionRunArgs, SessionRunContext, SessionRunValues,  # noqa: F401,E402
                           SecondOrStepTimer, StopAtStepHook, LoggingTensorHook, CheckpointSaverHook,
                           CheckpointSaverListener, SummarySaverHook, StepCounterHook, NanTensorHook,
                           NanLossDuringTrainingError, FinalOpsHook, FeedFnHook)  # TF1 has them here too

from . import export as _export_module  # noqa: E402

# tf.estimator.export (TF1's module of serving receivers and export outputs)
export = _types.SimpleNamespace(**{n: getattr(_export_module, n) for n in (
    "ServingInputReceiver", "TensorServingInputReceiver", "build_parsing_serving_input_receiver_fn",
    "build_raw_serving_input_receiver_fn", "ExportOutput", "PredictOutput", "ClassificationOutput",
    "RegressionOutput")})

# tf.estimator.inputs.numpy_input_fn (TF1's module of input functions)
inputs = _types.SimpleNamespace(numpy_input_fn=_inputs_module.numpy_input_fn,
                                pandas_input_fn=_inputs_module.pandas_input_fn)
