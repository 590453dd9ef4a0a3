# knit's ARMCI (src/armci, include/armci.h, include/armci_msg.h):
# libknitarmci.{a,so} over libknitmpi and libknit, which knitcc links, and
# the ARMCI test programs of tests/armci, built with the build tree's
# knitcc as a user would.  See docs/armci.md.

ARMCI_SRCS := $(wildcard src/armci/*.c)
ARMCI_OBJS := $(ARMCI_SRCS:%.c=$(BUILD)/obj/%.o)
LIBKNITARMCI_A  := $(BUILD)/lib/libknitarmci.a
LIBKNITARMCI_SO := $(BUILD)/lib/libknitarmci.so

$(LIBKNITARMCI_A): $(ARMCI_OBJS)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/lib/libknitarmci.so.0: $(LIBKNITARMCI_SO)
	$(Q)ln -sf libknitarmci.so $@

$(LIBKNITARMCI_SO): $(ARMCI_OBJS) $(BUILD)/lib/libknitmpi.so $(BUILD)/lib/libknitmpi.so.0 $(LIBKNIT_SO) $(BUILD)/lib/libknit.so.0
	@mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libknitarmci.so.0 -Wl,-rpath,'$$ORIGIN' $(LDFLAGS) -o $@ $(ARMCI_OBJS) \
	    -L$(BUILD)/lib -lknitmpi -lknit $(LIBS)

# tests/armci/*.c: ARMCI programs (armci.h and mpi.h only), compiled and
# linked by knitcc, as a user builds them.
ARMCI_TEST_SRCS := $(wildcard tests/armci/*.c)
ARMCI_TEST_OBJS := $(patsubst tests/armci/%.c,$(BUILD)/obj/tests/armci/%.o,$(ARMCI_TEST_SRCS))
ARMCI_TEST_BINS := $(patsubst tests/armci/%.c,$(BUILD)/tests/armci/%,$(ARMCI_TEST_SRCS))
ARMCI_TEST_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -MMD -MP

$(BUILD)/obj/tests/armci/%.o: tests/armci/%.c $(BUILD)/bin/knitcc include/armci.h include/armci_msg.h include/mpi.h
	@mkdir -p $(@D)
	$(Q)$(BUILD)/bin/knitcc $(ARMCI_TEST_CFLAGS) -c -o $@ $<

$(BUILD)/tests/armci/%: $(BUILD)/obj/tests/armci/%.o $(BUILD)/bin/knitcc $(LIBKNITARMCI_SO) \
		$(BUILD)/lib/libknitarmci.so.0 $(BUILD)/lib/libknitmpi.so $(LIBKNIT_SO)
	@mkdir -p $(@D)
	$(Q)$(BUILD)/bin/knitcc -o $@ $< -lm

ALL_TARGETS += $(LIBKNITARMCI_A) $(LIBKNITARMCI_SO) $(BUILD)/lib/libknitarmci.so.0 $(ARMCI_TEST_BINS)
