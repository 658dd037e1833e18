#!/usr/bin/env python3
"""Generate qgemm's API reference, or check that the committed one is current.

    python3 tools/gen_api_doc.py            write docs/API.md and docs/PYTHON_API.md
    python3 tools/gen_api_doc.py --check    write nothing; exit 1 with a diff if either
                                            file differs from what would be written

docs/API.md comes from include/qgemm.h (tools/apidoc_c.py), docs/PYTHON_API.md
from the sources of python/qgemm (tools/apidoc_py.py, which reads them with
`ast` and never imports the package). Both use tools/apidoc_md.py.

Invariants: needs only python3's standard library; the output is a pure
function of those sources (no dates, no environment), so --check is exact.
Gaps in the documentation contract (a public function without its doc comment
or @return, a type without a comment, a Python function without a docstring)
are printed as FILE:LINE: NAME: what is missing, and make the exit status 1 in
both modes: the files are still written, so the gap can be seen in context.
"""
from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # leave no __pycache__ in tools/
import apidoc_c  # noqa: E402  (after the line above)
import apidoc_py  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUTPUTS = ("docs/API.md", "docs/PYTHON_API.md")


def generate() -> tuple:
    header = (ROOT / apidoc_c.HEADER).read_text()
    version = re.search(r'#define\s+QG_VERSION_STRING\s+"([^"]+)"', header).group(1)
    c_doc, c_gaps = apidoc_c.render(header)
    py_doc, py_gaps = apidoc_py.render(ROOT, version)
    return dict(zip(OUTPUTS, (c_doc, py_doc))), c_gaps + py_gaps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 with a diff when the docs are stale")
    args = parser.parse_args()
    docs, gaps = generate()
    status, changed = 0, False
    for path, text in docs.items():
        target = ROOT / path
        current = target.read_text() if target.exists() else ""
        if current == text:
            continue
        changed = True
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(
                current.splitlines(True), text.splitlines(True), f"a/{path}", f"b/{path}"))
            print(f"gen_api_doc: {path} is stale: run `make docs` and commit it", file=sys.stderr)
            status = 1
        else:
            target.write_text(text)
            print(f"gen_api_doc: wrote {path}")
    for gap in gaps:
        print(f"gen_api_doc: {gap}", file=sys.stderr)
    if gaps:
        print(f"gen_api_doc: {len(gaps)} gap(s) in the documented API contract", file=sys.stderr)
        status = 1
    elif not changed:
        print(f"gen_api_doc: {' and '.join(OUTPUTS)} are current")
    return status


if __name__ == "__main__":
    sys.exit(main())
