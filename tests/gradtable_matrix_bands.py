"""Gradient-check cases for the band forms of tf.linalg.diag / diag_part / set_diag
(graph/ops/matrix_band_diag_ops.py: MatrixDiagV3, MatrixDiagPartV3, MatrixSetDiagV3)."""
from collflow.graph.ops import matrix_band_diag_ops as B
from gradcheck import Case

CASES = [
    Case("MatrixDiagV3", lambda d: B.matrix_diag_v3(d, k=(-1, 1), padding_value=0.5), [(2, 3, 3)]),
    Case("MatrixDiagV3", lambda d: B.matrix_diag_v3(d, k=(0, 2), num_rows=4, align="LEFT_RIGHT"), [(3, 4)],
         id="MatrixDiagV3-rows"),
    Case("MatrixDiagV3", lambda d: B.matrix_diag_v3(d, k=(0, 3), align="LEFT_LEFT"), [(2, 4, 2)],
         id="MatrixDiagV3-beyond-output"),   # diagonals 2 and 3 fall outside the 2 x 2 output
    Case("MatrixDiagPartV3", lambda x: B.matrix_diag_part_v3(x, k=(-2, 1), padding_value=1.5), [(2, 3, 4)]),
    Case("MatrixDiagPartV3", lambda x: B.matrix_diag_part_v3(x, k=-1, align="LEFT_LEFT"), [(4, 3)],
         id="MatrixDiagPartV3-one"),
    Case("MatrixSetDiagV3", lambda x, d: B.matrix_set_diag_v3(x, d, k=(-1, 1), align="RIGHT_RIGHT"),
         [(2, 3, 4), (2, 3, 3)]),
]
