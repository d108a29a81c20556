"""tf.contrib.training.HParams: TensorFlow 1.x's typed hyperparameter bag.

    hparams = tf.contrib.training.HParams(learning_rate=0.1, layers=[64, 64], cell="lstm")
    hparams.parse("learning_rate=0.3,layers=[128,128,128],cell=gru")   # e.g. from a --hparams flag
    hparams.layers[1]                                                  # 128

Semantics of TF 1.15's contrib/training/python/training/hparam.py: a hyperparameter's type
is fixed by its first value (for a list, by its first element); set_hparam, parse and
parse_json convert a new value to that type where TF does (an int to a float) and refuse
where TF does (a float to an int, anything to or from a bool, a number to a string).
"""
from __future__ import annotations

import json
import numbers
import re
from typing import Any, Callable, Dict, Optional, Tuple

from ..train.device_setter import GreedyLoadBalancingStrategy, byte_size_load_fn  # noqa: E402  (TF 1.x kept them here)

__all__ = ["HParams", "parse_values", "GreedyLoadBalancingStrategy", "byte_size_load_fn"]

# one clause of a parse() string: name, optional [index], '=', then one token or a [list]
_PARAM_RE = re.compile(r"""
  (?P<name>[a-zA-Z][\w\.]*)        # name: "lr" or "model.depth"
  (\[\s*(?P<index>\d+)\s*\])?      # optional index: "arr[1]=..."
  \s*=\s*
  ((?P<val>[^,\[]*)                # one value, up to the next comma
   |
   \[(?P<vals>[^\]]*)\])           # or a list in brackets
  ($|,\s*)""", re.VERBOSE)


def _parse_fail(name: str, var_type: type, value: Any, values: str) -> None:
    raise ValueError(f"Could not parse hparam '{name}' of type '{var_type.__name__}' with value '{value}' in "
                     f"{values}")


def _reuse_fail(name: str, values: str) -> None:
    raise ValueError(f"Multiple assignments to variable '{name}' in {values}")


def _value_parser(name: str, type_: type, values: str) -> Callable[[str], Any]:
    """The function turning one token into a `type_` value (bools: true/True/false/False or an int)."""
    if type_ is not bool:
        return type_

    def parse_bool(token: str) -> bool:
        if token in ("true", "True"):
            return True
        if token in ("false", "False"):
            return False
        try:
            return bool(int(token))  # TF's rule: any integer, nonzero meaning True
        except ValueError:
            _parse_fail(name, bool, token, values)
        return False  # unreachable: _parse_fail raises

    return parse_bool


def parse_values(values: str, type_map: Dict[str, type], ignore_unknown: bool = False) -> Dict[str, Any]:
    """{name: value} of a "name=value,list=[1,2],arr[3]=x" string, values parsed by `type_map`.

    A scalar clause gives a value, a bracketed one a list (elements split on commas and
    spaces), an indexed one a {index: value} dict.  ValueError for a malformed clause, a name
    not in type_map (unless ignore_unknown), a token the type cannot parse, a name (or index)
    assigned twice and a list assigned to an index.
    """
    results: Dict[str, Any] = {}
    pos = 0
    while pos < len(values):
        m = _PARAM_RE.match(values, pos)
        if not m:
            raise ValueError(f"Malformed hyperparameter value: {values[pos:]}")
        pos = m.end()
        d = m.groupdict()
        name = d["name"]
        if name not in type_map:
            if ignore_unknown:
                continue
            raise ValueError(f"Unknown hyperparameter type for {name}")
        type_ = type_map[name]
        parse = _value_parser(name, type_, values)
        if d["val"] is not None:
            try:
                parsed = parse(d["val"])
            except ValueError:
                _parse_fail(name, type_, d["val"], values)
            if not d["index"]:
                if name in results:
                    _reuse_fail(name, values)
                results[name] = parsed
            else:
                # an indexed assignment: collect {index: value}; a scalar one before is a clash
                if name in results and not isinstance(results[name], dict):
                    _reuse_fail(name, values)
                slots = results.setdefault(name, {})
                index = int(d["index"])
                if index in slots:
                    _reuse_fail(f"{name}[{index}]", values)
                slots[index] = parsed
        elif d["vals"] is not None:
            if d["index"] is not None:
                raise ValueError("Assignment of a list to a list index.")
            if name in results:
                _reuse_fail(name, values)
            try:
                results[name] = [parse(e) for e in re.split("[ ,]", d["vals"]) if e]
            except ValueError:
                _parse_fail(name, type_, d["vals"], values)
        else:
            _parse_fail(name, type_, "", values)
    return results


def _cast_to_type_if_compatible(name: str, param_type: type, value: Any) -> Any:
    """`value` as `param_type`, refusing the conversions TF refuses (ValueError)."""
    fail = f"Could not cast hparam '{name}' of type '{param_type}' from value {value!r}"
    if type(value) is param_type:
        return value
    if issubclass(param_type, type(None)):
        return value  # an hparam first set to None takes anything, unchecked
    if issubclass(param_type, (str, bytes)) and not isinstance(value, (str, bytes)):
        raise ValueError(fail)
    if issubclass(param_type, bool) != isinstance(value, bool):
        raise ValueError(fail)
    # int -> float is fine; float -> int never (even 3.0), as TF
    if issubclass(param_type, numbers.Integral) and not isinstance(value, numbers.Integral):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Number) and not isinstance(value, numbers.Number):
        raise ValueError(fail)
    return param_type(value)


class HParams:
    """Hyperparameters as typed attributes: `HParams(lr=0.1, units=[64, 64]).lr`."""

    _HAS_DYNAMIC_ATTRIBUTES = True

    def __init__(self, hparam_def: Any = None, model_structure: Any = None, **kwargs: Any):
        if hparam_def:
            # TF reads an HParamDef protocol buffer here; collflow has no such proto
            raise NotImplementedError("HParams(hparam_def=...): HParamDef protos are not supported; pass keyword "
                                      "arguments")
        # name -> (type, is_list); for a list the type is its elements'
        self._hparam_types: Dict[str, Tuple[type, bool]] = {}
        self._model_structure = model_structure
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name: str, value: Any) -> None:
        """Adds hyperparameter `name` typed by `value` (a list or tuple: by its first element)."""
        # a method or existing attribute cannot be shadowed (TF's test: a non-None attribute)
        if getattr(self, name, None) is not None:
            raise ValueError(f"Hyperparameter name is reserved: {name}")
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"Multi-valued hyperparameters cannot be empty: {name}")
            self._hparam_types[name] = (type(value[0]), True)
        else:
            self._hparam_types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name: str, value: Any) -> None:
        """Sets an existing hyperparameter, converting `value` to its type (ValueError if TF would not)."""
        param_type, is_list = self._hparam_types[name]
        if isinstance(value, list):
            if not is_list:
                raise ValueError(f"Must not pass a list for single-valued parameter: {name}")
            setattr(self, name, [_cast_to_type_if_compatible(name, param_type, v) for v in value])
        else:
            if is_list:
                raise ValueError(f"Must pass a list for multi-valued parameter: {name}.")
            setattr(self, name, _cast_to_type_if_compatible(name, param_type, value))

    def del_hparam(self, name: str) -> None:
        """Removes hyperparameter `name` (nothing if there is none)."""
        if hasattr(self, name):
            delattr(self, name)
            del self._hparam_types[name]

    def parse(self, values: str) -> "HParams":
        """Overrides values from a "name=value,..." string (see parse_values); returns self."""
        type_map = {name: t for name, (t, _) in self._hparam_types.items()}
        parsed = parse_values(values, type_map)
        for name, value in parsed.items():
            if isinstance(value, dict):
                parsed[name] = self._indexed(name, value)
        return self.override_from_dict(parsed)

    def _indexed(self, name: str, assignments: Dict[int, Any]) -> Any:
        """The list hyperparameter `name` with `arr[i]=v` clauses applied to a copy.

        (TF 1.15's parse hands the {index: value} dict to set_hparam, which refuses it; a list
        with the indexed elements replaced is what the clause means.)
        """
        _, is_list = self._hparam_types[name]
        if not is_list:
            raise ValueError(f"Cannot index single-valued parameter: {name}")
        new = list(getattr(self, name))
        for index, value in assignments.items():
            if index >= len(new):
                raise ValueError(f"Index {index} out of range for hparam '{name}' of length {len(new)}")
            new[index] = value
        return new

    def override_from_dict(self, values_dict: Dict[str, Any]) -> "HParams":
        """set_hparam for every item; returns self."""
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def set_from_map(self, values_map: Dict[str, Any]) -> "HParams":
        """TF's deprecated name of override_from_dict."""
        return self.override_from_dict(values_map)

    def set_model_structure(self, model_structure: Any) -> None:
        self._model_structure = model_structure

    def get_model_structure(self) -> Any:
        return self._model_structure

    def to_json(self, indent: Optional[int] = None, separators: Optional[Tuple[str, str]] = None,
                sort_keys: bool = False) -> str:
        """The values as a JSON object; callables (at any depth) are left out, as TF."""
        def drop_callables(x: Any) -> Any:
            if isinstance(x, dict):
                return {k: drop_callables(v) for k, v in x.items() if not callable(v)}
            if isinstance(x, list):
                return [drop_callables(i) for i in x if not callable(i)]
            return x
        return json.dumps(drop_callables(self.values()), indent=indent, separators=separators, sort_keys=sort_keys)

    def parse_json(self, values_json: str) -> "HParams":
        """Overrides values from a JSON object string; returns self."""
        return self.override_from_dict(json.loads(values_json))

    def values(self) -> Dict[str, Any]:
        """{name: value} of every hyperparameter."""
        return {n: getattr(self, n) for n in self._hparam_types}

    def get(self, key: str, default: Any = None) -> Any:
        """The value of `key`, else `default`; a non-None default must fit the hparam's type."""
        if key not in self._hparam_types:
            return default
        if default is not None:
            param_type, is_list = self._hparam_types[key]
            type_str = f"list<{param_type}>" if is_list else str(param_type)
            fail = f"Hparam '{key}' of type '{type_str}' is incompatible with default={default}"
            if is_list != isinstance(default, list):
                raise ValueError(fail)
            try:
                for v in (default if is_list else [default]):
                    _cast_to_type_if_compatible(key, param_type, v)
            except ValueError as e:
                raise ValueError(f"{fail}. {e}") from None
        return getattr(self, key)

    def __contains__(self, key: str) -> bool:
        return key in self._hparam_types

    def __str__(self) -> str:
        return str(sorted(self.values().items()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"

# the queue-based bucketing of TF 1.x's input pipelines (contrib/bucket_ops.py)
from .bucket_ops import bucket, bucket_by_sequence_length  # noqa: E402

__all__ += ["bucket", "bucket_by_sequence_length"]
from .sampling_ops import rejection_sample, stratified_sample  # noqa: E402

__all__ += ["rejection_sample", "stratified_sample"]
