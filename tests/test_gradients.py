"""Every differentiable op against central finite differences, from one table."""
import pytest

from collflow.graph.registry import registered_ops
from gradcheck import Case, check_case
import gradtable_math

TABLES = [gradtable_math]
for _name in ("gradtable_array", "gradtable_nn", "gradtable_train", "gradtable_control", "gradtable_comm",
              "gradtable_rnn", "gradtable_ps",
              "gradtable_functional", "gradtable_losses", "gradtable_more", "gradtable_linalg",
              "gradtable_special", "gradtable_image", "gradtable_complex", "gradtable_special_fn",
              "gradtable_random_math_nn", "gradtable_core_ops", "gradtable_matrix_bands", "gradtable_dynamic_args",
              "gradtable_dynamic_reduce"):
    try:
        TABLES.append(__import__(_name))
    except ModuleNotFoundError:
        pass

ALL_CASES = [c for t in TABLES for c in t.CASES]


@pytest.mark.parametrize("case", ALL_CASES, ids=str)
def test_gradient_matches_finite_differences(case: Case) -> None:
    check_case(case)


# ops whose registered gradient is TF's error, not a derivative (checked where the op is tested:
# tests/test_special_linalg_more.py for matrix_solve_ls(fast=False)'s ValueError)
GRADIENT_IS_AN_ERROR = {"MatrixSolveLs"}


def test_every_differentiable_op_has_a_case() -> None:
    covered = {c.op for c in ALL_CASES} | GRADIENT_IS_AN_ERROR
    missing = sorted(name for name, d in registered_ops().items()
                     if d.grad_fn is not None and name not in covered)
    assert not missing, f"ops with a gradient but no gradient-check case: {missing}"
