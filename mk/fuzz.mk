# Fuzzing (docs/reliability.md, "Fuzzing"): one libFuzzer target per
# decoder of outside bytes, tests/fuzz/fuzz_<name>.c, with its seed corpus
# in tests/fuzz/corpus/<name>/.
#   make fuzz                      every target for FUZZ_TIME seconds (60)
#   make fuzz FUZZ_TIME=600        ten minutes each
#   make fuzz FUZZ_TARGETS=boot    some of them;  FUZZ_JOBS=2: two at a time
#   make fuzz-seeds                write the seed corpus again
# clang and libFuzzer are installed on first use (scripts/deps.sh fuzz);
# make and make test never need them: tests/unit/test_fuzz replays the
# corpus and tests/fuzz/regress/<name>/ through the same targets, built
# with the normal compiler.

FUZZ_CC      ?= clang-14
FUZZ_TIME    ?= 60
FUZZ_JOBS    ?= 1
FUZZ_SRCS    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_ALL     := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_FLAGS   := -std=gnu11 -Wall -Wextra -Werror -g -O1 -fno-omit-frame-pointer -pthread \
                -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_STAMP   := $(FUZZ_DIR)/.deps-ok

$(FUZZ_STAMP): scripts/deps.sh
	$(Q)bash scripts/deps.sh fuzz
	$(Q)mkdir -p $(@D) && touch $@

# the library instrumented for coverage (fuzzer-no-link) and sanitizers
$(FUZZ_DIR)/obj/%.o: %.c | $(FUZZ_STAMP)
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FUZZ_DIR)/libknit.a: $(FUZZ_LIB_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h tests/fuzz/standin.h $(FUZZ_DIR)/libknit.a | $(FUZZ_STAMP)
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -DKN_FUZZ_LIBFUZZER -fsanitize=fuzzer -o $@ $< \
		$(FUZZ_DIR)/libknit.a $(LIBS)

.PHONY: fuzz fuzz-build fuzz-seeds
fuzz-build: $(patsubst %,$(FUZZ_DIR)/fuzz_%,$(FUZZ_TARGETS))

fuzz: fuzz-build
	$(Q)bash tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_TIME) $(FUZZ_JOBS) $(FUZZ_TARGETS)

# The replay test: the same targets, built by the normal compiler.
FUZZ_REPLAY_OBJS := $(FUZZ_SRCS:%.c=$(BUILD)/obj/%.o)
$(BUILD)/tests/unit/test_fuzz: $(BUILD)/obj/tests/unit/test_fuzz.o $(FUZZ_REPLAY_OBJS) $(UNIT_HARNESS) $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LIBKNIT_A) $(LIBS)

# Seeds: real messages of every kind, written by tests/fuzz/seeds.c.
FUZZ_SEEDS := $(BUILD)/tests/fuzz/seeds
$(FUZZ_SEEDS): $(BUILD)/obj/tests/fuzz/seeds.o $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIBKNIT_A) $(LIBS)

fuzz-seeds: $(FUZZ_SEEDS) $(BUILD)/modules/echo.so
	$(Q)$(FUZZ_SEEDS) tests/fuzz/corpus $(BUILD)/modules/echo.so

-include $(shell find $(FUZZ_DIR)/obj -name '*.d' 2>/dev/null)
