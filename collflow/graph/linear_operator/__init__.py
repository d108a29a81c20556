"""tf.linalg.LinearOperator and its structured subclasses, built on collflow's graph ops
(so every method is differentiable through them to the operator's parameters)."""
from .base import LinearOperator
from .full_matrix import LinearOperatorFullMatrix
from .diag import LinearOperatorDiag
from .identity import LinearOperatorIdentity, LinearOperatorScaledIdentity, LinearOperatorZeros
from .lower_triangular import LinearOperatorLowerTriangular
from .composition import LinearOperatorComposition
from .block_diag import LinearOperatorBlockDiag
from .kronecker import LinearOperatorKronecker
from .low_rank_update import LinearOperatorLowRankUpdate
from .adjoint_inversion import LinearOperatorAdjoint, LinearOperatorInversion
from .circulant import LinearOperatorCirculant
from .toeplitz import LinearOperatorToeplitz
from .householder import LinearOperatorHouseholder
from .circulant_nd import LinearOperatorCirculant2D, LinearOperatorCirculant3D
from .block_lower_triangular import LinearOperatorBlockLowerTriangular
from .permutation import LinearOperatorPermutation
from .tridiag import LinearOperatorTridiag

__all__ = ["LinearOperator", "LinearOperatorFullMatrix", "LinearOperatorDiag", "LinearOperatorIdentity",
           "LinearOperatorScaledIdentity", "LinearOperatorZeros", "LinearOperatorLowerTriangular",
           "LinearOperatorComposition", "LinearOperatorBlockDiag", "LinearOperatorKronecker",
           "LinearOperatorLowRankUpdate", "LinearOperatorAdjoint", "LinearOperatorInversion",
           "LinearOperatorCirculant", "LinearOperatorToeplitz",
           "LinearOperatorHouseholder", "LinearOperatorCirculant2D", "LinearOperatorCirculant3D",
           "LinearOperatorBlockLowerTriangular", "LinearOperatorPermutation", "LinearOperatorTridiag"]
