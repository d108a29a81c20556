"""The harness of the slim.nets tests against tf_slim.nets (TF 1.x's tf.contrib.slim.nets).

`compare_net` builds one network in `tensorflow.compat.v1` with tf_slim and in
`collflow.compat.v1` with collflow's `contrib.slim.nets`, gives every variable of the same name
the same random value, and compares: the variables (names, shapes, trainable, MODEL_VARIABLES),
the number of UPDATE_OPS and regularization losses, the end-point names, the logits and every end
point, the total regularization loss, and the gradient of sum(logits * W) with respect to the
input.  Training-mode runs also compare the moving averages after one update step.
"""
import numpy as np

RTOL, ATOL = 2e-4, 2e-4


def _values(names_shapes, seed):
    r = np.random.RandomState(seed)
    out = {}
    for name, shape in names_shapes:
        fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        if "moving_variance" in name:
            v = r.uniform(0.5, 1.5, shape)
        elif "gamma" in name:
            # small scales keep a deep residual stack's activations O(1) (well-conditioned sums)
            v = r.uniform(0.1, 0.3, shape)
        elif "moving_mean" in name or "beta" in name or "biases" in name:
            v = r.uniform(-0.1, 0.1, shape)
        else:
            v = r.normal(0.0, np.sqrt(2.0 / max(fan_in, 1)), shape)
        out[name] = v.astype(np.float32)
    return out


def cf_tf():
    import collflow.compat.v1 as cft
    return cft


def _build(tf, nets, build, input_shape, x_val, values, seed, train_step, run=True):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, input_shape)
        logits, end_points = build(tf, nets, x)
        gvars = tf.global_variables()
        names_shapes = [(v.op.name, tuple(int(d) for d in v.shape)) for v in gvars]
        info = {
            "vars": names_shapes,
            "trainable": sorted(v.op.name for v in tf.trainable_variables()),
            "model": sorted(v.op.name for v in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)),
            "updates": len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)),
            "reg": len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)),
            "end_points": sorted(end_points),
            "logits_name": logits.op.name,
        }
        if not run:
            return info, None, None
        if values is None:
            values = _values(names_shapes, seed)
        w = np.random.RandomState(seed + 1).uniform(-1, 1, [int(d) for d in logits.shape]).astype(np.float32)
        gx = tf.gradients(tf.reduce_sum(logits * w), x)[0]
        regs = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        reg_total = tf.add_n(regs) if regs else tf.constant(0.0)
        fetch = {"logits": logits, "gx": gx, "reg": reg_total,
                 "ep": {k: v for k, v in end_points.items()}}
        with tf.Session(graph=g) as s:
            if tf is cf_tf():
                for v in gvars:
                    v.load(values[v.op.name], s)
            else:  # TF's Variable.load is one run per variable (~30 ms each): feed every initial value at once
                s.run([v.initializer for v in gvars], {v.initializer.inputs[1]: values[v.op.name] for v in gvars})
            out = s.run(fetch, {x: x_val})
            if train_step:
                with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
                    step = tf.identity(logits)
                s.run(step, {x: x_val})
                out["after"] = s.run({v.op.name: v for v in gvars if "moving" in v.op.name})
    return info, values, out


def compare_net(tft, slim_nets, cft, build, input_shape, seed=0, train_step=False, rtol=RTOL, atol=ATOL, run=True):
    """Builds `build(tf, nets, x) -> (logits, end_points)` in both libraries and compares them
    (`run=False`: the graphs' variables, collections and end-point names only)."""
    r = np.random.RandomState(seed)
    x_val = r.uniform(-1, 1, input_shape).astype(np.float32)
    info_a, values, a = _build(tft, slim_nets, build, input_shape, x_val, None, seed, train_step, run)
    info_b, _, b = _build(cft, cft.contrib.slim.nets, build, input_shape, x_val, values, seed, train_step, run)
    assert info_b == info_a
    if not run:
        return info_a
    # float32 sums of thousands of terms in another order: errors scale with the largest value
    np.testing.assert_allclose(b["logits"], a["logits"], rtol=rtol,
                               atol=atol * max(1.0, float(np.abs(a["logits"]).max())), err_msg="logits")
    np.testing.assert_allclose(b["reg"], a["reg"], rtol=1e-5, err_msg="regularization loss")
    scale = max(1.0, float(np.abs(a["gx"]).max()))
    np.testing.assert_allclose(b["gx"], a["gx"], rtol=rtol, atol=atol * scale, err_msg="input gradient")
    for k in a["ep"]:
        ref = a["ep"][k]
        np.testing.assert_allclose(b["ep"][k], ref, rtol=rtol, atol=atol * max(1.0, float(np.abs(ref).max())),
                                   err_msg=f"end point {k}")
    if train_step:
        for k, v in a["after"].items():
            np.testing.assert_allclose(b["after"][k], v, rtol=rtol, atol=atol, err_msg=k)
    return info_a
