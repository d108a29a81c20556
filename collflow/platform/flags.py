"""`tf.flags` / `tf.app.flags` (TensorFlow 1.x, which wraps absl.flags): command-line flags.

    cf.flags.DEFINE_integer("batch_size", 32, "examples per step", lower_bound=1)
    cf.flags.DEFINE_boolean("fp16", False, "compress gradients")
    FLAGS = cf.flags.FLAGS
    ...
    cf.app.run(main)          # parses sys.argv, then main(argv with the unparsed arguments)

Parsing follows absl: `--name=value`, `--name value`, `-name=value`; booleans also as
`--name` (true), `--noname` (false) and `--name=true|false|t|f|1|0`; positional arguments
may come between flags (GNU style); `--` ends parsing.  `FLAGS(argv)` raises
UnrecognizedFlagError for an unknown flag, `FLAGS(argv, known_only=True)` (what
`cf.app.run` uses) leaves unknown flags in the returned argv for main.  As in TensorFlow
1.x, reading an attribute of the global `FLAGS` before any parse parses sys.argv first.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from ..errors import CollflowError

__all__ = ["Error", "IllegalFlagValueError", "UnrecognizedFlagError", "DuplicateFlagError",
           "UnparsedFlagAccessError", "Flag", "FlagValues", "FLAGS", "DEFINE", "DEFINE_string", "DEFINE_integer",
           "DEFINE_float", "DEFINE_boolean", "DEFINE_bool", "DEFINE_list", "DEFINE_enum", "mark_flag_as_required",
           "mark_flags_as_required"]


class Error(CollflowError):
    """Base of the flag errors (absl's flags.Error)."""


class IllegalFlagValueError(Error, ValueError):
    """A flag was given a value its type or bounds refuse."""


class UnrecognizedFlagError(Error):
    """argv names a flag nobody defined."""

    def __init__(self, flagname: str, flagvalue: str = "", suggestions: Sequence[str] = ()):
        self.flagname = flagname
        self.flagvalue = flagvalue
        hint = f" (did you mean: {', '.join(suggestions)}?)" if suggestions else ""
        super().__init__(f"Unknown command line flag '{flagname}'{hint}")


class DuplicateFlagError(Error):
    """A flag name was defined twice."""


class UnparsedFlagAccessError(Error, AttributeError):
    """A flag was read before its FlagValues parsed argv."""


# -- parsers: str -> value (a non-string default passes through unchanged) -------------------------

_TRUE, _FALSE = ("true", "t", "1"), ("false", "f", "0")


def _parse_bool(s: Any) -> bool:
    if isinstance(s, bool):
        return s
    if isinstance(s, str):
        if s.lower() in _TRUE:
            return True
        if s.lower() in _FALSE:
            return False
    if isinstance(s, int) and s in (0, 1):
        return bool(s)
    raise ValueError("Non-boolean argument to boolean flag")


def _parse_int(s: Any) -> int:
    if isinstance(s, bool):
        raise ValueError("expected an integer, got a boolean")
    if isinstance(s, int):
        return s
    if isinstance(s, str):
        t = s.strip()
        base = 10
        if len(t) > 2 and t[0] == "0" and t[1] in "ox":  # absl: 0o17, 0x1f
            base = 8 if t[1] == "o" else 16
        return int(t, base)
    raise ValueError(f"expected an integer, got {type(s).__name__}")


def _parse_float(s: Any) -> float:
    if isinstance(s, bool):
        raise ValueError("expected a number, got a boolean")
    if isinstance(s, (int, float)):
        return float(s)
    if isinstance(s, str):
        return float(s)
    raise ValueError(f"expected a number, got {type(s).__name__}")


def _parse_list(s: Any) -> List[str]:
    if isinstance(s, (list, tuple)):
        return [str(x) for x in s]
    if isinstance(s, str):
        return [x.strip() for x in s.split(",")] if s.strip() else []
    raise ValueError(f"expected a comma-separated list, got {type(s).__name__}")


class Flag:
    """One flag: name, default, help, current `value`, and whether argv set it (`present`)."""

    def __init__(self, name: str, default: Any, help: str, parser: Callable[[Any], Any], type_name: str,
                 boolean: bool = False, checks: Sequence[Callable[[Any], Optional[str]]] = ()):
        if not isinstance(name, str) or not name or name.startswith("-") or "=" in name:
            raise Error(f"invalid flag name {name!r}: use a plain name such as 'batch_size'")
        self.name = name
        self.help = help or ""
        self.boolean = boolean
        self.type_name = type_name
        self._parser = parser
        self._checks = list(checks)
        self.validators: List[Any] = []  # register_validator's (flags_more.py), run after parsing and on assignment
        self.present = 0
        self.using_default_value = True
        self.default = None if default is None else self._convert(default, "default")
        self.value = self.default

    def _convert(self, raw: Any, where: str) -> Any:
        try:
            v = self._parser(raw)
        except (ValueError, TypeError) as e:
            shown = f"--{self.name}={raw}" if where == "argv" else f"default {raw!r} of --{self.name}"
            raise IllegalFlagValueError(f"flag {shown}: {e}") from None
        for check in self._checks:
            why = check(v)
            if why:
                shown = f"--{self.name}={raw}" if where == "argv" else f"default {raw!r} of --{self.name}"
                raise IllegalFlagValueError(f"flag {shown}: {why}")
        return v

    def parse(self, raw: Any) -> None:
        """Sets the value from a command-line string."""
        self.value = self._convert(raw, "argv")
        self.present += 1
        self.using_default_value = False

    def reset(self) -> None:
        self.value = self.default
        self.present = 0
        self.using_default_value = True

    def __repr__(self) -> str:
        return f"Flag(--{self.name}={self.value!r}, default={self.default!r})"


class FlagValues:
    """A registry of flags with attribute access to their values (absl's FlagValues).

    auto_parse_argv: reading a flag before any parse parses sys.argv (TensorFlow 1.x's
    global FLAGS does); otherwise such a read raises UnparsedFlagAccessError.
    """

    def __init__(self, auto_parse_argv: bool = False):
        d = self.__dict__
        # set through __dict__: __setattr__ is how flags are assigned
        d["_flags"] = {}
        d["_parsed"] = False
        d["_auto"] = bool(auto_parse_argv)
        d["_required"] = []

    # -- defining -------------------------------------------------------------------------------------
    def _register(self, flag: Flag) -> Flag:
        if flag.name in self._flags:
            raise DuplicateFlagError(f"The flag '{flag.name}' is defined twice (first with type "
                                     f"{self._flags[flag.name].type_name})")
        if flag.boolean and flag.name.startswith("no") and flag.name[2:] in self._flags:
            raise DuplicateFlagError(f"boolean flag '{flag.name}' clashes with the negation of '{flag.name[2:]}'")
        self._flags[flag.name] = flag
        return flag

    def __contains__(self, name: str) -> bool:
        return name in self._flags

    def __getitem__(self, name: str) -> Flag:
        try:
            return self._flags[name]
        except KeyError:
            raise UnrecognizedFlagError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._flags))

    def __len__(self) -> int:
        return len(self._flags)

    # -- values ------------------------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        flags = self.__dict__["_flags"]
        if name not in flags:
            raise AttributeError(name)
        if not self.__dict__["_parsed"]:
            if self.__dict__["_auto"]:
                self(sys.argv)  # TensorFlow 1.x: the first read parses the command line
            else:
                raise UnparsedFlagAccessError(
                    f"Trying to access flag --{name} before flags were parsed: call FLAGS(argv) or cf.app.run(main)")
        return flags[name].value

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._flags:
            raise UnrecognizedFlagError(name, str(value))
        f = self._flags[name]
        old = (f.value, f.using_default_value)
        f.value = value
        f.using_default_value = False
        try:
            self._assert_validators(f.validators)
        except IllegalFlagValueError:
            f.value, f.using_default_value = old  # absl keeps the old value when a validator refuses
            raise

    def _assert_validators(self, validators: Sequence[Any]) -> None:
        """Runs the validators (in the order they were registered); IllegalFlagValueError
        listing every failure, as absl (a flag already failed skips its later validators)."""
        messages: List[str] = []
        bad: set = set()
        for v in sorted(set(validators), key=lambda v: v.insertion_index):
            names = set(v.get_flags_names())
            if names & bad:
                continue
            try:
                v.verify(self)
            except Error as e:
                if type(e).__name__ != "ValidationError":
                    raise
                bad |= names
                messages.append(f"{v.print_flags_with_values(self)}: {e}")
        if messages:
            raise IllegalFlagValueError("\n".join(messages))

    def validate_all_flags(self) -> None:
        """Runs every flag's validators (IllegalFlagValueError on a failure)."""
        self._assert_validators([v for f in self._flags.values() for v in f.validators])

    def set_default(self, name: str, value: Any) -> None:
        """Changes flag `name`'s default (and its value while argv has not set it)."""
        if name not in self._flags:
            raise UnrecognizedFlagError(name, str(value))
        f = self._flags[name]
        f.default = None if value is None else f._convert(value, "default")
        if f.using_default_value:
            f.value = f.default
        self._assert_validators(f.validators)

    def __delattr__(self, name: str) -> None:
        if name not in self._flags:
            raise AttributeError(name)
        del self._flags[name]

    def flag_values_dict(self) -> Dict[str, Any]:
        """{name: value} of every flag."""
        return {n: f.value for n, f in self._flags.items()}

    def is_parsed(self) -> bool:
        return self._parsed

    def mark_as_parsed(self) -> None:
        self.__dict__["_parsed"] = True

    def unparse_flags(self) -> None:
        """Back to the defaults, not parsed."""
        for f in self._flags.values():
            f.reset()
        self.__dict__["_parsed"] = False

    # -- parsing ---------------------------------------------------------------------------------------
    def __call__(self, argv: Sequence[str], known_only: bool = False) -> List[str]:
        """Parses the flags in argv[1:]; returns [argv[0]] + the arguments not parsed."""
        if isinstance(argv, (str, bytes)):
            raise TypeError("argv should be a list of strings, not a string")
        argv = list(argv)
        if not argv:
            raise ValueError("argv cannot be empty: its first element is the program name")
        unknown, rest = self._parse_args(argv[1:], known_only)
        if unknown:
            name, _ = unknown[0]
            raise UnrecognizedFlagError(name, suggestions=self._suggest(name))
        self.mark_as_parsed()
        self.validate_all_flags()
        missing = [n for n in self._required if self._flags[n].value is None]
        if missing:
            raise IllegalFlagValueError(
                "flag " + ", ".join(f"--{n}" for n in missing) + " must have a value other than None")
        return [argv[0]] + rest

    def _parse_args(self, args: List[str], known_only: bool) -> tuple:
        unknown: List[tuple] = []
        rest: List[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                # the end of flags: what follows is main's (known_only keeps the marker, as absl)
                rest.extend(([arg] if known_only else []) + args[i:])
                break
            if not arg.startswith("-") or arg.strip("-") == "":
                rest.append(arg)  # a positional argument (GNU style: parsing goes on)
                continue
            body = arg[2:] if arg.startswith("--") else arg[1:]
            name, value = body.split("=", 1) if "=" in body else (body, None)
            flag = self._flags.get(name)
            if flag is None and name.startswith("no") and len(name) > 2:
                neg = self._flags.get(name[2:])
                if neg is not None and neg.boolean:
                    if value is not None:
                        raise IllegalFlagValueError(f"{arg} does not take an argument")
                    flag, value = neg, "false"
            if flag is None:
                if known_only:
                    rest.append(arg)
                else:
                    unknown.append((name, arg))
                continue
            if value is None:
                if flag.boolean:
                    value = "true"
                elif i < len(args):
                    value = args[i]
                    i += 1
                else:
                    raise IllegalFlagValueError(f"Missing value for flag {arg}")
            flag.parse(value)
        return unknown, rest

    def _suggest(self, name: str) -> List[str]:
        import difflib
        return difflib.get_close_matches(name, list(self._flags), n=3, cutoff=0.7)

    def get_help(self) -> str:
        """One block per flag: --name: help (default: ...)."""
        lines = []
        for n in sorted(self._flags):
            f = self._flags[n]
            shown = ",".join(f.default) if isinstance(f.default, list) else f.default
            lines.append(f"  --{'[no]' if f.boolean else ''}{n}: {f.help}\n    (default: {shown!r})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"FlagValues({len(self._flags)} flags, parsed={self._parsed})"


# TensorFlow 1.x's tf.flags.FLAGS: parses sys.argv on first read
FLAGS = FlagValues(auto_parse_argv=True)


def _values(flag_values: Optional[FlagValues]) -> FlagValues:
    """The given registry, else the global FLAGS (looked up now, not when the module loaded)."""
    return flag_values if flag_values is not None else FLAGS


def _bounds(lower: Any, upper: Any) -> List[Callable[[Any], Optional[str]]]:
    def check(v: Any) -> Optional[str]:
        if v is None:
            return None
        if lower is not None and v < lower:
            return f"{v} is below the lower bound {lower}"
        if upper is not None and v > upper:
            return f"{v} is above the upper bound {upper}"
        return None
    return [check] if lower is not None or upper is not None else []


def _define(fv: FlagValues, flag: Flag) -> Any:
    """Registers `flag` in `fv`; absl's FlagHolder of it (flags_more.py)."""
    from .flags_more import FlagHolder
    return FlagHolder(fv, fv._register(flag))


def DEFINE(parser: Callable[[Any], Any], name: str, default: Any, help: str,
           flag_values: Optional[FlagValues] = None, type_name: str = "custom", boolean: bool = False) -> Flag:
    """Defines a flag whose string values `parser` converts (absl's DEFINE)."""
    return _define(_values(flag_values), Flag(name, default, help, parser, type_name, boolean))


def DEFINE_string(name: str, default: Optional[str], help: str, flag_values: Optional[FlagValues] = None) -> Flag:
    return _define(_values(flag_values), Flag(name, default, help, lambda s: s if isinstance(s, str) else str(s),
                                               "string"))


def DEFINE_integer(name: str, default: Optional[int], help: str, lower_bound: Optional[int] = None,
                   upper_bound: Optional[int] = None, flag_values: Optional[FlagValues] = None) -> Flag:
    return _define(_values(flag_values), Flag(name, default, help, _parse_int, "integer",
                                      checks=_bounds(lower_bound, upper_bound)))


def DEFINE_float(name: str, default: Optional[float], help: str, lower_bound: Optional[float] = None,
                 upper_bound: Optional[float] = None, flag_values: Optional[FlagValues] = None) -> Flag:
    return _define(_values(flag_values), Flag(name, default, help, _parse_float, "float",
                                      checks=_bounds(lower_bound, upper_bound)))


def DEFINE_boolean(name: str, default: Optional[bool], help: str, flag_values: Optional[FlagValues] = None) -> Flag:
    return _define(_values(flag_values), Flag(name, default, help, _parse_bool, "boolean", boolean=True))


DEFINE_bool = DEFINE_boolean


def DEFINE_list(name: str, default: Any, help: str, flag_values: Optional[FlagValues] = None) -> Flag:
    """A comma-separated list of strings (the default may be a list or such a string)."""
    return _define(_values(flag_values), Flag(name, default, help, _parse_list, "comma-separated list"))


def DEFINE_enum(name: str, default: Optional[str], enum_values: Sequence[str], help: str,
                flag_values: Optional[FlagValues] = None, case_sensitive: bool = True) -> Flag:
    """A string that must be one of `enum_values`."""
    values = list(enum_values)
    if not values:
        raise Error(f"enum flag --{name} needs at least one allowed value")

    def parse(s: Any) -> str:
        s = str(s)
        for v in values:
            if s == v or (not case_sensitive and s.upper() == v.upper()):
                return v
        raise ValueError(f"value should be one of <{'|'.join(values)}>")
    return _define(_values(flag_values), Flag(name, default, help, parse, "enum"))


def mark_flag_as_required(flag_name: str, flag_values: Optional[FlagValues] = None) -> None:
    """Parsing fails unless the flag ends up with a value other than None."""
    fv = _values(flag_values)
    if flag_name not in fv:
        raise UnrecognizedFlagError(flag_name)
    if flag_name not in fv._required:
        fv._required.append(flag_name)


def mark_flags_as_required(flag_names: Sequence[str], flag_values: Optional[FlagValues] = None) -> None:
    for n in flag_names:
        mark_flag_as_required(n, flag_values)


# absl's other names (multi flags, validators, parsers, FlagHolder, ...): tf.app.flags has them
from .flags_more import *  # noqa: E402,F401,F403
from .flags_more import __all__ as _more_all  # noqa: E402
__all__ += _more_all
