# qgemm -- build rules. `make` builds everything, `make test` runs the tests,
# `make run` runs the main job (the CLI's check + benchmark on a GPU).
#
#   build/libqgemm.a, build/libqgemm.so   the library (kernels embedded)
#   build/qgemm                           the command-line tool
#   build/qgemm_tests                     the test binary (CPU + GPU tests)

CUDA_HOME ?= $(shell dirname $$(dirname $$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)))
CC        ?= cc
BUILD     := build

CFLAGS  += -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -fvisibility=hidden -MMD -MP \
           -D_GNU_SOURCE -Iinclude -Isrc -I$(CUDA_HOME)/include
LDLIBS  := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnvrtc -ldl -lpthread -lm

LIB_SRC     := $(wildcard src/*.c)
KERNELS     := $(sort $(wildcard kernels/*.cuh))
LIB_OBJ     := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/kernels_embedded.o
TOOL_SRC    := $(wildcard tools/*.c)
TEST_SRC    := $(wildcard tests/*.c)

.PHONY: all lib test run clean
all: lib $(BUILD)/qgemm $(BUILD)/qgemm_tests
lib: $(BUILD)/libqgemm.a $(BUILD)/libqgemm.so

# Kernel sources become a C table {name, text} so the library is self-contained.
$(BUILD)/kernels_embedded.c: $(KERNELS) tools/embed.sh | $(BUILD)
	sh tools/embed.sh $(KERNELS) > $@

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/kernels_embedded.o: $(BUILD)/kernels_embedded.c
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libqgemm.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libqgemm.so: $(LIB_OBJ)
	$(CC) -shared -o $@ $^ $(LDLIBS)

$(BUILD)/qgemm: $(TOOL_SRC:%.c=$(BUILD)/%.o) $(BUILD)/libqgemm.a
	$(CC) -o $@ $^ $(LDLIBS)

$(BUILD)/qgemm_tests: $(TEST_SRC:%.c=$(BUILD)/%.o) $(BUILD)/libqgemm.a
	$(CC) -o $@ $^ $(LDLIBS)

$(BUILD):
	mkdir -p $@

# The C tests, the command-line tool's argument checks, then the Python
# package's (tests/python/run.sh builds it in place and runs pytest);
# `make pytest` runs only the Python tests.
test: all
	$(BUILD)/qgemm_tests
	bash tests/cli.sh $(BUILD)
	bash tests/python/run.sh $(BUILD)

.PHONY: pytest
pytest:
	bash tests/python/run.sh $(BUILD)

run: all
	@$(BUILD)/qgemm check && $(BUILD)/qgemm bench

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
