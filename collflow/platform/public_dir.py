"""dir() of collflow's API modules as TF 1.x shows its own: the public names only, without
what a module imports for itself (typing's Any, the standard library, NumPy, collflow's
internal op modules).  TF 1.x stripped such names from its API modules; dir() and tab
completion are how people explore `tf.losses.` and `tf.contrib.layers.`."""
from __future__ import annotations

import ast
import types
from typing import Any, Dict, Iterable, List, Set

__all__ = ["is_internal", "public_names", "install_public_dir", "install_below"]

_FOREIGN_OBJECT_MODULES = {"typing", "collections", "builtins", "abc", "enum", "numbers", "functools",
                           "dataclasses", "contextlib", "__future__"}
_INTERNAL_SUFFIXES = ("_ops", "_impl", "_kernels")


def is_internal(name: str, value: Any) -> bool:
    """True for a name a module only uses itself: private names, imported standard-library
    or third-party modules, typing constructs, and collflow's op/kernel modules."""
    if name.startswith("_") or name == "annotations":
        return True
    if isinstance(value, types.ModuleType):
        mod = value.__name__
        return not mod.startswith("collflow") or mod.rsplit(".", 1)[-1].endswith(_INTERNAL_SUFFIXES)
    owner = getattr(value, "__module__", None)
    if not isinstance(owner, str):
        return False
    if owner == "typing":
        return True
    # classes and functions imported from the standard library (OrderedDict, wraps); an
    # instance made from one (a functools.partial layer) is the module's own
    return (owner.split(".")[0] in _FOREIGN_OBJECT_MODULES and
            isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)))


_IMPORTS_CACHE: Dict[str, Set[str]] = {}


def _import_statement_names(namespace: dict) -> Set[str]:
    """The names a module binds with its own import statements (from its source; none when
    the source cannot be read).  Names another module attaches to it later are not among
    them: they are API put there on purpose (contrib/__init__.py's, keras/__init__.py's)."""
    own = namespace.get("__name__", "")
    if own in _IMPORTS_CACHE:
        return _IMPORTS_CACHE[own]
    names: Set[str] = set()
    path = namespace.get("__file__")
    try:
        with open(path, encoding="utf-8") as f:  # type: ignore[arg-type]
            tree = ast.parse(f.read())
    except (OSError, TypeError, SyntaxError, ValueError):
        tree = None
    # module-level statements only (and those in top-level if/try blocks): an import inside
    # a function binds nothing in the module
    todo = list(tree.body) if tree is not None else []
    while todo:
        node = todo.pop()
        if isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names if a.name != "*")
        elif isinstance(node, ast.Import):
            names.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            todo.extend(node.body + node.orelse + getattr(node, "finalbody", [])
                        + [b for h in getattr(node, "handlers", []) for b in h.body])
    _IMPORTS_CACHE[own] = names
    return names


def _imported(name: str, value: Any, namespace: dict) -> bool:
    """A name a module imported for its own use: one of its package's implementation
    submodules, or a class/function its import statements brought in, when the module lists
    its API in __all__ and this name is not there."""
    exported = namespace.get("__all__")
    if exported is None or name in exported:
        return False
    own = namespace.get("__name__", "")
    if isinstance(value, types.ModuleType):
        return value.__name__ == f"{own}.{name}" and "__path__" in namespace
    owner = getattr(value, "__module__", None)
    return (isinstance(value, (type, types.FunctionType)) and isinstance(owner, str) and owner != own
            and not owner.startswith(own + ".") and name in _import_statement_names(namespace))


def public_names(names: Iterable[str], namespace: dict) -> List[str]:
    """The names of `namespace` (a module's dict) dir() should show."""
    return sorted(n for n in names
                  if not is_internal(n, namespace.get(n)) and not _imported(n, namespace.get(n), namespace))


def install_public_dir(module: types.ModuleType) -> None:
    """Gives `module` a PEP 562 __dir__ showing its public names (unless it has its own)."""
    if "__dir__" in vars(module):
        return
    ns = vars(module)
    module.__dir__ = lambda: public_names(list(ns), ns)


def install_below(root: types.ModuleType, depth: int = 3) -> None:
    """install_public_dir on collflow's modules reachable as attributes from `root`."""
    seen = set()

    def walk(obj: Any, level: int) -> None:
        if id(obj) in seen or level > depth:
            return
        seen.add(id(obj))
        attrs = vars(obj) if hasattr(obj, "__dict__") else {}
        if isinstance(obj, types.ModuleType):
            if not obj.__name__.startswith("collflow"):
                return
            install_public_dir(obj)
        for n, v in list(attrs.items()):
            if not n.startswith("_") and (isinstance(v, types.ModuleType) or type(v).__name__ in ("SimpleNamespace",)):
                walk(v, level + 1)

    walk(root, 0)
