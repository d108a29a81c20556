"""What the converter needs to know about names: which a block assigns, which it reads, and
which are live (may be read before being assigned again) after a statement.

Liveness decides what a converted statement passes on: a variable assigned in a branch is
an output of the conditional only if code after it may read it, and a variable assigned in
a loop body is a loop variable only if the next iteration, the loop test or the code after
the loop may read it.  Temporaries stay inside their block, as in TensorFlow's AutoGraph.
"""
from __future__ import annotations

import ast
from typing import Iterable, List, Set

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def target_names(t: ast.AST) -> Set[str]:
    """Plain names bound by an assignment target (not attributes or subscripts)."""
    if isinstance(t, ast.Name):
        return {t.id}
    if isinstance(t, (ast.Tuple, ast.List)):
        out: Set[str] = set()
        for e in t.elts:
            out |= target_names(e)
        return out
    if isinstance(t, ast.Starred):
        return target_names(t.value)
    return set()


def reads(node: ast.AST) -> Set[str]:
    """Every name loaded anywhere in `node` (nested functions included: they may be called)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def reads_all(nodes: Iterable[ast.AST]) -> Set[str]:
    out: Set[str] = set()
    for n in nodes:
        out |= reads(n)
    return out


def assigned(stmts: Iterable[ast.AST]) -> Set[str]:
    """Names a block binds in its own scope (nested functions' locals excluded)."""
    out: Set[str] = set()
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            stack.extend(n.decorator_list)
            continue
        if isinstance(n, ast.Lambda):
            continue
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue  # comprehension variables are local to the comprehension
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.NamedExpr):
            out |= target_names(n.target)
        stack.extend(ast.iter_child_nodes(n))
    return out


def block_live(stmts: List[ast.stmt], live_out: Set[str]) -> Set[str]:
    """Names live at the start of `stmts` given those live after it."""
    live = set(live_out)
    for s in reversed(stmts):
        live = stmt_live(s, live)
    return live


def while_header_live(node: ast.While, live_out: Set[str]) -> Set[str]:
    """Names live where the loop test runs (each iteration's start and the loop's entry)."""
    head = reads(node.test) | live_out
    while True:
        new = head | block_live(node.body, head)
        if new == head:
            return head
        head = new


def for_iteration_live(node: ast.For, live_out: Set[str], extra_reads: Set[str]) -> Set[str]:
    """Names live at the end of an iteration of a for loop (before the next element)."""
    tgt = target_names(node.target)
    end = set(live_out) | extra_reads
    while True:
        new = end | (block_live(node.body, end) - tgt)
        if new == end:
            return end
        end = new


def stmt_live(s: ast.stmt, live: Set[str]) -> Set[str]:
    """Names live before statement `s` given those live after it."""
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (live - {s.name}) | reads(s)
    if isinstance(s, ast.Assign):
        kill: Set[str] = set()
        for t in s.targets:
            kill |= target_names(t)
        return (live - kill) | reads(s)
    if isinstance(s, ast.AnnAssign):
        return (live - target_names(s.target)) | reads(s) if s.value is not None else live | reads(s)
    if isinstance(s, ast.AugAssign):
        return live | reads(s) | target_names(s.target)
    if isinstance(s, ast.If):
        return reads(s.test) | block_live(s.body, live) | block_live(s.orelse, live)
    if isinstance(s, ast.While):
        return while_header_live(s, live) | block_live(s.orelse, live)
    if isinstance(s, ast.For):
        extra = reads(getattr(s, "ag_extra_test", None) or ast.Pass())
        it = for_iteration_live(s, live, extra)
        return reads(s.iter) | it | extra
    if isinstance(s, ast.With):
        kill = set()
        for item in s.items:
            if item.optional_vars is not None:
                kill |= target_names(item.optional_vars)
        return reads_all(i.context_expr for i in s.items) | (block_live(s.body, live) - kill)
    if isinstance(s, (ast.Import, ast.ImportFrom)):
        return live - assigned([s])
    if isinstance(s, ast.Return):
        return reads(s)
    # try blocks and the rest: whatever they read, and what is live after them
    return live | reads(s)


# -- composite names: attributes and constant subscripts of local names ----------------------

def composite_root(node: ast.AST) -> str:
    """The local name `a.b["k"].c` is rooted at ('' when it is not such a composite name)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Constant):
            return ""
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _own_nodes(stmts: Iterable[ast.AST]):
    """Nodes of a block, not descending into nested functions, lambdas or classes."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, _SCOPES):
            stack.extend(ast.iter_child_nodes(n))


def composite_targets(stmts: List[ast.stmt]) -> List[ast.expr]:
    """Composite names a block assigns (`self.x = ...`, `d["k"] += ...`) whose root is bound
    before it, one per name, in source-text order: what a staged statement passes on."""
    local = assigned(stmts)
    found = {}
    for n in _own_nodes(stmts):
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, ast.Store):
            root = composite_root(n)
            if root and root not in local:
                found.setdefault(ast.unparse(n), n)
    return [found[k] for k in sorted(found)]


def method_mutations(stmts: List[ast.stmt]) -> List[tuple]:
    """(object expression, source text, line) of each method call `x.m(...)` in a block on a
    name (or composite name) bound outside it, one per object: the call may change the object
    in place (`l.append(v)`, `self.add(v)`), a change a staged statement cannot pass on."""
    local = assigned(stmts)
    out = []
    for n in _own_nodes(stmts):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "ag__"
                and f.attr == "converted_call" and n.args):
            f = n.args[0]  # the call as the expression pass rewrote it
        if isinstance(f, ast.Attribute) and not f.attr.startswith("__"):
            obj = f.value
            root = obj.id if isinstance(obj, ast.Name) else composite_root(obj)
            if root and root not in local and root != "ag__":
                out.append((obj, f"{ast.unparse(obj)}.{f.attr}(...)", n.lineno))
    out.sort(key=lambda m: (m[2], m[1]))
    seen: Set[str] = set()
    unique = []
    for m in out:
        key = ast.unparse(m[0])
        if key not in seen:
            seen.add(key)
            unique.append(m)
    return unique
