"""qgemm's module-level API on the CPU: import, version, helpers, configuration,
offline compilation, and errors without a GPU."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import math
import re
import threading
from pathlib import Path

import pytest

import qgemm
from fake_dlpack import dense_operands

NO_GPU_MESSAGE = re.compile(r"libcuda|driver|device", re.IGNORECASE)


def test_version_is_the_linked_library_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", qgemm.__version__)
    header = Path(__file__).resolve().parents[2] / "include" / "qgemm.h"
    defined = re.search(r'QG_VERSION_STRING\s+"([^"]+)"', header.read_text()).group(1)
    assert qgemm.__version__ == defined


def test_installed_metadata_has_the_library_version():
    # an in-place build (PYTHONPATH=python) has no distribution metadata, and an
    # installed qgemm that PYTHONPATH shadows describes other files: only the
    # metadata of the package actually imported is checked
    try:
        dist = importlib.metadata.distribution("qgemm")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("qgemm is not installed (in-place build): no distribution metadata to check")
    imported = Path(qgemm.__file__).resolve()
    if Path(dist.locate_file("qgemm/__init__.py")).resolve() != imported:
        pytest.skip(f"the installed qgemm distribution is not the imported package ({imported})")
    assert dist.version == qgemm.__version__


def test_public_names_exist_and_are_documented():
    for name in qgemm.__all__:
        obj = getattr(qgemm, name)
        if callable(obj):
            assert obj.__doc__, f"{name} has no docstring"


def test_package_ships_type_information():
    package = Path(qgemm.__file__).parent
    assert (package / "py.typed").is_file()
    assert (package / "_C.pyi").is_file()


def test_ceil_div():
    for x in range(0, 600, 7):
        for y in (1, 3, 128):
            assert qgemm.ceil_div(x, y) == math.ceil(x / y)


@pytest.mark.parametrize("element_size", [1, 2, 4, 8, 16])
def test_tma_aligned_size(element_size):
    for x in range(0, 300):
        got = qgemm.get_tma_aligned_size(x, element_size)
        assert got >= x and (got * element_size) % 16 == 0
        assert got - x < 16 // element_size  # the smallest such size


@pytest.mark.parametrize("element_size", [0, 3, 32, -4])
def test_tma_aligned_size_rejects_odd_elements(element_size):
    with pytest.raises(ValueError, match="element_size"):
        qgemm.get_tma_aligned_size(10, element_size)


def test_m_alignment_is_the_m_block_size():
    assert qgemm.get_m_alignment_for_contiguous_layout() == 128  # docs/DESIGN.md §1: 128-row blocks


def test_torch_helpers_say_they_need_torch():
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed: test_torch_helpers.py covers the helpers")
    with pytest.raises(ImportError, match="PyTorch"):
        qgemm.per_token_cast_to_fp8([[1.0]])


# ---- configurations and compilation (offline: no GPU needed) -----------------


@pytest.mark.parametrize("kind,m,groups,expected_m", [
    ("dense", 1, 1, 0), ("dense", 4096, 1, 0), ("contiguous", 8192, 8, 0), ("masked", 256, 8, 64)])
def test_offline_config_is_legal(kind, m, groups, expected_m):
    cfg = qgemm.select_config(m, 2112, 7168, kind=kind, num_groups=groups, expected_m=expected_m,
                              offline=True)
    assert cfg["block_m"] in (64, 128, 256)
    assert cfg["block_n"] % 8 == 0 and 8 <= cfg["block_n"] <= 256
    assert 1 <= cfg["num_stages"] <= 32
    assert cfg["multicast"] in (0, 1, 2)
    assert cfg["split_k"] in (1, 2) and (cfg["split_k"] == 1 or kind == "dense")
    assert 0 < cfg["smem_bytes"] <= 232448  # the H100 opt-in limit (offline device)
    assert cfg["num_sms"] == 132


@pytest.mark.parametrize("kind,m,n,k,groups,expected_m", [
    ("psum", 4096, 4096, 7168, 4, 1024), ("wgrad", 7168, 4096, 4096, 1, 0),
    ("k_grouped", 4096, 7168, 8192, 4, 0)])
def test_offline_config_of_the_training_kinds(kind, m, n, k, groups, expected_m):
    # every kind the package calls can be configured and compiled ahead (CUDA graphs)
    for accumulate in (False, True):
        if kind == "psum" and accumulate:
            continue
        cfg = qgemm.select_config(m, n, k, kind=kind, num_groups=groups, expected_m=expected_m,
                                  offline=True, accumulate=accumulate)
        assert cfg["block_m"] in (64, 128, 256) and 1 <= cfg["num_stages"] <= 32
    with pytest.raises(ValueError, match="kind must be one of"):
        qgemm.select_config(m, n, k, kind="wgrad_", offline=True)


def test_forced_config_is_completed_or_rejected():
    cfg = qgemm.select_config(256, 2112, 7168, offline=True, config={"block_m": 64, "block_n": 128})
    assert (cfg["block_m"], cfg["block_n"]) == (64, 128) and cfg["num_stages"] >= 1
    with pytest.raises(ValueError, match="block_m"):
        qgemm.select_config(256, 2112, 7168, offline=True, config={"block_m": 100, "block_n": 128})
    # select_config's output round-trips as a forced config
    assert qgemm.select_config(256, 2112, 7168, offline=True, config=cfg) == cfg


def test_split_k_is_chosen_forced_and_checked():
    # the narrow-N rows at small M split K over a 2-CTA cluster where DRAM can feed the split
    # grid (tests/test_config.c); offline, the device is taken as an H100, whose DRAM is the
    # limit at N 2112 unsplit already
    cfg = qgemm.select_config(128, 576, 7168, offline=True)
    assert (cfg["block_m"], cfg["block_n"], cfg["split_k"], cfg["multicast"]) == (64, 32, 2, 0)
    assert qgemm.select_config(64, 2112, 7168, offline=True)["split_k"] == 1
    assert qgemm.select_config(4096, 2112, 7168, offline=True)["split_k"] == 1
    forced = qgemm.select_config(128, 4096, 7168, offline=True,
                                 config={"block_m": 128, "block_n": 64, "split_k": 2})
    assert forced["split_k"] == 2 and forced["block_n"] == 64
    with pytest.raises(ValueError, match="split_k must be 0, 1 or 2"):
        qgemm.select_config(64, 2112, 7168, offline=True, config={"block_m": 64, "block_n": 32,
                                                                   "split_k": 4})
    with pytest.raises(ValueError, match="split_k 2 is for dense"):
        qgemm.select_config(64, 2112, 7168, kind="masked", num_groups=2, offline=True,
                            config={"block_m": 64, "block_n": 32, "split_k": 2})
    with pytest.raises(ValueError, match="multicast none"):
        qgemm.select_config(64, 2112, 7168, offline=True,
                            config={"block_m": 64, "block_n": 32, "split_k": 2, "multicast": "a"})


def test_fp8out_config_splits_scale_groups_at_small_m():
    # (offline: an H100) whole 128-column groups or 64 / 32 columns of one split over a cluster
    for m, n, k in [(64, 2112, 7168), (128, 4096, 7168), (4096, 4096, 7168), (256, 576, 7168)]:
        cfg = qgemm.select_config_fp8out(m, n, k, offline=True)
        bn = cfg["block_n"]
        assert bn % 128 == 0 or bn in (32, 64), cfg
        if bn < 128:
            assert cfg["cluster"] == 128 // bn and cfg["multicast"] == 0 and cfg["split_k"] == 1
            assert cfg["swizzle_group"] % cfg["cluster"] == 0
    assert qgemm.select_config_fp8out(64, 2112, 7168, offline=True)["block_n"] < 128
    masked = qgemm.select_config_fp8out(256, 4096, 7168, kind="masked", num_groups=4,
                                        use_ue8m0=True, offline=True)
    assert masked["block_n"] % 128 == 0 or masked["block_n"] in (32, 64)
    with pytest.raises(ValueError):
        qgemm.select_config_fp8out(4096, 4096, 7168, kind="wgrad", offline=True)
    # its output is accepted as a forced config (cluster is derived, ignored on input)
    from qgemm import _dispatch
    cfg = qgemm.select_config_fp8out(64, 2112, 7168, offline=True)
    assert _dispatch.config_tuple(cfg)[:2] == (cfg["block_m"], cfg["block_n"])


def test_invalid_problem_is_a_value_error():
    with pytest.raises(ValueError, match=r"\bm\b"):
        qgemm.select_config(0, 2112, 7168, offline=True)
    with pytest.raises(ValueError, match="kind"):
        qgemm.select_config(128, 2112, 7168, kind="sparse", offline=True)


def test_offline_compile_reports_a_kernel_without_spills():
    info = qgemm.compile(128, 2112, 7168, offline=True)
    assert info["registers"] > 0
    assert info["spill_store_bytes"] == info["spill_load_bytes"] == info["stack_frame_bytes"] == 0
    assert info["ptx_has_wgmma"] and info["ptx_has_tma_load"]
    assert re.fullmatch(r"[0-9a-f]{64}", info["key"])
    again = qgemm.compile(128, 2112, 7168, offline=True)
    assert again["cache_hit"] in (1, 2) and again["key"] == info["key"]


# ---- num_sms --------------------------------------------------------------------------


def test_num_sms_setting(reset_num_sms):
    with pytest.raises(ValueError, match="num_sms"):
        qgemm.set_num_sms(-1)
    qgemm.set_num_sms(66)
    assert qgemm.get_num_sms() == 66
    assert qgemm.select_config(4096, 7168, 2048, offline=True)["num_sms"] == 66
    qgemm.set_num_sms(0)
    assert qgemm.select_config(4096, 7168, 2048, offline=True)["num_sms"] == 132


def test_num_sms_beyond_the_device_is_rejected_and_changes_nothing(reset_num_sms):
    qgemm.select_config(128, 256, 512, offline=True)  # the offline context exists
    qgemm.set_num_sms(100)
    with pytest.raises(ValueError, match="133"):
        qgemm.set_num_sms(133)
    assert qgemm.get_num_sms() == 100


# ---- programmatic dependent launch -----------------------------------------------------


def test_pdl_setting_reaches_every_context(reset_pdl):
    assert qgemm.get_pdl() is False
    qgemm.select_config(128, 256, 512, offline=True)  # the offline context exists
    assert qgemm._C.context_pdl(qgemm._C.OFFLINE) is False
    qgemm.set_pdl(True)
    assert qgemm.get_pdl() is True
    assert qgemm._C.context_pdl(qgemm._C.OFFLINE) is True
    qgemm.set_pdl(0)
    assert qgemm.get_pdl() is False
    assert qgemm._C.context_pdl(qgemm._C.OFFLINE) is False


@pytest.mark.parametrize("bad", [2, -1, "yes", None, 1.0])
def test_pdl_setting_rejects_non_booleans(reset_pdl, bad):
    with pytest.raises(TypeError, match="set_pdl wants True or False"):
        qgemm.set_pdl(bad)
    with pytest.raises(TypeError, match="set_pdl wants True or False"):
        qgemm._C.set_pdl(bad)
    assert qgemm.get_pdl() is False


# ---- without a GPU -----------------------------------------------------------------------


def test_device_functions_report_the_missing_gpu(no_gpu):
    with pytest.raises(RuntimeError, match=NO_GPU_MESSAGE):
        qgemm.get_device_props(0)
    with pytest.raises(RuntimeError, match=NO_GPU_MESSAGE):
        qgemm.get_num_sms()
    with pytest.raises(RuntimeError, match=NO_GPU_MESSAGE):
        qgemm.compile(128, 256, 512)  # not offline: needs the device


def test_device_ordinal_out_of_range():
    with pytest.raises(ValueError, match="ordinal"):
        qgemm.get_device_props(100000)


def test_concurrent_calls_get_their_own_messages(no_gpu):
    # the library keeps its last error per thread, and the context table is
    # shared: many threads failing at once must each see a whole message
    errors, lock = [], threading.Lock()

    def work(i):
        for _ in range(50):
            ops = dense_operands(64 * (i + 1), 256, 512)
            try:
                qgemm.fp8_gemm_nt((ops["a"], ops["sfa"]), (ops["b"], ops["sfb"]), ops["d"])
            except RuntimeError as e:
                with lock:
                    errors.append(str(e))
            try:
                qgemm.select_config(0, 256, 512, offline=True)
            except ValueError as e:
                with lock:
                    errors.append(str(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 8 * 50 * 2
    assert set(errors) == {no_gpu, _select_error()}


def _select_error() -> str:
    try:
        qgemm.select_config(0, 256, 512, offline=True)
    except ValueError as e:
        return str(e)
    raise AssertionError("select_config accepted m = 0")
