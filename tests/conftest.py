import os
import sys

# tests import their helpers (gradcheck, tables) by module name
sys.path.insert(0, os.path.dirname(__file__))
# verify every kernel's output dtype/shape against the graph while testing
os.environ.setdefault("COLLFLOW_CHECK_OUTPUTS", "1")
