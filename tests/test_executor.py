"""The executor: pruning, partial execution, plan caching, freeing intermediates, async
kernels overlapping other work, cancellation between ops, control-dependency order."""
import threading
import time
import weakref

import numpy as np
import pytest

import collflow as cf
from collflow.graph.ops.op_util import single, same_shape_fn
from collflow.graph.registry import register_op, not_differentiable
from collflow.kernels.registry import ThreadHandle, register_kernel

# -- test ops: they log what ran and when ----------------------------------------------------

LOG: list = []      # (tag, event, time) appended by the test kernels
REFS: list = []     # weakrefs to arrays made by TestExec_Make
PROBES: list = []   # what TestExec_Probe saw: [is each REFS array freed?]


def _log(tag, event):
    LOG.append((tag, event, time.monotonic()))


for _name in ("TestExec_Slow", "TestExec_Async", "TestExec_Stamp", "TestExec_Probe"):
    register_op(_name, same_shape_fn, stateful=True)
register_op("TestExec_Make", lambda op: [(cf.float32, (4,))], stateful=True)
not_differentiable("TestExec_Slow", "TestExec_Async", "TestExec_Stamp", "TestExec_Probe", "TestExec_Make")


@register_kernel("TestExec_Slow")
def _slow_kernel(op, ctx):
    tag, delay = op.attrs["tag"], op.attrs["delay"]

    def run(x):
        _log(tag, "start")
        time.sleep(delay)
        _log(tag, "end")
        return x + x.dtype.type(1)
    return run


@register_kernel("TestExec_Async", is_async=True)
def _async_kernel(op, ctx):
    tag, delay, fail = op.attrs["tag"], op.attrs["delay"], op.attrs.get("fail", False)

    def run(x):
        _log(tag, "issued")

        def work():
            time.sleep(delay)
            _log(tag, "done")
            if fail:
                raise ValueError("the device said no")
            return x + x.dtype.type(1)
        return ThreadHandle(work)
    return run


@register_kernel("TestExec_Stamp")
def _stamp_kernel(op, ctx):
    tag = op.attrs["tag"]

    def run(x):
        _log(tag, "ran")
        return x.copy()
    return run


@register_kernel("TestExec_Make")
def _make_kernel(op, ctx):
    def run():
        a = np.ones(4, np.float32)
        REFS.append(weakref.ref(a))
        return a
    return run


@register_kernel("TestExec_Probe")
def _probe_kernel(op, ctx):
    def run(x):
        PROBES.append([r() is None for r in REFS])
        return x.copy()
    return run


def slow(x, tag, delay=0.0, name=None):
    return single("TestExec_Slow", [x], {"tag": tag, "delay": delay}, name=name or tag)


def async_op(x, tag, delay, fail=False):
    return single("TestExec_Async", [x], {"tag": tag, "delay": delay, "fail": fail}, name=tag)


def stamp(x, tag):
    return single("TestExec_Stamp", [x], {"tag": tag}, name=tag)


def events(tag):
    return [e for t, e, _ in LOG if t == tag]


def when(tag, event):
    return next(ts for t, e, ts in LOG if t == tag and e == event)


@pytest.fixture(autouse=True)
def _clear_logs():
    LOG.clear(), REFS.clear(), PROBES.clear()
    yield


# -- pruning and partial execution ----------------------------------------------------------------


def test_only_the_ops_the_fetches_need_run():
    g = cf.Graph()
    with g.as_default():
        x = cf.constant(np.zeros(2, np.float32))
        a = slow(x, "a")
        b = slow(a, "b")
        slow(x, "unrelated")
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(b), [2, 2])
        plan = s.plan_for(b)
    assert [t for t, e, _ in LOG if e == "end"] == ["a", "b"]
    assert {op.name for op in plan.ops} == {x.op.name, "a", "b"}


def test_feeding_an_intermediate_cuts_the_graph_above_it():
    g = cf.Graph()
    with g.as_default():
        counter = cf.Variable(np.zeros((), np.int32), name="counter")
        bump = counter.assign_add(np.ones((), np.int32))   # stateful: counts its runs
        mid = cf.cast(bump, cf.float32) * np.float32(10)
        out = mid + np.float32(1)
    with cf.Session(graph=g) as s:
        s.run(counter.initializer)
        assert s.run(out) == 11 and s.run(counter) == 1
        # feed the intermediate: the counter (upstream) must not run
        for v in (5.0, 7.0):
            assert s.run(out, {mid: np.float32(v)}) == v + 1
        assert s.run(counter) == 1
        plan = s.plan_for(out, {mid: np.float32(0)})
        assert bump.op not in plan.ops and mid.op not in plan.ops
        # fetching a fed tensor returns the fed value
        assert s.run(mid, {mid: np.float32(3)}) == 3
        assert s.run(counter) == 1


def test_feeding_a_multi_output_op_output_and_a_variable_read():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(np.arange(3, dtype=np.float32), name="v")
        y = v * np.float32(2)
    with cf.Session(graph=g) as s:
        # the variable is uninitialized, but its read is fed: nothing reads the container
        np.testing.assert_array_equal(s.run(y, {v: np.ones(3, np.float32)}), [2, 2, 2])
        np.testing.assert_array_equal(s.run(y, {v.value(): np.full(3, 2, np.float32)}), [4, 4, 4])


# -- plan caching ----------------------------------------------------------------------------------


def test_plans_are_compiled_once_per_signature():
    g = cf.Graph()
    with g.as_default():
        a = cf.placeholder(cf.float32, (2,), name="a")
        b = cf.placeholder(cf.float32, (2,), name="b")
        c = a + b
        d = a * b
    with cf.Session(graph=g) as s:
        one = np.ones(2, np.float32)
        plan = s.plan_for(c, {a: one, b: one})
        assert plan.num_runs == 0
        for _ in range(3):
            s.run(c, {a: one, b: one})
        s.run(c, {b: one, a: one})  # another feed order: the same signature
        s.run(c.name, {"a:0": one, "b:0": one})  # names resolve to the same elements
        assert s.plan_for(c, {a: one, b: one}) is plan and plan.num_runs == 5
        # feeds are passed to the plan in its own order whatever the dict order
        np.testing.assert_array_equal(s.run(d, {b: 2 * one, a: 3 * one}), [6, 6])
        np.testing.assert_array_equal(s.run(d, {a: 3 * one, b: 2 * one}), [6, 6])
        assert s.plan_for(d, {a: one, b: one}).num_runs == 2
        assert s.plan_for([c, d], {a: one, b: one}) is not plan
        # make_callable reuses the cached plan
        f = s.make_callable(c, [a, b])
        np.testing.assert_array_equal(f(one, one), [2, 2])
        assert plan.num_runs == 6


@pytest.mark.host_only("counts a CPU plan's ops (a device plan adds the feed's copy)")
def test_plan_is_straight_line_code():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (3,), name="x")
        y = cf.exp(x) + x
    with cf.Session(graph=g) as s:
        plan = s.plan_for(y, {x: np.zeros(3, np.float32)})
    assert plan.source.startswith("def _plan(")
    assert "for " not in plan.source and "while " not in plan.source
    assert len(plan.ops) == 2  # Exp, Add (the fed placeholder is not an op of the plan)


# -- freeing intermediates ---------------------------------------------------------------------


def test_intermediates_are_freed_after_their_last_consumer():
    g = cf.Graph()
    with g.as_default():
        a = single("TestExec_Make", [])
        b = cf.negative(a)                       # a's last consumer
        c = single("TestExec_Probe", [b])        # runs after b: a must be gone by then
        d = single("TestExec_Probe", [c * a])    # here a is still needed (fetched later)
    with cf.Session(graph=g) as s:
        s.run(c)
        assert PROBES == [[True]]
        src = s.plan_for(c).source
        slot_a = f"v{a.op._id}_0"
        assert f"{slot_a} = None" in src
        PROBES.clear(), REFS.clear()
        s.run([d, b])
        # a feeds b and Mul: alive while Probe(c) runs, freed before Probe(d)
        assert PROBES == [[False], [True]]
        PROBES.clear(), REFS.clear()
        s.run([c, a])  # a fetched: kept to the end
        assert PROBES == [[False]]


# -- asynchronous kernels ---------------------------------------------------------------------------


def test_async_kernel_overlaps_independent_work_and_consumers_wait():
    g = cf.Graph()
    with g.as_default():
        x = cf.constant(np.zeros(2, np.float32))
        h = async_op(x, "comm", delay=0.3)
        # independent work, created after the async op: runs while it is in flight
        busy = slow(slow(x, "w1", 0.05), "w2", 0.05)
        use = stamp(h, "consumer")
        out = use + busy
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(out), [3, 3])
    assert when("comm", "issued") < when("w1", "start")
    assert when("w2", "end") < when("comm", "done"), "independent ops ran while the async op was in flight"
    assert when("comm", "done") <= when("consumer", "ran"), "the consumer waited for the value"


def test_independent_async_kernels_run_concurrently():
    g = cf.Graph()
    with g.as_default():
        x = cf.constant(np.zeros(2, np.float32))
        outs = [async_op(x, f"a{i}", delay=0.2) for i in range(3)]
        total = cf.add_n(outs)
    with cf.Session(graph=g) as s:
        t0 = time.monotonic()
        np.testing.assert_array_equal(s.run(total), [3, 3])
        assert time.monotonic() - t0 < 0.45  # three 0.2 s waits at once, not 0.6 s


def test_async_kernel_error_names_the_op():
    g = cf.Graph()
    with g.as_default():
        x = cf.constant(np.zeros(2, np.float32))
        y = stamp(async_op(x, "flaky", delay=0.01, fail=True), "after")
    with cf.Session(graph=g) as s:
        with pytest.raises(cf.errors.InvalidArgumentError, match="the device said no") as ei:
            s.run(y)
    assert ei.value.op.name == "flaky" and "TestExec_Async" in str(ei.value)
    assert "after" not in [t for t, _, _ in LOG]


# -- cancellation ---------------------------------------------------------------------------------


def _chain(n=20, delay=0.03):
    g = cf.Graph()
    with g.as_default():
        t = cf.constant(np.zeros(2, np.float32))
        for i in range(n):
            t = slow(t, f"step{i:02d}", delay)
    return g, t


def _run_in_thread(fn):
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            box["error"] = e
    th = threading.Thread(target=target, daemon=True)
    th.start()
    return th, box


def _check_cancelled(box, reason):
    e = box.get("error")
    assert isinstance(e, cf.errors.CancelledError), box
    assert reason in str(e)
    ran = [t for t, ev, _ in LOG if ev == "end"]
    assert 0 < len(ran) < 20, "cancelled part-way"
    # it names the op where it stopped: the first op that did not run
    assert e.op is not None and e.op.name == f"step{len(ran):02d}"
    assert f"before op '{e.op.name}'" in str(e)


def test_cancel_token_stops_a_run_between_ops():
    g, t = _chain()
    with cf.Session(graph=g) as s:
        tok = cf.CancellationToken()
        th, box = _run_in_thread(lambda: s.run(t, cancel_token=tok))
        time.sleep(0.1)
        tok.cancel("backup rank finished first")
        th.join(5)
        assert not th.is_alive()
        _check_cancelled(box, "backup rank finished first")
        assert tok.cancelled
        # the session is still usable, and a new run is not cancelled
        np.testing.assert_array_equal(s.run(g.get_tensor_by_name("step00:0")), [1, 1])


def test_session_cancel_stops_runs_in_flight():
    g, t = _chain()
    with cf.Session(graph=g) as s:
        th, box = _run_in_thread(lambda: s.run(t))
        time.sleep(0.1)
        s.cancel("shutting down")
        th.join(5)
        _check_cancelled(box, "shutting down")


def test_a_token_cancelled_before_the_run_stops_at_the_first_op():
    g, t = _chain(3)
    with cf.Session(graph=g) as s:
        tok = cf.CancellationToken()
        tok.cancel()
        # (the constant is bound when the plan is compiled: the first op that runs is step00)
        with pytest.raises(cf.errors.CancelledError, match="run cancelled before op 'step00'"):
            s.run(t, cancel_token=tok)
    assert LOG == []


def test_session_cancel_reaches_make_callable_runs():
    """Session.cancel() documents 'cancels every run in flight': runs from make_callable too."""
    g, t = _chain()
    with cf.Session(graph=g) as s:
        f = s.make_callable(t)
        th, box = _run_in_thread(f)
        time.sleep(0.1)
        s.cancel("stop everything")
        th.join(5)
        _check_cancelled(box, "stop everything")


# -- control dependencies -----------------------------------------------------------------------


def test_control_dependencies_order_side_effects():
    g = cf.Graph()
    with g.as_default():
        x = cf.constant(np.zeros(2, np.float32))
        # created in reverse of the order the dependencies impose
        last = slow(x, "third")
        mid = slow(x, "second")
        first = slow(x, "first")
        mid.op._add_control_input(first.op)
        last.op._add_control_input(mid.op)
        with cf.control_dependencies([last]):
            done = cf.no_op(name="done")
    with cf.Session(graph=g) as s:
        assert s.run(done) is None
    assert [t for t, e, _ in LOG if e == "end"] == ["first", "second", "third"]


def test_read_after_assign_under_control_dependencies_sees_the_write():
    g = cf.Graph()
    with g.as_default():
        v = cf.Variable(np.zeros(2, np.float32), name="v")
        upd = v.assign(np.full(2, 5, np.float32))
        with cf.control_dependencies([upd]):
            after = v.value() + np.float32(1)   # a fresh read that runs after the assign
        plain = cf.identity(v.value())
    with cf.Session(graph=g) as s:
        s.run(v.initializer)
        np.testing.assert_array_equal(s.run(plain), [0, 0])
        np.testing.assert_array_equal(s.run(after), [6, 6])
        np.testing.assert_array_equal(s.run(plain), [5, 5])


def test_fetching_an_op_runs_its_control_inputs_only_once():
    g = cf.Graph()
    with g.as_default():
        x = cf.constant(np.zeros(2, np.float32))
        a = slow(x, "a")
        with cf.control_dependencies([a, a.op]):
            b = slow(x, "b")
        both = cf.group(a, b)
    with cf.Session(graph=g) as s:
        vals = s.run([a, b, both])
    assert vals[2] is None
    assert events("a") == ["start", "end"] and events("b") == ["start", "end"]


# -- launch hints: does the plan wait for an async op at once? ---------------------------------

HINTS: dict = {}   # tag -> the kernel's launch_hints dict
register_op("TestExec_Hinted", same_shape_fn, stateful=True)
not_differentiable("TestExec_Hinted")


@register_kernel("TestExec_Hinted", is_async=True)
def _hinted_kernel(op, ctx):
    hints = {"wait_now": None}
    HINTS[op.attrs["tag"]] = hints

    def run(x):
        return ThreadHandle(lambda: x + x.dtype.type(1))
    run.launch_hints = hints
    return run


def test_launch_hints_say_whether_the_plan_waits_at_once():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (256,))
        a = single("TestExec_Hinted", [x], {"tag": "alone"}, name="alone")
        # only scalar work between the launch and the wait: still "at once"
        scale = cf.reduce_sum(cf.constant([1.0, 2.0]))
        b = single("TestExec_Hinted", [x], {"tag": "scalar_between"}, name="scalar_between") * scale
        # a big independent op runs while the collective is in flight: overlap, not at once
        c = single("TestExec_Hinted", [x], {"tag": "overlapped"}, name="overlapped")
        m = cf.placeholder(cf.float32, (64, 64))  # fed, so the product is not folded into a constant
        big = cf.matmul(m, m)
        d = c + cf.reduce_sum(big)
    feed = {x: np.zeros(256, np.float32), m: np.ones((64, 64), np.float32)}
    with cf.Session(graph=g) as s:
        np.testing.assert_array_equal(s.run(a, feed), np.ones(256))
        assert HINTS["alone"]["wait_now"] is True
        np.testing.assert_array_equal(s.run(b, feed), np.full(256, 3.0))
        assert HINTS["scalar_between"]["wait_now"] is True
        np.testing.assert_array_equal(s.run(d, feed), np.full(256, 1.0 + 64 * 64 * 64))
        assert HINTS["overlapped"]["wait_now"] is False
