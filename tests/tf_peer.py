"""Running one TF1 program in collflow and in TensorFlow (the conformance extra): the tests
that compare a new op's values with TF's share this (the op tables use tests/tf1/tfdiff.py)."""
import os
from typing import Any, Callable, List, Tuple

import pytest


def tensorflow_v1() -> Any:
    """tensorflow.compat.v1 in graph mode; the calling test is skipped without TensorFlow."""
    tensorflow = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (the conformance extra)")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tft = tensorflow.compat.v1
    tft.disable_eager_execution()
    return tft


def run_in_both(program: Callable[[Any], Any], init: bool = False) -> Tuple[List[Any], List[Any]]:
    """program(T) -> fetches (or (fetches, feed)), run in a fresh graph and Session of
    collflow.compat.v1 and of TensorFlow's: (collflow's results, TF's); skipped without TF."""
    import collflow.compat.v1 as cf
    out = []
    for T in (cf, tensorflow_v1()):
        with T.Graph().as_default():
            got = program(T)
            fetches, feed = got if isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], dict) else (got, {})
            with T.Session() as s:
                if init:
                    s.run(T.global_variables_initializer())
                    s.run(T.tables_initializer())  # lookup tables (feature columns' vocabularies)
                out.append(s.run(fetches, feed))
    return out[0], out[1]
