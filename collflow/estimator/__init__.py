"""TensorFlow 1.x's tf.estimator: Estimator, EstimatorSpec, RunConfig, train_and_evaluate,
tf.estimator.inputs.numpy_input_fn and the canned linear/DNN models (see docs/tf1_compat.md)."""
import types as _types

__all__ = ["ModeKeys", "EstimatorSpec", "RunConfig", "Estimator", "WarmStartSettings", "VocabInfo", "TrainSpec",
           "EvalSpec", "train_and_evaluate", "Exporter", "LatestExporter", "FinalExporter", "BestExporter",
           "LinearClassifier", "LinearRegressor", "DNNClassifier", "DNNRegressor", "DNNLinearCombinedClassifier",
           "DNNLinearCombinedRegressor", "BaselineClassifier", "BaselineRegressor", "BaselineEstimator",
           "LinearEstimator", "DNNEstimator", "DNNLinearCombinedEstimator", "BinaryClassHead", "MultiClassHead",
           "RegressionHead", "PoissonRegressionHead", "LogisticRegressionHead", "MultiLabelHead", "MultiHead",
           "SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues", "SecondOrStepTimer",
           "StopAtStepHook", "LoggingTensorHook", "CheckpointSaverHook", "CheckpointSaverListener",
           "SummarySaverHook", "StepCounterHook", "NanTensorHook", "NanLossDuringTrainingError", "FinalOpsHook",
           "FeedFnHook", "export", "inputs", "contrib_estimator", "experimental"]

from .model_fn import ModeKeys, EstimatorSpec, RunConfig  # noqa: F401
from .estimator import Estimator, WarmStartSettings, VocabInfo  # noqa: F401
from .training import TrainSpec, EvalSpec, train_and_evaluate  # noqa: F401
from .exporter import Exporter, LatestExporter, FinalExporter, BestExporter  # noqa: F401
from . import inputs as _inputs_module
from .canned import (LinearClassifier, LinearRegressor, DNNClassifier, DNNRegressor,  # noqa: F401
                     DNNLinearCombinedClassifier, DNNLinearCombinedRegressor)
from .baseline import BaselineClassifier, BaselineRegressor, BaselineEstimator  # noqa: F401
from .head_estimators import LinearEstimator, DNNEstimator, DNNLinearCombinedEstimator  # noqa: F401
# the public heads (TF 2's tf.estimator names; TF 1.15's tf.contrib.estimator factories are in
# heads.py and multi_head.py: binary_classification_head, ..., multi_head)
from .heads import (BinaryClassHead, MultiClassHead, RegressionHead, PoissonRegressionHead,  # noqa: F401
                    LogisticRegressionHead, MultiLabelHead)
from .multi_head import MultiHead  # noqa: F401
from . import heads as _heads_module, multi_head as _multi_head_module  # noqa: E402

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

# TF 1.15's tf.contrib.estimator head factories (wire into tf.contrib as `estimator`)
contrib_estimator = _types.SimpleNamespace(
    **{n: getattr(_heads_module, n) for n in (
        "binary_classification_head", "multi_class_head", "regression_head", "poisson_regression_head",
        "logistic_regression_head", "multi_label_head")},
    multi_head=_multi_head_module.multi_head, LinearEstimator=LinearEstimator, DNNEstimator=DNNEstimator,
    DNNLinearCombinedEstimator=DNNLinearCombinedEstimator)

# tf.estimator.experimental (and tf.contrib.estimator): the early-stopping hooks
from . import early_stopping as _early_stopping  # noqa: E402
experimental = _types.SimpleNamespace(**{n: getattr(_early_stopping, n) for n in _early_stopping.__all__
                                         if n != "read_eval_metrics"})
for _name in _early_stopping.__all__:
    setattr(contrib_estimator, _name, getattr(_early_stopping, _name))
del _name

# tf.estimator.inputs.numpy_input_fn (TF1's module of input functions)
inputs = _types.SimpleNamespace(numpy_input_fn=_inputs_module.numpy_input_fn,
                                pandas_input_fn=_inputs_module.pandas_input_fn)
