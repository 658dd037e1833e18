"""Build the qgemm Python package.

The extension module qgemm._C is self-contained: it compiles the whole C
library (src/*.c of the repository) and its embedded kernel sources
(kernels/*.cuh, turned into C by tools/embed.sh) into itself, and links no CUDA
library: the CUDA driver and NVRTC are loaded at run time (src/driver.c,
src/nvrtc.c), so `import qgemm` works on machines without a GPU or a CUDA
toolkit, and the module has no RUNPATH. NVRTC is looked for at the first
compile in $QGEMM_NVRTC_DIR (e.g. the pip package nvidia-cuda-nvrtc's lib/),
$CUDA_HOME/lib64 (default /usr/local/cuda), then through the system loader;
the package depends on nvidia-cuda-nvrtc and, at import, sets QGEMM_NVRTC_DIR
to it when the variable is unset (qgemm/_nvrtc_path.py).

Where things are found:
  QGEMM_ROOT  the qgemm source tree (include/qgemm.h, src/, kernels/, tools/);
              default: qgemm_root/ next to this file when it exists (an
              unpacked sdist: `setup.py sdist` copies those parts of the tree
              there, see Sdist), else the parent of this file's folder
              (python/..), which is right for `pip install ./python` with
              pip >= 21.3 (in-tree builds). Set it when the package folder was
              copied elsewhere.
  CUDA_HOME   the CUDA headers at build time (cuda.h, nvrtc.h: types only);
              default: CUDA_PATH, then the toolkit of `nvcc` on PATH, then
              /usr/local/cuda.
  QGEMM_WERROR=1 compiles with -Werror (what CI does).

The command-line tool: the wheel carries the C CLI (tools/*.c over the
testkit, testkit/*.c, and the same library sources) as qgemm/bin/qgemm, built
here next to the extension with the same flags (no RUNPATH, no CUDA library:
it dlopens the driver, NVRTC and cuBLASLt as the extension does); the console
command `qgemm` (qgemm/_cli.py) runs it with QGEMM_NVRTC_DIR pointing at the
pip NVRTC, so `qgemm --version`, `qgemm compile ...` work from a pip install.

One wheel per Python (cp39 ... cp313), not one abi3 wheel: the extension
(csrc/) uses API outside the limited API of Python 3.9 -- PyObject_VectorcallMethod
(limited from 3.12), PyObject_CallOneArg, the PyTuple_GET_ITEM / GET_SIZE and
PySequence_Fast_GET_* macros, Py_TYPE(x)->tp_name (PyTypeObject is opaque
there) -- on the per-call path whose cost is measured (the host overhead), so
it stays on the full API; tests/package.sh builds and installs a wheel for
every Python the machine has.

Distributions (tests/package.sh builds and checks both):
  python -m build python  the sdist, which builds from the archive alone (it
              carries the tree's parts under qgemm_root/; building still needs
              gcc, the Python headers and the CUDA headers), then a wheel
              built from it, tagged linux_<arch>;
  auditwheel repair       that wheel, retagged manylinux_2_<glibc minor> (the
              build machine's glibc decides: manylinux_2_34 from Debian 12;
              build in an older manylinux image for a wider tag).
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
os.chdir(HERE)  # sources are named relative to this folder, wherever setup.py is run from


# What the extension's build takes from the qgemm source tree, and so what an
# sdist carries under qgemm_root/ (relative to the tree's root; globs allowed).
ROOT_FILES = ("include/qgemm.h", "src/*.c", "src/*.h", "kernels/*.cuh", "tools/embed.sh",
              "tools/*.c", "tools/*.h", "testkit/*.c", "testkit/*.h", "testkit/kernels/*.cuh",
              "LICENSE")
SDIST_ROOT = "qgemm_root"


def find_root() -> Path:
    env = os.environ.get("QGEMM_ROOT")
    if env:
        root = Path(env).expanduser().resolve()
    elif (HERE / SDIST_ROOT / "include" / "qgemm.h").is_file():
        root = HERE / SDIST_ROOT  # an unpacked sdist
    else:
        root = HERE.parent  # a checkout
    for need in ("include/qgemm.h", "src", "kernels", "tools/embed.sh", "tools/qgemm.c", "testkit"):
        if not (root / need).exists():
            raise SystemExit(
                f"qgemm: {root / need} not found: the qgemm source tree is expected at {root}. "
                "Build from a checkout (pip install ./python) or set QGEMM_ROOT=/path/to/qgemm."
            )
    return root


def find_cuda() -> Path:
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parent.parent))
    candidates.append("/usr/local/cuda")
    for c in candidates:
        if c and all((Path(c) / "include" / h).is_file() for h in ("cuda.h", "nvrtc.h", "cublasLt.h")):
            return Path(c)
    raise SystemExit(
        "qgemm: the CUDA headers were not found (looked for include/cuda.h, nvrtc.h and cublasLt.h "
        "(the CLI's cuBLASLt comparison, loaded at run time) under "
        f"{[c for c in candidates if c]}); set CUDA_HOME=/path/to/cuda"
    )


def library_version(root: Path) -> str:
    text = (root / "include" / "qgemm.h").read_text()
    match = re.search(r'#define\s+QG_VERSION_STRING\s+"([^"]+)"', text)
    if not match:
        raise SystemExit("qgemm: QG_VERSION_STRING not found in include/qgemm.h")
    return match.group(1)


ROOT = find_root()
CUDA = find_cuda()


class BuildExt(build_ext):
    """Adds the library's sources (outside this folder, so they cannot be named
    in setup(): setuptools rejects absolute or '..' paths there), the generated
    kernels_embedded.c and a linker version script, then builds."""

    def build_extension(self, ext):
        tmp = Path(self.build_temp).resolve()
        tmp.mkdir(parents=True, exist_ok=True)

        kernels = sorted(str(p) for p in (ROOT / "kernels").glob("*.cuh"))
        if not kernels:
            raise SystemExit(f"qgemm: no kernel sources in {ROOT / 'kernels'}")
        embedded = tmp / "kernels_embedded.c"
        text = subprocess.run(
            ["sh", str(ROOT / "tools" / "embed.sh"), *kernels],
            check=True, capture_output=True, text=True,
        ).stdout
        if not embedded.exists() or embedded.read_text() != text:
            embedded.write_text(text)  # rewrite only on change: keeps rebuilds incremental

        library = sorted(str(p) for p in (ROOT / "src").glob("*.c"))
        if not library:
            raise SystemExit(f"qgemm: no library sources in {ROOT / 'src'}")
        ext.sources = [s for s in ext.sources if s.startswith("csrc")] + library + [str(embedded)]
        ext.depends = (
            sorted(str(p) for p in (HERE / "csrc").glob("*.h"))
            + sorted(str(p) for p in (ROOT / "src").glob("*.h"))
            + [str(ROOT / "include" / "qgemm.h")]
            + kernels  # a kernel edit must rebuild the extension
        )

        # Export only the module's init function: the library's qg_* symbols
        # stay bound inside the extension even if another libqgemm.so is loaded
        # into the process with RTLD_GLOBAL.
        script = tmp / "qgemm_ext.map"
        script.write_text("{ global: PyInit__C; local: *; };\n")
        ext.extra_link_args = [a for a in ext.extra_link_args if "--version-script" not in a]
        ext.extra_link_args.append(f"-Wl,--version-script={script}")

        # No RUNPATH: some Pythons (pyenv's, a self-built one) put
        # -Wl,-rpath,<their prefix>/lib in LDSHARED, which would give the
        # module an absolute RUNPATH into this machine; it links no library
        # that needs one (tests/package.sh checks).
        self.compiler.linker_so = [
            a for a in self.compiler.linker_so if not a.startswith(("-Wl,-rpath", "-Wl,-R"))
        ]
        super().build_extension(ext)
        self.build_cli(ext, tmp, library + [str(embedded)])

    def copy_extensions_to_source(self):
        """--inplace: the CLI too, to qgemm/bin/qgemm in the source folder."""
        super().copy_extensions_to_source()
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            inplace_file, regular_file = self._get_inplace_equivalent(build_py, ext)
            built = Path(regular_file).resolve().parent / "bin" / "qgemm"
            if built.is_file():
                dest = Path(inplace_file).resolve().parent / "bin" / "qgemm"
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(built, dest)

    def build_cli(self, ext, tmp: Path, library: list) -> None:
        """The C command-line tool, qgemm/bin/qgemm next to the extension
        (in place too), as the Makefile builds build/qgemm."""
        tk_kernels = sorted(str(p) for p in (ROOT / "testkit" / "kernels").glob("*.cuh"))
        tk_embedded = tmp / "cli" / "testkit_kernels_embedded.c"
        tk_embedded.parent.mkdir(parents=True, exist_ok=True)
        text = subprocess.run(
            ["sh", str(ROOT / "tools" / "embed.sh"), "-t", "qgtk__kernel_files", "kernels.h",
             *tk_kernels], check=True, capture_output=True, text=True,
        ).stdout
        if not tk_embedded.exists() or tk_embedded.read_text() != text:
            tk_embedded.write_text(text)
        sources = (sorted(str(p) for p in (ROOT / "tools").glob("*.c"))
                   + sorted(str(p) for p in (ROOT / "testkit").glob("*.c"))
                   + [str(tk_embedded)] + library)
        out_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent / "bin"
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / "qgemm"
        newest = max(Path(p).stat().st_mtime for p in sources + ext.depends
                     + sorted(str(p) for p in (ROOT / "tools").glob("*.h"))
                     + sorted(str(p) for p in (ROOT / "testkit").glob("*.h")))
        if not self.force and target.exists() and target.stat().st_mtime >= newest:
            return
        objects = self.compiler.compile(
            sources, output_dir=str(tmp / "cli"),
            include_dirs=[str(ROOT / "include"), str(ROOT / "src"), str(ROOT / "testkit"),
                          str(ROOT / "tools"), str(CUDA / "include")],
            extra_postargs=cflags, depends=ext.depends)
        # (the compiler's plain link: linker_exe has no -rpath, unlike LDSHARED)
        self.compiler.link_executable(objects, "qgemm", output_dir=str(out_dir),
                                      libraries=["dl", "pthread", "m"])
        target.chmod(0o755)


class Sdist(sdist):
    """An sdist that builds on its own: the parts of the qgemm tree the
    extension compiles (ROOT_FILES: the library's sources, its header, the
    kernels, tools/embed.sh) are outside this folder, where MANIFEST.in cannot
    reach, so they are copied into the archive under qgemm_root/ (find_root
    looks there first), and the licence to its top."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        dest = Path(base_dir) / SDIST_ROOT
        for pattern in ROOT_FILES:
            matches = sorted(p for p in ROOT.glob(pattern) if p.is_file())
            if not matches:
                raise SystemExit(f"qgemm sdist: nothing matches {ROOT / pattern}")
            for src in matches:
                out = dest / src.relative_to(ROOT)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, out)
        # (python/LICENSE is a link to ../LICENSE, which the release tree may
        # hold as that link: replace it by the file)
        top = Path(base_dir) / "LICENSE"
        if top.is_symlink() or top.exists():
            top.unlink()
        shutil.copy2(ROOT / "LICENSE", top)


# The Makefile's flags (-O2 after Python's own -O3 wins): the library is
# developed warning-free at exactly these.
cflags = [
    "-std=c11", "-O2", "-D_GNU_SOURCE", "-fvisibility=hidden",
    "-Wall", "-Wextra",
]
if os.environ.get("QGEMM_WERROR") == "1":
    cflags.append("-Werror")

ext = Extension(
    "qgemm._C",
    # relative to this folder; BuildExt adds the library's own sources
    sources=sorted(p.relative_to(HERE).as_posix() for p in (HERE / "csrc").glob("*.c")),
    include_dirs=[str(ROOT / "include"), str(ROOT / "src"), str(HERE / "csrc"), str(CUDA / "include")],
    libraries=["dl", "pthread", "m"],  # no CUDA library: driver and NVRTC are dlopen'ed
    extra_compile_args=cflags,
)

setup(
    version=library_version(ROOT),
    ext_modules=[ext],
    cmdclass={"build_ext": BuildExt, "sdist": Sdist},
)
