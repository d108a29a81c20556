"""The one gradient checker: symbolic gradients vs central finite differences, float64.

A `Case` names the op type it covers and builds that op from float64 tensors.  The checker
feeds random inputs, takes the gradient of sum(y * R) for a fixed random R (so every
Jacobian entry matters), and compares it with central differences of the same scalar.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

import collflow as cf


@dataclasses.dataclass
class Case:
    op: str                                  # registry op type this case checks
    fn: Callable[..., Any]                   # builds the op from the input tensors
    shapes: Sequence[Tuple[int, ...]]        # shapes of the differentiated float64 inputs
    low: float = -2.0                        # inputs are drawn uniformly from [low, high]
    high: float = 2.0
    make_inputs: Optional[Callable[[np.random.Generator], list]] = None  # custom input values
    rtol: float = 1e-5
    atol: float = 1e-6
    eps: float = 1e-6
    id: str = ""
    as_variables: bool = False               # inputs are cf.Variables (gradients through their reads)

    def __str__(self) -> str:
        return self.id or self.op


def _scalar(outs: Any) -> list:
    if isinstance(outs, (list, tuple)):
        return [o for o in outs if isinstance(o, (cf.Tensor, cf.IndexedSlices)) and o.dtype.is_floating]
    return [outs]


def check_case(case: Case, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    if case.make_inputs is not None:
        # C-contiguous copies: the finite differences perturb each value through a flat view
        values = [np.array(v, dtype=np.float64, order="C") for v in case.make_inputs(rng)]
    else:
        values = [rng.uniform(case.low, case.high, size=s) for s in case.shapes]
    g = cf.Graph()
    with g.as_default():
        if case.as_variables:
            xs = [cf.Variable(v.copy(), name=f"x{i}") for i, v in enumerate(values)]
        else:
            xs = [cf.placeholder(cf.float64, v.shape, name=f"x{i}") for i, v in enumerate(values)]
        ys = _scalar(case.fn(*xs))
        init = cf.global_variables_initializer()  # the inputs and any variable fn made
        assert ys, f"{case}: fn returned no float output"
        found = {op.type for op in g.get_operations()}
        assert case.op in found, f"case {case} does not create a {case.op} op (made: {sorted(found)})"
        weights = []
        terms = []
        for y in ys:
            y = cf.convert_to_tensor(y)
            w = cf.placeholder(cf.float64, None, name="w")
            weights.append(w)
            terms.append(cf.reduce_sum(y * w))
        loss = cf.add_n(terms)
        grads = cf.gradients(loss, xs)
        grads_dense = [cf.convert_to_tensor(gr) if gr is not None else None for gr in grads]
    with cf.Session(graph=g, config={"check_outputs": True}) as sess:
        def inputs(vals: list) -> dict:
            if case.as_variables:
                for x, v in zip(xs, vals):
                    x.load(v, sess)
                return {}
            return dict(zip(xs, vals))

        sess.run(init)
        yvals = sess.run([cf.convert_to_tensor(y) for y in ys], inputs(values))
        wvals = [rng.uniform(0.5, 1.5, size=np.shape(v)) for v in yvals]
        feed = inputs(values)
        feed.update(zip(weights, wvals))
        analytic = sess.run([gr for gr in grads_dense if gr is not None], feed)
        it = iter(analytic)
        analytic_full = [next(it) if gr is not None else np.zeros_like(v) for gr, v in zip(grads_dense, values)]

        def f(vals: list) -> float:
            fd = inputs(vals)
            fd.update(zip(weights, wvals))
            return float(sess.run(loss, fd))

        for i, v in enumerate(values):
            num = np.zeros_like(v)
            flat = v.reshape(-1)
            for j in range(flat.size):
                orig = flat[j]
                flat[j] = orig + case.eps
                fp = f(values)
                flat[j] = orig - case.eps
                fm = f(values)
                flat[j] = orig
                num.reshape(-1)[j] = (fp - fm) / (2 * case.eps)
            np.testing.assert_allclose(
                analytic_full[i], num, rtol=case.rtol, atol=case.atol,
                err_msg=f"gradient of {case} w.r.t. input {i} (shape {v.shape}) differs from finite differences")


_CF_FLOATS = {np.dtype(np.float64): cf.float64, np.dtype(np.float32): cf.float32, np.dtype(np.float16): cf.float16}


@dataclasses.dataclass
class CaseGraph:
    """A case built to run on a device (tests/test_gpu.py, tests/test_device_discipline.py):
    its float outputs `ys`, the gradients of sum(y * y) w.r.t. the inputs, and the feed."""
    graph: Any
    xs: list
    values: list
    ys: list
    grads: list
    init: Any
    as_variables: bool

    @property
    def feed(self) -> dict:
        return {} if self.as_variables else dict(zip(self.xs, self.values))


def case_graph(case: Case, dtype: Any = np.float64, seed: int = 0) -> CaseGraph:
    """The case's op and its gradients in `dtype`, inputs as placeholders or (as_variables)
    variables, as check_case builds them.  A case written in float64 only raises its
    InvalidArgumentError in another dtype."""
    rng = np.random.default_rng(seed)
    if case.make_inputs is not None:
        values = [np.asarray(v, dtype=dtype) for v in case.make_inputs(rng)]
    else:
        values = [rng.uniform(case.low, case.high, size=s).astype(dtype) for s in case.shapes]
    cfd = _CF_FLOATS[np.dtype(dtype)]
    g = cf.Graph()
    with g.as_default():
        if case.as_variables:
            xs = [cf.Variable(v.copy(), name=f"x{i}") for i, v in enumerate(values)]
        else:
            xs = [cf.placeholder(cfd, v.shape) for v in values]
        made = case.fn(*xs)
        ys = [cf.convert_to_tensor(y) for y in (made if isinstance(made, (list, tuple)) else [made])
              if getattr(y, "dtype", None) is not None and y.dtype.is_floating]
        loss = cf.add_n([cf.reduce_sum(cf.cast(y, cfd) * cf.cast(y, cfd)) for y in ys])
        grads = [cf.convert_to_tensor(gr) for gr in cf.gradients(loss, xs) if gr is not None]
        init = cf.global_variables_initializer()
    return CaseGraph(g, xs, values, ys, grads, init, case.as_variables)
