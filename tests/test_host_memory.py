"""The host allocator's policy (collflow/kernels/host_memory.py): after a Session is made,
arrays freed and allocated again in every step reuse their pages instead of faulting new ones."""
import os
import subprocess
import sys
import textwrap

import pytest

_PROBE = textwrap.dedent("""
    import resource, numpy as np, collflow as cf
    from collflow.kernels import host_memory
    cf.Session(graph=cf.Graph()).close()
    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    def step():                             # a step's ten 3 MiB arrays, live together, then freed
        live = [np.ones(3 << 18, np.float32) for _ in range(10)]
        del live
    for _ in range(3):                      # warm: the heap grows once
        step()
    before = faults()
    for _ in range(20):
        step()
    print(host_memory.keep_freed_memory(), faults() - before)
""")


def _run(**env):
    e = dict(os.environ, **env)
    for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES"):
        if k not in env:
            e.pop(k, None)
    out = subprocess.run([sys.executable, "-c", _PROBE], env=e, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    applied, faults = out.stdout.split()
    return applied == "True", int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_freed_arrays_are_reused_instead_of_faulting_new_pages():
    import ctypes
    try:
        ctypes.CDLL(None).gnu_get_libc_version
    except AttributeError:
        pytest.skip("not glibc")
    tuned, tuned_faults = _run()
    plain, plain_faults = _run(COLLFLOW_MALLOC_TUNING="0")
    assert tuned and not plain
    # untuned, most of a step's 30 MiB comes back as fresh pages (7680 4-KiB faults a step);
    # tuned, the pages are reused
    assert plain_faults > 20 * 3000, plain_faults
    assert tuned_faults < 500, tuned_faults


def test_the_users_own_malloc_settings_are_left_alone():
    applied, _ = _run(MALLOC_TRIM_THRESHOLD_="1048576")
    assert not applied
