"""Random cases for tests/tf1/test_vs_tensorflow_dtype_rules_fuzz.py: a tensor of one dtype
beside a Python/NumPy operand under an operator (either side) or a tf.math function, and the
conversion entry points.  `run_case(mod, case)` gives ("ok", dtype name, value),
("build", error kind) or ("run", error name) for TF and collflow alike."""
import operator

import numpy as np

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "bool",
          "complex64", "complex128", "string"]
OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
             "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
             "|": operator.or_, "^": operator.xor, "<": operator.lt, "<=": operator.le, ">": operator.gt,
             ">=": operator.ge}
FUNCTIONS = ["add", "subtract", "multiply", "truediv", "floordiv", "floormod", "pow", "maximum", "minimum",
             "equal", "not_equal", "less", "greater_equal"]


def tensor_value(rng, dt, shape=(3,)):
    if dt == "string":
        return np.array([["a", "bc", ""][i % 3] for i in range(int(np.prod(shape)))], object).reshape(shape)
    if dt == "bool":
        return rng.random(shape) < 0.5
    if dt.startswith("complex"):
        return (rng.integers(1, 4, shape) + 1j * rng.integers(-2, 3, shape)).astype(dt)
    if dt.startswith("uint"):
        return rng.integers(1, 5, shape).astype(dt)
    return rng.integers(1, 5, shape).astype(dt)  # positive: ** and // stay defined for integers


def operand(rng):
    """A Python/NumPy operand and its description."""
    k = rng.integers(0, 8)
    if k == 0:
        v = int(rng.choice([2, 3, -1, 300, 2 ** 40]))
    elif k == 1:
        v = float(rng.choice([2.0, 0.5, 1.5, -3.0]))
    elif k == 2:
        v = bool(rng.integers(0, 2))
    elif k == 3:
        v = complex(rng.choice([2j, 1 + 1j]))
    elif k == 4:
        dt = DTYPES[rng.integers(0, len(DTYPES) - 1)]
        v = np.array(tensor_value(rng, dt, ())).astype(dt)[()]
    elif k == 5:
        dt = DTYPES[rng.integers(0, len(DTYPES) - 1)]
        v = tensor_value(rng, dt, (3,))
    elif k == 6:
        v = [int(x) for x in rng.integers(1, 4, 3)]
    else:
        v = [float(x) for x in rng.choice([1.0, 2.5], 3)]
    return v


def make_case(rng):
    dt = DTYPES[rng.integers(0, len(DTYPES))]
    kind = rng.choice(["op", "rop", "fn"])
    name = (list(OPERATORS) if kind != "fn" else FUNCTIONS)[rng.integers(0, len(OPERATORS) if kind != "fn"
                                                                            else len(FUNCTIONS))]
    return dict(dt=dt, kind=str(kind), name=name, x=tensor_value(rng, dt), other=operand(rng))


def _kind(e):
    if isinstance(e, TypeError):
        return "TypeError"
    if isinstance(e, ValueError):
        return "ValueError"
    return type(e).__name__


def run_case(mod, case):
    g = mod.Graph()
    with g.as_default():
        x = mod.placeholder(getattr(mod, case["dt"]), [3])
        o = case["other"]
        try:
            if case["kind"] == "op":
                out = OPERATORS[case["name"]](x, o)
            elif case["kind"] == "rop":
                out = OPERATORS[case["name"]](o, x)
            else:
                out = getattr(mod.math, case["name"])(x, o)
        except Exception as e:  # noqa: BLE001 - the error kind is compared
            return "build", _kind(e)
        if not hasattr(out, "dtype"):
            return "build", "NotTensor"
        with mod.Session(graph=g) as s:
            try:
                v = s.run(out, {x: case["x"]})
            except Exception as e:  # noqa: BLE001
                return "run", type(e).__name__
        return "ok", out.dtype.name, v


def describe(case):
    o = case["other"]
    od = f"{type(o).__name__}({o!r})" if not isinstance(o, np.ndarray) else f"ndarray[{o.dtype}]({o.tolist()})"
    form = {"op": f"x {case['name']} {od}", "rop": f"{od} {case['name']} x",
            "fn": f"tf.math.{case['name']}(x, {od})"}[case["kind"]]
    return f"x:{case['dt']}  {form}"


LIST_OPS = ["stack", "concat", "add_n", "convert", "where", "tuple"]


def list_element(rng, dt):
    """A tensor of dtype `dt` or a Python/NumPy value of shape [2]."""
    k = rng.integers(0, 6)
    if k < 2:
        return ("tensor", dt)
    if k == 2:
        return [int(x) for x in rng.integers(1, 4, 2)]
    if k == 3:
        return [float(x) for x in rng.choice([1.0, 2.5], 2)]
    if k == 4:
        return tensor_value(rng, DTYPES[rng.integers(0, len(DTYPES) - 1)], (2,))
    return [True, False]


def make_list_case(rng):
    op = LIST_OPS[rng.integers(0, len(LIST_OPS))]
    dts = ["float32", "float64", "int32", "int64", "uint8", "bool", "complex64"]
    dt = dts[rng.integers(0, len(dts))]
    n = int(rng.integers(2, 4))
    return dict(op=op, dt=dt, items=[list_element(rng, dt) for _ in range(n)],
                seed=int(rng.integers(0, 1000)))


def _materialize(mod, item, dt, rng):
    if isinstance(item, tuple) and item[:1] == ("tensor",):
        return mod.constant(tensor_value(rng, item[1], (2,)), getattr(mod, item[1]))
    return item


def run_list_case(mod, case):
    rng = np.random.default_rng(case["seed"])
    g = mod.Graph()
    with g.as_default():
        items = [_materialize(mod, it, case["dt"], rng) for it in case["items"]]
        op = case["op"]
        try:
            if op == "stack":
                out = mod.stack(items)
            elif op == "concat":
                out = mod.concat(items, 0)
            elif op == "add_n":
                out = mod.add_n(items)
            elif op == "convert":
                out = mod.convert_to_tensor(items)
            elif op == "where":
                out = mod.where(mod.constant([True, False]), items[0], items[1])
            elif op == "fill":
                out = mod.fill([2], items[0][0] if not hasattr(items[0], "dtype") or isinstance(items[0], np.ndarray)
                               else items[0][0])
            elif op == "range":
                a = items[0][0] if not hasattr(items[0], "op") else mod.cast(items[0][0], mod.int64)
                out = mod.range(a, 5)
            else:
                out = mod.tuple(items)[-1]
        except Exception as e:  # noqa: BLE001
            return "build", _kind(e)
        with mod.Session(graph=g) as s:
            try:
                return "ok", out.dtype.name, s.run(out)
            except Exception as e:  # noqa: BLE001
                return "run", type(e).__name__


def describe_list(case):
    items = [f"tensor<{it[1]}>" if isinstance(it, tuple) else
             (f"ndarray[{it.dtype}]" if isinstance(it, np.ndarray) else repr(it)) for it in case["items"]]
    return f"tf.{case['op']}([{', '.join(items)}])"
