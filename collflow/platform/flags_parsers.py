"""absl's argument parsers, serializers and flag classes on collflow's flags machinery
(flags.py), for tf.app.flags: IntegerParser, EnumClassParser, ListSerializer, MultiFlag,
EnumClassFlag, ...  (flags_more.py re-exports them with the DEFINE_* that use them.)"""
from __future__ import annotations

import enum
from typing import Any, List, Optional, Sequence

from . import flags as _f

__all__ = ["ArgumentParser", "ArgumentSerializer", "BooleanParser", "IntegerParser", "FloatParser", "EnumParser",
           "EnumClassParser", "BaseListParser", "ListParser", "WhitespaceSeparatedListParser", "ListSerializer",
           "CsvListSerializer", "EnumClassSerializer", "EnumClassListSerializer", "BooleanFlag", "EnumFlag",
           "EnumClassFlag", "MultiFlag", "MultiEnumClassFlag", "make_flag", "serialize_flag"]


# -- parsers and serializers ----------------------------------------------------------------------

class ArgumentParser:
    """Turns a command-line string into a flag's value (absl's ArgumentParser)."""
    syntactic_help = ""

    def parse(self, argument: Any) -> Any:
        if not isinstance(argument, str):
            raise TypeError(f"flag value must be a string, found \"{type(argument)}\"")
        return argument

    def flag_type(self) -> str:
        return "string"


class ArgumentSerializer:
    """Turns a value back into a command-line string."""

    def serialize(self, value: Any) -> str:
        return str(value)


class BooleanParser(ArgumentParser):
    def parse(self, argument: Any) -> bool:
        return _f._parse_bool(argument)

    def flag_type(self) -> str:
        return "bool"


class _NumericParser(ArgumentParser):
    def __init__(self, lower_bound: Any = None, upper_bound: Any = None):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def is_outside_bounds(self, val: Any) -> bool:
        return ((self.lower_bound is not None and val < self.lower_bound)
                or (self.upper_bound is not None and val > self.upper_bound))

    def _bounds_message(self) -> str:
        lo, hi = self.lower_bound, self.upper_bound
        if lo is not None and hi is not None:
            return f"{lo} <= value <= {hi}"
        return f">= {lo}" if lo is not None else f"<= {hi}"

    def parse(self, argument: Any) -> Any:
        val = self.convert(argument)
        if self.is_outside_bounds(val):
            raise ValueError(f"{val} is not {self.syntactic_help_text()}")
        return val

    def syntactic_help_text(self) -> str:
        kind = "an integer" if isinstance(self, IntegerParser) else "a number"
        if self.lower_bound is None and self.upper_bound is None:
            return kind
        if self.lower_bound is not None and self.upper_bound is not None:
            return f"{kind} in the range [{self.lower_bound}, {self.upper_bound}]"
        if self.lower_bound == 0 and isinstance(self, IntegerParser):
            return "a non-negative integer"
        if self.lower_bound == 1 and isinstance(self, IntegerParser):
            return "a positive integer"
        return f"{kind} {self._bounds_message()}"

    def convert(self, argument: Any) -> Any:
        raise NotImplementedError


class IntegerParser(_NumericParser):
    def convert(self, argument: Any) -> int:
        return _f._parse_int(argument)

    def flag_type(self) -> str:
        return "int"


class FloatParser(_NumericParser):
    def convert(self, argument: Any) -> float:
        return _f._parse_float(argument)

    def flag_type(self) -> str:
        return "float"


class EnumParser(ArgumentParser):
    def __init__(self, enum_values: Sequence[str], case_sensitive: bool = True):
        if not enum_values:
            raise ValueError(f"enum_values cannot be empty, found \"{enum_values}\"")
        self.enum_values, self.case_sensitive = list(enum_values), case_sensitive

    def parse(self, argument: Any) -> str:
        if self.case_sensitive:
            if argument not in self.enum_values:
                raise ValueError(f"value should be one of <{'|'.join(self.enum_values)}>")
            return argument
        for v in self.enum_values:
            if v.upper() == str(argument).upper():
                return v
        raise ValueError(f"value should be one of <{'|'.join(self.enum_values)}>")

    def flag_type(self) -> str:
        return "string enum"


class EnumClassParser(ArgumentParser):
    def __init__(self, enum_class: Any, case_sensitive: bool = True):
        if not issubclass(enum_class, enum.Enum):
            raise TypeError(f"{enum_class} is not a subclass of Enum.")
        if not enum_class.__members__:
            raise ValueError("enum_class cannot be empty, but \"{}\" is empty.".format(enum_class))
        self.enum_class, self.case_sensitive = enum_class, case_sensitive

    @property
    def member_names(self) -> List[str]:
        return list(self.enum_class.__members__)

    def parse(self, argument: Any) -> Any:
        if isinstance(argument, self.enum_class):
            return argument
        if not isinstance(argument, str):
            raise ValueError(f"{argument} is not an enum member or a name of a member in {self.enum_class}")
        for name, member in self.enum_class.__members__.items():
            if name == argument or (not self.case_sensitive and name.lower() == argument.lower()):
                return member
        names = self.member_names if self.case_sensitive else [n.lower() for n in self.member_names]
        raise ValueError(f"value should be one of <{'|'.join(names)}>")

    def flag_type(self) -> str:
        return "enum class"


class BaseListParser(ArgumentParser):
    """A list from one string split at `token` (None: whitespace)."""

    def __init__(self, token: Optional[str] = None, name: Optional[str] = None):
        self._token, self._name = token, name

    def parse(self, argument: Any) -> List[str]:
        if isinstance(argument, list):
            return argument
        if not argument:
            return []
        return [s.strip() for s in argument.split(self._token)]

    def flag_type(self) -> str:
        return f"{self._name} separated list of strings"


class ListParser(BaseListParser):
    def __init__(self) -> None:
        super().__init__(",", "comma")

    def parse(self, argument: Any) -> List[str]:
        if isinstance(argument, list):
            return argument
        return _f._parse_list(argument)


class WhitespaceSeparatedListParser(BaseListParser):
    def __init__(self, comma_compat: bool = False):
        self._comma_compat = comma_compat
        super().__init__(None, "whitespace or comma" if comma_compat else "whitespace")

    def parse(self, argument: Any) -> List[str]:
        if isinstance(argument, list):
            return argument
        if self._comma_compat:
            argument = argument.replace(",", " ")
        return argument.split()


class ListSerializer(ArgumentSerializer):
    def __init__(self, list_sep: str):
        self.list_sep = list_sep

    def serialize(self, value: Any) -> str:
        return self.list_sep.join(str(x) for x in value)


class CsvListSerializer(ListSerializer):
    def __init__(self, list_sep: str = ","):
        super().__init__(list_sep)


class EnumClassSerializer(ArgumentSerializer):
    def __init__(self, lowercase: bool):
        self._lowercase = lowercase

    def serialize(self, value: Any) -> str:
        s = str(value.name)
        return s.lower() if self._lowercase else s


class EnumClassListSerializer(ListSerializer):
    def __init__(self, list_sep: str, **kwargs: Any):
        super().__init__(list_sep)
        self._element = EnumClassSerializer(**kwargs)

    def serialize(self, value: Any) -> str:
        if isinstance(value, list):
            return self.list_sep.join(self._element.serialize(x) for x in value)
        return self._element.serialize(value)


# -- flag classes ------------------------------------------------------------------------------------

def make_flag(parser: ArgumentParser, serializer: Optional[ArgumentSerializer], name: str, default: Any, help: str,
          cls: type = _f.Flag, boolean: bool = False, **extra: Any) -> Any:
    f = cls.__new__(cls)
    _f.Flag.__init__(f, name, default, help, parser.parse, parser.flag_type(), boolean=boolean)
    f.parser, f.serializer = parser, serializer
    for k, v in extra.items():
        setattr(f, k, v)
    return f


def serialize_flag(flag: Any) -> str:
    if flag.value is None:
        return ""
    ser = getattr(flag, "serializer", None)
    if flag.boolean:
        return f"--{flag.name}" if flag.value else f"--no{flag.name}"
    if isinstance(flag, MultiFlag):
        return "\n".join(f"--{flag.name}={ser.serialize(v) if ser else v}" for v in flag.value)
    if ser is None and isinstance(flag.value, list):
        return f"--{flag.name}={','.join(str(x) for x in flag.value)}"
    return f"--{flag.name}={ser.serialize(flag.value) if ser else flag.value}"


class BooleanFlag(_f.Flag):
    """absl's BooleanFlag(name, default, help)."""

    def __init__(self, name: str, default: Any, help: str, short_name: Optional[str] = None, **args: Any):
        _f.Flag.__init__(self, name, default, help, _f._parse_bool, "bool", boolean=True)
        self.parser, self.serializer, self.short_name = BooleanParser(), None, short_name


class EnumFlag(_f.Flag):
    """absl's EnumFlag(name, default, help, enum_values)."""

    def __init__(self, name: str, default: Any, help: str, enum_values: Sequence[str], short_name: Optional[str] = None,
                 case_sensitive: bool = True, **args: Any):
        p = EnumParser(enum_values, case_sensitive)
        _f.Flag.__init__(self, name, default, help, p.parse, p.flag_type())
        self.parser, self.serializer, self.short_name = p, ArgumentSerializer(), short_name


class EnumClassFlag(_f.Flag):
    """absl's EnumClassFlag(name, default, help, enum_class): the value is an Enum member."""

    def __init__(self, name: str, default: Any, help: str, enum_class: Any, short_name: Optional[str] = None,
                 case_sensitive: bool = False, **args: Any):
        p = EnumClassParser(enum_class, case_sensitive)
        _f.Flag.__init__(self, name, default, help, p.parse, p.flag_type())
        self.parser, self.serializer, self.short_name = p, EnumClassSerializer(lowercase=not case_sensitive), short_name


class MultiFlag(_f.Flag):
    """A flag given any number of times; its value is the list of them (absl's MultiFlag).  The
    first --flag on the command line replaces the default, later ones append."""

    def __init__(self, parser: ArgumentParser, serializer: Optional[ArgumentSerializer], name: str, default: Any,
                 help_string: str, **args: Any):
        self.parser, self.serializer = parser, serializer
        _f.Flag.__init__(self, name, default, help_string, self._parse_all, parser.flag_type())

    def _parse_all(self, arguments: Any) -> List[Any]:
        items = list(arguments) if isinstance(arguments, (list, tuple)) else [arguments]
        return [self.parser.parse(x) for x in items]

    def parse(self, raw: Any) -> None:
        new = self._convert(raw, "argv")
        if self.present and self.value is not None:
            self.value = list(self.value) + new
        else:
            self.value = new
        self.present += len(new)
        self.using_default_value = False


class MultiEnumClassFlag(MultiFlag):
    """A multi flag of Enum members."""

    def __init__(self, name: str, default: Any, help_string: str, enum_class: Any, case_sensitive: bool = False,
                 **args: Any):
        super().__init__(EnumClassParser(enum_class, case_sensitive),
                         EnumClassListSerializer(",", lowercase=not case_sensitive), name, default, help_string)
