#!/usr/bin/env python3
"""Fortran binding of knit's MPI, generated from one table: include/mpi.h.

Every function mpi.h declares gets a gfortran-callable wrapper (lowercase
name, one trailing underscore, every argument by reference, an IERROR
argument last, the hidden lengths of CHARACTER arguments after it).  The
Fortran form of each argument follows from its C type and name by the rules
of classify(); the few arguments whose Fortran form differs from what their
C type says are the rows of OVERRIDE, and the functions whose wrappers are
written by hand (src/mpi/fortran/fattr.c: attribute keyvals with Fortran
callbacks) are the rows of BY_HAND.  An argument no rule knows stops the
build: a new function in mpi.h is either bound or named here, never skipped.

    gen.py MPI_H OUTDIR      writes OUTDIR/mpif_wrap.c, mpif.h, mpi.f90

mpif.h and mpi.f90 (the `use mpi` module) carry the same constants, taken
from mpi.h's #defines; the module adds explicit interfaces for every
routine (choice buffers through gfortran's NO_ARG_CHECK).
"""
import os
import re
import sys

HANDLES = {"MPI_Comm": "Comm", "MPI_Group": "Group", "MPI_Datatype": "Type", "MPI_Request": "Request",
           "MPI_Op": "Op", "MPI_Errhandler": "Errhandler", "MPI_Info": "Info", "MPI_Message": "Message",
           "MPI_Win": "Win"}
# C-only: conversions, and the predefined attribute callbacks (fattr.c has
# Fortran-callable ones)
C_ONLY = re.compile(r"^MPI_\w+_(c2f|f2c)$|^MPI_[A-Z_]+_FN$")
# wrappers written by hand in fattr.c (Fortran callbacks need trampolines)
BY_HAND = {
    "MPI_Comm_create_keyval": "copy_fn delete_fn keyval extra_state",
    "MPI_Type_create_keyval": "copy_fn delete_fn keyval extra_state",
    "MPI_Win_create_keyval": "copy_fn delete_fn keyval extra_state",
    "MPI_Keyval_create": "copy_fn delete_fn keyval extra_state",
}
# Fortran forms that the C type does not tell (function, argument) -> kind
OVERRIDE = {
    # MPI-1 names take default INTEGER where MPI-2 took ADDRESS_KIND
    ("MPI_Address", "address"): "aint_fint_out",
    ("MPI_Type_extent", "extent"): "aint_fint_out",
    ("MPI_Type_lb", "displacement"): "aint_fint_out",
    ("MPI_Type_ub", "displacement"): "aint_fint_out",
    ("MPI_Type_hvector", "stride"): "aint_fint",
    ("MPI_Type_hindexed", "array_of_displacements"): "aint_fint_arr",
    ("MPI_Type_struct", "array_of_displacements"): "aint_fint_arr",
    ("MPI_Attr_put", "attribute_val"): "attr_in_fint",
    ("MPI_Attr_get", "attribute_val"): "attr_out_fint",
    # the buffer's address comes back in C; Fortran has no use for it
    ("MPI_Buffer_detach", "buffer_addr"): "discard",
    ("MPI_Info_get", "value"): "strout_n",
    ("MPI_Info_get_string", "value"): "strout_buflen",
    ("MPI_Info_get_nthkey", "key"): "strout",
    ("MPI_Waitany", "index"): "index_out",
    ("MPI_Testany", "index"): "index_out",
    ("MPI_Waitsome", "array_of_indices"): "indices_out",
    ("MPI_Testsome", "array_of_indices"): "indices_out",
    ("MPI_Status_set_cancelled", "flag"): "lin",
    ("MPI_Info_get_string", "buflen"): "buflen",
}
# Fortran forms without IERROR (MPI_Wtime & co, which return values, too)
NO_IERROR = {"MPI_Pcontrol"}
LOGICAL_IN = {"commute", "reorder", "high"}
LOGICAL_OUT = {"flag", "commute", "weighted"}
# LOGICAL arrays: passed as they are (gfortran's .TRUE. is C's 1)
LOGICAL_ARR = {"periods", "remain_dims"}
CHOICE = {"buf", "sendbuf", "recvbuf", "buffer", "inbuf", "outbuf", "inoutbuf", "origin_addr", "result_addr",
          "compare_addr", "location", "base"}
# the size of the C buffer an output string is written into
STRMAX = {"MPI_Get_processor_name": "MPI_MAX_PROCESSOR_NAME", "MPI_Error_string": "MPI_MAX_ERROR_STRING",
          "MPI_Get_library_version": "MPI_MAX_LIBRARY_VERSION_STRING", "MPI_Info_get_nthkey": "MPI_MAX_INFO_KEY"}
FUNPTR = {"MPI_User_function", "MPI_Comm_errhandler_function", "MPI_Win_errhandler_function"}
# constants of the Fortran binding alone
F_CONSTS = [("MPI_STATUS_SIZE", 6), ("MPI_SOURCE", 1), ("MPI_TAG", 2), ("MPI_ERROR", 3),
            ("MPI_ADDRESS_KIND", 8), ("MPI_OFFSET_KIND", 8), ("MPI_COUNT_KIND", 8), ("MPI_INTEGER_KIND", 4)]
# C pointer constants that Fortran spells as variables in common blocks,
# recognized by address (src/mpi/fortran/fortran.h): name, Fortran dims
SENTINELS = [("MPI_BOTTOM", ""), ("MPI_IN_PLACE", ""), ("MPI_STATUS_IGNORE", "(MPI_STATUS_SIZE)"),
             ("MPI_STATUSES_IGNORE", "(MPI_STATUS_SIZE,1)"), ("MPI_UNWEIGHTED", "(1)"),
             ("MPI_WEIGHTS_EMPTY", "(1)")]
NOT_CONSTS = {"MPI_ERRCODES_IGNORE", "MPI_ARGV_NULL", "MPI_ARGVS_NULL"}
F_CALLBACKS = ["MPI_COMM_NULL_COPY_FN", "MPI_COMM_DUP_FN", "MPI_COMM_NULL_DELETE_FN", "MPI_TYPE_NULL_COPY_FN",
               "MPI_TYPE_DUP_FN", "MPI_TYPE_NULL_DELETE_FN", "MPI_WIN_NULL_COPY_FN", "MPI_WIN_DUP_FN",
               "MPI_WIN_NULL_DELETE_FN", "MPI_NULL_COPY_FN", "MPI_DUP_FN", "MPI_NULL_DELETE_FN"]


class Bad(Exception):
    pass


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def prototypes(text):
    """(return type, name, [(ctype, name, array)]) of every function."""
    body = strip_comments(text)
    body = "\n".join(l for l in body.splitlines() if not l.lstrip().startswith("#"))
    out = []
    for m in re.finditer(r"\b(int|double|MPI_Aint|MPI_Fint|MPI_[A-Z][a-z]+)\s+(MPI_\w+)\s*\(([^;]*?)\)\s*;", body):
        ret, name, args = m.group(1), m.group(2), " ".join(m.group(3).split())
        if name.startswith("MPI_") and "typedef" in body[max(0, m.start() - 20):m.start()]:
            continue
        if C_ONLY.match(name):
            continue
        params = []
        if args != "void":
            for a in args.split(","):
                a = a.strip()
                if a == "...":
                    params.append(("...", "...", ""))
                    continue
                am = re.match(r"^(const\s+)?([\w ]+?)\s*(\*{0,3})\s*(\w+)\s*((?:\[\w*\])*)$", a)
                if not am:
                    raise Bad("%s: cannot read argument '%s'" % (name, a))
                ctype = am.group(2) + (" " + am.group(3) if am.group(3) else "")
                params.append(((am.group(1) or "") + ctype, am.group(4), am.group(5)))
        out.append((ret, name, params))
    return out


def classify(fn, ctype, name, arr):
    """The Fortran kind of one C argument."""
    if (fn, name) in OVERRIDE:
        return OVERRIDE[(fn, name)]
    base = ctype.replace("const ", "").strip()
    if name == "...":
        return "drop"
    if (base, name) in (("int *", "argc"), ("char ***", "argv")):
        return "null"
    if base == "int" and not arr:
        return "lin" if name in LOGICAL_IN else "int"
    if base in HANDLES and not arr:
        return "handle"
    if base == "MPI_Aint" and not arr:
        return "aint"
    if base == "MPI_Count" and not arr:
        return "count"
    if base == "MPI_Status *":
        return "status"
    if base == "MPI_Status" and arr == "[]":
        return "statuses"
    if base == "int" and arr == "[]" and name in LOGICAL_ARR:
        return "lptr"
    if base == "int *" and name in LOGICAL_OUT:
        return "lout"
    if base == "int *" and name == "resultlen":
        return "ptr"
    if "weights" in name and base == "int *":
        return "weights"
    if base in ("int *", "int") or (base.rstrip(" *") in HANDLES and (base.endswith("*") or arr)):
        return "ptr"
    if base.rstrip(" *") in ("MPI_Aint", "MPI_Count") and (base.endswith("*") or arr):
        return "aptr"
    if base == "void *" and name in CHOICE:
        return "choice"
    if base == "void *" and name == "baseptr":
        return "baseptr"
    if base == "void *" and name == "attribute_val":
        return "attr_out" if fn.endswith("_get_attr") else "attr_in"
    if base == "char *" and ctype.startswith("const"):
        return "strin"
    if base == "char" and arr == "[]" and ctype.startswith("const"):
        return "strin"
    if base == "char *":
        return "strout"
    if base.rstrip(" *") in FUNPTR:
        return "fnptr"
    raise Bad("%s: no Fortran form for argument '%s %s%s' (add a rule or an OVERRIDE row in gen.py)"
              % (fn, ctype, name, arr))


def fdims(kind, base, arr):
    if kind in ("status",):
        return "(6)"
    if kind == "statuses":
        return "(6,*)"
    if arr == "[][3]":
        return "(3,*)"
    if arr == "[]" or kind in ("weights", "aint_fint_arr", "indices_out"):
        return "(*)"
    return ""


class Wrap:
    """The C wrapper and the Fortran interface of one function."""

    def __init__(self, ret, fn, params):
        self.fn, self.ret = fn, ret
        self.cparams, self.hidden, self.pre, self.call, self.post, self.fdecl, self.fargs = [], [], [], [], [], [], []
        self.kinds, self.allocs = {}, []
        names = [p[1] for p in params]
        for ctype, name, arr in params:
            self.kinds[name] = classify(fn, ctype, name, arr)
        for ctype, name, arr in params:
            self.arg(ctype, name, arr, self.kinds[name], names)

    def count_of(self, names):
        for n in ("count", "incount", "n"):
            if n in names:
                return "*" + n
        raise Bad("%s: an array argument without a count" % self.fn)

    def arg(self, ctype, name, arr, kind, names):
        base = ctype.replace("const ", "").strip()
        v = name + "_"  # local C copies get a trailing underscore
        F = lambda t, dims="": self.fdecl.append("%s %s%s" % (t, name, dims))
        if kind in ("drop",):
            return
        if kind == "null":
            self.call.append("NULL")
            return
        self.fargs.append(name)
        dims = fdims(kind, base, arr)
        if kind == "int":
            self.cparams.append("MPI_Fint *" + name)
            self.call.append("*" + name)
            F("INTEGER")
        elif kind == "lin":
            self.cparams.append("MPI_Fint *" + name)
            self.call.append("(*%s != 0)" % name)
            F("LOGICAL")
        elif kind == "handle":
            self.cparams.append("MPI_Fint *" + name)
            self.call.append("MPI_%s_f2c(*%s)" % (HANDLES[base], name))
            F("INTEGER")
        elif kind in ("aint", "count"):
            t = "MPI_Aint" if kind == "aint" else "MPI_Count"
            self.cparams.append("%s *%s" % (t, name))
            self.call.append("*" + name)
            F("INTEGER(KIND=8)")
        elif kind == "ptr":
            self.cparams.append("MPI_Fint *" + name)
            self.call.append("(int (*)[3])" + name if arr == "[][3]" else name)
            F("INTEGER", dims)
        elif kind == "lptr":
            self.cparams.append("MPI_Fint *" + name)
            self.call.append(name)
            F("LOGICAL", dims)
        elif kind == "aptr":
            t = base.rstrip(" *")
            self.cparams.append("%s *%s" % (t, name))
            self.call.append(name)
            F("INTEGER(KIND=8)", dims)
        elif kind == "baseptr":
            self.cparams.append("MPI_Aint *" + name)
            self.call.append("(void *)" + name)
            F("INTEGER(KIND=8)")
        elif kind == "choice":
            self.cparams.append("void *" + name)
            self.call.append("kf_buf(%s)" % name)
            self.fdecl.append("!GCC$ ATTRIBUTES NO_ARG_CHECK :: " + name)
            self.fdecl.append("TYPE(*), DIMENSION(*) :: " + name)
        elif kind == "discard":
            self.cparams.append("void *" + name)
            self.pre.append("void *%s = NULL;" % v)
            self.call.append("&" + v)
            self.post.append("(void)%s;" % name)
            self.fdecl.append("!GCC$ ATTRIBUTES NO_ARG_CHECK :: " + name)
            self.fdecl.append("TYPE(*), DIMENSION(*) :: " + name)
        elif kind == "status":
            self.cparams.append("MPI_Fint *" + name)
            self.pre.append("MPI_Status %s, *%sp = kf_status_in(%s, &%s);" % (v, v, name, v))
            self.call.append(v + "p")
            if not ctype.startswith("const"):
                self.post.append("kf_status_out(%s, %sp);" % (name, v))
            F("INTEGER", dims)
        elif kind == "statuses":
            n = self.count_of(names)
            if self.allocs:
                raise Bad("%s: statuses after other allocations" % self.fn)
            self.cparams.append("MPI_Fint *" + name)
            self.pre.append("MPI_Status %sbuf[KF_NSTAT], *%s = kf_statuses_in(%s, %s, %sbuf);"
                            % (v, v, name, n, v))
            self.pre.append("if (%s == KF_NOMEM) { *ierr = kf_nomem(\"%s\"); return; }" % (v, self.fn))
            self.call.append(v)
            self.post.append("kf_statuses_out(%s, %s, %s, %sbuf);" % (name, v, n, v))
            F("INTEGER", dims)
        elif kind == "lout":
            self.cparams.append("MPI_Fint *" + name)
            self.pre.append("int %s = 0;" % v)
            self.call.append("&" + v)
            self.post.append("*%s = %s ? KF_TRUE : KF_FALSE;" % (name, v))
            F("LOGICAL")
        elif kind == "index_out":
            self.cparams.append("MPI_Fint *" + name)
            self.call.append(name)
            self.post.append("if (*ierr == MPI_SUCCESS && *%s >= 0) (*%s)++; /* Fortran counts from 1 */"
                             % (name, name))
            F("INTEGER")
        elif kind == "indices_out":
            self.cparams.append("MPI_Fint *" + name)
            self.call.append(name)
            self.post.append("if (*ierr == MPI_SUCCESS && *outcount != MPI_UNDEFINED)")
            self.post.append("    for (int i_ = 0; i_ < *outcount; i_++) %s[i_]++; /* from 1 */" % name)
            F("INTEGER", dims)
        elif kind == "weights":
            self.cparams.append("MPI_Fint *" + name)
            self.call.append("kf_weights(%s)" % name)
            F("INTEGER", dims)
        elif kind == "fnptr":
            self.cparams.append("%s %s" % (base, name))
            self.call.append(name)
            self.fdecl.append("EXTERNAL " + name)
        elif kind == "strin":
            self.cparams.append("const char *" + name)
            self.hidden.append(name)
            self.pre.append("char *%s = kf_str_in(%s, %s_len);" % (v, name, name))
            self.allocs.append(v)
            self.call.append(v)
            self.post.append("free(%s);" % v)
            F("CHARACTER(LEN=*)")
        elif kind in ("strout", "strout_n", "strout_buflen"):
            self.cparams.append("char *" + name)
            self.hidden.append(name)
            if kind == "strout":
                size = STRMAX.get(self.fn, "MPI_MAX_OBJECT_NAME")
                self.pre.append("char %s[%s + 1] = \"\";" % (v, size))
                self.call.append(v)
                self.post.append("if (*ierr == MPI_SUCCESS) *ierr = kf_str_out(\"%s\", %s, %s_len, %s);"
                                 % (self.fn, name, name, v))
            elif kind == "strout_n":  # at most *valuelen characters, written when *flag
                self.pre.append("char *%s = kf_str_buf(*valuelen);" % v)
                self.allocs.append(v)
                self.call.append(v)
                self.post.append("if (*ierr == MPI_SUCCESS && flag_) *ierr = kf_str_out(\"%s\", %s, %s_len, %s);"
                                 % (self.fn, name, name, v))
                self.post.append("free(%s);" % v)
            else:  # Info_get_string: the Fortran string's length is the buffer
                self.pre.append("char *%s = kf_str_buf((MPI_Fint)%s_len);" % (v, name))
                self.allocs.append(v)
                self.pre.append("int buflen_ = (int)%s_len + 1;" % name)
                self.call.append(v)
                self.post.append("*buflen = buflen_ - 1; /* without C's NUL */")
                self.post.append("if (*ierr == MPI_SUCCESS && flag_) kf_str_pad(%s, %s_len, %s);" % (name, name, v))
                self.post.append("free(%s);" % v)
            F("CHARACTER(LEN=*)")
        elif kind == "buflen":  # strout_buflen declares buflen_
            self.cparams.append("MPI_Fint *" + name)
            self.call.append("&buflen_")
            F("INTEGER")
        elif kind == "aint_fint":
            self.cparams.append("MPI_Fint *" + name)
            self.call.append("(MPI_Aint)*" + name)
            F("INTEGER")
        elif kind == "aint_fint_arr":
            n = self.count_of(names)
            self.cparams.append("MPI_Fint *" + name)
            self.pre.append("MPI_Aint *%s = kf_aints(%s, %s);" % (v, name, n))
            self.allocs.append(v)
            self.call.append(v)
            self.post.append("free(%s);" % v)
            F("INTEGER", dims)
        elif kind == "aint_fint_out":
            self.cparams.append("MPI_Fint *" + name)
            self.pre.append("MPI_Aint %s = 0;" % v)
            self.call.append("&" + v)
            self.post.append("if (*ierr == MPI_SUCCESS) *ierr = kf_aint_to_fint(\"%s\", %s, %s);"
                             % (self.fn, v, name))
            F("INTEGER")
        elif kind in ("attr_in", "attr_in_fint"):
            t = "MPI_Aint" if kind == "attr_in" else "MPI_Fint"
            self.cparams.append("%s *%s" % (t, name))
            self.call.append("(void *)(MPI_Aint)*" + name)
            F("INTEGER(KIND=8)" if kind == "attr_in" else "INTEGER")
        elif kind in ("attr_out", "attr_out_fint"):
            obj = self.fn.split("_")[1][0].lower()  # c(omm), t(ype), w(in), a(ttr): a communicator
            t = "MPI_Aint" if kind == "attr_out" else "MPI_Fint"
            self.cparams.append("%s *%s" % (t, name))
            self.pre.append("void *%s = NULL;" % v)
            self.call.append("&" + v)
            key = [n for n in names if n.endswith("keyval")][0]
            if kind == "attr_out":
                self.post.append("if (*ierr == MPI_SUCCESS && flag_) *%s = kf_attr_value('%s', *%s, %s);"
                                 % (name, obj, key, v))
            else:
                self.post.append("if (*ierr == MPI_SUCCESS && flag_)")
                self.post.append("    *ierr = kf_aint_to_fint(\"%s\", kf_attr_value('%s', *%s, %s), %s);"
                                 % (self.fn, obj, key, v, name))
            F("INTEGER(KIND=8)" if kind == "attr_out" else "INTEGER")
        else:
            raise Bad("%s: kind %s" % (self.fn, kind))

    def c(self):
        low = self.fn.lower() + "_"
        params = list(self.cparams)
        if self.fn in NO_IERROR:
            return "void %s(%s)\n{\n    (void)%s(%s);\n}" % (low, ", ".join(params), self.fn, ", ".join(self.call))
        if self.ret == "int":
            params.append("MPI_Fint *ierr")
        params += ["size_t %s_len" % h for h in self.hidden]
        rtype = {"int": "void", "double": "double", "MPI_Aint": "MPI_Aint"}[self.ret]
        out = ["%s %s(%s)" % (rtype, low, ", ".join(params) or "void"), "{"]
        out += ["    " + l for l in self.pre]
        if self.allocs:  # each is NULL when out of memory
            out.append("    if (%s) {" % " || ".join("!" + a for a in self.allocs))
            out += ["        free(%s);" % a for a in self.allocs]
            out += ["        *ierr = kf_nomem(\"%s\");" % self.fn, "        return;", "    }"]
        call = "%s(%s)" % (self.fn, ", ".join(self.call))
        if self.ret == "int":
            out.append("    *ierr = %s;" % call)
            out += ["    " + l for l in self.post]
        else:
            out.append("    return %s;" % call)
        out.append("}")
        return "\n".join(out)

    def interface(self):
        ierror = self.ret == "int" and self.fn not in NO_IERROR
        args = self.fargs + (["ierror"] if ierror else [])
        if self.ret == "int":
            head, end = "SUBROUTINE", "END SUBROUTINE"
        else:
            head, end = ("DOUBLE PRECISION FUNCTION" if self.ret == "double" else "INTEGER(KIND=8) FUNCTION"), \
                "END FUNCTION"
        lines = wrap_free("%s %s(%s)" % (head, self.fn.upper(), ", ".join(args))) + ["  IMPLICIT NONE"]
        lines += ["  " + d for d in self.fdecl]
        if ierror:
            lines.append("  INTEGER ierror")
        lines.append(end)
        return lines


def wrap_free(line, width=90):
    """A free-form statement cut after commas, with & continuations."""
    out = []
    while len(line) > width:
        cut = line.rindex(", ", 0, width) + 1
        out.append(line[:cut] + " &")
        line = "    " + line[cut:].lstrip()
    return out + [line]


# ------------------------------------------------------------- constants

def constants(text):
    env = {"KN_MPI_H": lambda k, i: 0x40000000 | (k << 24) | i, "KN_MPI_NULL": lambda k: k << 24}
    out = []
    for line in strip_comments(text).splitlines():
        m = re.match(r"^#define\s+(MPI_\w+)\s+(.+?)\s*$", line)
        if not m:
            continue
        name, expr = m.group(1), m.group(2)
        if name in NOT_CONSTS or name in dict(SENTINELS) or name.endswith("_FN"):
            continue
        e = re.sub(r"\(\s*(MPI_\w+|int|void|char|MPI_Status)\s*\**\s*\)", "", expr)
        try:
            val = eval(e, {"__builtins__": {}}, env)
        except Exception as ex:
            raise Bad("constant %s = %s: %s" % (name, expr, ex))
        if not isinstance(val, int) or not -2**31 <= val < 2**31:
            raise Bad("constant %s = %s is not a Fortran INTEGER" % (name, expr))
        env[name] = val
        out.append((name, val))
    return out


def fixed(lines):
    for l in lines:
        if len(l) > 72:
            raise Bad("line over 72 columns for fixed-form Fortran: " + l)
    return lines


def const_lines(consts):
    """Declarations valid in fixed and free form alike."""
    out = []
    for name, val in F_CONSTS + consts:
        out += ["      INTEGER %s" % name, "      PARAMETER (%s=%d)" % (name, val)]
    for name, dims in SENTINELS:
        block = "KNIT_MPIF_" + name[4:]
        out += ["      INTEGER %s%s" % (name, dims), "      COMMON /%s/ %s" % (block, name),
                "      SAVE /%s/" % block]
    return fixed(out)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gen.py MPI_H OUTDIR")
    text = open(sys.argv[1]).read()
    outdir = sys.argv[2]
    try:
        protos = prototypes(text)
        consts = constants(text)
        wraps = [Wrap(r, n, p) for r, n, p in protos if n not in BY_HAND]
    except Bad as e:
        sys.exit("gen.py: " + str(e))
    hand = [n for _, n, _ in protos if n in BY_HAND]
    if sorted(hand) != sorted(BY_HAND):
        sys.exit("gen.py: BY_HAND names functions mpi.h does not declare: %s" % (set(BY_HAND) - set(hand)))
    os.makedirs(outdir, exist_ok=True)
    gen_note = "generated by src/mpi/fortran/gen.py from include/mpi.h: do not edit"

    c = ["/* mpif_wrap.c: " + gen_note + " */", '#include "mpi/fortran/fortran.h"', ""]
    c += [w.c() + "\n" for w in wraps]
    write(os.path.join(outdir, "mpif_wrap.c"), "\n".join(c))

    f = ["! mpif.h: knit's MPI for Fortran (" + gen_note + ")",
         "! fixed and free form alike; docs/mpi.md, Fortran and C++"]
    f += const_lines(consts)
    f += fixed(["      DOUBLE PRECISION MPI_WTIME, MPI_WTICK", "      EXTERNAL MPI_WTIME, MPI_WTICK",
                "      INTEGER(KIND=MPI_ADDRESS_KIND) MPI_AINT_ADD, MPI_AINT_DIFF",
                "      EXTERNAL MPI_AINT_ADD, MPI_AINT_DIFF"])
    f += fixed(["      EXTERNAL " + n for n in F_CALLBACKS])
    write(os.path.join(outdir, "mpif.h"), "\n".join(f) + "\n")

    m = ["! mpi.f90: the `use mpi` module of knit's MPI (" + gen_note + ")", "MODULE mpi", "  IMPLICIT NONE"]
    m += const_lines(consts)
    m += ["      EXTERNAL " + n for n in F_CALLBACKS]
    m += ["  INTERFACE"]
    for w in wraps:
        m += ["    " + l for l in w.interface()]
    for n in BY_HAND:
        m += ["    SUBROUTINE %s(copy_fn, delete_fn, keyval, extra_state, ierror)" % n.upper(),
              "      IMPLICIT NONE", "      EXTERNAL copy_fn, delete_fn", "      INTEGER keyval, ierror",
              "      INTEGER(KIND=8) extra_state" if n != "MPI_Keyval_create" else "      INTEGER extra_state",
              "    END SUBROUTINE"]
    m += ["  END INTERFACE", "END MODULE mpi"]
    write(os.path.join(outdir, "mpi.f90"), "\n".join(m) + "\n")
    print("gen.py: %d wrappers generated, %d by hand (fattr.c), %d constants"
          % (len(wraps), len(hand), len(consts) + len(F_CONSTS)))


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
