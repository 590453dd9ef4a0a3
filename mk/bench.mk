# Benchmarks (bench/): built into $(BUILD)/bench/ as part of `make all`;
# `make bench` runs bench/compare (knit side by side with the other MPIs
# found on the machine).  See docs/benchmarks.md.
#
#   make bench                       full comparison (BENCH_ARGS adds options)
#   make bench BENCH_ARGS=--quick    the reduced sweep, under 2 minutes
#   make bench BENCH_ARGS=--publish  also copy report.md and key plots to docs/perf/
#
# The programs use bench/bp.h; here they are linked with bp_knit.c (knit's
# native API).  bench/compare builds the same sources with each MPI's mpicc.

BENCH_PROGS  := pingpong bw bibw msgrate coll overlap rma
BENCH_BINS   := $(BENCH_PROGS:%=$(BUILD)/bench/%)
BENCH_LIMITS := $(BUILD)/bench/limits
BENCH_OBJS   := $(BUILD)/obj/bench/common.o $(BUILD)/obj/bench/bp_knit.o

# The knit programs join `all` once the p2p engine defines knit_isend, so
# that `make all` keeps working while it is being written (BENCH_KNIT=1
# forces them).  limits needs nothing from knit and is always built.
BENCH_KNIT ?= $(if $(shell grep -ls '^knit_status_t knit_isend' src/*/*.c 2>/dev/null),1,0)

$(BENCH_BINS): $(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BENCH_OBJS) $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(BENCH_OBJS) $(LIBKNIT_A) $(LIBS)

$(BENCH_LIMITS): $(BUILD)/obj/bench/limits.o
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $<

ALL_TARGETS += $(BENCH_LIMITS)
ifeq ($(BENCH_KNIT),1)
ALL_TARGETS += $(BENCH_BINS)
endif

.PHONY: bench-progs
bench-progs: $(BENCH_BINS) $(BENCH_LIMITS)

BENCH_ARGS ?=
bench: all
	$(Q)python3 bench/compare --build $(BUILD) $(BENCH_ARGS)

# Start-up under other launchers (mpirun.openmpi, mpiexec.mpich, srun) beside
# each launcher's own MPI: bench/launchers.sh (docs/knitrun.md, Other launchers).
.PHONY: bench-launchers
bench-launchers: all
	$(Q)bash bench/launchers.sh $(BUILD)

# The overlap of a nonblocking allreduce with computing (OSU's method),
# knit (hosts, offloaded) against Open MPI and MPICH: bench/overlap.sh.
OVERLAP_ARGS ?= 4 5 8,1k,64k
.PHONY: bench-overlap
bench-overlap: all
	$(Q)bash bench/overlap.sh $(BUILD) $(OVERLAP_ARGS)

# Application kernels over the one-sided layer (knit's native API only):
# a 3-D halo exchange with strided faces, and SRUMMA with OpenBLAS's dgemm
# (docs/benchmarks.md, "One-sided kernels").
OPENBLAS_CFLAGS = $(call once,OPENBLAS_CFLAGS,pkg-config --cflags openblas 2>/dev/null)
OPENBLAS_LIBS   = $(call once,OPENBLAS_LIBS,pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
$(BUILD)/obj/bench/srumma.o: CPPFLAGS += $(OPENBLAS_CFLAGS)
$(BUILD)/bench/halo3d: $(BUILD)/obj/bench/halo3d.o $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIBKNIT_A) $(LIBS) -lm
$(BUILD)/bench/srumma: $(BUILD)/obj/bench/srumma.o $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIBKNIT_A) $(LIBS) $(OPENBLAS_LIBS) -lm
ALL_TARGETS += $(BUILD)/bench/halo3d $(BUILD)/bench/srumma
bench-progs: $(BUILD)/bench/halo3d $(BUILD)/bench/srumma
# the kernel's limit for a strided transfer within a node (bench/rma.py)
$(BUILD)/bench/cma_limit: $(BUILD)/obj/bench/cma_limit.o
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $<
ALL_TARGETS += $(BUILD)/bench/cma_limit
bench-progs: $(BUILD)/bench/cma_limit

# MPI one-sided as the OSU micro-benchmarks measure it, knit's MPI side by
# side with Open MPI and MPICH (bench/osu_rma.py; docs/benchmarks.md).
OSU_RMA_ARGS ?=
.PHONY: bench-osu-rma
bench-osu-rma: all
	$(Q)python3 bench/osu_rma.py --build $(BUILD) $(OSU_RMA_ARGS)

# The replicated region (bench/dsm.c, bench/dsm.py; docs/benchmarks.md):
# release latency against knit's 4 KiB broadcast, update bandwidth against
# knit's point-to-point, the protocols' access patterns.
$(BUILD)/bench/dsm: $(BUILD)/obj/bench/dsm.o $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIBKNIT_A) $(LIBS)
ALL_TARGETS += $(BUILD)/bench/dsm
bench-progs: $(BUILD)/bench/dsm
DSM_ARGS ?=
.PHONY: bench-dsm
bench-dsm: all
	$(Q)python3 bench/dsm.py --build $(BUILD) $(DSM_ARGS)

# OpenMP across nodes (bench/omp.py; docs/openmp.md): EP, Mandelbrot,
# Himeno and CG built with gcc -fopenmp (libgomp) and knitcc -fopenmp
# (komp), the same total thread count, both protocols of the region.
OMP_BENCH_ARGS ?=
.PHONY: bench-omp
bench-omp: all
	$(Q)python3 bench/omp.py --build $(BUILD) $(OMP_BENCH_ARGS)
