"""Small helpers the graph-building tests share."""
import collflow as cf


def run(fetches, feed=None):
    """Runs fetches in a new session of the default graph, its variables initialized first."""
    with cf.Session(graph=cf.get_default_graph()) as s:
        s.run(cf.global_variables_initializer())
        return s.run(fetches, feed)
