"""The float64 reference of the GPU tests (docs/DESIGN.md §7): the exactly
dequantized inputs, and DeepGEMM's difference measure. Shared by
test_gpu.py, test_training.py and test_deepgemm_compat.py; works on any
torch tensors (it imports nothing)."""


def dequant_a(a, sfa):
    """A (or any operand scaled per 1x128: rows x K) times its scales, in float64."""
    k = a.shape[-1]
    return a.float().double() * sfa.double().repeat_interleave(128, dim=-1)[..., :k]


def dequant_b(b, sfb):
    """B [.., N, K] times its 128x128 block scales [.., ceil(N/128), ceil(K/128)], in float64."""
    n, k = b.shape[-2:]
    s = sfb.double().repeat_interleave(128, dim=-2)[..., :n, :].repeat_interleave(128, dim=-1)
    return b.float().double() * s[..., :k]


def calc_diff(x, y):
    """1 - 2<x, y> / (|x|^2 + |y|^2), in float64 (DeepGEMM's measure)."""
    x, y = x.double(), y.double()
    return (1 - 2 * (x * y).sum() / (x * x + y * y).sum()).item()
