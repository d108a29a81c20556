"""Differential tests against TensorFlow's tf.app.flags (absl.flags) for the absl names
collflow adds: the same flags defined in a fresh FlagValues of each library and the same argv
parsed give the same values, the same remaining argv and the same errors (type and message):
multi flags, enum-class flags, aliases, space-separated lists, validators at parse time and on
assignment, mutual exclusion, FlagHolder, set_default / override_value and the helpers."""
import enum
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfdiff  # noqa: E402,F401  (sets TensorFlow's environment first)

tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")

import collflow.compat.v1 as cft  # noqa: E402

TF_FLAGS = tensorflow.compat.v1.app.flags
CF_FLAGS = cft.app.flags


class Color(enum.Enum):
    RED = 1
    BLUE = 2


def _define(lib):
    fv = lib.FlagValues()
    holders = {
        "s": lib.DEFINE_multi_string("s", ["x"], "strings", flag_values=fv),
        "i": lib.DEFINE_multi_integer("i", None, "ints", lower_bound=0, flag_values=fv),
        "f": lib.DEFINE_multi_float("f", [1.5], "floats", flag_values=fv),
        "e": lib.DEFINE_multi_enum("e", None, ["a", "b"], "enums", flag_values=fv),
        "c": lib.DEFINE_enum_class("c", Color.RED, Color, "color", flag_values=fv),
        "mc": lib.DEFINE_multi_enum_class("mc", None, Color, "colors", flag_values=fv),
        "sp": lib.DEFINE_spaceseplist("sp", "a b", "space separated", flag_values=fv),
        "n": lib.DEFINE_integer("n", 3, "n", flag_values=fv),
        "b1": lib.DEFINE_boolean("b1", False, "b1", flag_values=fv),
        "b2": lib.DEFINE_boolean("b2", False, "b2", flag_values=fv),
        "o1": lib.DEFINE_string("o1", None, "o1", flag_values=fv),
        "o2": lib.DEFINE_string("o2", None, "o2", flag_values=fv),
    }
    lib.DEFINE_alias("nn", "n", flag_values=fv)
    lib.register_validator("n", lambda v: v < 10, message="n must be < 10", flag_values=fv)

    @lib.multi_flags_validator(["n", "i"], message="n must exceed every i", flag_values=fv)
    def _check(d):
        return not d["i"] or all(d["n"] > x for x in d["i"])
    lib.mark_bool_flags_as_mutual_exclusive(["b1", "b2"], flag_values=fv)
    lib.mark_flags_as_mutual_exclusive(["o1", "o2"], flag_values=fv)
    return fv, holders


ARGVS = [
    ["prog"],
    ["prog", "--s=a", "--s", "b", "pos", "--i=1", "--i=2", "--e=b", "--c=blue", "--mc=red", "--mc=BLUE",
     "--sp=p q  r", "--nn=7", "--f=2", "--", "--s=late"],
    ["prog", "--i=0", "--nob1", "--b2", "--o1=x", "--n=9"],
    ["prog", "--b1", "--b2"],
    ["prog", "--i=-1"],
    ["prog", "--n=11"],
    ["prog", "--c=green"],
    ["prog", "--e=c"],
    ["prog", "--o1=a", "--o2=b"],
    ["prog", "--i=5", "--n=4"],
    ["prog", "--unknown=1"],
    ["prog", "--f=abc"],
]


def _run(lib, argv):
    fv, h = _define(lib)
    try:
        rest = fv(argv)
    except Exception as e:  # noqa: BLE001  (compared across libraries)
        return ("error", type(e).__name__, str(e).replace("<RED|BLUE>", "<red|blue>"))
    values = {k: getattr(fv, k) for k in ("s", "i", "f", "e", "c", "mc", "sp", "n", "nn", "b1", "b2", "o1", "o2")}
    return rest, values, {k: (x.value, x.present, x.default, x.name) for k, x in h.items()}


@pytest.mark.parametrize("argv", ARGVS, ids=[" ".join(a[1:]) or "none" for a in ARGVS])
def test_parse_same_as_absl(argv):
    assert _run(CF_FLAGS, argv) == _run(TF_FLAGS, argv)


def test_validators_on_assignment_set_default_override():
    out = []
    for lib in (TF_FLAGS, CF_FLAGS):
        fv, h = _define(lib)
        fv(["prog", "--n=5"])
        res = []
        try:
            fv.n = 12
        except lib.IllegalFlagValueError as e:
            res.append(str(e))
        res.append(fv.n)
        fv.n = 8
        res.append(h["n"].value)
        lib.set_default(h["s"], ["d1", "d2"])
        res.append((fv.s, h["s"].default))
        lib.override_value(h["n"], 6)
        res.append((fv.n, h["n"].present))
        try:
            lib.override_value(h["n"], 50)
        except lib.IllegalFlagValueError as e:
            res.append(str(e))
        res.append(fv.n)
        try:
            bool(h["n"])
        except TypeError:
            res.append("bool refused")
        out.append(res)
    assert out[0] == out[1]


def test_helpers_same_as_absl():
    m = {"a": 1, "b": True, "c": False, "d": [1, 2], "e": None, "m": ["x", "y"], "s": "str"}
    for lib in (TF_FLAGS, CF_FLAGS):
        assert isinstance(lib.ValidationError("x"), lib.Error)
    assert list(CF_FLAGS.flag_dict_to_args(m, multi_flags={"m"})) == list(TF_FLAGS.flag_dict_to_args(m, {"m"}))
    text = "hello world " * 10 + "\n\nsecond paragraph here"
    for args in ((30, "  ", "* "), (40, "", None), (25, "    ", "")):
        assert CF_FLAGS.text_wrap(text, *args) == TF_FLAGS.text_wrap(text, *args)
    doc = """Line one
        continues here.

        Second para.
        """
    assert CF_FLAGS.doc_to_help(doc) == TF_FLAGS.doc_to_help(doc)
    for cls in ("IntegerParser", "FloatParser", "BooleanParser", "ListParser", "WhitespaceSeparatedListParser"):
        c, t = getattr(CF_FLAGS, cls)(), getattr(TF_FLAGS, cls)()
        assert c.flag_type() == t.flag_type()
    assert CF_FLAGS.IntegerParser(1, 5).parse("0x3") == TF_FLAGS.IntegerParser(1, 5).parse("0x3")
    assert CF_FLAGS.WhitespaceSeparatedListParser(True).parse("a,b c") == \
        TF_FLAGS.WhitespaceSeparatedListParser(True).parse("a,b c")
    assert CF_FLAGS.CsvListSerializer(",").serialize(["a", "b"]) == TF_FLAGS.CsvListSerializer(",").serialize(["a", "b"])
    assert CF_FLAGS.EnumClassSerializer(True).serialize(Color.RED) == TF_FLAGS.EnumClassSerializer(True).serialize(
        Color.RED)
    for lib in (TF_FLAGS, CF_FLAGS):
        with pytest.raises(ValueError):
            lib.IntegerParser(1, 5).parse("9")
        with pytest.raises(ValueError):
            lib.EnumParser(["a"]).parse("b")


def test_flag_objects_and_define_flag():
    res = []
    for lib in (TF_FLAGS, CF_FLAGS):
        fv = lib.FlagValues()
        lib.DEFINE_flag(lib.BooleanFlag("verbose", False, "v"), flag_values=fv)
        lib.DEFINE_flag(lib.EnumFlag("mode", "a", "m", ["a", "b"]), flag_values=fv)
        lib.DEFINE_flag(lib.EnumClassFlag("col", None, "c", Color), flag_values=fv)
        lib.DEFINE_flag(lib.MultiFlag(lib.IntegerParser(), lib.ArgumentSerializer(), "ks", [1], "k"), flag_values=fv)
        rest = fv(["p", "--verbose", "--mode=b", "--col=RED", "--ks=4", "--ks=5", "x"])
        res.append((rest, fv.verbose, fv.mode, fv.col, fv.ks))
    assert res[0] == res[1]


def test_serialize_same_as_absl():
    out = []
    for lib in (TF_FLAGS, CF_FLAGS):
        fv = lib.FlagValues()
        hs = [lib.DEFINE_multi_string("s", ["a", "b"], "", flag_values=fv),
              lib.DEFINE_enum_class("c", Color.RED, Color, "", flag_values=fv),
              lib.DEFINE_list("l", "x,y", "", flag_values=fv), lib.DEFINE_bool("b", False, "", flag_values=fv),
              lib.DEFINE_integer("i", None, "", flag_values=fv), lib.DEFINE_float("f", 1.5, "", flag_values=fv),
              lib.DEFINE_spaceseplist("sp", "p q", "", flag_values=fv), lib.DEFINE_string("st", "v", "", flag_values=fv)]
        fv(["p", "--b", "--s=z"])
        out.append([h.serialize() for h in hs])
    assert out[0] == out[1]
