#!/usr/bin/env bash
# make install: scripts/install.sh BUILD PREFIX
# Installs headers (knit.h, knit/*.h, mpi.h, armci.h, armci_msg.h, and
# Fortran's mpif.h and mpi.mod), libknit, libknitmpi, libknitmpif,
# libknitarmci and libknitomp (.a, .so and their soname links), komp's
# objects for knitcc -fopenmp (lib/komp), the tools and daemons of
# BUILD/bin, the wrappers knitcc, knitc++ and knitfort (and mpicc, mpicxx,
# mpic++, mpif90, mpifort, unless PREFIX/bin already holds one that is not
# knit's: the system's are never replaced), built modules, and knit.pc.
set -eu
BUILD=${1:?usage: install.sh BUILD PREFIX}
PREFIX=${2:?usage: install.sh BUILD PREFIX}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
[ -d "$BUILD/lib" ] || { echo "install: $BUILD is not built (run make BUILD=$BUILD)" >&2; exit 1; }
case $PREFIX in /*) ;; *) PREFIX=$(pwd)/$PREFIX ;; esac
VERSION=$(sed -n 's/^#define KNIT_VERSION_STRING "\(.*\)"/\1/p' include/knit.h)
CC_USED=${CC:-cc}

install -d "$PREFIX/bin" "$PREFIX/include/knit" "$PREFIX/lib/pkgconfig"
install -m 644 include/knit.h "$PREFIX/include/"
for h in include/mpi.h include/armci.h include/armci_msg.h; do [ -f "$h" ] && install -m 644 "$h" "$PREFIX/include/"; done
for h in include/knit/*.h; do [ -f "$h" ] && install -m 644 "$h" "$PREFIX/include/knit/"; done
for h in "$BUILD/include/mpif.h" "$BUILD/include/mpi.mod"; do [ -f "$h" ] && install -m 644 "$h" "$PREFIX/include/"; done

for lib in libknit libknitmpi libknitmpif libknitarmci libknitomp; do
    [ -f "$BUILD/lib/$lib.a" ] && install -m 644 "$BUILD/lib/$lib.a" "$PREFIX/lib/"
    if [ -f "$BUILD/lib/$lib.so" ]; then
        install -m 755 "$BUILD/lib/$lib.so" "$PREFIX/lib/$lib.so.$VERSION"
        ln -sf "$lib.so.$VERSION" "$PREFIX/lib/$lib.so.0"
        ln -sf "$lib.so.0" "$PREFIX/lib/$lib.so"
    fi
done
if [ -d "$BUILD/lib/komp" ]; then # knitcc -fopenmp's objects and spec (docs/openmp.md)
    install -d "$PREFIX/lib/komp"
    install -m 644 "$BUILD"/lib/komp/* "$PREFIX/lib/komp/"
fi
if [ -d "$BUILD/modules" ]; then
    install -d "$PREFIX/lib/knit/modules"
    for m in "$BUILD"/modules/*.so; do [ -f "$m" ] && install -m 755 "$m" "$PREFIX/lib/knit/modules/"; done
fi

# programs: everything in BUILD/bin but the wrappers, which are rewritten
for p in "$BUILD"/bin/*; do
    n=$(basename "$p")
    case $n in knitcc|mpicc|knitc++|mpicxx|mpic++|knitfort|mpif90|mpifort) continue ;; esac
    [ -f "$p" ] && [ -x "$p" ] && install -m 755 "$p" "$PREFIX/bin/"
done
# wrapper NAME LANG COMPILER VARS ALIASES...: tools/knitcc.in with the
# installed paths, and its MPI names where they are not another MPI's
wrapper() {
    local name=$1 lang=$2 cc=$3 vars=$4 alias langname
    shift 4
    case $lang in c) langname=C ;; c++) langname=C++ ;; *) langname=Fortran ;; esac
    # the link flags the libraries were built with (e.g. sanitizers)
    extra=$(sed -n "s/^EXTRA_LDFLAGS='\(.*\)'.*/\1/p" "$BUILD/bin/knitcc" 2>/dev/null || true)
    sed -e "s|@INCDIR@|$PREFIX/include|g" -e "s|@LIBDIR@|$PREFIX/lib|g" -e "s|@CC@|$cc|g" \
        -e "s|@NAME@|$name|g" -e "s|@LANG@|$lang|g" -e "s|@LANGNAME@|$langname|g" -e "s|@CCVARS@|$vars|g" \
        -e "s|@FINCDIR@|$PREFIX/include|g" -e "s|@LDFLAGS@|$extra|g" -e "s|@VERSION@|$VERSION|g" \
        tools/knitcc.in > "$PREFIX/bin/$name.tmp"
    chmod 755 "$PREFIX/bin/$name.tmp"
    mv "$PREFIX/bin/$name.tmp" "$PREFIX/bin/$name"
    for alias in "$@"; do
        if [ -e "$PREFIX/bin/$alias" ] && ! grep -q "$name" "$PREFIX/bin/$alias" 2>/dev/null &&
            [ "$(readlink "$PREFIX/bin/$alias")" != "$name" ]; then
            echo "install: $PREFIX/bin/$alias is another MPI's: not replaced (use $name)" >&2
        else
            ln -sf "$name" "$PREFIX/bin/$alias"
        fi
    done
}
if [ -f tools/knitcc.in ]; then
    wrapper knitcc c "$CC_USED" "KNITCC_CC (or MPICH_CC / OMPI_CC)" mpicc
    [ -x "$BUILD/bin/knitc++" ] && wrapper knitc++ c++ "${CXX:-g++}" "KNITCXX_CXX (or MPICH_CXX / OMPI_CXX)" mpicxx mpic++
    [ -x "$BUILD/bin/knitfort" ] && wrapper knitfort fortran "${FC:-gfortran}" "KNITFORT_FC (or MPICH_FC / OMPI_FC)" mpif90 mpifort
fi

cat > "$PREFIX/lib/pkgconfig/knit.pc" <<PC
prefix=$PREFIX
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: knit
Description: cluster communication system (native API, MPI subset and ARMCI)
Version: $VERSION
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lknit
Libs.private: -ldl -lrt -pthread
PC
echo "installed knit $VERSION into $PREFIX"
