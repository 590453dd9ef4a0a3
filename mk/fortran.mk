# Fortran and C++ (docs/mpi.md, "Fortran and C++"):
#  - src/mpi/fortran/gen.py reads include/mpi.h and writes the Fortran
#    binding's wrappers (mpif_wrap.c), mpif.h and the `use mpi` module's
#    source (mpi.f90) into $(BUILD)/gen/fortran;
#  - libknitmpif.{a,so}: the wrappers and src/mpi/fortran/fortran.c, over
#    libknitmpi; mpif.h and mpi.mod in $(BUILD)/include;
#  - the wrappers knitfort (also mpif90, mpifort) and knitc++ (also mpicxx,
#    mpic++), from tools/knitcc.in like knitcc;
#  - the test programs of tests/fortran and the applications bench/stencil3d.f90, cg3d.f90
#    and bench/ring.cpp, built with those wrappers.

FC  ?= gfortran
CXX ?= g++
ifeq ($(origin FC),default)
FC := gfortran
endif
ifeq ($(origin CXX),default)
CXX := g++
endif

FGEN_DIR   := $(BUILD)/gen/fortran
FGEN_STAMP := $(FGEN_DIR)/.stamp
FINC_DIR   := $(BUILD)/include
$(FGEN_STAMP): src/mpi/fortran/gen.py include/mpi.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(Q)python3 src/mpi/fortran/gen.py include/mpi.h $(FGEN_DIR) >/dev/null
	$(Q)touch $@
# (what needs the generated files depends on the stamp: make would not see
# them change through a rule without a recipe)

MPIF_OBJS := $(BUILD)/obj/gen/fortran/mpif_wrap.o $(BUILD)/obj/src/mpi/fortran/fortran.o \
	$(BUILD)/obj/gen/fortran/mpi_mod.o
$(BUILD)/obj/gen/fortran/mpif_wrap.o: $(FGEN_STAMP) src/mpi/fortran/fortran.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $(FGEN_DIR)/mpif_wrap.c
# the module: mpi.mod for `use mpi`, and its object (the common blocks'
# declarations, no code) in the library
$(FINC_DIR)/mpi.mod: $(BUILD)/obj/gen/fortran/mpi_mod.o
$(BUILD)/obj/gen/fortran/mpi_mod.o: $(FGEN_STAMP)
	@mkdir -p $(@D) $(FINC_DIR)
	$(Q)$(FC) -O2 -fPIC -Wall -Werror -J$(FINC_DIR) -c -o $@ $(FGEN_DIR)/mpi.f90
$(FINC_DIR)/mpif.h: $(FGEN_STAMP)
	@mkdir -p $(@D)
	$(Q)cp $(FGEN_DIR)/mpif.h $@

LIBKNITMPIF_A  := $(BUILD)/lib/libknitmpif.a
LIBKNITMPIF_SO := $(BUILD)/lib/libknitmpif.so
$(LIBKNITMPIF_A): $(MPIF_OBJS)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^
$(LIBKNITMPIF_SO): $(MPIF_OBJS) $(LIBKNITMPI_SO) $(BUILD)/lib/libknitmpi.so.0
	@mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libknitmpif.so.0 -Wl,-rpath,'$$ORIGIN' $(LDFLAGS) -o $@ $(MPIF_OBJS) \
	    -L$(BUILD)/lib -lknitmpi -lknit $(LIBS)
$(BUILD)/lib/libknitmpif.so.0: $(LIBKNITMPIF_SO)
	$(Q)ln -sf libknitmpif.so $@

# the wrappers of the build tree (scripts/install.sh writes the installed ones)
$(BUILD)/bin/knitfort: tools/knitcc.in include/knit.h mk/mpi.mk mk/fortran.mk
	@mkdir -p $(@D)
	$(Q)$(call KNITCC_SUBST,$(abspath .),$(abspath $(BUILD)/lib),knitfort,fortran,$(FC),KNITFORT_FC (or MPICH_FC / OMPI_FC),$(abspath $(FINC_DIR))) \
	    $< > $@.tmp && chmod +x $@.tmp && mv $@.tmp $@
$(BUILD)/bin/knitc++: tools/knitcc.in include/knit.h mk/mpi.mk mk/fortran.mk
	@mkdir -p $(@D)
	$(Q)$(call KNITCC_SUBST,$(abspath .),$(abspath $(BUILD)/lib),knitc++,c++,$(CXX),KNITCXX_CXX (or MPICH_CXX / OMPI_CXX)) \
	    $< > $@.tmp && chmod +x $@.tmp && mv $@.tmp $@
$(BUILD)/bin/mpif90 $(BUILD)/bin/mpifort: $(BUILD)/bin/knitfort
	$(Q)ln -sf knitfort $@
$(BUILD)/bin/mpicxx $(BUILD)/bin/mpic++: $(BUILD)/bin/knitc++
	$(Q)ln -sf knitc++ $@

FORT_LINK := $(LIBKNITMPIF_A) $(LIBKNITMPIF_SO) $(BUILD)/lib/libknitmpif.so.0 $(FINC_DIR)/mpi.mod \
	$(FINC_DIR)/mpif.h $(BUILD)/bin/knitfort $(BUILD)/lib/libknitmpi.so.0 $(BUILD)/lib/libknit.so.0 \
	$(LIBKNITMPI_SO) $(BUILD)/lib/libknitarmci.so
CXX_LINK  := $(BUILD)/bin/knitc++ $(LIBKNITMPI_SO) $(BUILD)/lib/libknitmpi.so.0 $(BUILD)/lib/libknit.so.0 \
	$(BUILD)/lib/libknitarmci.so

# tests/fortran/*.f90 (free form) and *.f (fixed form): one program each; *.cpp: C++
FORT_TEST_SRCS := $(wildcard tests/fortran/*.f90 tests/fortran/*.f)
FORT_TEST_BINS := $(patsubst tests/fortran/%,$(BUILD)/tests/fortran/%,$(basename $(FORT_TEST_SRCS)))
CXX_TEST_SRCS  := $(wildcard tests/fortran/*.cpp)
CXX_TEST_BINS  := $(patsubst tests/fortran/%.cpp,$(BUILD)/tests/fortran/%,$(CXX_TEST_SRCS))
FFLAGS_TEST := -O2 -g -Wall -Werror -Wno-unused-dummy-argument -fcheck=bounds
$(BUILD)/tests/fortran/%: tests/fortran/%.f90 tests/fortran/check.inc $(FORT_LINK)
	@mkdir -p $(@D)/mod-$*
	$(Q)$(BUILD)/bin/knitfort $(FFLAGS_TEST) -J$(@D)/mod-$* -o $@ $<
$(BUILD)/tests/fortran/%: tests/fortran/%.f $(FORT_LINK)
	@mkdir -p $(@D)
	$(Q)$(BUILD)/bin/knitfort $(FFLAGS_TEST) -o $@ $<
$(BUILD)/tests/fortran/%: tests/fortran/%.cpp $(CXX_LINK)
	@mkdir -p $(@D)
	$(Q)$(BUILD)/bin/knitc++ -O2 -g -std=c++17 -Wall -Wextra -Werror -pedantic -o $@ $<

# the applications (bench/): a Fortran 3-D stencil and CG kernel, a C++ ring
$(BUILD)/bench/stencil3d $(BUILD)/bench/cg3d: $(BUILD)/bench/%: bench/%.f90 $(FORT_LINK)
	@mkdir -p $(@D)/mod-$*
	$(Q)$(BUILD)/bin/knitfort -O2 -g -Wall -Werror -J$(@D)/mod-$* -o $@ $<
$(BUILD)/bench/ring: bench/ring.cpp $(CXX_LINK)
	@mkdir -p $(@D)
	$(Q)$(BUILD)/bin/knitc++ -O2 -g -std=c++17 -Wall -Wextra -Werror -o $@ $<

ALL_TARGETS += $(FORT_LINK) $(CXX_LINK) $(BUILD)/bin/mpif90 $(BUILD)/bin/mpifort $(BUILD)/bin/mpicxx \
	$(BUILD)/bin/mpic++ $(FORT_TEST_BINS) $(CXX_TEST_BINS) \
	$(BUILD)/bench/stencil3d $(BUILD)/bench/cg3d $(BUILD)/bench/ring

# the stencil and the CG kernel side by side with Open MPI and MPICH
# (bench/fortran.py, docs/perf/fortran.md)
FORTRAN_BENCH_ARGS ?=
.PHONY: bench-fortran
bench-fortran: all
	$(Q)python3 bench/fortran.py --build $(BUILD) $(FORTRAN_BENCH_ARGS)
	$(Q)python3 bench/fortran.py --n 32 --iters 1000 --build $(BUILD) $(FORTRAN_BENCH_ARGS)
	$(Q)python3 bench/fortran.py --prog cg3d --n 32 --iters 500 --build $(BUILD) $(FORTRAN_BENCH_ARGS)
