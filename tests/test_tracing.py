"""Step tracing: RunOptions(trace_level=...) + RunMetadata + Timeline (runtime/tracing.py)."""
import json
import time

import numpy as np
import pytest

import collflow as cf
from collflow.comm import ThreadWorld
from collflow.runtime import tracing

FULL = cf.RunOptions(trace_level=cf.RunOptions.FULL_TRACE)


def _mlp_graph():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None, 4), name="x")
        w = cf.Variable(np.full((4, 3), 0.5, np.float32), name="w")
        h = cf.nn.relu(cf.matmul(x, w))
        loss = cf.reduce_sum(h * h)
        train = cf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = cf.global_variables_initializer()
    return g, x, loss, train, init


def _events(md):
    return [ns for d in md.step_stats.dev_stats for ns in d.node_stats]


@pytest.mark.host_only("expects one CPU row in the trace")
def test_traced_run_records_every_op_and_changes_nothing():
    g, x, loss, train, init = _mlp_graph()
    feed = {x: np.arange(8, dtype=np.float32).reshape(2, 4)}
    with cf.Session(graph=g) as s:
        s.run(init)
        want = s.run(loss, feed)
        md = cf.RunMetadata()
        t0 = time.time()
        got = s.run(loss, feed, options=FULL, run_metadata=md)
        t1 = time.time()
        assert got == want
        plan = s.plan_for(loss, feed)  # the untraced plan is its own
        ev = _events(md)
        assert sorted(e.node_name for e in ev) == sorted(op.name for op in plan.ops)
        assert {e.op_type for e in ev} >= {"MatMul", "Relu", "Sum", "ReadVariable"}
        for e in ev:
            assert e.all_end_rel_micros >= 0
            assert t0 * 1e6 - 1e3 <= e.all_start_micros <= t1 * 1e6 + 1e3
            assert e.timeline_label.startswith(e.node_name.split(" (")[0] + " = " + e.op_type)
        assert [d.device for d in md.step_stats.dev_stats] == ["/cpu:0"]
        # a second traced run adds its events; untraced runs add none
        s.run(train, feed, options=FULL, run_metadata=md)
        n = len(md.step_stats)
        assert n > len(ev)
        s.run(train, feed, run_metadata=md)
        s.run(train, feed, options=cf.RunOptions(), run_metadata=md)
        assert len(md.step_stats) == n
        s.run(train, feed, options=FULL)  # a trace nobody collects is fine


@pytest.mark.host_only("expects one CPU row in the trace")
def test_timeline_is_a_chrome_trace_of_the_events():
    g, x, loss, train, init = _mlp_graph()
    with cf.Session(graph=g) as s:
        s.run(init)
        md = cf.RunMetadata()
        s.run(train, {x: np.ones((3, 4), np.float32)}, options=FULL, run_metadata=md)
    trace = json.loads(cf.Timeline(md.step_stats).generate_chrome_trace_format())
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == len(md.step_stats)
    assert {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"} == {"/cpu:0"}
    assert all(e["dur"] >= 0 and isinstance(e["ts"], int) for e in xs)
    top = tracing.op_totals(md.step_stats)
    assert top and top[0][1] >= top[-1][1]
    with pytest.raises(TypeError):
        cf.Timeline(md)


@pytest.mark.parametrize("average_parameters,collective", [(False, "FusedAllReduce"), (True, "AverageVariables")])
def test_collectives_show_their_launch_and_their_wait(average_parameters, collective):
    def rank(c):
        g = cf.Graph()
        with g.as_default():
            x = cf.placeholder(cf.float64, (4, 3))
            w = cf.Variable(np.ones((3, 2)), name="w")
            loss = cf.reduce_sum(cf.matmul(x, w))
            opt = cf.train.SyncReplicasOptimizer(cf.train.GradientDescentOptimizer(0.1), comm=c,
                                                 average_parameters=average_parameters)
            train = opt.minimize(loss)
            init = cf.global_variables_initializer()
        with cf.Session(graph=g, config={"comm": c}) as s:
            s.run(init)
            md = cf.RunMetadata()
            s.run(train, {x: np.ones((4, 3))}, options=FULL, run_metadata=md)
            return [(e.op_type, e.node_name) for e in _events(md)]

    for ev in ThreadWorld(2, timeout=30).run(rank):
        coll = [name for t, name in ev if t == collective]
        assert any(n.endswith("(launch)") for n in coll) and any(n.endswith("(wait)") for n in coll)


def test_control_flow_runs_are_traced_per_iteration():
    g = cf.Graph()
    with g.as_default():
        r = cf.while_loop(lambda i, a: i < 6, lambda i, a: (i + 1, a * 2.0), [cf.constant(0), cf.constant(1.0)])
    with cf.Session(graph=g) as s:
        md = cf.RunMetadata()
        out = s.run(r, options=FULL, run_metadata=md)
        assert out[1] == 64.0
        muls = [e for e in _events(md) if e.op_type == "Mul"]
        assert len(muls) == 6  # once per iteration


def test_a_failing_traced_run_keeps_what_ran():
    g = cf.Graph()
    with g.as_default():
        x = cf.placeholder(cf.float32, (None,))
        y = cf.reshape(x * 2.0, (2, 2))
    with cf.Session(graph=g) as s:
        md = cf.RunMetadata()
        with pytest.raises(cf.errors.InvalidArgumentError):
            s.run(y, {x: np.ones(3, np.float32)}, options=FULL, run_metadata=md)
        ran = [e.op_type for e in _events(md)]
        assert "Mul" in ran and "Reshape" not in ran  # the ops before the failing one
        assert s.run(y, {x: np.ones(4, np.float32)}).shape == (2, 2)


def test_bad_trace_level():
    with pytest.raises(ValueError, match="trace_level"):
        cf.RunOptions(trace_level=7)
