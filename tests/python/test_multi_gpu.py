"""qgemm with two GPUs in one process, through PyTorch (issue 31).

- Tensors on cuda:1 while cuda:0 is the current device: the GEMM runs on the
  tensors' device, on torch's current stream of that device, and is right
  (the fast path, the DLPack path that ``stream=`` takes, and the custom ops);
  the current device is still cuda:0 afterwards.
- Tensors on two devices: ValueError naming the argument and both devices,
  D untouched (both paths).
- ``set_num_sms`` reaches the contexts of both devices.

Skipped, with the reason, without torch, without a GPU and with one GPU.
Results are compared with the float64 product of the exactly dequantized
inputs (diff < 1e-5, as test_gpu.py); each message carries the seed.
"""
from __future__ import annotations

import random

import pytest

import qgemm
from entry_points import call_kind
from reference import calc_diff, dequant_a, dequant_b

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("skipped: no GPU (no CUDA device visible to torch)", allow_module_level=True)
if torch.cuda.device_count() < 2:
    pytest.skip(f"skipped: one GPU (torch sees {torch.cuda.device_count()} CUDA device; these "
                "tests need two)", allow_module_level=True)
for _i in range(2):
    _props = torch.cuda.get_device_properties(_i)
    if (_props.major, _props.minor) != (9, 0):
        pytest.skip(f"qgemm needs sm_90 (Hopper) on cuda:0 and cuda:1; cuda:{_i} is "
                    f"{_props.name} (sm_{_props.major}{_props.minor})", allow_module_level=True)

HOME, AWAY = 0, 1  # the current device, and the one the tensors live on
BF16_PATTERN = -1234.0  # exactly representable: marks rows a GEMM must not write
EXPECTED_M = 64
KINDS = ["dense", "contiguous", "masked"]


@pytest.fixture(autouse=True)
def home_is_current():
    """Every test starts and ends with cuda:0 current and default streams."""
    torch.cuda.set_device(HOME)
    yield
    for i in (HOME, AWAY):
        torch.cuda.set_stream(torch.cuda.default_stream(i))
    torch.cuda.set_device(HOME)


# ---- inputs and references, on a given device -------------------------------------


def activations(shape, seed, device, rows=None):
    """(a e4m3, sfa M-major) of random rows; those where `rows` is False are zeros."""
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape, device=device, generator=g)
    x = x * torch.exp(torch.randn(*shape[:-1], 1, device=device, generator=g))
    if rows is not None:
        x = x * rows[:, None]
    a, sfa = qgemm.per_token_cast_to_fp8(x.bfloat16())
    return a, qgemm.get_col_major_tma_aligned_tensor(sfa)


def weights(shape, seed, device):
    g = torch.Generator(device=device).manual_seed(seed + 1)
    w = torch.randn(shape, device=device, generator=g) * 0.05
    return qgemm.per_block_cast_to_fp8(w.bfloat16())


class Case:
    """One GEMM of `kind` on `device` with fresh inputs: its arguments (a, sfa,
    b, sfb, d, idx), D poisoned, and check() against the fp64 reference (the
    rows the GEMM must not write must still hold the poison)."""

    def __init__(self, kind, device, seed=None):
        self.kind, self.device = kind, torch.device("cuda", device)
        self.seed = random.randrange(2 ** 31) if seed is None else seed
        dev, seed = self.device, self.seed
        self.idx = None
        if kind == "dense":
            m, n, k = 200, 384, 640
            self.a, self.sfa = activations((m, k), seed, dev)
            self.b, self.sfb = weights((n, k), seed, dev)
            self.d = torch.empty(m, n, dtype=torch.bfloat16, device=dev)
        elif kind == "contiguous":
            # four experts of 128-row segments (expert 2 has two): every
            # segment starts with its expert, the last rows of each are -1
            # padding (zero rows of A: written, with zeros, as DeepGEMM does)
            g, n, k, align = 4, 256, 512, qgemm.get_m_alignment_for_contiguous_layout()
            segments = [0, 1, 2, 2, 3]
            real = [100, 128, 128, 50, 7]
            m = align * len(segments)
            self.idx = torch.full((m,), -1, dtype=torch.int32, device=dev)
            for s, (e, r) in enumerate(zip(segments, real)):
                self.idx[s * align:s * align + r] = e
            self.a, self.sfa = activations((m, k), seed, dev, rows=self.idx >= 0)
            self.b, self.sfb = weights((g, n, k), seed, dev)
            self.segments = segments
            self.d = torch.empty(m, n, dtype=torch.bfloat16, device=dev)
        else:
            g, m_max, n, k = 4, 128, 256, 512
            self.a, self.sfa = activations((g, m_max, k), seed, dev)
            self.b, self.sfb = weights((g, n, k), seed, dev)
            self.idx = torch.tensor([0, m_max, 37, 90], dtype=torch.int32, device=dev)
            self.d = torch.empty(g, m_max, n, dtype=torch.bfloat16, device=dev)
        self.d.fill_(BF16_PATTERN)

    def args(self):
        return self.a, self.sfa, self.b, self.sfb, self.d, self.idx

    def call(self, via="fast", stream=None, args=None):
        """The GEMM through the public function (`via` "fast": no stream, or
        "dlpack": stream= given, torch's current stream of `stream`'s device)
        or through its torch.ops.qgemm op ("op")."""
        a, sfa, b, sfb, d, idx = self.args() if args is None else args
        kw = {} if via in ("fast", "op") else {"stream": stream}
        call_kind(self.kind, a, sfa, b, sfb, d, idx, EXPECTED_M, via=via, **kw)

    def check(self, what, d=None):
        d = self.d if d is None else d
        if self.kind == "dense":
            got, want = d, dequant_a(self.a, self.sfa) @ dequant_b(self.b, self.sfb).T
        elif self.kind == "contiguous":
            da, db = dequant_a(self.a, self.sfa), dequant_b(self.b, self.sfb)
            align = qgemm.get_m_alignment_for_contiguous_layout()
            want = torch.cat([da[s * align:(s + 1) * align] @ db[e].T
                              for s, e in enumerate(self.segments)])
            got = d
        else:
            da, db = dequant_a(self.a, self.sfa), dequant_b(self.b, self.sfb)
            full = da @ db.transpose(1, 2)
            rows = torch.arange(d.shape[1], device=d.device)[None, :] < self.idx[:, None]
            assert (d[~rows] == BF16_PATTERN).all(), (
                f"seed {self.seed} ({self.kind}, {what}): rows past masked_m were written")
            got, want = d[rows], full[rows]
        assert not torch.isnan(got).any(), f"seed {self.seed} ({self.kind}, {what}): NaN"
        diff = calc_diff(got, want)
        assert diff < 1e-5, (f"seed {self.seed} ({self.kind}, {what}): diff {diff:.3g} against "
                             "the dequantized reference")


def bits(t):
    return t.view(torch.int16).clone()


# ---- tensors on the device that is not current ---------------------------------------


@pytest.mark.parametrize("via", ["fast", "dlpack", "op"])
@pytest.mark.parametrize("kind", KINDS)
def test_runs_on_the_tensors_device(kind, via):
    case = Case(kind, AWAY)
    assert torch.cuda.current_device() == HOME
    case.call(via, stream=torch.cuda.current_stream(AWAY))
    assert torch.cuda.current_device() == HOME, "the call changed the current device"
    torch.cuda.synchronize(AWAY)
    case.check(f"on cuda:{AWAY} with cuda:{HOME} current, via {via}")


def _queue_delay(stream):
    """Keep `stream` busy for a while, so work queued after it is clearly late."""
    with torch.cuda.stream(stream):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU clock cycles


def test_runs_on_the_current_stream_of_the_tensors_device():
    """With cuda:0 current, a side stream made current on cuda:1 is the stream
    the GEMM of cuda:1 tensors runs on: a copy into A queued there behind a
    delay is what the GEMM reads."""
    case = Case("dense", AWAY)
    a_late = torch.zeros_like(case.a)
    case.call()  # compile and load outside the delay
    torch.cuda.synchronize(AWAY)
    side = torch.cuda.Stream(device=AWAY)
    _queue_delay(side)
    with torch.cuda.stream(side):
        a_late.copy_(case.a)  # queued behind the delay
    torch.cuda.set_stream(side)  # current on cuda:1 (set_stream makes cuda:1 current too)
    torch.cuda.set_device(HOME)
    assert torch.cuda.current_stream(AWAY) == side and torch.cuda.current_device() == HOME
    case.d.fill_(BF16_PATTERN)  # on cuda:1's current stream: side, behind the copy
    case.call(args=(a_late, case.sfa, case.b, case.sfb, case.d, None))
    assert not side.query(), ("the delay ended before the GEMM was queued: this test cannot "
                              "tell streams apart")
    with torch.cuda.stream(side):
        out = case.d.clone()
    side.synchronize()
    case.check("behind a copy on cuda:1's current stream (the GEMM ran on another stream?)",
               d=out)


# ---- tensors on two devices --------------------------------------------------------------

SLOTS = ["a", "sfa", "b", "sfb", "d", "idx"]


@pytest.mark.parametrize("via", ["fast", "dlpack"])
@pytest.mark.parametrize("slot", SLOTS)
@pytest.mark.parametrize("kind", KINDS)
def test_tensors_on_two_devices_are_refused(kind, slot, via):
    if slot == "idx" and kind == "dense":
        pytest.skip("a dense GEMM has no layout tensor")
    home, away = Case(kind, HOME), Case(kind, AWAY)
    args = list(home.args())
    i = SLOTS.index(slot)
    args[i] = away.args()[i]  # one argument from the other device
    d_home, d_away = bits(home.d), bits(away.d)
    with pytest.raises(ValueError) as info:
        home.call(via, stream=torch.cuda.current_stream(HOME), args=tuple(args))
    message = str(info.value)
    names = {"idx": "m_indices" if kind == "contiguous" else "masked_m"}
    # the first argument that differs from those before it is named: the
    # moved one, or for a moved `a` the next one (sfa, still on cuda:0)
    if slot == "a":
        want = f"sfa is on cuda:{HOME}, the arguments before it are on cuda:{AWAY}"
    else:
        want = f"{names.get(slot, slot)} is on cuda:{AWAY}, the arguments before it are on cuda:{HOME}"
    assert "all tensors must be on one device" in message and want in message, message
    torch.cuda.synchronize(HOME)
    torch.cuda.synchronize(AWAY)
    assert torch.equal(bits(home.d), d_home) and torch.equal(bits(away.d), d_away), (
        f"a D was written by a call refused with {message!r}")
    assert torch.cuda.current_device() == HOME


@pytest.mark.parametrize("as_handle", [False, True])
def test_stream_of_the_other_device_is_refused(as_handle):
    """A torch stream of the other device: the package says so before any
    export; as a bare handle (its device unknown to the package, so torch
    synchronizes it with cuda:1 while exporting): the library refuses it (a
    stream of another CUDA context). Not the default stream: its handle, 0,
    means the legacy stream of whichever device the GEMM runs on."""
    case = Case("dense", AWAY)
    before = bits(case.d)
    stream = torch.cuda.Stream(device=HOME)
    want = ("stream belongs to another CUDA context" if as_handle
            else f"stream is a stream of cuda:{HOME}, the tensors are on cuda:{AWAY}")
    with pytest.raises(ValueError, match=want):
        case.call("dlpack", stream=stream.cuda_stream if as_handle else stream)
    torch.cuda.synchronize(AWAY)
    assert torch.equal(bits(case.d), before), "D was written by a refused call"


# ---- both devices at once ----------------------------------------------------------------


def test_both_devices_in_turn_many_times():
    """Calls alternating between the devices, each on its own tensors, with
    either device current: every result right."""
    cases = [Case(kind, dev) for dev in (HOME, AWAY) for kind in KINDS]
    for round_ in range(50):
        torch.cuda.set_device(round_ % 2)
        for case in cases:
            case.call("fast")
    for dev in (HOME, AWAY):
        torch.cuda.synchronize(dev)
    for case in cases:
        case.check(f"cuda:{case.device.index} after 50 rounds over both devices")


def test_num_sms_reaches_both_devices(reset_num_sms):
    sms = [torch.cuda.get_device_properties(i).multi_processor_count for i in (HOME, AWAY)]
    half = min(sms) // 2
    qgemm.set_num_sms(half)
    for dev in (HOME, AWAY):
        assert qgemm.select_config(4096, 7168, 2048, device=dev)["num_sms"] <= half
        case = Case("dense", dev)
        case.call()
        torch.cuda.synchronize(dev)
        case.check(f"cuda:{dev}, num_sms {half}")
    qgemm.set_num_sms(0)
    assert qgemm.select_config(4096, 7168, 2048, device=AWAY)["num_sms"] > half
