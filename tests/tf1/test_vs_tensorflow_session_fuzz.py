"""Randomised differential checks of tf.Session semantics against TensorFlow 1.x (graph mode):
nested fetch structures (tensors, ops, names, lists/tuples/dicts/OrderedDicts/namedtuples,
duplicates, SparseTensors, IndexedSlices, Variables, None), feed_dict forms (tensors, names,
non-placeholder tensors, values of other dtypes, Python lists and scalars, wrong shapes,
unfed placeholders), make_callable and partial_run.  Each case is built in both libraries;
the fetched structure (Python types, dtypes, values) or the error type (and the key part of
its message) must agree.

Known differences left out: strings fetch as Python str in collflow (bytes in TF); TF 2.x's
default resource variables (TF 1.15's reference variables, which collflow follows, are asked
for with use_resource=False).
"""
import collections
import os
import warnings

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow.compat.v1")
import collflow.compat.v1 as cf  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf.disable_eager_execution()
pytestmark = pytest.mark.timeout(600)

Pair = collections.namedtuple("Pair", ["first", "second"])
DTYPES = ["float32", "float64", "int32", "int64", "bool", "uint8"]
VALUE_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_, np.uint8, np.int8, np.float16]
# error classes TF 2.x raises where TF 1.15 raised their base class
ERR_ALIASES = {"InaccessibleTensorError": "ValueError"}


# -- normalising results and errors ---------------------------------------------------------------


def norm(v):
    """A fetched value as comparable data: Python types of the structure, dtypes, values."""
    if isinstance(v, np.ndarray):
        return ("nd", v.dtype.str, v.shape, v.tolist())
    if isinstance(v, np.generic):
        return ("np", type(v).__name__, v.item())
    if v is None:
        return None
    if callable(v):
        return ("callable",)
    if type(v).__name__ in ("SparseTensorValue", "IndexedSlicesValue"):
        return (type(v).__name__, [norm(x) for x in v])
    if isinstance(v, dict):
        return (type(v).__name__, [(k, norm(x)) for k, x in v.items()])
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [norm(x) for x in v])
    return (type(v).__name__, v)


def outcome(T, build):
    try:
        # TF1 casts a complex feed to a real dtype with NumPy's ComplexWarning (an error under
        # this suite's filterwarnings); collflow casts the same way without it
        with T.Graph().as_default() as g, warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            return ("ok", norm(build(T, g)))
    except Exception as e:  # noqa: BLE001 - the error's type is the result
        name = type(e).__name__
        return ("err", ERR_ALIASES.get(name, name), str(e))


def assert_same(build, what=""):
    want, got = outcome(tf, build), outcome(cf, build)
    assert got[:2] == want[:2], f"{what}\nTF: {want}\ncollflow: {got}"
    if want[0] == "err" and want[2].startswith("Cannot feed value of shape"):
        # the value's shape, and the tensor's (its name may differ: a sparse placeholder's parts)
        line = want[2].split("\n")[0]
        for part in (line.split(" for Tensor ")[0], line.split(", which has shape")[1]):
            assert part in got[2], f"{what}\nTF: {want}\ncollflow: {got}"
    return want


# -- random programs --------------------------------------------------------------------------


class Program:
    """A random small graph, the same in both libraries: placeholders of random dtypes and
    shapes, derived tensors, an op, a SparseTensor, a placeholder_with_default, a variable."""

    def __init__(self, seed):
        r = np.random.default_rng(seed)
        self.seed = seed
        self.phs = []
        for i in range(int(r.integers(1, 4))):
            dt = str(r.choice(DTYPES))
            rank = int(r.integers(0, 3))
            shape = [int(r.integers(1, 4)) for _ in range(rank)]
            static = [None if r.random() < 0.3 else d for d in shape]
            if r.random() < 0.1:
                static = None
            self.phs.append((f"p{i}", dt, static, shape))

    def build(self, T):
        """name -> graph element (the same names in both libraries)."""
        els = {}
        for name, dt, static, _ in self.phs:
            p = T.placeholder(getattr(T, dt), static, name=name)
            els[name] = p
            d = T.cast(p, T.float32) * 2.0 + 1.0
            els[name + "_d"] = T.identity(d, name=name + "_d")
            els[name + "_s"] = T.reduce_sum(d, name=name + "_s")
        els["pwd"] = T.placeholder_with_default(np.array([1.5, -2.0], np.float32), [None], name="pwd")
        els["pwd_d"] = T.negative(els["pwd"], name="pwd_d")
        els["const"] = T.constant(np.arange(6, dtype=np.int64).reshape(2, 3), name="const")
        els["noop"] = T.no_op(name="noop")
        els["sparse"] = T.SparseTensor([[0, 1], [1, 0]], [3.0, 4.0], [2, 3])
        els["var"] = T.Variable(np.array([1.0, 2.0], np.float32), name="var", use_resource=False)
        return els

    def value(self, r, i, form):
        """A feed value for placeholder i in a random form (maybe of a wrong shape)."""
        _, dt, static, shape = self.phs[i]
        shape = list(shape)
        if form == "badshape":
            shape = shape + [2] if r.random() < 0.5 or not shape else shape[:-1]
        base = r.integers(-3, 4, shape) if dt != "bool" else r.integers(0, 2, shape)
        if dt in ("float32", "float64") or form == "float":
            base = base + r.choice([0.0, 0.25, 0.5, -0.75], shape)
        if dt == "uint8":
            base = np.abs(base)
        if form == "list":
            return np.asarray(base).tolist()
        if form == "scalar" and not shape:
            return np.asarray(base).item()
        vdt = dt if form in ("same", "badshape") else r.choice(VALUE_DTYPES)
        return np.asarray(base).astype(vdt)


LEAF_KINDS = ["tensor", "name", "opname", "op", "sparse", "var", "varname", "const", "pwd"]


def random_fetch(r, prog, depth=0):
    """A random fetch structure of element names (resolved per library by `resolve`)."""
    k = r.random()
    if depth < 3 and k < 0.35:
        n = int(r.integers(0, 4))
        kind = int(r.integers(0, 5))
        subs = [random_fetch(r, prog, depth + 1) for _ in range(max(n, 2 if kind == 4 else n))]
        if kind == 0:
            return ("list", subs)
        if kind == 1:
            return ("tuple", subs)
        if kind == 2:
            return ("dict", subs)
        if kind == 3:
            return ("odict", subs)
        return ("pair", subs[:2])
    leaf = str(r.choice(LEAF_KINDS))
    i = int(r.integers(0, len(prog.phs)))
    base = f"p{i}" + str(r.choice(["", "_d", "_s"]))
    if r.random() < 0.01:
        return ("none",)
    if r.random() < 0.01:
        return ("badname",)
    return ("leaf", leaf, base)


def resolve(T, els, spec):
    kind = spec[0]
    if kind == "none":
        return None
    if kind == "badname":
        return "nope:0"
    if kind == "leaf":
        leaf, base = spec[1], spec[2]
        return {"tensor": lambda: els[base], "name": lambda: base + ":0", "opname": lambda: "noop",
                "op": lambda: els["noop"], "sparse": lambda: els["sparse"], "var": lambda: els["var"],
                "varname": lambda: "var:0", "const": lambda: els["const"], "pwd": lambda: els["pwd_d"]}[leaf]()
    subs = [resolve(T, els, s) for s in spec[1]]
    if kind == "list":
        return subs
    if kind == "tuple":
        return tuple(subs)
    if kind == "dict":
        return {f"k{j}": s for j, s in enumerate(subs)}
    if kind == "odict":
        return collections.OrderedDict((f"z{len(subs) - j}", s) for j, s in enumerate(subs))
    return Pair(*subs)


def random_feeds(r, prog):
    """[(key kind, target, value)]: key kinds 'tensor'/'name'; targets placeholders, derived
    tensors (feedable in TF1) or the placeholder_with_default."""
    out = []
    for i in range(len(prog.phs)):
        if r.random() < 0.12:
            continue  # unfed: fetching what needs it is TF's InvalidArgumentError
        form = str(r.choice(["same", "same", "list", "scalar", "other", "float", "badshape"],
                            p=[0.3, 0.1, 0.15, 0.1, 0.2, 0.1, 0.05]))
        out.append((str(r.choice(["tensor", "name"])), f"p{i}", prog.value(r, i, form)))
    if r.random() < 0.2:
        i = int(r.integers(0, len(prog.phs)))
        shape = prog.phs[i][3]
        out.append(("tensor", f"p{i}_d", r.normal(size=shape).astype(np.float32)))
    if r.random() < 0.3:
        out.append((str(r.choice(["tensor", "name"])), "pwd", np.float32([7.0, 8.0, 9.0])))
    if r.random() < 0.1:
        out.append(("tensor", "var", np.float32([-1.0, 5.0])))
    return out


def feed_dict(els, feeds):
    return {(els[t] if kind == "tensor" else els[t].name): v for kind, t, v in feeds}


def run_case(seed, mode):
    r = np.random.default_rng(seed)
    prog = Program(seed)
    spec = random_fetch(r, prog)
    feeds = random_feeds(r, prog)

    def build(T, g):
        els = prog.build(T)
        fetches = resolve(T, els, spec)
        with T.Session() as s:
            s.run(els["var"].initializer)
            if mode == "run":
                return s.run(fetches, feed_dict(els, feeds))
            keys = [els[t] if kind == "tensor" else els[t].name for kind, t, _ in feeds]
            f = s.make_callable(fetches, feed_list=keys)
            return f(*[v for _, _, v in feeds])

    return assert_same(build, f"seed {seed} mode {mode} fetch {spec} feeds {feeds}")


def test_random_fetch_and_feed_structures():
    kinds = collections.Counter()
    for seed in range(int(os.environ.get("SESSION_FUZZ_N", 400))):
        kinds[run_case(seed, "run")[0]] += 1
    assert kinds["ok"] > 60 and kinds["err"] > 20, kinds  # both outcomes are exercised


def test_random_make_callable():
    for seed in range(1000, 1000 + int(os.environ.get("SESSION_FUZZ_N", 400)) // 3):
        run_case(seed, "callable")


# -- partial runs --------------------------------------------------------------------------------


def test_random_partial_runs():
    """Random splits of fetches and feeds over the pieces of a partial run."""
    for seed in range(60):
        r = np.random.default_rng(seed)
        order = r.permutation(3)
        pieces = int(r.integers(1, 4))
        bad_shape = r.random() < 0.15
        refeed = r.random() < 0.1

        def build(T, g):
            a = T.placeholder(T.float32, [2], name="a")
            b = T.placeholder(T.float32, [], name="b")
            c = T.placeholder(T.float32, [None], name="c")
            r1 = T.add(a, b, name="r1")
            r2 = T.reduce_sum(r1 * 2.0, name="r2")
            r3 = T.multiply(r2, c, name="r3")
            outs, ins = [r1, r2, r3], [a, b, c]
            vals = {a: np.float32([1.0, 2.0]) if not bad_shape else np.float32([1.0]), b: 0.5,
                    c: [1.0, -1.0, 2.0]}
            with T.Session() as s:
                h = s.partial_run_setup(outs, ins)
                got = []
                fed = set()
                for p in range(pieces):
                    o = outs[order[p]]
                    need = [x for x in ins if x not in fed and (x is not c or o is r3)]
                    if o is not r1 and a not in fed:
                        need = [x for x in ins if x not in fed]
                    if refeed and p == pieces - 1 and fed:
                        need = need + [next(iter(fed))]
                    got.append(s.partial_run(h, o if p % 2 else [o], {x: vals[x] for x in need}))
                    fed.update(need)
                return got

        assert_same(build, f"partial run seed {seed}")


# -- fixed cases the random ones hit rarely -------------------------------------------------------


def _x(T, shape=(2,), dt="float32"):
    return T.placeholder(getattr(T, dt), shape, name="x")


FIXED = {
    "feed_scalar_to_vector": lambda T, g: T.Session().run(_x(T) * 2, {"x:0": 3.0}),
    "feed_none": lambda T, g: T.Session().run(_x(T) * 2, {"x:0": None}),
    "feed_tensor_value": lambda T, g: T.Session().run(_x(T) * 2, {"x:0": T.constant([1.0, 2.0])}),
    "feed_dict_not_a_dict": lambda T, g: T.Session().run(_x(T) * 2, [("x:0", [1.0, 2.0])]),
    "feed_bad_name": lambda T, g: T.Session().run(_x(T) * 2, {"nope:0": [1.0, 2.0]}),
    "feed_op_key": lambda T, g: T.Session().run(_x(T) * 2, {_x(T).op: [1.0, 2.0]}),
    "feed_int_overflow_scalar": lambda T, g: T.Session().run(_x(T, (), "int32") + 1, {"x:0": 2 ** 40}),
    "feed_list_wraps": lambda T, g: T.Session().run(T.identity(_x(T, (2,), "uint8")), {"x:0": [1, -1]}),
    "feed_complex_to_real": lambda T, g: T.Session().run(T.identity(_x(T)), {"x:0": np.complex64([1 + 2j, 3])}),
    "feed_strings_to_float": lambda T, g: T.Session().run(T.identity(_x(T)), {"x:0": ["1.5", "2"]}),
    "fetch_none": lambda T, g: T.Session().run([_x(T), None]),
    "fetch_bad_name": lambda T, g: T.Session().run([_x(T), "nope"]),
    "fetch_bad_index": lambda T, g: T.Session().run([_x(T), "x:3"]),
    "fetch_int": lambda T, g: T.Session().run([_x(T), 3]),
    "empty_graph": lambda T, g: T.Session().run([]),
    "empty_fetch": lambda T, g: T.Session().run([_x(T).op, []])[1:],
    "unfed": lambda T, g: T.Session().run(_x(T) * 2),
}


def _other_graph(T, g, use_op):
    with T.Graph().as_default():
        el = T.no_op() if use_op else T.constant(1.0)
    T.constant(0.0)
    return T.Session().run(el)


def _prevent(T, g, feed):
    x = _x(T)
    y = x * 2.0
    z = y + 1.0
    if feed:
        g.prevent_feeding(y)
        return T.Session().run(z, {y: [1.0, 2.0]})
    g.prevent_fetching(y.op)
    return T.Session().run(y, {x: [1.0, 2.0]})


def _defaultdict(T, g):
    d = collections.defaultdict(list)
    d["a"] = T.constant(1.0)
    out = T.Session().run(d)
    return out, out.default_factory is list, out["missing"]


def _eval_other(T, g, default):
    x = T.constant(1.0)
    with T.Session(graph=T.Graph()) as s:
        if default:
            with s.as_default():
                return x.eval()
        return x.eval(session=s)


def _closed(T, g, how):
    x = _x(T)
    s = T.Session()
    f = s.make_callable(x.op)
    s.close()
    if how == "run":
        return s.run(x.op)
    if how == "make":
        return s.make_callable(x.op)
    if how == "call":
        return f()
    return s.make_callable(x * 2, [x])([1.0, 2.0])


def _callable(T, g, how):
    x = _x(T)
    y = x * 2.0
    s = T.Session()
    if how == "extra_args":
        return s.make_callable(y, [x])([1.0, 2.0], [9.0, 9.0])
    if how == "no_feed_list_args":
        return s.make_callable(y)([1.0, 2.0])
    if how == "feed_list_not_list":
        return s.make_callable(y, x)([1.0, 2.0])
    if how == "options":
        return s.make_callable(y, accept_options=True)(options=T.RunOptions(), run_metadata=T.RunMetadata())
    if how == "options_refused":
        return s.make_callable(T.constant(1.0))(options=T.RunOptions())
    if how == "options_with_feed_list":
        return s.make_callable(y, [x])([1.0, 2.0], options=T.RunOptions())
    if how == "sparse_feed":
        sp = T.sparse_placeholder(T.float32)
        return s.make_callable(T.sparse_tensor_to_dense(sp), [sp])(([[0, 0]], [2.0], [1, 2]))
    if how == "empty":
        return s.make_callable([])()
    return s.make_callable([y, {"z": (y, T.no_op())}], ["x:0"])(np.float64([1.5, 2.5]))


def _sparse_feed(T, g, how):
    sp = T.sparse_placeholder(T.float32, shape=[3, 3] if how == "shape" else None)
    d = T.sparse_tensor_to_dense(sp)
    v = {"tuple": ([[0, 1]], [3.0], [2, 2]), "value": T.SparseTensorValue([[0, 1]], [3.0], [2, 2]),
         "shape": ([[0, 1]], [3.0], [2, 2]), "dense": np.zeros((2, 2), np.float32),
         "short": ([[0, 1]], [3.0])}[how]
    return T.Session().run([d, sp], {sp: v})


def _errors(T, g, how):
    x = _x(T)
    s = T.Session()
    if how == "check_numerics":
        return s.run(T.check_numerics(x, "bad values"), {x: [1.0, np.nan]})
    if how == "assert":
        with T.control_dependencies([T.Assert(T.reduce_all(x > 0), [x, "hello"])]):
            y = T.identity(x)
        return s.run(y, {x: [1.0, -2.0]})
    if how == "queue":
        q = T.FIFOQueue(3, T.float32)
        s.run(q.enqueue(1.0))
        s.run(q.close())
        deq = q.dequeue()
        return s.run(deq), s.run(deq)
    it = T.data.make_one_shot_iterator(T.data.Dataset.range(2))
    n = it.get_next()
    return [s.run(n) for _ in range(3)]


for _n, _f in [("other_graph_tensor", lambda T, g: _other_graph(T, g, False)),
               ("other_graph_op", lambda T, g: _other_graph(T, g, True)),
               ("prevent_feeding", lambda T, g: _prevent(T, g, True)),
               ("prevent_fetching", lambda T, g: _prevent(T, g, False)),
               ("defaultdict", _defaultdict),
               ("eval_given_other_graph", lambda T, g: _eval_other(T, g, False)),
               ("eval_default_other_graph", lambda T, g: _eval_other(T, g, True))]:
    FIXED[_n] = _f
def _partial(T, g, how):
    a = T.placeholder(T.float32, [], name="a")
    r1 = T.add(a, 1.0, name="r1")
    s = T.Session()
    if how == "sparse_fetch":
        sp = T.SparseTensor([[0]], T.reshape(r1, [1]), [2])
        h = s.partial_run_setup([sp, r1], [a])
        return s.partial_run(h, {"sp": sp}, {a: 1.0}), s.partial_run(h, [r1])
    if how == "bad_fetch_name":
        return s.partial_run_setup(["nope:0"], [a])
    if how == "op_fetch":
        h = s.partial_run_setup([r1, r1.op], [a])
        return s.partial_run(h, r1.op, {a: 1.0})
    if how == "bad_shape":
        h = s.partial_run_setup([r1], [a])
        return s.partial_run(h, r1, {a: [1.0, 2.0]})
    h = s.partial_run_setup(["r1:0"], ["a:0"])
    return s.partial_run(h, b"r1:0" if how == "bytes_name" else "r1:0", {"a:0": 2})


def _same_object(T, g):
    x = T.constant([1.0, 2.0])
    p = T.placeholder(T.float32, [2])
    a = np.float32([3.0, 4.0])
    s = T.Session()
    r = s.run([x, x, p, (p,)], {p: a})
    return r[0] is r[1], r[2] is a, r[3][0] is a


def _indexed_slices(T, g, known):
    p = T.constant([[1.0, 2.0], [3.0, 4.0]]) if known else T.placeholder(T.float32, [None, 2])
    gr = T.gradients(T.reduce_sum(T.gather(p, [1, 1])), p)[0]
    plain = T.IndexedSlices(T.constant([[1.0]]), T.constant([0]))
    return T.Session().run({"g": gr, "plain": [plain]}, {} if known else {p: np.zeros((3, 2), np.float32)})


FIXED["indexed_slices_known_shape"] = lambda T, g: _indexed_slices(T, g, True)
FIXED["indexed_slices_unknown_shape"] = lambda T, g: _indexed_slices(T, g, False)
def _control_flow(T, g, how):
    """TF1's cond and while_loop (control flow v1, TF 1.15's) mark what they build inside."""
    was_v2 = T is tf and tf.control_flow_v2_enabled()
    if was_v2:
        tf.disable_control_flow_v2()
    try:
        p = T.placeholder(T.bool, [], name="p")
        x = T.placeholder(T.float32, [], name="x")
        c = T.cond(p, lambda: x * 2.0, lambda: x - 1.0)
        r = T.while_loop(lambda i: i < 3.0, lambda i: i + x, [x])
        inner_cond = [o for o in g.get_operations() if o.type == "Mul" and o.name.startswith("cond/")][0]
        inner_loop = [o for o in g.get_operations() if o.type == "AddV2" or o.type == "Add"]
        inner_loop = [o for o in inner_loop if o.name.startswith("while/")][0]
        s = T.Session()
        if how == "outputs":
            return s.run([c, r], {p: True, x: 0.5})
        if how == "fetch_cond_branch":
            return s.run(inner_cond.outputs[0], {p: True, x: 0.5})
        if how == "fetch_loop_body":
            return s.run(inner_loop.outputs[0], {x: 0.5})
        if how == "run_cond_branch_op":
            return s.run(inner_cond, {p: True, x: 0.5})
        return s.run(r, {x: 0.5, inner_loop.outputs[0]: 1.0})
    finally:
        if was_v2:
            tf.enable_control_flow_v2()


for _how in ("outputs", "fetch_cond_branch", "fetch_loop_body", "run_cond_branch_op", "feed_loop_body"):
    FIXED["control_flow_" + _how] = (lambda h: lambda T, g: _control_flow(T, g, h))(_how)
FIXED["same_object_for_duplicate_fetches"] = _same_object
for _how in ("sparse_fetch", "bad_fetch_name", "op_fetch", "bad_shape", "bytes_name", "names"):
    FIXED["partial_" + _how] = (lambda h: lambda T, g: _partial(T, g, h))(_how)
for _how in ("run", "make", "call", "feed_list"):
    FIXED["closed_" + _how] = (lambda h: lambda T, g: _closed(T, g, h))(_how)
for _how in ("extra_args", "no_feed_list_args", "feed_list_not_list", "options", "options_refused",
             "options_with_feed_list", "sparse_feed", "empty", "names"):
    FIXED["callable_" + _how] = (lambda h: lambda T, g: _callable(T, g, h))(_how)
for _how in ("tuple", "value", "shape", "dense", "short"):
    FIXED["sparse_feed_" + _how] = (lambda h: lambda T, g: _sparse_feed(T, g, h))(_how)
for _how in ("check_numerics", "assert", "queue", "iterator"):
    FIXED["kernel_error_" + _how] = (lambda h: lambda T, g: _errors(T, g, h))(_how)


# the part of the error message both libraries must carry (TF's kernel messages, with its
# "Graph execution error" header and node trace around them)
KEY_PARTS = {"kernel_error_check_numerics": "bad values : Tensor had NaN values",
             "kernel_error_assert": "assertion failed: [1 -2] [hello]",
             "kernel_error_queue": "is closed and has insufficient elements (requested 1, current size 0)",
             "kernel_error_iterator": "End of sequence",
             "unfed": "You must feed a value for placeholder",
             "prevent_feeding": "Tensor mul:0 may not be fed.",
             "prevent_fetching": "has been marked as not fetchable",
             "callable_empty": "Must specify at least one target to fetch or execute.",
             "closed_call": "Session has been closed.",
             "closed_run": "Attempted to use a closed Session.",
             "empty_graph": "The Session graph is empty.",
             "fetch_bad_name": "cannot be interpreted as a Tensor",
             "other_graph_tensor": "cannot be interpreted as a Tensor",
             "feed_bad_name": "Cannot interpret feed_dict key as Tensor",
             "feed_tensor_value": "The value of a feed cannot be a tf.Tensor object",
             "eval_given_other_graph": "Cannot use the given session to evaluate tensor",
             "eval_default_other_graph": "Cannot use the default session to evaluate tensor",
             "control_flow_fetch_cond_branch": "has been marked as not fetchable",
             "control_flow_fetch_loop_body": "has been marked as not fetchable",
             "control_flow_feed_loop_body": "may not be fed"}

# collflow refuses a dense_shape other than a sparse_placeholder's static one (TF1 takes it and
# its static shapes then disagree with the values)
KNOWN = {"sparse_feed_shape": "InvalidArgumentError"}


@pytest.mark.parametrize("name", sorted(FIXED))
def test_fixed_cases(name):
    if name in KNOWN:
        assert outcome(cf, FIXED[name])[:2] == ("err", KNOWN[name])
        return
    want = assert_same(FIXED[name], name)
    if name in KEY_PARTS:
        got = outcome(cf, FIXED[name])
        assert KEY_PARTS[name] in want[2] and KEY_PARTS[name] in got[2], (want, got)


def test_list_devices_and_run_metadata():
    got = []
    for T in (tf, cf):
        with T.Graph().as_default():
            x = T.constant([1.0, 2.0])
            with T.Session() as s:
                ds = s.list_devices()
                md = T.RunMetadata()
                v = s.run(x, options=T.RunOptions(trace_level=T.RunOptions.FULL_TRACE), run_metadata=md)
                got.append((sorted((d.device_type, d.name) for d in ds if d.device_type == "CPU"),
                            v.tolist(), len(md.step_stats.dev_stats) > 0))
    assert got[0] == got[1]
