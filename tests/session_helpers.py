"""Small helpers the graph-building tests share."""
import collflow as cf


def run(fetches, feed=None):
    """Runs fetches in a new session of the default graph, its variables initialized first."""
    with cf.Session(graph=cf.get_default_graph()) as s:
        s.run(cf.global_variables_initializer())
        return s.run(fetches, feed)


def drain(lib, make_ds):
    """Every element of the Dataset make_ds(lib) builds in a new graph of lib (collflow's or
    TensorFlow's compat.v1), read through a one-shot iterator until OutOfRangeError."""
    with lib.Graph().as_default():
        nxt = lib.data.make_one_shot_iterator(make_ds(lib)).get_next()
        out = []
        with lib.Session() as s:
            while True:
                try:
                    out.append(s.run(nxt))
                except lib.errors.OutOfRangeError:
                    return out
