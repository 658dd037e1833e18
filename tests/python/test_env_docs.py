"""docs/DESIGN.md §9 (the environment variables' table) against src/env.c's table
(qg__env_knobs: the only variables the library reads, with their defaults).

Session v flipped four defaults (MQA deep4, paged split4r112x, BF16 split-K auto, FP8
heuristic notall+nomcb) in code, env.c and DESIGN by hand; this test keeps the two
tables from drifting apart: every knob of env.c has a row in §9, every §9 row the
library reads is in env.c, and each knob's default (its first word in env.c) stands in
the row's default column. CPU only: it reads the two files, nothing runs.
"""
from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]

# §9 rows that are not the library's (the Python package, setup.py, the driver):
# env.c's table lists what the C library reads, plus QGEMM_EINSUM_VARIANT.
NOT_THE_LIBRARY = {"QGEMM_BMK_SPLITS", "QGEMM_FP8_EINSUM", "QGEMM_ROOT", "QGEMM_WERROR",
                    "CUDA_CACHE_PATH"}


def env_c_knobs() -> dict:
    src = (ROOT / "src" / "env.c").read_text()
    start = src.index("const qg_env_knob qg__env_knobs[]")
    table = src[start:src.index("\n};", start)]
    strings = r'(?:\s*"(?:[^"\\]|\\.)*")+'
    entries = re.findall(r'\{\s*"([A-Z_0-9]+)",(' + strings + r')\s*,(' + strings + r')\s*\}', table)
    knobs = {name: "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', fb)) for name, _, fb in entries}
    # every entry parsed (a malformed one would otherwise drop out silently)
    assert len(knobs) == table.count('{"'), (len(knobs), table.count('{"'))
    return knobs


def design_rows() -> dict:
    doc = (ROOT / "docs" / "DESIGN.md").read_text()
    sec = doc[doc.index("## §9"):doc.index("## §10")]
    rows = {}
    for line in sec.splitlines():
        m = re.match(r"\| `([A-Z_0-9]+)` \|", line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)}: two rows in DESIGN §9"
            rows[m.group(1)] = [c.strip() for c in line.strip().strip("|").split(" | ")]
    return rows


def test_design_table_names_every_knob_once():
    knobs, rows = env_c_knobs(), design_rows()
    assert len(knobs) >= 20 and len(rows) >= 20, (len(knobs), len(rows))
    assert sorted(set(knobs) - set(rows)) == [], "knobs of src/env.c without a row in DESIGN §9"
    assert sorted(set(rows) - set(knobs) - NOT_THE_LIBRARY) == [], \
        "DESIGN §9 rows the library reads but src/env.c's table lacks"


def test_design_defaults_match_env_c():
    knobs, rows = env_c_knobs(), design_rows()
    bad = []
    for name, fallback in knobs.items():
        # the default's first word ("acc4+fit (split mode: fit)" -> acc4+fit; "(unset)" -> unset)
        word = fallback.split(" ")[0].strip("()")
        if word.startswith("$"):  # a path: QGEMM_CACHE_DIR's `$XDG_CACHE_HOME/qgemm`
            word = word.rstrip(",")
        default = rows[name][-1]
        if name == "HOME":  # "(the system's)": §9 says what its absence does
            continue
        if word not in default:
            bad.append(f"{name}: src/env.c {fallback!r}, DESIGN §9 {default[:80]!r}")
    assert bad == [], "\n".join(bad)


def test_session_v_defaults():
    """The defaults session v flipped on 2026-11-29 that stand, as env.c's table and DESIGN §9
    state them (its paged split4r112x: test_session_w_defaults)."""
    knobs, rows = env_c_knobs(), design_rows()
    for name, value in (("QGEMM_MQA_VARIANT", "deep4"),
                        ("QGEMM_BF16_SPLITK", "auto"), ("QGEMM_FP8_HEUR", "notall+nomcb")):
        assert knobs[name] == value, (name, knobs[name])
        assert rows[name][-1].split(" (")[0].strip("`") in (value, "unset"), (name, rows[name][-1])
        assert f"`{value}`" in rows[name][-1], (name, rows[name][-1])


def test_session_w_and_y_defaults():
    """The defaults flipped in sessions w and y (2026-11-29): the paged kernel split4r112u, the
    HC planner's acc4+fit+cw4, the casts' all+lean+ring+lut (y), the k-grouped BF16 GEMM's m+d2,
    the batch sum's v5:s4 and the FP8-output GEMM's new+epi+last+nk+swm64 (y), as env.c's table
    and DESIGN §9 state them."""
    knobs, rows = env_c_knobs(), design_rows()
    for name, value in (("QGEMM_PMQA_VARIANT", "split4r112u"), ("QGEMM_HC_VARIANT", "acc4+fit+cw4"),
                        ("QGEMM_CAST_VARIANT", "all+lean+ring+lut"), ("QGEMM_BF16_KGROUPED", "m+d2"),
                        ("QGEMM_BMK_VARIANT", "v5:s4"), ("QGEMM_FP8OUT_VARIANT", "new+epi+last+nk+swm64")):
        assert knobs[name].split(" (")[0] == value, (name, knobs[name])
        assert f"`{value}`" in rows[name][-1], (name, rows[name][-1])


def test_env_c_header_comment_matches_its_table():
    """src/env.c's header comment (one line a knob: name, default, meaning) names every
    knob of the table, with the table's default on the knob's first line."""
    src = (ROOT / "src" / "env.c").read_text()
    header = src[:src.index("*/")]
    lines = {}
    for line in header.splitlines():
        m = re.match(r" \*   ([A-Z][A-Z_0-9]+) +(\S.*)$", line)
        if m and m.group(1) not in lines:
            lines[m.group(1)] = m.group(2)
    bad = []
    for name, fallback in env_c_knobs().items():
        if name not in lines:
            bad.append(f"{name}: no line in src/env.c's header comment")
            continue
        # (QGEMM_FP8_GROUPED_MCB's default depends on the device, HOME's is the system's)
        if name in ("QGEMM_FP8_GROUPED_MCB", "HOME"):
            continue
        word = fallback.split(" ")[0].strip("()").rstrip(",")
        if word not in lines[name]:
            bad.append(f"{name}: table {fallback!r}, header {lines[name][:60]!r}")
    assert bad == [], "\n".join(bad)


def test_every_variable_read_has_a_row():
    """Every QGEMM_* name the library, the extension, the package or setup.py spells as a
    string literal (what getenv / os.environ are given) has a row in DESIGN §9 (the
    Python-only QGEMM_FP8_EINSUM had none before 2026-11-29's review)."""
    rows = design_rows()
    files = list((ROOT / "src").glob("*.[ch]")) + list((ROOT / "python" / "csrc").glob("*.[ch]"))
    files += list((ROOT / "python" / "qgemm").glob("*.py")) + [ROOT / "python" / "setup.py"]
    names = set()
    for f in files:
        names |= set(re.findall(r'"(QGEMM_[A-Z0-9_]+)"', f.read_text()))
    assert len(names) >= 20, sorted(names)
    assert sorted(names - set(rows)) == [], "variables read without a row in DESIGN §9"
