# komp, knit's OpenMP runtime (src/omp, docs/openmp.md): libknitomp.so over
# libknit, the objects `knitcc -fopenmp` links around the program
# (src/omp/link/komp_begin.c, komp_end.c), a libgomp.spec of its own that keeps
# gcc from adding -lgomp, and the OpenMP examples (examples/omp).

OMP_SRCS := $(wildcard src/omp/*.c)
OMP_OBJS := $(OMP_SRCS:%.c=$(BUILD)/obj/%.o)
LIBKNITOMP_SO := $(BUILD)/lib/libknitomp.so
KOMP_DIR := $(BUILD)/lib/komp

$(LIBKNITOMP_SO): $(OMP_OBJS) $(LIBKNIT_SO) $(BUILD)/lib/libknit.so.0
	@mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libknitomp.so.0 -Wl,-rpath,'$$ORIGIN' $(LDFLAGS) -o $@ $(OMP_OBJS) \
	    -L$(BUILD)/lib -lknit $(LIBS)
$(BUILD)/lib/libknitomp.so.0: $(LIBKNITOMP_SO)
	$(Q)ln -sf libknitomp.so $@

$(KOMP_DIR)/%.o: src/omp/link/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) -O2 -Wall -Wextra -Werror -c -o $@ $<
$(KOMP_DIR)/libgomp.spec: mk/omp.mk
	@mkdir -p $(@D)
	$(Q)printf '# knitcc -fopenmp: komp (libknitomp) instead of libgomp\n*link_gomp:\n\n\n' > $@

KOMP_LINK := $(LIBKNITOMP_SO) $(BUILD)/lib/libknitomp.so.0 $(KOMP_DIR)/komp_begin.o $(KOMP_DIR)/komp_end.o \
	$(KOMP_DIR)/libgomp.spec $(BUILD)/bin/knitcc

# examples/omp: plain OpenMP programs, built by knitcc -fopenmp
OMP_EX_SRCS := $(wildcard examples/omp/*.c)
OMP_EX_BINS := $(patsubst examples/omp/%.c,$(BUILD)/examples/omp/%,$(OMP_EX_SRCS))
OMP_EX_LIBS = $(if $(filter mandel,$(notdir $@)),$(shell pkg-config --cflags --libs libmicrohttpd libpng 2>/dev/null)) -lm
$(BUILD)/examples/omp/%: examples/omp/%.c $(KOMP_LINK)
	@mkdir -p $(@D)
	$(Q)$(BUILD)/bin/knitcc -O2 -fopenmp -Wall -Wextra -o $@ $< $(OMP_EX_LIBS)

ALL_TARGETS += $(KOMP_LINK) $(OMP_EX_BINS)
