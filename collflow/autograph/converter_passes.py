"""The AST passes of the converter, applied in order to a function's definition.

1. `check`: constructs the converter does not handle (generators, loop `else`, global and
   nonlocal, mangled attributes) are a ConversionError naming the file and line.
2. `extract_directives`: `set_loop_options(...)` at the top of a loop body becomes the loop's
   options.
3. `lower_returns`: a function returning from inside control flow sets `ag__do_return` and
   `ag__retval` instead and guards what follows with `if not ag__do_return`.
4. `lower_jumps`: break and continue become flags the same way; a break also joins the loop
   test.
5. `lower_asserts`, `ExpressionConverter`: assert, and/or/not, `a if c else b` and every call
   become calls into `ag__` (the runtime operators).
6. `ControlFlowConverter`: if, while and for become functions of the variables they change,
   passed to ag__.if_stmt / while_stmt / for_stmt; the composite names they assign (`self.x`,
   `d["k"]`, rooted at a name bound before them) travel through a getter and a setter (TF's
   get_state/set_state), and the Python containers they change in place (`l.append(v)`) are
   named so that the runtime can refuse a tensor put there by staged code.
"""
from __future__ import annotations

import ast
import itertools
from typing import Callable, List, Optional, Set

from . import converter_analysis as an

AG = "ag__"


class ConversionError(ValueError):
    """AutoGraph cannot convert a construct of the user's code."""


def _err(filename: str, node: ast.AST, msg: str) -> ConversionError:
    return ConversionError(f"{filename}:{getattr(node, 'lineno', '?')}: {msg}")


def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _ag(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_name(AG), attr=attr, ctx=ast.Load())


def _call(func: ast.expr, args: List[ast.expr], keywords: Optional[list] = None) -> ast.Call:
    return ast.Call(func=func, args=args, keywords=keywords or [])


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_name(name, True)], value=value)


def _strs(names: List[str]) -> ast.Tuple:
    return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())


def _names_tuple(names: List[str], store: bool = False) -> ast.Tuple:
    return ast.Tuple(elts=[_name(n, store) for n in names], ctx=ast.Store() if store else ast.Load())


def _lambda(body: ast.expr) -> ast.Lambda:
    return ast.Lambda(args=_args([]), body=body)


def _args(names: List[str]) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])


def _fdef(name: str, params: List[str], body: List[ast.stmt]) -> ast.FunctionDef:
    return ast.FunctionDef(name=name, args=_args(params), body=body or [ast.Pass()], decorator_list=[],
                           returns=None, type_comment=None, type_params=[])


def _located(new: List[ast.stmt], old: ast.AST) -> List[ast.stmt]:
    for n in new:
        for sub in ast.walk(n):
            if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
                # one line: the statement's first (a span would be shown at its end)
                sub.lineno, sub.col_offset = old.lineno, old.col_offset
                sub.end_lineno, sub.end_col_offset = old.lineno, old.col_offset
    return new


def _scope_walk(stmts: List[ast.stmt]):
    """Nodes of a block, not descending into nested functions, lambdas or classes."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))


# -- 1. unsupported constructs ------------------------------------------------------------

def check(fdef: ast.AST, filename: str) -> None:
    for n in ast.walk(fdef):
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            raise _err(filename, n, "generators are not supported by AutoGraph")
        if isinstance(n, (ast.For, ast.While)) and n.orelse:
            kind = "for" if isinstance(n, ast.For) else "while"
            raise _err(filename, n, f"{kind}/else statement not yet supported by AutoGraph")
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            raise _err(filename, n, f"{type(n).__name__.lower()} statements are not supported by AutoGraph "
                                    f"(names: {', '.join(n.names)})")
        if isinstance(n, (ast.AsyncFunctionDef, ast.AsyncFor, ast.AsyncWith, ast.Await)):
            raise _err(filename, n, "async code is not supported by AutoGraph")
        if isinstance(n, ast.Attribute) and n.attr.startswith("__") and not n.attr.endswith("__"):
            raise _err(filename, n, f"mangled names are not yet supported by AutoGraph ({n.attr})")


# -- 2. loop directives -------------------------------------------------------------------

def _is_directive(s: ast.stmt) -> bool:
    if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)):
        return False
    f = s.value.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return name == "set_loop_options"


def extract_directives(fdef: ast.AST, filename: str) -> None:
    for n in ast.walk(fdef):
        if isinstance(n, (ast.While, ast.For)):
            found = [s for s in n.body if _is_directive(s)]
            if len(found) > 1:
                raise _err(filename, found[1], "set_loop_options may be called only once per loop")
            if found:
                if found[0].value.args:
                    raise _err(filename, found[0], "set_loop_options takes keyword arguments only")
                n.ag_options = found[0].value.keywords
                n.body = [s for s in n.body if s is not found[0]] or [ast.Pass()]
    # elsewhere set_loop_options stays a call, which does nothing


# -- 3 and 4. returns, break and continue as flags ----------------------------------------

def _definitely_jumps(stmts: List[ast.stmt], kinds: tuple) -> bool:
    for s in stmts:
        if isinstance(s, kinds):
            return True
        if isinstance(s, ast.If) and _definitely_jumps(s.body, kinds) and _definitely_jumps(s.orelse, kinds):
            return True
        if isinstance(s, ast.With) and _definitely_jumps(s.body, kinds):
            return True
    return False


def _contains(stmts: List[ast.stmt], kinds: tuple, into_loops: bool) -> bool:
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if not into_loops and isinstance(n, (ast.For, ast.While)):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


def _move_tails(stmts: List[ast.stmt], kinds: tuple) -> List[ast.stmt]:
    """Statements after an `if` one of whose branches always jumps go into the other branch,
    so both branches of the resulting conditional end the same way."""
    out: List[ast.stmt] = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.If):
            s.body = _move_tails(s.body, kinds)
            s.orelse = _move_tails(s.orelse, kinds)
            rest = stmts[i + 1:]
            if rest and _definitely_jumps(s.body, kinds) and not _definitely_jumps(s.orelse, kinds):
                s.orelse = _move_tails(s.orelse + rest, kinds)
                out.append(s)
                return out
            if rest and _definitely_jumps(s.orelse, kinds) and s.orelse and not _definitely_jumps(s.body, kinds):
                s.body = _move_tails(s.body + rest, kinds)
                out.append(s)
                return out
        elif isinstance(s, (ast.With, ast.Try)):
            s.body = _move_tails(s.body, kinds)
        elif isinstance(s, (ast.For, ast.While)) and kinds == (ast.Return,):
            s.body = _move_tails(s.body, kinds)
        out.append(s)
    return out


def _guarded(stmts: List[ast.stmt], kinds: tuple, replace: Callable[[ast.stmt], List[ast.stmt]], flag: str,
             into_loops: bool) -> List[ast.stmt]:
    """`stmts` with each jump replaced and what follows a possible jump under `if not flag`."""
    out: List[ast.stmt] = []
    for i, s in enumerate(stmts):
        if isinstance(s, kinds):
            out.extend(_located(replace(s), s))
            return out  # the rest of the block is unreachable
        may_jump = _contains([s], kinds, into_loops)
        if may_jump:
            _rewrite_children(s, kinds, replace, flag, into_loops)
        out.append(s)
        rest = stmts[i + 1:]
        if may_jump and rest:
            guard = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=_name(flag)),
                           body=_guarded(rest, kinds, replace, flag, into_loops), orelse=[])
            out.extend(_located([guard], rest[0]))
            return out
    return out


def _rewrite_children(s: ast.stmt, kinds: tuple, replace: Callable, flag: str, into_loops: bool) -> None:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(s, field, None)
        if block and not (field == "body" and isinstance(s, (ast.For, ast.While)) and not into_loops):
            setattr(s, field, _guarded(block, kinds, replace, flag, into_loops))
    for h in getattr(s, "handlers", []) or []:
        h.body = _guarded(h.body, kinds, replace, flag, into_loops)


def lower_returns(fdef: ast.FunctionDef, namer: "Namer") -> None:
    """One exit per function when some return sits inside control flow."""
    for node in [n for n in ast.walk(fdef) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        body = node.body
        nested = any(isinstance(n, ast.Return) for s in body if not isinstance(s, ast.Return)
                     for n in _scope_walk([s]))
        if not nested:
            continue
        body = _move_tails(body, (ast.Return,))
        do_ret, ret = namer.new("do_return"), namer.new("retval")

        def replace(s: ast.Return, do_ret: str = do_ret, ret: str = ret) -> List[ast.stmt]:
            out = [_assign(do_ret, ast.Constant(True)),
                   _assign(ret, s.value if s.value is not None else ast.Constant(None))]
            if getattr(s, "ag_in_loop", False):
                out.append(ast.Break())
            return out

        for loop in _scope_walk(body):
            if isinstance(loop, (ast.For, ast.While)):
                for n in _scope_walk(loop.body):
                    if isinstance(n, ast.Return):
                        n.ag_in_loop = True
        new = _guarded(body, (ast.Return,), replace, do_ret, True)
        init = [_assign(do_ret, ast.Constant(False)), _assign(ret, _call(_ag("UndefinedReturnValue"), []))]
        final = ast.Return(value=_call(_ag("retval"), [_name(ret)]))
        node.body = _located(init, body[0]) + new + _located([final], body[-1])


def lower_jumps(fdef: ast.FunctionDef, namer: "Namer") -> None:
    """break/continue of each loop as flags (innermost loops first)."""
    loops = [n for n in ast.walk(fdef) if isinstance(n, (ast.For, ast.While))]
    for loop in reversed(loops):
        if _contains(loop.body, (ast.Continue,), False):
            cont = namer.new("cont")
            body = _guarded(loop.body, (ast.Continue,), lambda s, c=cont: [_assign(c, ast.Constant(True))],
                            cont, False)
            loop.body = _located([_assign(cont, ast.Constant(False))], loop.body[0]) + body
        if _contains(loop.body, (ast.Break,), False):
            brk = namer.new("break")
            loop.body = _guarded(loop.body, (ast.Break,), lambda s, b=brk: [_assign(b, ast.Constant(True))],
                                 brk, False)
            if isinstance(loop, ast.While):
                not_brk = ast.UnaryOp(op=ast.Not(), operand=_name(brk))
                loop.test = ast.BoolOp(op=ast.And(), values=[not_brk, loop.test])
            else:
                loop.ag_extra_test = _call(_ag("not_"), [_name(brk)])  # after the expression pass
            loop.ag_pre = [_assign(brk, ast.Constant(False))]


def hoist_loop_prefixes(stmts: List[ast.stmt]) -> List[ast.stmt]:
    """Puts each loop's flag initialisations (from lower_jumps) before the loop."""
    out: List[ast.stmt] = []
    for s in stmts:
        for field in ("body", "orelse", "finalbody"):
            block = getattr(s, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(s, field, hoist_loop_prefixes(block))
        for h in getattr(s, "handlers", []) or []:
            h.body = hoist_loop_prefixes(h.body)
        pre = getattr(s, "ag_pre", None)
        if pre:
            out.extend(_located(pre, s))
            s.ag_pre = None
        out.append(s)
    return out


# -- 5. assert statements and expressions --------------------------------------------------

def lower_asserts(fdef: ast.AST) -> None:
    class T(ast.NodeTransformer):
        def visit_Assert(self, node: ast.Assert) -> ast.stmt:
            msg = node.msg if node.msg is not None else ast.Constant("Assertion failed")
            new = ast.Expr(value=_call(_ag("assert_stmt"), [node.test, _lambda(msg)]))
            return ast.copy_location(new, node)
    T().visit(fdef)


class ExpressionConverter(ast.NodeTransformer):
    """and/or/not, conditional expressions and calls as ag__ calls."""

    def __init__(self) -> None:
        self.first_arg: List[Optional[str]] = []

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        args = node.args.posonlyargs + node.args.args
        self.first_arg.append(args[0].arg if args else None)
        self.generic_visit(node)
        self.first_arg.pop()
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        expr = node.values[-1]
        for v in reversed(node.values[:-1]):
            expr = _call(_ag(fn), [_lambda(v), _lambda(expr)])
        return ast.copy_location(expr, node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call(_ag("not_"), [node.operand]), node)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        new = _call(_ag("if_exp"), [node.test, _lambda(node.body), _lambda(node.orelse),
                                    ast.Constant(ast.unparse(node))])
        return ast.copy_location(new, node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id == "super" and not node.args and self.first_arg and self.first_arg[-1]:
            # zero-argument super needs the class cell of a class body: made explicit
            node.args = [_name("__class__"), _name(self.first_arg[-1])]
            return node
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == AG:
            return node
        args = ast.Tuple(elts=list(node.args), ctx=ast.Load())
        kw_keys, kw_vals = [], []
        for k in node.keywords:
            kw_keys.append(ast.Constant(k.arg) if k.arg is not None else None)
            kw_vals.append(k.value)
        kwargs = ast.Dict(keys=kw_keys, values=kw_vals) if node.keywords else ast.Constant(None)
        return ast.copy_location(_call(_ag("converted_call"), [f, args, kwargs]), node)


# -- 6. control flow ------------------------------------------------------------------------

class Namer:
    def __init__(self) -> None:
        self._n = itertools.count(1)

    def new(self, base: str) -> str:
        return f"{AG}{base}_{next(self._n)}"


class ControlFlowConverter:
    """Rewrites if/while/for of one function (and the functions nested in it)."""

    def __init__(self, namer: Namer, filename: str = "<unknown>"):
        self.namer = namer
        self.filename = filename

    def function(self, fdef: ast.FunctionDef) -> None:
        fdef.body = self.block(fdef.body, set())

    def block(self, stmts: List[ast.stmt], live_out: Set[str]) -> List[ast.stmt]:
        out: List[ast.stmt] = []
        live = set(live_out)
        for s in reversed(stmts):
            before = an.stmt_live(s, live)
            out = self.stmt(s, live) + out
            live = before
        return out

    def stmt(self, s: ast.stmt, live: Set[str]) -> List[ast.stmt]:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(s)
            return [s]
        if isinstance(s, ast.If):
            return _located(self._if(s, live), s)
        if isinstance(s, ast.While):
            return _located(self._while(s, live), s)
        if isinstance(s, ast.For):
            return _located(self._for(s, live), s)
        if isinstance(s, ast.With):
            s.body = self.block(s.body, live)
        elif isinstance(s, ast.Try):
            inner = live | an.reads_all(s.handlers) | an.reads_all(s.finalbody)
            s.body = self.block(s.body, inner | an.reads_all(s.orelse))
            for h in s.handlers:
                h.body = self.block(h.body, live | an.reads_all(s.finalbody))
            s.orelse = self.block(s.orelse, live | an.reads_all(s.finalbody)) if s.orelse else []
            s.finalbody = self.block(s.finalbody, live) if s.finalbody else []
        return [s]

    @staticmethod
    def _ld(names: List[str]) -> ast.Call:
        return _call(_ag("ld"), [_call(_name("locals"), []), _strs(names)])

    @staticmethod
    def _bind(outs: List[str], value: ast.expr) -> ast.stmt:
        if not outs:
            return ast.Expr(value=value)
        return ast.Assign(targets=[_names_tuple(outs, True)], value=value)

    def _state(self, stmts: List[ast.stmt], where: ast.stmt) -> tuple:
        """(definitions, keywords) passing the composite names `stmts` assign (`self.x`,
        `d["k"]`) and the in-place changes they make (`l.append(v)`) to a staged statement:
        a getter and a setter of those names (TF's get_state/set_state), and the objects
        changed, which the runtime refuses to change inside a staged statement."""
        defs: List[ast.stmt] = []
        kws: List[ast.keyword] = []
        comps = an.composite_targets(stmts)
        if comps:
            texts = [ast.unparse(c) for c in comps]
            gname, sname = self.namer.new("get_state"), self.namer.new("set_state")
            getters = ", ".join(f"{AG}.get_composite(lambda: {t})" for t in texts)
            src = [f"def {gname}():", f"    return ({getters},)", f"def {sname}({AG}vals):"]
            for i, t in enumerate(texts):
                src += [f"    if {AG}.is_undefined({AG}vals[{i}]):", "        try:", f"            del {t}",
                        "        except (AttributeError, KeyError, IndexError, TypeError):", "            pass",
                        "    else:", f"        {t} = {AG}vals[{i}]"]
            defs = ast.parse("\n".join(src)).body
            for n in ast.walk(ast.Module(body=defs, type_ignores=[])):
                if "lineno" in n._attributes:  # the statement's line, not the template's
                    n.lineno = n.end_lineno = where.lineno
                    n.col_offset = n.end_col_offset = where.col_offset
            state = ast.Tuple(elts=[_name(gname), _name(sname), _strs(texts)], ctx=ast.Load())
            kws.append(ast.keyword(arg="state", value=state))
        muts = an.method_mutations(stmts)
        if muts:
            elts = [ast.Tuple(elts=[_lambda(obj), ast.Constant(text), ast.Constant(f"{self.filename}:{line}")],
                              ctx=ast.Load()) for obj, text, line in muts]
            kws.append(ast.keyword(arg="mutations", value=ast.Tuple(elts=elts, ctx=ast.Load())))
        return defs, kws

    def _if(self, s: ast.If, live: Set[str]) -> List[ast.stmt]:
        sdefs, skws = self._state(s.body + s.orelse, s)
        mods = an.assigned(s.body) | an.assigned(s.orelse)
        outs = sorted(mods & live)
        params = outs + sorted(mods - set(outs))
        ret = ast.Return(value=_names_tuple(outs))
        tname, fname = self.namer.new("if_true"), self.namer.new("if_false")
        tdef = _fdef(tname, params, self.block(s.body, set(outs)) + [ret])
        fdef = _fdef(fname, params, self.block(s.orelse, set(outs)) + [ast.Return(value=_names_tuple(outs))])
        call = _call(_ag("if_stmt"), [s.test, _name(tname), _name(fname), self._ld(params), _strs(params),
                                      ast.Constant(len(outs))], skws)
        return sdefs + [tdef, fdef, self._bind(outs, call)]

    def _options(self, s: ast.AST) -> ast.expr:
        kws = getattr(s, "ag_options", None)
        return _call(_ag("loop_options"), [], kws) if kws else ast.Constant(None)

    def _while(self, s: ast.While, live: Set[str]) -> List[ast.stmt]:
        sdefs, skws = self._state(s.body, s)
        head = an.while_header_live(s, live)
        lvars = sorted(an.assigned(s.body) & head)
        tname, bname = self.namer.new("while_test"), self.namer.new("while_body")
        tdef = _fdef(tname, lvars, [ast.Return(value=s.test)])
        bdef = _fdef(bname, lvars, self.block(s.body, set(lvars)) + [ast.Return(value=_names_tuple(lvars))])
        call = _call(_ag("while_stmt"), [_name(tname), _name(bname), self._ld(lvars), _strs(lvars),
                                         self._options(s)], skws)
        return sdefs + [tdef, bdef, self._bind(lvars, call)]

    def _for(self, s: ast.For, live: Set[str]) -> List[ast.stmt]:
        sdefs, skws = self._state(s.body, s)
        extra = getattr(s, "ag_extra_test", None)
        extra_reads = an.reads(extra) if extra is not None else set()
        it_live = an.for_iteration_live(s, live, extra_reads)
        lvars = sorted((an.assigned(s.body) | an.target_names(s.target)) & it_live)
        itr = self.namer.new("itr")
        bname = self.namer.new("for_body")
        first = ast.Assign(targets=[s.target], value=_name(itr))
        ast.copy_location(first, s)
        bdef = _fdef(bname, [itr] + lvars,
                     [first] + self.block(s.body, set(lvars)) + [ast.Return(value=_names_tuple(lvars))])
        out: List[ast.stmt] = [bdef]
        test_arg: ast.expr = ast.Constant(None)
        if extra is not None:
            tname = self.namer.new("for_test")
            out.insert(0, _fdef(tname, lvars, [ast.Return(value=extra)]))
            test_arg = _name(tname)
        call = _call(_ag("for_stmt"), [s.iter, test_arg, _name(bname), self._ld(lvars), _strs(lvars),
                                       self._options(s)], skws)
        out.append(self._bind(lvars, call))
        return sdefs + out
