"""tf.contrib.training.HParams and parse_values, checked against TF 1.15's documented rules
(contrib/training/python/training/hparam.py; TF2 has no tf.contrib to compare with)."""
import json

import pytest

import collflow.compat.v1 as tf

pytestmark = pytest.mark.timeout(120)

HParams = tf.contrib.training.HParams
parse_values = tf.contrib.training.parse_values


def _hp():
    return HParams(lr=0.1, steps=100, name="lstm", train=True,
                   layers=[64, 32], rates=[0.5, 0.25], cells=["a", "b"], flags=[True, False])


def test_construction_attributes_values_contains():
    with tf.Graph().as_default():
        hp = _hp()
        assert hp.lr == 0.1 and hp.steps == 100 and hp.name == "lstm" and hp.train is True
        assert hp.layers == [64, 32]
        assert hp.values() == {"lr": 0.1, "steps": 100, "name": "lstm", "train": True, "layers": [64, 32],
                               "rates": [0.5, 0.25], "cells": ["a", "b"], "flags": [True, False]}
        assert "lr" in hp and "nope" not in hp and "parse" not in hp
        assert HParams().values() == {}
        hp.set_model_structure({"x": 1})
        assert hp.get_model_structure() == {"x": 1}
        assert HParams(model_structure="ms", a=1).get_model_structure() == "ms"


def test_str_and_repr():
    hp = HParams(b=2, a="x")
    assert str(hp) == "[('a', 'x'), ('b', 2)]"
    assert repr(hp) == "HParams([('a', 'x'), ('b', 2)])"


def test_add_hparam_rules():
    hp = HParams(a=1)
    hp.add_hparam("b", [1.0, 2.0])
    assert hp.b == [1.0, 2.0]
    hp.add_hparam("t", (1, 2))                   # a tuple is a multi-valued hparam too
    hp.set_hparam("t", [3, 4])
    assert hp.t == [3, 4]
    with pytest.raises(ValueError, match="Hyperparameter name is reserved: a"):
        hp.add_hparam("a", 2)
    for reserved in ("parse", "values", "set_hparam", "to_json"):
        with pytest.raises(ValueError, match="reserved: " + reserved):
            hp.add_hparam(reserved, 1)
    with pytest.raises(ValueError, match="Multi-valued hyperparameters cannot be empty: e"):
        hp.add_hparam("e", [])
    with pytest.raises(ValueError, match="reserved"):
        HParams(get=3)


def test_set_hparam_conversions():
    hp = _hp()
    hp.set_hparam("lr", 2)                         # int -> float
    assert hp.lr == 2.0 and type(hp.lr) is float
    hp.set_hparam("rates", [1, 0.5])
    assert hp.rates == [1.0, 0.5] and all(type(r) is float for r in hp.rates)
    hp.set_hparam("steps", 7)
    assert hp.steps == 7
    hp.set_hparam("name", "gru")
    assert hp.name == "gru"
    hp.set_hparam("train", False)
    assert hp.train is False
    hp.set_hparam("layers", [1, 2, 3])              # a list may change length
    assert hp.layers == [1, 2, 3]


@pytest.mark.parametrize("name,value", [
    ("steps", 3.0), ("steps", 2.5),                  # float -> int refused, even integral
    ("steps", True), ("lr", True), ("train", 1), ("train", 0.0),   # bool <-> number refused
    ("train", "true"), ("name", 3), ("name", True),  # string <-> other refused
    ("lr", "0.5"), ("steps", "3"),
    ("layers", [1, 2.5]), ("cells", ["a", 1]),
])
def test_set_hparam_refusals(name, value):
    hp = _hp()
    before = hp.values()[name]
    with pytest.raises(ValueError, match=f"Could not cast hparam '{name}'"):
        hp.set_hparam(name, [value] if isinstance(before, list) and not isinstance(value, list) else value)
    assert getattr(hp, name) == before


def test_set_hparam_list_scalar_mismatch_and_unknown():
    hp = _hp()
    with pytest.raises(ValueError, match="Must not pass a list for single-valued parameter: steps"):
        hp.set_hparam("steps", [1])
    with pytest.raises(ValueError, match="Must pass a list for multi-valued parameter: layers"):
        hp.set_hparam("layers", 1)
    with pytest.raises(KeyError):
        hp.set_hparam("unknown", 1)


def test_none_typed_hparam_takes_anything():
    hp = HParams(x=None)
    hp.set_hparam("x", 5)
    assert hp.x == 5
    hp.set_hparam("x", "s")
    assert hp.x == "s"


def test_del_hparam():
    hp = _hp()
    hp.del_hparam("lr")
    assert "lr" not in hp and not hasattr(hp, "lr")
    hp.del_hparam("lr")                             # absent: nothing
    hp.add_hparam("lr", "now a string")
    assert hp.lr == "now a string"


def test_parse_every_scalar_type():
    hp = _hp()
    out = hp.parse("lr=1e-3,steps=-12,name=gru_2,train=false")
    assert out is hp
    assert hp.lr == 1e-3 and hp.steps == -12 and hp.name == "gru_2" and hp.train is False
    hp.parse("lr=3")                                # an int token for a float hparam
    assert hp.lr == 3.0 and type(hp.lr) is float
    hp.parse("lr = -.5 , steps= 4")                 # spaces around '=' and after ','
    assert hp.lr == -0.5 and hp.steps == 4
    hp.parse("")                                    # nothing to do
    assert hp.steps == 4


@pytest.mark.parametrize("token,value", [("true", True), ("True", True), ("false", False), ("False", False),
                                         ("1", True), ("0", False), ("2", True), ("-1", True)])
def test_parse_bools(token, value):
    hp = HParams(b=not value)
    hp.parse("b=" + token)
    assert hp.b is value


@pytest.mark.parametrize("token", ["yes", "TRUE", "t", "1.0", ""])
def test_parse_bad_bools(token):
    with pytest.raises(ValueError, match="Could not parse hparam 'b' of type 'bool'"):
        HParams(b=True).parse("b=" + token)


def test_parse_lists():
    hp = _hp()
    hp.parse("layers=[1,2,3],rates=[1.5, 2e-1],cells=[x y z],flags=[true,0,False,1]")
    assert hp.layers == [1, 2, 3]
    assert hp.rates == [1.5, 0.2]
    assert hp.cells == ["x", "y", "z"]              # elements split on commas and spaces
    assert hp.flags == [True, False, False, True]
    hp.parse("layers=[ 7 ]")
    assert hp.layers == [7]
    hp.parse("layers=[]")                           # an empty list is a valid new value
    assert hp.layers == []
    hp.parse("rates=[1,2]")
    assert hp.rates == [1.0, 2.0] and type(hp.rates[0]) is float


def test_parse_indexed_assignment():
    hp = _hp()
    hp.parse("layers[1]=5,cells[0]=q")
    assert hp.layers == [64, 5] and hp.cells == ["q", "b"]
    hp.parse("layers[0]=9,layers[1]=8")
    assert hp.layers == [9, 8]
    with pytest.raises(ValueError, match="out of range"):
        hp.parse("layers[5]=1")
    with pytest.raises(ValueError, match="Cannot index single-valued parameter: steps"):
        hp.parse("steps[0]=1")


def test_parse_errors():
    hp = _hp()
    with pytest.raises(ValueError, match="Unknown hyperparameter type for nope"):
        hp.parse("nope=1")
    with pytest.raises(ValueError, match="Could not parse hparam 'steps' of type 'int' with value '1.5' in steps=1.5"):
        hp.parse("steps=1.5")
    with pytest.raises(ValueError, match="Could not parse hparam 'lr' of type 'float' with value 'abc'"):
        hp.parse("lr=abc")
    with pytest.raises(ValueError, match=r"Could not parse hparam 'layers' of type 'int' with value '1,x'"):
        hp.parse("layers=[1,x]")
    with pytest.raises(ValueError, match="Multiple assignment.*'steps' in steps=1,steps=2"):
        hp.parse("steps=1,steps=2")
    with pytest.raises(ValueError, match=r"Multiple assignment.*'layers\[0\]'"):
        hp.parse("layers[0]=1,layers[0]=2")
    with pytest.raises(ValueError, match="Multiple assignment.*'layers'"):
        hp.parse("layers=[1],layers[0]=2")
    with pytest.raises(ValueError, match="Multiple assignment.*'layers'"):
        hp.parse("layers[0]=2,layers=[1]")
    with pytest.raises(ValueError, match="Assignment of a list to a list index"):
        hp.parse("layers[0]=[1,2]")
    with pytest.raises(ValueError, match="Malformed hyperparameter value: 1steps=3"):
        hp.parse("1steps=3")
    with pytest.raises(ValueError, match="Malformed hyperparameter value"):
        hp.parse("steps")
    with pytest.raises(ValueError, match="Must not pass a list for single-valued parameter: steps"):
        hp.parse("steps=[1,2]")
    with pytest.raises(ValueError, match="Must pass a list for multi-valued parameter: layers"):
        hp.parse("layers=3")
    assert hp.values() == _hp().values()            # every failure left the values alone


def test_parse_values_module_function():
    types = {"x": int, "L": int, "arr": int, "s": str, "f": float, "model.depth": int}
    assert parse_values("x=5,L=[1,2],arr[1]=3", types) == {"x": 5, "L": [1, 2], "arr": {1: 3}}
    assert parse_values("s=hello world,f=2", types) == {"s": "hello world", "f": 2.0}
    assert parse_values("model.depth=4", types) == {"model.depth": 4}
    assert parse_values("arr[0]=1,arr[2]=5", types) == {"arr": {0: 1, 2: 5}}
    with pytest.raises(ValueError, match="Unknown hyperparameter type for y"):
        parse_values("x=1,y=2", types)
    assert parse_values("x=1,y=2,z=[1,2]", types, ignore_unknown=True) == {"x": 1}


def test_override_from_dict_and_set_from_map():
    hp = _hp()
    assert hp.override_from_dict({"lr": 1, "layers": [3]}) is hp
    assert hp.lr == 1.0 and hp.layers == [3]
    hp.set_from_map({"steps": 9})
    assert hp.steps == 9
    with pytest.raises(ValueError, match="Could not cast"):
        hp.override_from_dict({"steps": 1.5})


def test_json_round_trip():
    hp = _hp()
    s = hp.to_json()
    assert json.loads(s) == hp.values()
    assert hp.to_json(sort_keys=True) == json.dumps(hp.values(), sort_keys=True)
    assert hp.to_json(indent=2, separators=(",", ": "), sort_keys=True) == \
        json.dumps(hp.values(), indent=2, separators=(",", ": "), sort_keys=True)
    other = HParams(lr=0.0, steps=0, name="", train=False, layers=[0], rates=[0.0], cells=[""], flags=[False])
    assert other.parse_json(s) is other
    assert other.values() == hp.values()
    other.parse_json('{"lr": 5, "layers": [1, 2]}')   # JSON ints become floats for a float hparam
    assert other.lr == 5.0 and type(other.lr) is float and other.layers == [1, 2]
    with pytest.raises(ValueError, match="Could not cast hparam 'steps'"):
        other.parse_json('{"steps": 1.5}')
    with pytest.raises(KeyError):
        other.parse_json('{"nope": 1}')


def test_to_json_drops_callables():
    hp = HParams(a=1, fn=len, fns=[len, 2])
    assert json.loads(hp.to_json()) == {"a": 1, "fns": [2]}


def test_get_with_defaults():
    hp = _hp()
    assert hp.get("steps") == 100 and hp.get("steps", 5) == 100
    assert hp.get("lr", 1) == 0.1                   # an int default fits a float hparam
    assert hp.get("missing") is None and hp.get("missing", 3.5) == 3.5
    assert hp.get("layers", [1]) == [64, 32]
    with pytest.raises(ValueError, match="Hparam 'steps' of type '<class 'int'>' is incompatible with default=1.5"):
        hp.get("steps", 1.5)
    with pytest.raises(ValueError, match="Hparam 'layers' of type 'list<<class 'int'>>' is incompatible"):
        hp.get("layers", 1)
    with pytest.raises(ValueError, match="incompatible with default=\\[1\\]"):
        hp.get("steps", [1])
    with pytest.raises(ValueError, match="incompatible.*Could not cast"):
        hp.get("train", 0)


def test_hparam_def_is_not_supported():
    with pytest.raises(NotImplementedError):
        HParams(hparam_def=b"proto")
