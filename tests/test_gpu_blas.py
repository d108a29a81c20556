"""The layout arithmetic of collflow's capturable cuBLAS GEMM (kernels/gpu_blas.py), checked on
the CPU: a column-major GEMM written out in NumPy reads the operands `gemm_operands` names
straight from the arrays' buffers, as cuBLAS does, and must give a @ b for C-ordered arrays,
transposed views and strided views alike.  The GPU run of the same path is in test_gpu.py."""
import numpy as np
import pytest

from collflow.kernels import gpu_blas


def _colmajor(buf: np.ndarray, rows: int, cols: int, ld: int) -> np.ndarray:
    """The column-major [rows, cols] matrix with leading dimension ld over buf's memory."""
    flat = buf.reshape(-1) if buf.flags.c_contiguous else buf.T.reshape(-1)
    assert flat.size >= (cols - 1) * ld + rows
    return np.lib.stride_tricks.as_strided(flat, (rows, cols), (flat.itemsize, ld * flat.itemsize))


def _cublas_like(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    (bb, opb, ldb), (aa, opa, lda) = gpu_blas.gemm_operands(np, a, b)
    m, k = a.shape
    n = b.shape[1]
    # gemm(op_b, op_a, n, m, k, B, ldb, A, lda, C, ldc=n): column-major C^T [n, m]
    B = _colmajor(bb, *((n, k) if opb == 0 else (k, n)), ldb)
    A = _colmajor(aa, *((k, m) if opa == 0 else (m, k)), lda)
    Ct = (B if opb == 0 else B.T) @ (A if opa == 0 else A.T)
    c = np.empty((m, n), a.dtype)
    _colmajor(c, n, m, n)[...] = Ct
    return c


@pytest.mark.parametrize("m,k,n", [(3, 4, 5), (1, 7, 1), (6, 1, 2), (5, 5, 5)])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_gemm_operands_give_the_product(m, k, n, ta, tb):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = rng.normal(size=(k, m)).T if ta else rng.normal(size=(m, k))
    b = rng.normal(size=(n, k)).T if tb else rng.normal(size=(k, n))
    np.testing.assert_allclose(_cublas_like(a, b), a @ b, rtol=1e-12, atol=1e-12)


def test_strided_views_are_made_contiguous_first():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(6, 8))[::2, 1::2]  # neither C- nor F-ordered
    b = rng.normal(size=(4, 3))
    (bb, opb, _), (aa, opa, lda) = gpu_blas.gemm_operands(np, a, b)
    assert aa.flags.c_contiguous and opa == 0 and lda == 4
    np.testing.assert_allclose(_cublas_like(a, b), a @ b, rtol=1e-12)


def test_outside_a_capture_the_namespace_is_numpy_like_and_unchanged():
    """namespace() keeps every name of the module it wraps; matmul/dot fall through to it."""
    ns = gpu_blas.namespace(np)
    assert ns.float32 is np.float32 and ns.ndarray is np.ndarray and ns.linalg is np.linalg
    assert not gpu_blas.capturing()
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(ns.matmul(a, b), a @ b)
    out = np.empty((2, 4))
    assert ns.matmul(a, b, out=out) is out
    np.testing.assert_array_equal(ns.dot(a[0], a[1]), np.dot(a[0], a[1]))
