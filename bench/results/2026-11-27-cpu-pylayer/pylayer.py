"""The Python layer of qgemm's public GEMMs, the C call stubbed out (CPU, no GPU).

Times qgemm.fp8_gemm_nt / m_grouped_fp8_gemm_nt_contiguous / _masked from the
call to where the torch fast path (_C.gemm_torch) would be called, with that
call replaced by a stub returning None (a taken call): once through the
shortcut (qgemm._FAST_GEMM, the stub) and once the whole way (_FAST_GEMM None,
_C.gemm_torch the stub), timeit, 200000 calls each, on CPU tensors of the
shapes of 128x2112x7168. Run from the repository root with torch importable:
    PYTHONPATH=python python3 bench/results/2026-11-27-cpu-pylayer/pylayer.py
"""
import platform
import timeit

import torch

import qgemm as q
from qgemm import _C

a = torch.empty(128, 7168, dtype=torch.float8_e4m3fn)
sfa = torch.empty(56, 128).t()
b = torch.empty(2112, 7168, dtype=torch.float8_e4m3fn)
sfb = torch.empty(17, 56)
d = torch.empty(128, 2112, dtype=torch.bfloat16)
idx = torch.empty(128, dtype=torch.int32)
q.register_torch_ops()


class StubC:
    def __getattr__(self, name):
        return getattr(_C, name)

    def gemm_torch(self, *args):
        return None


def stub(*args):
    return None


calls = {"dense": (q.fp8_gemm_nt, "f((a, sfa), (b, sfb), d)"),
         "contiguous": (q.m_grouped_fp8_gemm_nt_contiguous, "f((a, sfa), (b, sfb), d, idx)"),
         "masked": (q.m_grouped_fp8_gemm_nt_masked, "f((a, sfa), (b, sfb), d, idx, 64)")}
n = 200000
print(f"python {platform.python_version()}, torch {torch.__version__}, {platform.processor() or platform.machine()}")
q._C = StubC()
for name, (f, stmt) in calls.items():
    env = dict(f=f, a=a, sfa=sfa, b=b, sfb=sfb, d=d, idx=idx)
    q._FAST_GEMM = None
    whole = timeit.timeit(stmt, globals=env, number=n) / n * 1e9
    q._FAST_GEMM = stub
    short = timeit.timeit(stmt, globals=env, number=n) / n * 1e9
    print(f"{name:11s} whole way {whole:6.0f} ns   shortcut {short:6.0f} ns")
