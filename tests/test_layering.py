"""The package's layers import downward only: every import, lazy ones inside functions too.

A subpackage (or top-level module) may import from its own layer or from layers below it.
Upward imports are how import cycles start; a module that needs something from above takes
it through a registration hook instead (e.g. graph/variable_scope.py's partitioned-variable
factory, set by train/sharded.py).
"""
import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "collflow")

# lowest first; names at one level may import each other
LAYERS = [
    {"dtypes", "errors", "__version__", "platform", "launcher"},  # platform: tf.logging, tf.flags, tf.app
    {"graph", "initializers"},          # the graph, its ops, autodiff, control flow, initializers
    {"kernels"},                        # NumPy/CuPy kernels of the ops
    {"runtime"},                        # plans, executors, Session
    {"comm", "summary"},                # communicators and collective kernels; summary ops
    {"train", "profile", "saved_model"},  # optimizers, checkpoints, sync replicas, hooks; SavedModels
    {"data"},                           # input pipelines and datasets
    {"nn", "layers", "image", "autograph"},  # layers, cells, losses; tf.image; tf.function
    {"contrib", "models", "horovod", "estimator", "keras"},  # built from everything below
    {"compat", "examples"},             # TF1's namespace over all of collflow; tensorflow.examples
]
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}


def _unit(rel_parts):
    """The layer unit of a module path relative to collflow/ (subpackage or top-level module)."""
    return rel_parts[0][:-3] if rel_parts[0].endswith(".py") else rel_parts[0]


def _imports(path, pkg):
    """(line, imported collflow unit) for every import in the file, at any depth."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[:len(pkg) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
                if node.module is None:
                    for a in node.names:
                        yield node.lineno, target + [a.name]
                    continue
            elif node.module and node.module.split(".")[0] == "collflow":
                target = node.module.split(".")
            else:
                continue
            yield node.lineno, target
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "collflow":
                    yield node.lineno, a.name.split(".")


def _violations():
    out, unknown = [], set()
    for dp, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(dp, f)
            rel = os.path.relpath(path, ROOT).split(os.sep)
            if rel == ["__init__.py"]:
                continue  # the package's public namespace imports everything
            src = _unit(rel)
            if src not in LEVEL:
                unknown.add(src)
                continue
            # the package path of the module's own package, for relative imports
            pkg = ["collflow"] + rel[:-1]
            for line, target in _imports(path, pkg):
                if len(target) < 2 or target[0] != "collflow":
                    continue
                dst = target[1]
                if dst == src:
                    continue
                if dst not in LEVEL:
                    unknown.add(dst)
                    continue
                if LEVEL[dst] > LEVEL[src]:
                    out.append(f"collflow/{'/'.join(rel)}:{line} imports {'.'.join(target)} "
                               f"({src} is below {dst})")
    return out, unknown


def test_every_import_goes_downward():
    bad, _ = _violations()
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_every_subpackage_has_a_layer():
    _, unknown = _violations()
    assert not unknown, f"add these to LAYERS in tests/test_layering.py: {sorted(unknown)}"


@pytest.mark.parametrize("unit", ["graph", "kernels", "runtime", "comm", "train"])
def test_layer_imports_without_the_layers_above(unit):
    """Importing a layer does not pull in any layer above it (no hidden upward edge)."""
    import subprocess
    import sys
    above = sorted(n for n, lv in LEVEL.items() if lv > LEVEL[unit] and os.path.exists(os.path.join(ROOT, n)))
    # collflow/__init__.py imports everything: load the subpackage under an empty package
    code = ("import sys, types, importlib; pkg = types.ModuleType('collflow'); pkg.__path__ = [%r]; "
            "pkg.__version__ = 'test'; sys.modules['collflow'] = pkg; importlib.import_module('collflow.%s'); "
            "print(','.join(sorted({m.split('.')[1] for m in sys.modules if m.startswith('collflow.')})))"
            % (ROOT, unit))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    loaded = set(r.stdout.strip().split(","))
    assert not loaded & set(above), f"importing collflow.{unit} loaded {sorted(loaded & set(above))}"
