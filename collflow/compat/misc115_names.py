"""TF names collflow's other namespaces lacked, as TensorFlow 2.21's `tensorflow.compat.v1`
has them: tf.image.decode_and_crop_jpeg (and tf.io's), adjust_jpeg_quality,
random_jpeg_quality and transpose (graph/ops/image_jpeg_more_ops.py); tf.linalg's
LinearOperatorBlockLowerTriangular, LinearOperatorPermutation and LinearOperatorTridiag
(graph/linear_operator/, gathered into tf.linalg by namespaces.py); and
tf.test.assert_equal_graph_def, here.

assert_equal_graph_def compares two GraphDefs as TF's EqualGraphDef does: nodes matched by
name (order ignored), then op, device, inputs (in order, "x" the same as "x:0"; control
inputs as a set) and attributes, raising AssertionError with TF's messages.  As TF it skips
attributes named with a leading "_", except collflow's own "_collflow" attribute: that one
carries a collflow node's attributes (train/graph_def_io.py), so it is unpacked and its
attributes compared one by one as TF's typed ones are.
"""
from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from collflow import image as _image
from collflow.compat import namespaces as _ns
from collflow.compat import namespaces_more as _nsm
from collflow.graph.ops import image_jpeg_more_ops as _jpeg_more
from collflow.summary import proto as _proto
from collflow.train import meta_graph_codec as _codec
from collflow.train.graph_def_io import ATTR_KEY

__all__: List[str] = []

# -- tf.image / tf.io ------------------------------------------------------------------------------
for _name in _jpeg_more.__all__:
    setattr(_image, _name, getattr(_jpeg_more, _name))
_image.__all__ = list(_image.__all__) + [n for n in _jpeg_more.__all__ if n not in _image.__all__]
_ns.io.decode_and_crop_jpeg = _jpeg_more.decode_and_crop_jpeg


# -- tf.test.assert_equal_graph_def ------------------------------------------------------------------
_SHARDED_SAVE_OP_PATTERN = re.compile(rb"_temp_[0-9a-z]{32}/part")
_TABLE_SHARED_NAME_PATTERN = re.compile(rb"hash_table_[0-9a-z\-]+")


def _c_escape(b: bytes) -> str:
    """absl's CEscape, as TF's SummarizeAttrValue quotes a string: protobuf text format's escaping."""
    return _proto.text_escape(b)


def _fmt_float(f: float) -> str:
    """TF's FloatToBuffer: %g with 6 digits, 9 when 6 do not give the float32 back."""
    s = "%.6g" % f
    return s if np.float32(s) == np.float32(f) else "%.9g" % f


def _fmt_shape(dims: Optional[List[Optional[int]]]) -> str:
    if dims is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None or d < 0 else str(d) for d in dims) + "]"


# TF's DataTypeString where it differs from the NumPy-style name collflow uses
_TF_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _tf_type(name: str) -> str:
    return _TF_TYPE_NAMES.get(name, name)


def _dt_enum_name(name: str) -> str:
    return "DT_" + _tf_type(name).upper()


def _fmt_array(a: np.ndarray) -> str:
    """TF's SummarizeTensor: 'Tensor<type: float shape: [2] values: 1 2>' (3 values at most)."""
    kind = "string" if a.dtype.kind in "OSU" else _tf_type(a.dtype.name)
    flat = a.reshape(-1)
    vals = []
    for v in flat[:3]:
        if isinstance(v, bytes):
            vals.append(_c_escape(v))
        elif a.dtype.kind == "f":
            vals.append(_fmt_float(float(v)))
        elif a.dtype.kind == "b":
            vals.append("1" if v else "0")
        else:
            vals.append(str(v))
    more = "..." if flat.size > 3 else ""
    return f"Tensor<type: {kind} shape: {_fmt_shape(list(a.shape))} values: {' '.join(vals)}{more}>"


def _summarize(v: Any) -> str:
    """A decoded attribute value as TF's SummarizeAttrValue writes it."""
    from collflow import dtypes as _dt
    from collflow.graph.shape import TensorShape
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return _fmt_float(float(v))
    if isinstance(v, bytes):
        return f'"{_c_escape(v)}"'
    if isinstance(v, str):
        return f'"{_c_escape(v.encode("utf-8"))}"'
    if isinstance(v, _dt.DType):
        return _dt_enum_name(v.name)
    if isinstance(v, TensorShape):
        return _fmt_shape(v.as_list() if v.rank is not None else None)
    if isinstance(v, np.ndarray):
        return _fmt_array(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_summarize(x) for x in v) + "]"
    return str(v)


def _typed_attr(av: Any) -> Any:
    from collflow.train.tf_graph_def_import import decode_attr
    try:
        return decode_attr(av)
    except Exception:  # a member collflow cannot decode: its text stands for it
        return str(av)


def _attrs(node: Any, internal: bool = False) -> Dict[str, Tuple[Any, Any]]:
    """{name: (comparable value, decoded value)}: TF's typed attrs (ones named with a
    leading '_' only if `internal`, as TF compares them) and those in collflow's own attribute."""
    out: Dict[str, Tuple[Any, Any]] = {}
    for e in node.attr:
        if e.key == ATTR_KEY:
            data = json.loads(bytes(e.value.s).decode("utf-8"))
            for k, raw in (data.get("attrs") or {}).items():
                out[k] = (json.dumps(raw, sort_keys=True), _codec.decode(raw, lambda n: n))
        elif internal or not e.key.startswith("_"):
            out[e.key] = (e.value.SerializeToString(), _typed_attr(e.value))
    return out


def _single_string(v: Any) -> Optional[bytes]:
    """The one string of a tensor-valued attribute holding exactly one, else None."""
    if isinstance(v, np.ndarray) and v.size == 1 and v.dtype.kind in "OSU":
        s = v.reshape(-1)[0]
        return s if isinstance(s, bytes) else str(s).encode("utf-8")
    return None


def _strip(node: Any, attrs: Dict[str, Tuple[Any, Any]], checkpoint_v2: bool,
           hash_table_shared_name: bool) -> Dict[str, Tuple[Any, Any]]:
    """attrs less the randomized ones TF's options drop (sharded-save temp names, hash-table
    shared names)."""
    drop = set()
    for k, (_, v) in attrs.items():
        if checkpoint_v2:
            s = _single_string(v)
            if s and _SHARDED_SAVE_OP_PATTERN.match(s):
                drop.add(k)
    if hash_table_shared_name and node.op == "HashTableV2" and "shared_name" in attrs:
        v = attrs["shared_name"][1]
        s = v if isinstance(v, bytes) else str(v).encode("utf-8")
        if _TABLE_SHARED_NAME_PATTERN.match(s):
            drop.add("shared_name")
    return {k: x for k, x in attrs.items() if k not in drop}


def _summarize_node(node: Any, attrs: Dict[str, Tuple[Any, Any]]) -> str:
    """TF's SummarizeNodeDef: '{{node name}} = Op[attr=value, ...](inputs)'."""
    parts = ", ".join(f"{k}={_summarize(v)}" for k, (_, v) in sorted(attrs.items()))
    dev = f", _device=\"{node.device}\"" if node.device else ""
    return f"{{{{node {node.name}}}}} = {node.op}[{parts}{dev}]({', '.join(node.input)})"


def _node_diff(actual: Any, expected: Any, a_attrs: dict, e_attrs: dict) -> Optional[str]:
    """TF's EqualNodeDef: the first difference between two nodes of one name, or None."""
    name = actual.name
    if actual.op != expected.op:
        return f"Node named '{name}' has op '{actual.op}' that is not expected '{expected.op}'"
    if actual.device != expected.device:
        return f"Node named '{name}' has device '{actual.device}' that is not expected '{expected.device}'"
    a_in, e_in = list(actual.input), list(expected.input)
    if len(a_in) != len(e_in):
        return f"Node named '{name}' has inputs '{', '.join(a_in)}' that don't match expected '{', '.join(e_in)}'"
    first_control = len(a_in)
    for i, (a, e) in enumerate(zip(a_in, e_in)):
        if a.startswith("^"):
            first_control = i
            break
        if a != e and a != e + ":0" and a + ":0" != e:
            return f"Node named '{name}' has input {i} '{a}' that doesn't match expected '{e}'"
    a_ctrl, e_ctrl = a_in[first_control:], e_in[first_control:]
    left = list(dict.fromkeys(a_ctrl))
    for e in dict.fromkeys(e_ctrl):
        if e not in left:
            return f"Node named '{name}' missing expected control input '{e}'"
        left.remove(e)
    if left:
        return f"Node named '{name}' has unexpected control input '{left[0]}'"
    for k, (ev, edec) in e_attrs.items():
        if k not in a_attrs:
            return f"Node named '{name}' missing expected attr '{k}' with value: {_summarize(edec)}"
        av, adec = a_attrs[k]
        if av != ev:
            return (f"Node named '{name}' has attr '{k}' with value: {_summarize(adec)} that does not match "
                    f"expected: {_summarize(edec)}")
    extra = [k for k in a_attrs if k not in e_attrs]
    if extra:
        return f"Node named '{name}' has unexpected attr '{extra[0]}' with value: {_summarize(a_attrs[extra[0]][1])}"
    return None


def assert_equal_graph_def(actual: Any, expected: Any, checkpoint_v2: bool = False,
                           hash_table_shared_name: bool = False) -> None:
    """Asserts two GraphDefs are the same up to node order, control-input order and versions
    (TF's tf.test.assert_equal_graph_def): AssertionError naming the first difference,
    TypeError when either is not a GraphDef.  checkpoint_v2 ignores the randomized temp
    names of sharded saves; hash_table_shared_name the random shared names of HashTableV2."""
    if not isinstance(actual, _proto.GraphDef):
        raise TypeError(f"Expected tf.GraphDef for actual, got {type(actual).__name__}")
    if not isinstance(expected, _proto.GraphDef):
        raise TypeError(f"Expected tf.GraphDef for expected, got {type(expected).__name__}")

    def attrs(node: Any) -> dict:
        return _strip(node, _attrs(node), checkpoint_v2, hash_table_shared_name)

    index: Dict[str, Any] = {}
    for n in actual.node:
        index[n.name] = n
    for e in expected.node:
        a = index.pop(e.name, None)
        e_attrs = attrs(e)
        if a is None:
            raise AssertionError(f"Did not find expected node '{_summarize_node(e, _attrs(e, True))}'")
        diff = _node_diff(a, e, attrs(a), e_attrs)
        if diff is not None:
            raise AssertionError(diff)
    if index:
        n = next(iter(index.values()))
        raise AssertionError(f"Found unexpected node '{_summarize_node(n, _attrs(n, True))}'")


_nsm.test.assert_equal_graph_def = assert_equal_graph_def

del _name
