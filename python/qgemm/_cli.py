# SPDX-License-Identifier: MIT
"""The `qgemm` console command of the Python package: the C command-line tool.

The wheel carries the C CLI (tools/*.c, built by setup.py with the library) as
qgemm/bin/qgemm; this entry point replaces the Python process with it, after
`import qgemm` has pointed QGEMM_NVRTC_DIR at the pip NVRTC (_nvrtc_path), so
`qgemm compile` and `qgemm info` find NVRTC as the Python package does.
"""
from __future__ import annotations

import os
import sys

from . import _nvrtc_path


def binary() -> str:
    """The path of the C command-line tool inside the installed package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "qgemm")


def main() -> None:
    """Run the C command-line tool with this process's arguments (does not return)."""
    _nvrtc_path.configure()  # (done by `import qgemm` already; idempotent)
    path = binary()
    if not os.path.isfile(path):
        sys.stderr.write(f"qgemm: the command-line tool is not in this installation ({path}); "
                         "reinstall the qgemm wheel, or build it with `make` from the sources\n")
        sys.exit(2)
    if not os.access(path, os.X_OK):
        try:
            os.chmod(path, 0o755)  # a wheel tool that dropped the mode bits
        except OSError:
            pass
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, ["qgemm", *sys.argv[1:]])


if __name__ == "__main__":
    main()
