"""SavedModel signatures: which tensors a served model takes and returns (TF1's TensorInfo,
SignatureDef and tf.saved_model.signature_def_utils / utils / signature_constants)."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from .. import dtypes as _dt
from ..graph import graph as _g
from ..graph.shape import TensorShape
from .meta_graph_codec import decode_shape, encode_shape

__all__ = ["TensorInfo", "SignatureDef", "build_tensor_info", "get_tensor_from_tensor_info", "build_signature_def",
           "predict_signature_def", "classification_signature_def", "regression_signature_def",
           "is_valid_signature", "signature_constants", "tag_constants"]


class signature_constants:  # noqa: N801  (TF1's module name)
    """TF1's tf.saved_model.signature_constants."""
    DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
    PREDICT_METHOD_NAME = "tensorflow/serving/predict"
    PREDICT_INPUTS = "inputs"
    PREDICT_OUTPUTS = "outputs"
    CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
    CLASSIFY_INPUTS = "inputs"
    CLASSIFY_OUTPUT_CLASSES = "classes"
    CLASSIFY_OUTPUT_SCORES = "scores"
    REGRESS_METHOD_NAME = "tensorflow/serving/regress"
    REGRESS_INPUTS = "inputs"
    REGRESS_OUTPUTS = "outputs"


class tag_constants:  # noqa: N801
    """TF1's tf.saved_model.tag_constants."""
    SERVING = "serve"
    TRAINING = "train"
    EVAL = "eval"
    GPU = "gpu"
    TPU = "tpu"


class TensorInfo:
    """A tensor of a signature: its name, dtype and shape (TF1's TensorInfo proto)."""

    def __init__(self, name: str = "", dtype: Any = None, tensor_shape: Any = None):
        self.name = name
        self.dtype = _dt.as_dtype(dtype) if dtype is not None else None
        self.tensor_shape = TensorShape(None) if tensor_shape is None else TensorShape(tensor_shape)

    def to_data(self) -> Dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype.name if self.dtype else None,
                "shape": encode_shape(self.tensor_shape)}

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> "TensorInfo":
        return cls(str(d["name"]), d.get("dtype"), decode_shape(d.get("shape")))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorInfo) and self.to_data() == other.to_data()

    def __repr__(self) -> str:
        return f"TensorInfo(name={self.name!r}, dtype={self.dtype!r}, shape={self.tensor_shape})"


class SignatureDef:
    """Named input and output tensors and a method name (TF1's SignatureDef proto)."""

    def __init__(self, inputs: Optional[Mapping[str, TensorInfo]] = None,
                 outputs: Optional[Mapping[str, TensorInfo]] = None, method_name: str = ""):
        self.inputs: Dict[str, TensorInfo] = dict(inputs or {})
        self.outputs: Dict[str, TensorInfo] = dict(outputs or {})
        self.method_name = method_name

    def to_data(self) -> Dict[str, Any]:
        return {"inputs": {k: v.to_data() for k, v in self.inputs.items()},
                "outputs": {k: v.to_data() for k, v in self.outputs.items()}, "method_name": self.method_name}

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> "SignatureDef":
        return cls({k: TensorInfo.from_data(v) for k, v in d.get("inputs", {}).items()},
                   {k: TensorInfo.from_data(v) for k, v in d.get("outputs", {}).items()}, str(d.get("method_name", "")))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SignatureDef) and self.to_data() == other.to_data()

    def __repr__(self) -> str:
        return f"SignatureDef(inputs={sorted(self.inputs)}, outputs={sorted(self.outputs)}, method={self.method_name!r})"


def build_tensor_info(tensor: Any) -> TensorInfo:
    """The TensorInfo of a Tensor (or a Variable's value) (tf.saved_model.utils.build_tensor_info)."""
    t = _g.convert_to_tensor(tensor)
    return TensorInfo(t.name, t.dtype, t.shape)


def get_tensor_from_tensor_info(tensor_info: TensorInfo, graph: Optional[_g.Graph] = None,
                                import_scope: Optional[str] = None) -> _g.Tensor:
    """The tensor a TensorInfo names, in `graph` (default: the default graph), under
    `import_scope` if the model was loaded into one."""
    g = graph or _g.get_default_graph()
    name = tensor_info.name
    if import_scope:
        name = import_scope.rstrip("/") + "/" + name
    return g.get_tensor_by_name(name)


def build_signature_def(inputs: Optional[Mapping[str, TensorInfo]] = None,
                        outputs: Optional[Mapping[str, TensorInfo]] = None, method_name: Optional[str] = None
                        ) -> SignatureDef:
    """A SignatureDef of TensorInfos (tf.saved_model.signature_def_utils.build_signature_def)."""
    return SignatureDef(inputs, outputs, method_name or "")


def _infos(tensors: Mapping[str, Any], what: str) -> Dict[str, TensorInfo]:
    if not isinstance(tensors, Mapping) or not tensors:
        raise ValueError(f"{what} must be a non-empty dict of tensors, got {tensors!r}")
    return {str(k): build_tensor_info(v) for k, v in tensors.items()}


def predict_signature_def(inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> SignatureDef:
    """A predict signature of tensors by name (tf.saved_model.signature_def_utils.predict_signature_def)."""
    return SignatureDef(_infos(inputs, "Prediction inputs"), _infos(outputs, "Prediction outputs"),
                        signature_constants.PREDICT_METHOD_NAME)


def classification_signature_def(examples: Any, classes: Any, scores: Any) -> SignatureDef:
    """A classify signature: serialized tf.Examples in, classes (string) and/or scores (float) out."""
    if examples is None:
        raise ValueError("Classification examples cannot be None.")
    outs = {}
    if classes is not None:
        outs[signature_constants.CLASSIFY_OUTPUT_CLASSES] = build_tensor_info(classes)
    if scores is not None:
        outs[signature_constants.CLASSIFY_OUTPUT_SCORES] = build_tensor_info(scores)
    if not outs:
        raise ValueError("Classification classes and scores cannot both be None.")
    return SignatureDef({signature_constants.CLASSIFY_INPUTS: build_tensor_info(examples)}, outs,
                        signature_constants.CLASSIFY_METHOD_NAME)


def regression_signature_def(examples: Any, predictions: Any) -> SignatureDef:
    """A regress signature: serialized tf.Examples in, float predictions out."""
    if examples is None or predictions is None:
        raise ValueError("Regression examples and predictions cannot be None.")
    return SignatureDef({signature_constants.REGRESS_INPUTS: build_tensor_info(examples)},
                        {signature_constants.REGRESS_OUTPUTS: build_tensor_info(predictions)},
                        signature_constants.REGRESS_METHOD_NAME)


def is_valid_signature(signature_def: Any) -> bool:
    """Whether a SignatureDef has a method name and inputs and outputs with names and dtypes."""
    if not isinstance(signature_def, SignatureDef) or not signature_def.method_name:
        return False
    infos = list(signature_def.inputs.values()) + list(signature_def.outputs.values())
    return bool(signature_def.inputs) and bool(signature_def.outputs) and all(i.name and i.dtype for i in infos)
