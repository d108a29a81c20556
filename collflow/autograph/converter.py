"""Converting a Python function: source -> AST -> the passes -> a new function.

The converted definition is compiled inside a factory function whose parameters are `ag__`
(the runtime operators) and the original function's free variables, under the original
file name and line numbers, so tracebacks and error messages point at the user's code.
Each call of the converted function builds the inner function from the factory with the
closure's current values and calls it.
"""
from __future__ import annotations

import ast
import functools
import inspect
import os
import sys
import sysconfig
import textwrap
import types
import weakref
from typing import Any, Callable, Optional, Tuple

from . import ag_operators as ops
from . import converter_passes as cp
from .converter_passes import ConversionError

__all__ = ["ConversionError", "convert_entity", "maybe_convert", "converted_source", "is_converted",
           "do_not_convert"]

_FACTORY = "ag__factory"
_LAMBDA = "ag__lambda"
_DO_NOT_CONVERT = "__ag_do_not_convert__"
_CONVERTED = "__ag_compiled"

# code objects of generated functions: errors raised while they run name the user's line
CONVERTED_CODES: "weakref.WeakSet[types.CodeType]" = weakref.WeakSet()

# modules whose functions are never converted: they are graph code already, or Python's
_SKIP_MODULES = ("collflow", "numpy", "tensorflow", "tf_slim", "tf_keras", "keras", "torch", "scipy", "absl",
                 "pytest", "_pytest", "six", "google", "builtins", "abc", "functools", "collections", "typing",
                 "inspect", "re", "math", "copy", "enum", "threading", "os", "sys", "weakref", "itertools")
_LIB_DIRS = tuple(p for p in {sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("purelib"),
                              sysconfig.get_paths().get("platlib")} if p)


class _AgModule:
    """The `ag__` object generated code calls: the operators, with the recursion option."""

    def __init__(self, recursive: bool):
        for name in ops.__all__:
            if name != "converted_call":
                setattr(self, name, getattr(ops, name))
        self.recursive = recursive

    def converted_call(self, f: Any, args: Tuple, kwargs: Optional[dict]) -> Any:
        return ops.converted_call(f, args, kwargs, self.recursive)


_AG = {True: _AgModule(True), False: _AgModule(False)}


class _Conversion:
    """A function's converted code: the compiled factory and the generated source."""

    def __init__(self, factory_code: types.CodeType, source: str, freevars: Tuple[str, ...]):
        self.factory_code = factory_code
        self.source = source
        self.freevars = freevars


# by code object, held weakly: a function's conversion goes with the last function of that code
_cache: "weakref.WeakKeyDictionary[types.CodeType, _Conversion]" = weakref.WeakKeyDictionary()


def _parse(f: types.FunctionType) -> Tuple[ast.FunctionDef, str]:
    try:
        lines, start = inspect.getsourcelines(f)
        filename = inspect.getsourcefile(f) or f.__code__.co_filename
    except (OSError, TypeError) as e:
        raise ConversionError(f"could not get the source code of {f!r}: {e}") from None
    src = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(src)
    except SyntaxError as e:
        if f.__name__ == "<lambda>":  # a lambda inside a statement spanning more lines
            raise ConversionError(f"{filename}:{start}: cannot convert {f!r}: its source is not a whole "
                                  "statement (define it with def)") from None
        raise ConversionError(f"could not parse the source code of {f!r} ({filename}:{start}): {e}") from None
    ast.increment_lineno(tree, start - 1)
    if f.__name__ == "<lambda>":
        lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
        if len(lambdas) != 1:
            raise ConversionError(f"{filename}:{start}: cannot convert {f!r}: its line holds {len(lambdas)} "
                                  "lambdas (define it with def)")
        lam = lambdas[0]
        fdef = cp._fdef(_LAMBDA, [], [ast.copy_location(ast.Return(value=lam.body), lam.body)])
        fdef.args = lam.args
        return ast.copy_location(fdef, lam), filename
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs or defs[0].name != f.__name__:
        raise ConversionError(f"{filename}:{start}: cannot convert {f!r}: its source does not define it")
    return defs[0], filename


def _convert_ast(fdef: ast.FunctionDef, filename: str) -> ast.FunctionDef:
    cp.check(fdef, filename)
    fdef.decorator_list = []
    namer = cp.Namer()
    cp.extract_directives(fdef, filename)
    cp.lower_returns(fdef, namer)
    cp.lower_jumps(fdef, namer)
    for n in ast.walk(fdef):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(n, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(n, field, cp.hoist_loop_prefixes(block))
    cp.lower_asserts(fdef)
    fdef = cp.ExpressionConverter().visit(fdef)
    cp.ControlFlowConverter(namer, filename).function(fdef)
    return fdef


def _collect_codes(code: types.CodeType) -> None:
    CONVERTED_CODES.add(code)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _collect_codes(c)


def _conversion(f: types.FunctionType) -> _Conversion:
    key = f.__code__
    conv = _cache.get(key)
    if conv is not None:
        return conv
    fdef, filename = _parse(f)
    fdef = _convert_ast(fdef, filename)
    freevars = tuple(f.__code__.co_freevars)
    factory = ast.FunctionDef(name=_FACTORY, args=cp._args(["ag__", *freevars]),
                              body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
                              decorator_list=[], returns=None, type_comment=None, type_params=[])
    ast.copy_location(factory, fdef)
    ast.copy_location(factory.body[1], fdef)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    try:
        code = compile(module, filename, "exec")
    except SyntaxError as e:  # pragma: no cover - a converter bug
        raise ConversionError(f"{filename}:{fdef.lineno}: generated code does not compile: {e}\n"
                              f"{ast.unparse(fdef)}") from None
    fcode = next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == _FACTORY)
    _collect_codes(fcode)
    conv = _Conversion(fcode, ast.unparse(fdef), freevars)
    _cache[key] = conv
    return conv


def _cell_values(f: types.FunctionType) -> list:
    out = []
    for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
        try:
            out.append(cell.cell_contents)
        except ValueError:  # not assigned yet
            out.append(ops.Undefined(name))
    return out


def _convert_function(f: types.FunctionType, recursive: bool) -> Callable:
    conv = _conversion(f)
    factory = types.FunctionType(conv.factory_code, f.__globals__, _FACTORY)
    ag = _AG[bool(recursive)]

    @functools.wraps(f)
    def converted(*args: Any, **kwargs: Any) -> Any:
        inner = factory(ag, *_cell_values(f))
        inner.__defaults__ = f.__defaults__
        inner.__kwdefaults__ = f.__kwdefaults__
        with ops.collecting(generic=False) as effects:
            out = inner(*args, **kwargs)
        outer = ops.effects_stack()
        if effects and outer:
            outer[-1].extend(effects)  # the caller's block runs them too
        return ops.function_outputs(out, effects)

    setattr(converted, _CONVERTED, True)
    converted.ag_source = conv.source
    converted.ag_original = f
    return converted


def convert_entity(entity: Any, recursive: bool = True) -> Callable:
    """The converted version of a function, a bound method, a class or a callable object."""
    if isinstance(entity, functools.partial):
        return functools.partial(convert_entity(entity.func, recursive), *entity.args, **(entity.keywords or {}))
    if inspect.ismethod(entity):
        return types.MethodType(convert_entity(entity.__func__, recursive), entity.__self__)
    if inspect.isfunction(entity):
        if getattr(entity, _CONVERTED, False) or getattr(entity, _DO_NOT_CONVERT, False):
            return entity
        return _convert_function(entity, recursive)
    if inspect.isclass(entity):
        # a subclass whose methods (plain functions of the class body) are converted
        methods = {k: convert_entity(v, recursive) for k, v in vars(entity).items()
                   if inspect.isfunction(v) and not getattr(v, _DO_NOT_CONVERT, False)}
        return type(entity.__name__, (entity,), dict(methods, __module__=entity.__module__,
                                                      __qualname__=entity.__qualname__))
    if callable(entity) and inspect.ismethod(getattr(entity, "__call__", None)):
        return convert_entity(entity.__call__, recursive)
    raise ValueError(f"cannot convert {entity!r}: expected a function, method or callable object")


def is_converted(f: Any) -> bool:
    """Whether `f` is a function produced by to_graph (or marked not to be converted)."""
    f = getattr(f, "__func__", f)
    return bool(getattr(f, _CONVERTED, False))


def _is_library(f: types.FunctionType) -> bool:
    mod = (getattr(f, "__module__", None) or "").split(".")[0]
    if mod in _SKIP_MODULES:
        return True
    fn = f.__code__.co_filename
    if fn.startswith("<"):
        return True  # exec'd or interactive code: no source to read
    fn = os.path.abspath(fn)
    return any(fn.startswith(os.path.abspath(d) + os.sep) for d in _LIB_DIRS)


def maybe_convert(f: Any) -> Optional[Callable]:
    """The converted version of a user function called from converted code, else None."""
    target = f.__func__ if inspect.ismethod(f) else f
    if not inspect.isfunction(target) or target.__name__ == "<lambda>":
        return None
    if getattr(target, _CONVERTED, False) or getattr(target, _DO_NOT_CONVERT, False) or _is_library(target):
        return None
    if target.__code__ in CONVERTED_CODES:
        return None  # defined inside converted code: converted with it
    try:
        conv = _convert_function(target, True)
    except (ConversionError, NotImplementedError) as e:
        from ..platform import tf_logging
        tf_logging.warning("AutoGraph could not transform %s and will run it as-is. Cause: %s", target, e)
        return None
    return types.MethodType(conv, f.__self__) if inspect.ismethod(f) else conv


def converted_source(entity: Any) -> str:
    """The generated source of a function (what to_code returns)."""
    f = entity
    if inspect.ismethod(f):
        f = f.__func__
    if getattr(f, _CONVERTED, False) and hasattr(f, "ag_original"):
        f = f.ag_original
    if not inspect.isfunction(f):
        if callable(f) and inspect.ismethod(getattr(f, "__call__", None)):
            return converted_source(f.__call__)
        raise ValueError(f"cannot convert {entity!r}: expected a function, method or callable object")
    return _conversion(f).source


def do_not_convert(func: Optional[Callable] = None) -> Any:
    """Decorator: AutoGraph calls the function as it is, never converting it (TF 1.15's
    tf.autograph.experimental.do_not_convert; usable with or without parentheses)."""
    if func is None:
        return do_not_convert

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    setattr(wrapper, _DO_NOT_CONVERT, True)
    return wrapper


def user_location() -> Optional[str]:
    """file:line of the innermost converted user code running now (for error messages)."""
    fr = sys._getframe(1)
    while fr is not None:
        if fr.f_code in CONVERTED_CODES:
            return f"{fr.f_code.co_filename}:{fr.f_lineno}"
        fr = fr.f_back
    return None
