"""The rest of absl.flags that TensorFlow 1.x's `tf.app.flags` re-exports, on collflow's own
flags machinery (flags.py; absl is not a dependency): multi flags (`--x=a --x=b` gives
['a', 'b']), enum-class flags, aliases, space-separated lists, validators (run when argv is
parsed and when a flag is assigned; a failure is IllegalFlagValueError "flag --x=v: message",
as absl), mutual-exclusion markers, FlagHolder (what every DEFINE_* returns), the argument
parsers and serializers, and the help-text helpers.
"""
from __future__ import annotations

import itertools
import shutil
import sys
import textwrap
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from . import flags as _f
from .flags_parsers import (ArgumentParser, ArgumentSerializer, BaseListParser, BooleanFlag,  # noqa: F401
                            BooleanParser, CsvListSerializer, EnumClassFlag, EnumClassListSerializer, EnumClassParser,
                            EnumClassSerializer, EnumFlag, EnumParser, FloatParser, IntegerParser, ListParser,
                            ListSerializer, MultiEnumClassFlag, MultiFlag, WhitespaceSeparatedListParser, make_flag,
                            serialize_flag)

__all__ = ["ValidationError", "CantOpenFlagFileError", "FlagNameConflictsWithMethodError", "FlagHolder",
           "ArgumentParser", "ArgumentSerializer", "BooleanParser", "IntegerParser", "FloatParser", "EnumParser",
           "EnumClassParser", "BaseListParser", "ListParser", "WhitespaceSeparatedListParser", "ListSerializer",
           "CsvListSerializer", "EnumClassSerializer", "EnumClassListSerializer", "BooleanFlag", "EnumFlag",
           "EnumClassFlag", "MultiFlag", "MultiEnumClassFlag", "DEFINE_flag", "DEFINE_multi", "DEFINE_multi_string",
           "DEFINE_multi_integer", "DEFINE_multi_float", "DEFINE_multi_enum", "DEFINE_multi_enum_class",
           "DEFINE_enum_class", "DEFINE_alias", "DEFINE_spaceseplist", "register_validator", "validator",
           "register_multi_flags_validator", "multi_flags_validator", "mark_flags_as_mutual_exclusive",
           "mark_bool_flags_as_mutual_exclusive", "declare_key_flag", "adopt_module_key_flags",
           "disclaim_key_flags", "set_default", "override_value", "text_wrap", "doc_to_help", "flag_dict_to_args",
           "get_help_width"]


class ValidationError(_f.Error):
    """A validator's constraint does not hold (absl's flags.ValidationError)."""


class CantOpenFlagFileError(_f.Error):
    """A --flagfile could not be read."""


class FlagNameConflictsWithMethodError(_f.Error):
    """A flag name is also a FlagValues method's name."""


class FlagHolder:
    """What DEFINE_* returns (absl's FlagHolder): `.value` reads the flag through its FlagValues."""

    def __init__(self, flag_values: Any, flag: Any, ensure_non_none_value: bool = False):
        self._flagvalues = flag_values
        self._name = flag.name
        self._ensure_non_none_value = ensure_non_none_value

    @property
    def name(self) -> str:
        return self._name

    @property
    def value(self) -> Any:
        v = getattr(self._flagvalues, self._name)
        if self._ensure_non_none_value and v is None:
            raise _f.IllegalFlagValueError(f"Unexpected None value for flag {self._name}")
        return v

    @property
    def default(self) -> Any:
        return self._flagvalues[self._name].default

    @property
    def present(self) -> bool:
        return bool(self._flagvalues[self._name].present)

    def serialize(self) -> str:
        return serialize_flag(self._flagvalues[self._name])

    def __eq__(self, other: object) -> bool:
        raise TypeError(f"unsupported operand type(s) for ==: '{type(self).__name__}' and '{type(other).__name__}' "
                        f"(did you mean to use '{type(self).__name__}.value' instead?)")

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise TypeError(f"bool() not supported for instances of type '{type(self).__name__}' "
                        f"(did you mean to use '{type(self).__name__}.value' instead?)")

    def __repr__(self) -> str:
        return f"FlagHolder(name={self._name!r})"


# -- DEFINE_* ------------------------------------------------------------------------------------------

def _fv(flag_values: Any) -> Any:
    return flag_values if flag_values is not None else _f.FLAGS


def DEFINE_flag(flag: Any, flag_values: Any = None, module_name: Optional[str] = None,
                required: bool = False) -> FlagHolder:
    """Registers an already-made Flag object."""
    fv = _fv(flag_values)
    fv._register(flag)
    if required:
        _f.mark_flag_as_required(flag.name, fv)
    return FlagHolder(fv, flag)


def DEFINE_multi(parser: ArgumentParser, serializer: Optional[ArgumentSerializer], name: str, default: Any,
                 help: str, flag_values: Any = None, module_name: Optional[str] = None,
                 required: bool = False) -> FlagHolder:
    return DEFINE_flag(MultiFlag(parser, serializer, name, default, help), flag_values, required=required)


def DEFINE_multi_string(name: str, default: Any, help: str, flag_values: Any = None, required: bool = False,
                        **args: Any) -> FlagHolder:
    return DEFINE_multi(ArgumentParser(), ArgumentSerializer(), name, default, help, flag_values, required=required)


def DEFINE_multi_integer(name: str, default: Any, help: str, lower_bound: Any = None, upper_bound: Any = None,
                         flag_values: Any = None, required: bool = False, **args: Any) -> FlagHolder:
    return DEFINE_multi(IntegerParser(lower_bound, upper_bound), ArgumentSerializer(), name, default, help,
                        flag_values, required=required)


def DEFINE_multi_float(name: str, default: Any, help: str, lower_bound: Any = None, upper_bound: Any = None,
                       flag_values: Any = None, required: bool = False, **args: Any) -> FlagHolder:
    return DEFINE_multi(FloatParser(lower_bound, upper_bound), ArgumentSerializer(), name, default, help,
                        flag_values, required=required)


def DEFINE_multi_enum(name: str, default: Any, enum_values: Sequence[str], help: str, flag_values: Any = None,
                      case_sensitive: bool = True, required: bool = False, **args: Any) -> FlagHolder:
    return DEFINE_multi(EnumParser(enum_values, case_sensitive), ArgumentSerializer(), name, default, help,
                        flag_values, required=required)


def DEFINE_multi_enum_class(name: str, default: Any, enum_class: Any, help: str, flag_values: Any = None,
                            module_name: Optional[str] = None, case_sensitive: bool = False, required: bool = False,
                            **args: Any) -> FlagHolder:
    return DEFINE_flag(MultiEnumClassFlag(name, default, help, enum_class, case_sensitive), flag_values,
                       required=required)


def DEFINE_enum_class(name: str, default: Any, enum_class: Any, help: str, flag_values: Any = None,
                      module_name: Optional[str] = None, case_sensitive: bool = False, required: bool = False,
                      **args: Any) -> FlagHolder:
    return DEFINE_flag(EnumClassFlag(name, default, help, enum_class, case_sensitive=case_sensitive), flag_values,
                       required=required)


def DEFINE_spaceseplist(name: str, default: Any, help: str, comma_compat: bool = False, flag_values: Any = None,
                        required: bool = False, **args: Any) -> FlagHolder:
    p = WhitespaceSeparatedListParser(comma_compat=comma_compat)
    return DEFINE_flag(make_flag(p, ListSerializer(" "), name, default, help), flag_values, required=required)


class _AliasFlag(_f.Flag):
    """--alias sets the original flag (absl's DEFINE_alias)."""

    def __init__(self, name: str, original: Any):
        self._original = original
        _f.Flag.__init__(self, name, None, f"Alias for --{original.name}.", original._parser, original.type_name,
                         boolean=original.boolean)

    def parse(self, raw: Any) -> None:
        self._original.parse(raw)
        self.present += 1

    @property  # type: ignore[override]
    def value(self) -> Any:
        return self._original.value

    @value.setter
    def value(self, v: Any) -> None:
        if hasattr(self, "_original") and "_init_done" in self.__dict__:
            self._original.value = v

    def reset(self) -> None:
        self.present = 0


def DEFINE_alias(name: str, original_name: str, flag_values: Any = None,
                 module_name: Optional[str] = None) -> FlagHolder:
    """`--name` is another spelling of `--original_name` (reading FLAGS.name reads the original)."""
    fv = _fv(flag_values)
    if original_name not in fv:
        raise _f.UnrecognizedFlagError(original_name)
    f = _AliasFlag(name, fv[original_name])
    f.__dict__["_init_done"] = True
    fv._register(f)
    return FlagHolder(fv, f)


# -- validators ------------------------------------------------------------------------------------

_ORDER = itertools.count()


class _Validator:
    def __init__(self, checker: Callable[[Any], Any], message: str):
        self.checker, self.message = checker, message
        self.insertion_index = next(_ORDER)

    def verify(self, flag_values: Any) -> None:
        if not self.checker(self._input(flag_values)):
            raise ValidationError(self.message)


class _SingleFlagValidator(_Validator):
    def __init__(self, flag_name: str, checker: Callable[[Any], Any], message: str):
        super().__init__(checker, message)
        self.flag_name = flag_name

    def get_flags_names(self) -> List[str]:
        return [self.flag_name]

    def print_flags_with_values(self, fv: Any) -> str:
        return f"flag --{self.flag_name}={fv[self.flag_name].value}"

    def _input(self, fv: Any) -> Any:
        return fv[self.flag_name].value


class _MultiFlagsValidator(_Validator):
    def __init__(self, flag_names: Sequence[str], checker: Callable[[Any], Any], message: str):
        super().__init__(checker, message)
        self.flag_names = list(flag_names)

    def get_flags_names(self) -> List[str]:
        return self.flag_names

    def print_flags_with_values(self, fv: Any) -> str:
        return "flags " + ", ".join(f"{k}={fv[k].value}" for k in self.flag_names)

    def _input(self, fv: Any) -> Dict[str, Any]:
        return {k: fv[k].value for k in self.flag_names}


def _resolve(flag: Any, flag_values: Any) -> Tuple[str, Any]:
    if isinstance(flag, FlagHolder):
        if flag_values is not None and flag_values is not flag._flagvalues:
            raise ValueError("flag_values must not be customized when operating on a FlagHolder")
        return flag.name, flag._flagvalues
    return flag, _fv(flag_values)


def _resolve_all(flags: Sequence[Any], flag_values: Any) -> Tuple[List[str], Any]:
    names, fvs = [], set()
    fv_out = None
    for x in flags:
        n, fv = _resolve(x, flag_values)
        names.append(n)
        fvs.add(id(fv))
        fv_out = fv
    if len(fvs) > 1:
        raise ValueError("multiple FlagValues instances used in invocation. FlagHolders must be registered to the "
                         "same FlagValues instance as do flag names, if provided.")
    return names, fv_out if fv_out is not None else _fv(flag_values)


def _add(fv: Any, v: Any) -> None:
    for n in v.get_flags_names():
        fv[n].validators.append(v)


def register_validator(flag_name: Any, checker: Callable[[Any], Any], message: str = "Flag validation failed",
                       flag_values: Any = None) -> None:
    """checker(value) must be true (or raise ValidationError) whenever argv is parsed and whenever
    the flag is assigned."""
    name, fv = _resolve(flag_name, flag_values)
    _add(fv, _SingleFlagValidator(name, checker, message))


def validator(flag_name: Any, message: str = "Flag validation failed", flag_values: Any = None) -> Callable:
    """register_validator as a decorator."""
    def decorate(fn: Callable) -> Callable:
        register_validator(flag_name, fn, message=message, flag_values=flag_values)
        return fn
    return decorate


def register_multi_flags_validator(flag_names: Sequence[Any], multi_flags_checker: Callable[[Dict[str, Any]], Any],
                                   message: str = "Flags validation failed", flag_values: Any = None) -> None:
    """checker({name: value}) must be true for the flags together."""
    names, fv = _resolve_all(flag_names, flag_values)
    _add(fv, _MultiFlagsValidator(names, multi_flags_checker, message))


def multi_flags_validator(flag_names: Sequence[Any], message: str = "Flag validation failed",
                          flag_values: Any = None) -> Callable:
    def decorate(fn: Callable) -> Callable:
        register_multi_flags_validator(flag_names, fn, message=message, flag_values=flag_values)
        return fn
    return decorate


def mark_flags_as_mutual_exclusive(flag_names: Sequence[Any], required: bool = False, flag_values: Any = None) -> None:
    """At most one (exactly one when `required`) of the flags may be other than None."""
    names, fv = _resolve_all(flag_names, flag_values)

    def check(d: Dict[str, Any]) -> bool:
        n = sum(1 for v in d.values() if v is not None)
        if n == 1 or (not required and n == 0):
            return True
        raise ValidationError(f"{'Exactly' if required else 'At most'} one of ({', '.join(names)}) must have a "
                              "value other than None.")
    register_multi_flags_validator(names, check, flag_values=fv)


def mark_bool_flags_as_mutual_exclusive(flag_names: Sequence[Any], required: bool = False,
                                        flag_values: Any = None) -> None:
    """At most one (exactly one when `required`) of the boolean flags may be True."""
    names, fv = _resolve_all(flag_names, flag_values)
    for n in names:
        if not fv[n].boolean:
            raise ValidationError(f"Flag --{n} is not Boolean, which is required for flags used in "
                                  "mark_bool_flags_as_mutual_exclusive.")

    def check(d: Dict[str, Any]) -> bool:
        n = sum(bool(v) for v in d.values())
        if n == 1 or (not required and n == 0):
            return True
        raise ValidationError(f"{'Exactly' if required else 'At most'} one of ({', '.join(names)}) must be True.")
    register_multi_flags_validator(names, check, flag_values=fv)


# -- key flags (how absl groups --help by module): recorded, not used by collflow's help ------------

_KEY_FLAGS: Dict[str, List[str]] = {}


def declare_key_flag(flag_name: Any, flag_values: Any = None) -> None:
    name, fv = _resolve(flag_name, flag_values)
    if name not in fv:
        raise _f.UnrecognizedFlagError(name)
    _KEY_FLAGS.setdefault(_caller_module(), []).append(name)


def adopt_module_key_flags(module: Any, flag_values: Any = None) -> None:
    if not hasattr(module, "__name__"):
        raise _f.Error(f"Expected a module object, not {module!r}.")
    _KEY_FLAGS.setdefault(_caller_module(), []).extend(_KEY_FLAGS.get(module.__name__, []))


def disclaim_key_flags() -> None:
    _KEY_FLAGS.pop(_caller_module(), None)


def _caller_module() -> str:
    return sys._getframe(2).f_globals.get("__name__", "__main__")


# -- values ------------------------------------------------------------------------------------------

def set_default(flag_holder: FlagHolder, value: Any) -> None:
    """Changes the flag's default (and its value while argv has not set it)."""
    flag_holder._flagvalues.set_default(flag_holder.name, value)


def override_value(flag_holder: FlagHolder, value: Any) -> None:
    """Sets the flag's value as if assigned (validators run); the value must have the flag's type."""
    fv = flag_holder._flagvalues
    setattr(fv, flag_holder.name, value)


# -- help text -------------------------------------------------------------------------------------

def get_help_width() -> int:
    """The terminal's width for help text (80 when not a terminal)."""
    if not sys.stdout.isatty():
        return 80
    try:
        return max(40, shutil.get_terminal_size().columns)
    except (OSError, ValueError):
        return 80


def text_wrap(text: str, length: Optional[int] = None, indent: str = "", firstline_indent: Optional[str] = None) -> str:
    """`text` wrapped to `length` columns (default get_help_width()), each line indented."""
    if length is None:
        length = get_help_width()
    if firstline_indent is None:
        firstline_indent = indent
    if len(indent) >= length:
        raise ValueError("Length of indent exceeds length")
    if len(firstline_indent) >= length:
        raise ValueError("Length of first line indent exceeds length")
    text = text.expandtabs(4)
    out: List[str] = []
    w = textwrap.TextWrapper(width=length, initial_indent=firstline_indent, subsequent_indent=indent)
    blank = textwrap.TextWrapper(width=length, initial_indent=indent, subsequent_indent=indent)
    for line in text.splitlines():
        wrapper = w if not out else blank
        if line.strip():
            out.extend(wrapper.wrap(line))
        else:
            out.append("")
    return "\n".join(out)


def doc_to_help(doc: str) -> str:
    """A docstring as help text: common indentation removed, paragraphs joined into single lines."""
    doc = doc.strip()
    lines = doc.split("\n")
    rest = [ln for ln in lines[1:] if ln.strip()]
    pad = min((len(ln) - len(ln.lstrip()) for ln in rest), default=0)
    lines = [lines[0]] + [ln[pad:] for ln in lines[1:]]
    paras, cur = [], []
    for ln in lines:
        if ln.strip():
            cur.append(ln.strip() if not ln.startswith((" ", "\t")) else ln)
        else:
            if cur:
                paras.append(cur)
            cur = []
    if cur:
        paras.append(cur)

    def join(p: List[str]) -> str:
        out = p[0]
        for ln in p[1:]:
            out += ("\n" + ln) if ln.startswith((" ", "\t", "-", "*")) else (" " + ln)
        return out
    return "\n\n".join(join(p) for p in paras)


def flag_dict_to_args(flag_map: Dict[str, Any], multi_flags: Optional[set] = None) -> Iterable[str]:
    """Command-line arguments for {name: value}: True gives --name, False --noname, None
    nothing, a list (or a name in multi_flags) --name=a,b (or --name=a --name=b)."""
    for key, value in flag_map.items():
        if value is None:
            yield f"--{key}"
        elif isinstance(value, bool):
            yield f"--{key}" if value else f"--no{key}"
        elif isinstance(value, (bytes, str)):
            yield f"--{key}={value.decode() if isinstance(value, bytes) else value}"
        else:
            try:
                if multi_flags and key in multi_flags:
                    for item in value:
                        yield f"--{key}={item}"
                else:
                    yield f"--{key}={','.join(str(item) for item in value)}"
            except TypeError:
                yield f"--{key}={value}"


