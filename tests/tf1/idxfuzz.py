"""The harness of tests/tf1/test_vs_tensorflow_index_fuzz.py: runs one case in TensorFlow and in
collflow and says how they differ.

A case is `(name, fn(mod, *placeholders) -> tensor or list, inputs)`.  Every input is fed
through a placeholder of its full static shape; the fetches are the outputs and, when
`grad` is set, the gradients of sum(out * out) with respect to the floating inputs
(IndexedSlices densified).  A case TF refuses (at build or run time) must be refused by
collflow with a ValueError/TypeError or one of its errors.OpError classes, never a bare
IndexError or a NumPy error from inside a kernel."""
import numpy as np


def _dtype(mod, dt):
    return getattr(mod, np.dtype(dt).name) if np.dtype(dt).kind != "b" else mod.bool


def _config(mod):
    """TF's arithmetic optimizer aborts the process on some identity-transpose gradients
    (a grappler bug): TF runs these graphs without it."""
    if not hasattr(mod, "GraphOptions") or "collflow" in mod.__name__:
        return None
    from tensorflow.core.protobuf import rewriter_config_pb2
    off = rewriter_config_pb2.RewriterConfig(arithmetic_optimization=rewriter_config_pb2.RewriterConfig.OFF)
    return mod.ConfigProto(graph_options=mod.GraphOptions(rewrite_options=off))


def run_case(mod, fn, inputs, grad=True):
    """Returns ("ok", [arrays]) or ("build"/"run", exception)."""
    g = mod.Graph()
    with g.as_default():
        phs = [mod.placeholder(_dtype(mod, a.dtype), a.shape) for a in inputs]
        try:
            out = fn(mod, *phs)
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            fetches = list(outs)
            if grad:
                fl = [p for p in phs if p.dtype.is_floating or p.dtype.is_complex]
                terms = [mod.reduce_sum(mod.math.real(o * o)) if o.dtype.is_complex else mod.reduce_sum(o * o)
                         for o in outs if o.dtype.is_floating or o.dtype.is_complex]
                if fl and terms:
                    gs = mod.gradients(mod.add_n(terms), fl)
                    fetches += [mod.convert_to_tensor(x) if x is not None else mod.zeros_like(p)
                                for x, p in zip(gs, fl)]
        except Exception as e:  # noqa: BLE001 - the error itself is compared
            return "build", e
        with mod.Session(graph=g, config=_config(mod)) as s:
            try:
                return "ok", s.run(fetches, dict(zip(phs, inputs)))
            except Exception as e:  # noqa: BLE001
                return "run", e


def _clear_error(cf, e):
    return isinstance(e, (ValueError, TypeError, cf.errors.OpError))


def diff(tf, cf, fn, inputs, grad=True, rtol=1e-5, atol=1e-5):
    """None when collflow agrees with TF on this case, else a one-line description."""
    a = run_case(tf, fn, inputs, grad)
    if grad and a[0] != "ok" and "gradients/" in str(a[1]):
        # TF's own gradient fails here (its GatherNd/TopKV2/MirrorPad gradients on empty or
        # rank-0 slices): compare the values only
        grad = False
        a = run_case(tf, fn, inputs, grad)
    b = run_case(cf, fn, inputs, grad)
    if a[0] != "ok":
        if b[0] == "ok":
            return f"TF raised {type(a[1]).__name__} ({str(a[1])[:150]}), collflow ran it"
        if not _clear_error(cf, b[1]):
            return f"TF raised {type(a[1]).__name__}, collflow a bare {type(b[1]).__name__}: {str(b[1])[:150]}"
        return None
    if b[0] != "ok":
        return f"TF ran it, collflow raised {type(b[1]).__name__}: {str(b[1])[:300]}"
    if len(a[1]) != len(b[1]):
        return f"{len(a[1])} fetches in TF, {len(b[1])} in collflow"
    for i, (x, y) in enumerate(zip(a[1], b[1])):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"fetch {i}: TF {x.shape} {x.dtype}, collflow {y.shape} {y.dtype}"
        if x.dtype.kind in "fc":
            # float16 sums round in their own order
            r, a_ = (1e-2, 1e-2) if x.dtype == np.float16 else (rtol, atol)
            ok = np.allclose(y, x, rtol=r, atol=a_, equal_nan=True)
        else:
            ok = np.array_equal(y, x)
        if not ok:
            return f"fetch {i}: TF {x.tolist()} collflow {y.tolist()}"[:800]
    return None
