"""tf.app.flags' absl names by hand (no absl, no TensorFlow): multi flags, enum-class flags,
aliases, space-separated lists, validators (at parse time and on assignment), mutual exclusion,
FlagHolder, set_default / override_value, flag objects and the help helpers."""
import enum

import pytest

import collflow.compat.v1 as tf

F = tf.app.flags

NAMES = """ArgumentParser ArgumentSerializer BaseListParser BooleanFlag BooleanParser CantOpenFlagFileError
CsvListSerializer DEFINE_alias DEFINE_enum_class DEFINE_flag DEFINE_multi DEFINE_multi_enum DEFINE_multi_enum_class
DEFINE_multi_float DEFINE_multi_integer DEFINE_multi_string DEFINE_spaceseplist EnumClassFlag EnumClassListSerializer
EnumClassParser EnumClassSerializer EnumFlag EnumParser FlagHolder FlagNameConflictsWithMethodError FloatParser
IntegerParser ListParser ListSerializer MultiEnumClassFlag MultiFlag ValidationError WhitespaceSeparatedListParser
adopt_module_key_flags declare_key_flag disclaim_key_flags doc_to_help flag_dict_to_args get_help_width
mark_bool_flags_as_mutual_exclusive mark_flags_as_mutual_exclusive multi_flags_validator override_value
register_multi_flags_validator register_validator set_default text_wrap validator""".split()


class Shape(enum.Enum):
    CIRCLE = 1
    SQUARE = 2


def test_names_present():
    missing = [n for n in NAMES if not hasattr(F, n)]
    assert missing == []
    assert tf.flags.DEFINE_multi_string is F.DEFINE_multi_string


def test_multi_flags_and_friends():
    fv = F.FlagValues()
    h = F.DEFINE_multi_string("tag", "t0", "tags", flag_values=fv)
    F.DEFINE_multi_integer("k", [1], "ks", lower_bound=1, upper_bound=9, flag_values=fv)
    F.DEFINE_multi_float("x", None, "xs", flag_values=fv)
    F.DEFINE_multi_enum("m", None, ["up", "down"], "ms", flag_values=fv)
    F.DEFINE_enum_class("shape", Shape.CIRCLE, Shape, "shape", flag_values=fv)
    F.DEFINE_multi_enum_class("shapes", [Shape.SQUARE], Shape, "shapes", flag_values=fv)
    F.DEFINE_spaceseplist("words", "a b", "words", comma_compat=True, flag_values=fv)
    F.DEFINE_integer("steps", 10, "steps", flag_values=fv)
    F.DEFINE_alias("s", "steps", flag_values=fv)
    assert isinstance(h, F.FlagHolder) and h.name == "tag" and h.default == ["t0"]
    rest = fv(["prog", "--tag=a", "arg", "--tag", "b", "--k=3", "--k=4", "--x=0.5", "--m=down", "--m=up",
               "--shape=square", "--shapes=circle", "--words=p,q r", "--s=20"])
    assert rest == ["prog", "arg"]
    assert fv.tag == ["a", "b"] and h.value == ["a", "b"] and h.present
    assert fv.k == [3, 4] and fv.x == [0.5] and fv.m == ["down", "up"]
    assert fv.shape is Shape.SQUARE and fv.shapes == [Shape.CIRCLE]
    assert fv.words == ["p", "q", "r"] and fv.steps == 20 and fv.s == 20
    fv2 = F.FlagValues()
    F.DEFINE_multi_integer("k", [1], "ks", lower_bound=1, flag_values=fv2)
    assert fv2(["p"]) == ["p"] and fv2.k == [1]
    with pytest.raises(F.IllegalFlagValueError, match=r"flag --k=0: 0 is not a positive integer"):
        fv2(["p", "--k=0"])
    with pytest.raises(TypeError):
        bool(h)


def test_validators():
    fv = F.FlagValues()
    F.DEFINE_integer("lr_steps", 5, "steps", flag_values=fv)
    F.DEFINE_integer("warmup", 1, "warmup", flag_values=fv)
    F.DEFINE_bool("a", False, "a", flag_values=fv)
    F.DEFINE_bool("b", False, "b", flag_values=fv)
    F.DEFINE_string("p", None, "p", flag_values=fv)
    F.DEFINE_string("q", None, "q", flag_values=fv)
    F.register_validator("lr_steps", lambda v: v % 5 == 0, message="must be a multiple of 5", flag_values=fv)

    @F.multi_flags_validator(["lr_steps", "warmup"], flag_values=fv)
    def _ok(d):
        if d["warmup"] >= d["lr_steps"]:
            raise F.ValidationError("warmup must be shorter")
        return True
    F.mark_bool_flags_as_mutual_exclusive(["a", "b"], flag_values=fv)
    F.mark_flags_as_mutual_exclusive(["p", "q"], required=True, flag_values=fv)
    with pytest.raises(F.IllegalFlagValueError, match="Exactly one of \\(p, q\\) must have a value other than None"):
        fv(["prog"])
    fv(["prog", "--p=x", "--lr_steps=10"])
    assert fv.lr_steps == 10
    with pytest.raises(F.IllegalFlagValueError, match="flag --lr_steps=7: must be a multiple of 5"):
        fv.lr_steps = 7
    assert fv.lr_steps == 10  # refused: the old value stays
    with pytest.raises(F.IllegalFlagValueError, match="flags lr_steps=10, warmup=20: warmup must be shorter"):
        fv.warmup = 20
    fv2 = F.FlagValues()
    F.DEFINE_bool("a", False, "a", flag_values=fv2)
    F.DEFINE_bool("b", False, "b", flag_values=fv2)
    F.mark_bool_flags_as_mutual_exclusive(["a", "b"], flag_values=fv2)
    with pytest.raises(F.IllegalFlagValueError, match="At most one of \\(a, b\\) must be True"):
        fv2(["prog", "--a", "--b"])
    F.DEFINE_string("s", "x", "s", flag_values=fv2)
    with pytest.raises(F.ValidationError):
        F.mark_bool_flags_as_mutual_exclusive(["a", "s"], flag_values=fv2)
    seen = []
    fv3 = F.FlagValues()
    F.DEFINE_string("s", "x", "s", flag_values=fv3)
    F.validator("s", flag_values=fv3)(lambda v: seen.append(v) or True)
    fv3(["prog", "--s=y"])
    assert seen == ["y"]


def test_set_default_override_and_flag_objects():
    fv = F.FlagValues()
    h = F.DEFINE_integer("n", 1, "n", flag_values=fv)
    F.set_default(h, 4)
    fv(["p"])
    assert fv.n == 4 and h.default == 4
    F.override_value(h, 9)
    assert fv.n == 9
    fv.set_default("n", 2)
    assert fv.n == 9  # set by override: the new default does not replace it
    F.DEFINE_flag(F.BooleanFlag("v", False, "v"), flag_values=fv)
    F.DEFINE_flag(F.EnumFlag("mode", "a", "mode", ["a", "b"]), flag_values=fv)
    F.DEFINE_flag(F.MultiFlag(F.FloatParser(), F.ArgumentSerializer(), "w", None, "w"), flag_values=fv)
    fv(["p", "--v", "--mode=b", "--w=1", "--w=2.5"])
    assert fv.v is True and fv.mode == "b" and fv.w == [1.0, 2.5]
    F.declare_key_flag("n", flag_values=fv)
    F.disclaim_key_flags()
    import collflow.platform.flags as mod
    F.adopt_module_key_flags(mod)


def test_helpers():
    assert list(F.flag_dict_to_args({"a": 1, "b": True, "c": False, "d": [1, 2], "e": None})) == [
        "--a=1", "--b", "--noc", "--d=1,2", "--e"]
    assert list(F.flag_dict_to_args({"m": ["x", "y"]}, multi_flags={"m"})) == ["--m=x", "--m=y"]
    wrapped = F.text_wrap("one two three four five six", 12, "  ", "- ")
    assert wrapped.split("\n")[0].startswith("- ") and all(len(ln) <= 12 for ln in wrapped.split("\n"))
    assert F.doc_to_help("First line\n    goes on.\n\n    Next.\n") == "First line goes on.\n\nNext."
    assert F.get_help_width() >= 40
    assert F.WhitespaceSeparatedListParser().parse("a  b\tc") == ["a", "b", "c"]
    assert F.EnumClassParser(Shape, case_sensitive=False).parse("circle") is Shape.CIRCLE
    assert F.EnumClassListSerializer(",", lowercase=True).serialize([Shape.CIRCLE, Shape.SQUARE]) == "circle,square"
    assert F.IntegerParser().parse("0x10") == 16 and F.BooleanParser().parse("f") is False
