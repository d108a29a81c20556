"""Every differentiable op against central finite differences, from one table."""
import pytest

from collflow.graph.registry import registered_ops
from gradcheck import Case, check_case
import gradtable_math

TABLES = [gradtable_math]
for _name in ("gradtable_array", "gradtable_nn", "gradtable_train", "gradtable_control", "gradtable_comm",
              "gradtable_rnn", "gradtable_ps",
              "gradtable_functional", "gradtable_losses", "gradtable_more", "gradtable_linalg",
              "gradtable_special", "gradtable_image"):
    try:
        TABLES.append(__import__(_name))
    except ModuleNotFoundError:
        pass

ALL_CASES = [c for t in TABLES for c in t.CASES]


@pytest.mark.parametrize("case", ALL_CASES, ids=str)
def test_gradient_matches_finite_differences(case: Case) -> None:
    check_case(case)


def test_every_differentiable_op_has_a_case() -> None:
    covered = {c.op for c in ALL_CASES}
    missing = sorted(name for name, d in registered_ops().items()
                     if d.grad_fn is not None and name not in covered)
    assert not missing, f"ops with a gradient but no gradient-check case: {missing}"
