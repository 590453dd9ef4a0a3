# The MPI subset (src/mpi, include/mpi.h): libknitmpi.{a,so} over libknit,
# the compiler wrapper knitcc (also installed as mpicc in knit's own bin/),
# and the MPI test programs of tests/mpi.  See docs/mpi.md.

MPI_SRCS := $(wildcard src/mpi/*.c)
MPI_OBJS := $(MPI_SRCS:%.c=$(BUILD)/obj/%.o)
LIBKNITMPI_A  := $(BUILD)/lib/libknitmpi.a
LIBKNITMPI_SO := $(BUILD)/lib/libknitmpi.so

# MPI communicators carry a knit_comm_t once libknit defines
# knit_comm_create (the collectives layer); the stamp rebuilds comm.o when
# that changes.
MPI_HAVE_KNIT_COMM := $(if $(shell grep -ls '^knit_status_t knit_comm_create' src/*/*.c 2>/dev/null),1,0)
MPI_COMM_STAMP := $(BUILD)/obj/src/mpi/have_knit_comm.$(MPI_HAVE_KNIT_COMM)
$(MPI_COMM_STAMP):
	@mkdir -p $(@D) && rm -f $(@D)/have_knit_comm.* && touch $@
$(BUILD)/obj/src/mpi/comm.o: $(MPI_COMM_STAMP)
$(MPI_OBJS): CPPFLAGS += -DKN_MPI_HAVE_KNIT_COMM=$(MPI_HAVE_KNIT_COMM)

$(LIBKNITMPI_A): $(MPI_OBJS)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

# sonames: libknit.so says libknit.so.0; the links make both resolvable
$(BUILD)/lib/libknit.so.0: $(LIBKNIT_SO)
	$(Q)ln -sf libknit.so $@
$(BUILD)/lib/libknitmpi.so.0: $(LIBKNITMPI_SO)
	$(Q)ln -sf libknitmpi.so $@

$(LIBKNITMPI_SO): $(MPI_OBJS) $(LIBKNIT_SO) $(BUILD)/lib/libknit.so.0
	@mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libknitmpi.so.0 -Wl,-rpath,'$$ORIGIN' $(LDFLAGS) -o $@ $(MPI_OBJS) \
	    -L$(BUILD)/lib -lknit $(LIBS)

# knitcc / mpicc for the build tree (scripts/install.sh writes the
# installed ones): tools/knitcc.in with the paths filled in.  The same
# template makes knitc++ and knitfort (mk/fortran.mk): KNITCC_SUBST's
# arguments are the include and library directories, the wrapper's name,
# its language, its compiler, its compiler's variables and Fortran's
# include directory.
KNITCC_SUBST = sed -e 's|@INCDIR@|$(1)/include|g' -e 's|@LIBDIR@|$(2)|g' -e 's|@NAME@|$(3)|g' \
	-e 's|@LANG@|$(4)|g' -e 's|@LANGNAME@|$(if $(filter c,$(4)),C,$(if $(filter c++,$(4)),C++,Fortran))|g' \
	-e 's|@CC@|$(5)|g' -e 's|@CCVARS@|$(6)|g' -e 's|@FINCDIR@|$(7)|g' \
	-e 's|@LDFLAGS@|$(filter-out -pthread,$(LDFLAGS))|g' \
	-e 's|@VERSION@|$(shell sed -n 's/^#define KNIT_VERSION_STRING "\(.*\)"/\1/p' include/knit.h)|g'
$(BUILD)/bin/knitcc: tools/knitcc.in include/knit.h mk/mpi.mk
	@mkdir -p $(@D)
	$(Q)$(call KNITCC_SUBST,$(abspath .),$(abspath $(BUILD)/lib),knitcc,c,$(CC),KNITCC_CC (or MPICH_CC / OMPI_CC)) \
	    $< > $@.tmp && chmod +x $@.tmp && mv $@.tmp $@
$(BUILD)/bin/mpicc: $(BUILD)/bin/knitcc
	$(Q)ln -sf knitcc $@

# tests/mpi/*.c: MPI programs, linked statically with both libraries
MPI_TEST_SRCS := $(wildcard tests/mpi/*.c)
MPI_TEST_BINS := $(patsubst tests/mpi/%.c,$(BUILD)/tests/mpi/%,$(MPI_TEST_SRCS))
$(BUILD)/tests/mpi/%: $(BUILD)/obj/tests/mpi/%.o $(LIBKNITMPI_A) $(LIBKNIT_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIBKNITMPI_A) $(LIBKNIT_A) $(LIBS) -lm

ALL_TARGETS += $(LIBKNITMPI_A) $(LIBKNITMPI_SO) $(BUILD)/lib/libknitmpi.so.0 $(BUILD)/lib/libknit.so.0 \
	$(BUILD)/bin/knitcc $(BUILD)/bin/mpicc $(MPI_TEST_BINS)
