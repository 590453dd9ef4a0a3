# knit: one non-recursive GNU make build.  Everything lands in $(BUILD).
#   make            build the library, tools, daemons, modules and tests
#   make test       build and run every test (last line: N passed, N failed)
#   make run        a small job on two emulated nodes
#   make bench      the benchmarks (see bench/)
#   make install PREFIX=/opt/knit
#   DEBUG=1  no optimization, extra checks;   ASAN=1  address + UB sanitizers

BUILD   ?= build
PREFIX  ?= /usr/local
CC      ?= gcc
DEBUG   ?= 0
ASAN    ?= 0
Q       := $(if $(V),,@)

ifeq ($(origin CC),default)
CC := gcc
endif

CPPFLAGS += -Iinclude -Isrc -D_GNU_SOURCE
# Flags asked of pkg-config are looked up when a recipe first uses them, not
# while make reads this file: on a fresh machine the packages that provide
# them are installed by the deps stamp below, which every object waits for.
# $(call once,VAR,command) runs command once and keeps its output in VAR.
once = $(eval $1 := $$(shell $2))$($1)
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror -g -fPIC -pthread -MMD -MP
LDFLAGS  += -pthread
# libfabric is opened with dlopen when a job first needs the network
# (src/net/fabric_dl.c says why); only its headers are needed to build.
FABRIC_CFLAGS = $(call once,FABRIC_CFLAGS,pkg-config --cflags libfabric 2>/dev/null)
CPPFLAGS += $(FABRIC_CFLAGS)
LIBS     := -ldl -lrt
# libpmix too (src/boot/pmix.c): loaded only under a PMIx launcher
PMIX_CFLAGS = $(call once,PMIX_CFLAGS,pkg-config --cflags pmix 2>/dev/null)
CPPFLAGS += $(PMIX_CFLAGS)

ifeq ($(DEBUG),1)
CFLAGS   += -O0 -DKNIT_DEBUG=1
else
CFLAGS   += -O2
endif
ifeq ($(ASAN),1)
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
endif

.DEFAULT_GOAL := all
.SECONDARY:
.PHONY: all deps test run bench install docs clean

# The build depends on Debian packages; scripts/deps.sh installs any missing.
DEPS_STAMP := $(BUILD)/.deps-ok
$(DEPS_STAMP): scripts/deps.sh
	$(Q)bash scripts/deps.sh
	$(Q)mkdir -p $(@D) && touch $@
deps: $(DEPS_STAMP)

# ---------------------------------------------------------------- library
LIB_SRCS := $(filter-out src/mpi/% src/armci/% src/omp/%,$(wildcard src/*/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
# the built-in offload modules, carried inside the library (mk/offload.mk)
LIB_OBJS += $(BUILD)/obj/gen/builtin_mods.o
LIBKNIT_A  := $(BUILD)/lib/libknit.a
LIBKNIT_SO := $(BUILD)/lib/libknit.so

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(LIBKNIT_A): $(LIB_OBJS)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBKNIT_SO): $(LIB_OBJS)
	@mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libknit.so.0 $(LDFLAGS) -o $@ $^ $(LIBS)

ALL_TARGETS := $(LIBKNIT_A) $(LIBKNIT_SO)

# ---------------------------------------------------------------- tools
# tools/NAME.c or tools/NAME/*.c -> $(BUILD)/bin/NAME, linked with libknit.a
TOOL_FILES := $(wildcard tools/*.c)
TOOL_DIRS  := $(patsubst %/,%,$(sort $(dir $(wildcard tools/*/*.c))))
TOOLS      := $(patsubst tools/%.c,$(BUILD)/bin/%,$(TOOL_FILES)) \
              $(patsubst tools/%,$(BUILD)/bin/%,$(TOOL_DIRS))

$(BUILD)/bin/%: $(BUILD)/obj/tools/%.o $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIBKNIT_A) $(LIBS)

# what a tool links beyond libknit: knitrun binds ranks through hwloc
TOOL_LIBS_knitrun := -lhwloc
define tool_dir_rule
$(BUILD)/bin/$(notdir $(1)): $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard $(1)/*.c)) $(LIBKNIT_A)
	@mkdir -p $$(@D)
	$(Q)$(CC) $(LDFLAGS) -o $$@ $$(filter %.o,$$^) $(LIBKNIT_A) $(LIBS) $(TOOL_LIBS_$(notdir $(1)))
endef
$(foreach d,$(TOOL_DIRS),$(eval $(call tool_dir_rule,$(d))))

ALL_TARGETS += $(TOOLS)

# ---------------------------------------------------------------- tests
# tests/unit/test_*.c: one binary per file, with the forking runner.
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))
UNIT_HARNESS := $(BUILD)/obj/tests/unit/harness.o

$(BUILD)/tests/unit/%: $(BUILD)/obj/tests/unit/%.o $(UNIT_HARNESS) $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(UNIT_HARNESS) $(LIBKNIT_A) $(LIBS)

# tests/job/*.c: programs that tests/job/*.sh run through knitrun.
JOB_SRCS := $(wildcard tests/job/*.c)
JOB_BINS := $(patsubst tests/job/%.c,$(BUILD)/tests/job/%,$(JOB_SRCS))

$(BUILD)/tests/job/%: $(BUILD)/obj/tests/job/%.o $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIBKNIT_A) $(LIBS)

ALL_TARGETS += $(UNIT_BINS) $(JOB_BINS)

# More pieces (daemons, modules, mpi, bench) bring their own rules.
-include mk/*.mk

all: $(ALL_TARGETS)

test: all
	$(Q)bash tests/run.sh $(BUILD)

run: all
	$(Q)bash scripts/demo.sh $(BUILD)

docs: $(BUILD)/bin/knit-info
	$(Q)$(BUILD)/bin/knit-info --tunables-md > docs/tunables.md

install: all
	$(Q)bash scripts/install.sh $(BUILD) $(DESTDIR)$(PREFIX)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
