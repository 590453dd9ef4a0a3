# make soak: the long job of tests/soak/ (docs/reliability.md, "Soak"),
# not part of make test.
#   make soak                    10 minutes (SOAK_TIME=600 seconds)
#   make soak SOAK_TIME=120      shorter
#   make soak SOAK_PUBLISH=1     also copy the curves into docs/reliability/
SOAK_TIME ?= 600
SOAK_BIN  := $(BUILD)/tests/soak/soak

$(SOAK_BIN): $(BUILD)/obj/tests/soak/soak.o $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIBKNIT_A) $(LIBS)

$(BUILD)/obj/tests/soak/soak.o: CPPFLAGS += -Itests/job

ALL_TARGETS += $(SOAK_BIN)

.PHONY: soak
soak: all
	$(Q)command -v python3 >/dev/null || bash scripts/deps.sh soak
	$(Q)bash tests/soak/soak.sh $(BUILD) $(SOAK_TIME) $(BUILD)/soak
	$(Q)if [ "$(SOAK_PUBLISH)" = 1 ]; then mkdir -p docs/reliability && \
		cp $(BUILD)/soak/rss.svg $(BUILD)/soak/fds.svg $(BUILD)/soak/shm.svg docs/reliability/ && \
		echo "soak: curves copied into docs/reliability/"; fi
