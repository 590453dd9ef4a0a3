# Offload: the daemons (knit-agent, knit-switch), the modules (one .c ->
# one .so, built against include/knit/module.h alone) and the offload
# benchmark.  See docs/modules.md.

AGENT_SRCS  := $(wildcard agent/*.c)
SWITCH_SRCS := $(wildcard switch/*.c)
KNIT_AGENT  := $(BUILD)/bin/knit-agent
KNIT_SWITCH := $(BUILD)/bin/knit-switch

# The daemons export the calls agent/intercept.c defines, so that module
# code loaded into them (KNIT_MODULE_ISOLATION=inprocess) binds to those.
INTERCEPTED := exit _exit _Exit abort pthread_create sigprocmask pthread_sigmask sigaction signal
DAEMON_LDFLAGS := $(foreach s,$(INTERCEPTED),-Wl,--export-dynamic-symbol=$(s))

$(KNIT_AGENT): $(AGENT_SRCS:%.c=$(BUILD)/obj/%.o) $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $(DAEMON_LDFLAGS) -o $@ $(filter %.o,$^) $(LIBKNIT_A) $(LIBS)

$(KNIT_SWITCH): $(SWITCH_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/agent/intercept.o $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $(DAEMON_LDFLAGS) -o $@ $(filter %.o,$^) $(LIBKNIT_A) $(LIBS)

# knit-modhost: one module instance in a process of its own, under a
# seccomp filter (libseccomp: only this program links it)
KNIT_MODHOST := $(BUILD)/bin/knit-modhost
$(KNIT_MODHOST): $(BUILD)/obj/modhost/modhost.o $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIBKNIT_A) $(LIBS) -lseccomp

# Modules: only include/ on the include path, so that a module cannot
# reach knit's internals; no knit library linked in.
MODULE_SRCS := $(wildcard modules/*.c)
MODULES     := $(patsubst modules/%.c,$(BUILD)/modules/%.so,$(MODULE_SRCS))
MODULE_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -g -O2 -fPIC \
                 $(if $(filter 1,$(ASAN)),-fsanitize=undefined)

$(BUILD)/modules/%.so: modules/%.c include/knit/module.h
	@mkdir -p $(@D)
	$(Q)$(CC) -Iinclude $(MODULE_CFLAGS) -shared -o $@ $<

# modules/builtin/*.c: the modules the library loads itself (the
# offloaded collectives), with knit's reduction kernels (src/coll/op.c)
# compiled in; their bytes go into the library (scripts/embed.sh)
$(BUILD)/modules/builtin/coll.so: modules/builtin/coll.c src/coll/op.c src/coll/coll_mod.h src/coll/coll.h \
                                  include/knit/module.h
	@mkdir -p $(@D)
	$(Q)$(CC) -Iinclude -Isrc -D_GNU_SOURCE $(MODULE_CFLAGS) -fvisibility=hidden -s -shared -o $@ \
	    modules/builtin/coll.c src/coll/op.c

# rma: the agents' side of one-sided transfers (src/rma), with the same
# reduction kernels for accumulates
$(BUILD)/modules/builtin/rma.so: modules/builtin/rma.c src/coll/op.c src/coll/coll_mod.h src/coll/coll.h \
                                 src/rma/rma_mod.h include/knit/module.h include/knit/rma.h
	@mkdir -p $(@D)
	$(Q)$(CC) -Iinclude -Isrc -D_GNU_SOURCE $(MODULE_CFLAGS) -fvisibility=hidden -s -shared -o $@ \
	    modules/builtin/rma.c src/coll/op.c

# dsm: the replicated region's ring and lock manager (src/dsm), with the
# crc32c of the update frames
$(BUILD)/modules/builtin/dsm.so: modules/builtin/dsm.c modules/builtin/dsm_lockmgr.c modules/builtin/dsm.h \
                                 src/util/crc32c.c src/util/crc32c.h src/dsm/dsm_mod.h include/knit/module.h
	@mkdir -p $(@D)
	$(Q)$(CC) -Iinclude -Isrc -D_GNU_SOURCE $(MODULE_CFLAGS) -fvisibility=hidden -s -shared -o $@ \
	    modules/builtin/dsm.c modules/builtin/dsm_lockmgr.c src/util/crc32c.c

BUILTIN_SOS := $(foreach m,coll rma dsm,$(BUILD)/modules/builtin/$(m).so)
$(BUILD)/gen/builtin_mods.c: $(BUILTIN_SOS) scripts/embed.sh
	@mkdir -p $(@D)
	$(Q)bash scripts/embed.sh $@ $(foreach m,coll rma dsm,$(m) $(BUILD)/modules/builtin/$(m).so)

$(BUILD)/obj/gen/builtin_mods.o: $(BUILD)/gen/builtin_mods.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# tests/modules/*.c: modules that misbehave, for the tests only
TEST_MODULES := $(patsubst tests/modules/%.c,$(BUILD)/tests/modules/%.so,$(wildcard tests/modules/*.c))
$(BUILD)/tests/modules/%.so: tests/modules/%.c tests/modules/plain.h include/knit/module.h
	@mkdir -p $(@D)
	$(Q)$(CC) -Iinclude $(MODULE_CFLAGS) -shared -o $@ $< -pthread

# bench/offload_rtt.c: round trips to a module vs the agent's built-in handler
OFFLOAD_BENCH := $(BUILD)/bench/offload_rtt
$(OFFLOAD_BENCH): $(BUILD)/obj/bench/offload_rtt.o $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIBKNIT_A) $(LIBS)

ALL_TARGETS += $(KNIT_AGENT) $(KNIT_SWITCH) $(KNIT_MODHOST) $(MODULES) $(TEST_MODULES) $(OFFLOAD_BENCH)

.PHONY: offload
offload: $(KNIT_AGENT) $(KNIT_SWITCH) $(KNIT_MODHOST) $(MODULES) $(OFFLOAD_BENCH)

# make bench-offload: module call overhead and agent asleep/awake round
# trips, 2 ranks on one node (BENCH_OFFLOAD_ARGS: e.g. --nodes 2 -n 4),
# with modules in processes of their own and on the agent's thread
BENCH_OFFLOAD_ARGS ?= -n 2
.PHONY: bench-offload
bench-offload: $(OFFLOAD_BENCH) $(KNIT_AGENT) $(KNIT_SWITCH) $(KNIT_MODHOST) $(BUILD)/modules/echo.so $(BUILD)/bin/knitrun
	$(Q)for iso in process inprocess; do echo "KNIT_MODULE_ISOLATION=$$iso:"; \
		KNIT_MODULE_ISOLATION=$$iso $(BUILD)/bin/knitrun $(BENCH_OFFLOAD_ARGS) $(OFFLOAD_BENCH) \
		$(BUILD)/modules/echo.so || exit 1; done
