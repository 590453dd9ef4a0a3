/* Module files: checked before anything of them runs, then dlopen()ed
 * from a private temporary file (in memory: /dev/shm; unlinked at once;
 * the bytes may have come over the network).  Also the small naming helpers of the offload layer. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "offload/offload.h"
#include "util/env.h"
#include "util/crc32c.h"

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#define HOST_ARCH "x86_64"
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#define HOST_ARCH "aarch64"
#elif defined(__powerpc64__)
#define HOST_MACHINE EM_PPC64
#define HOST_ARCH "ppc64"
#elif defined(__riscv) && __riscv_xlen == 64
#define HOST_MACHINE EM_RISCV
#define HOST_ARCH "riscv64"
#else
#error "unknown host architecture"
#endif

void kn_off_sock_name(char *buf, size_t len, const char *jobid, int node)
{
    snprintf(buf, len, "knit-%s-n%d-agent", jobid, node);
}

void kn_off_seg_name(char *buf, size_t len, const char *jobid, int node)
{
    snprintf(buf, len, "/knit-%s-n%d-agent", jobid, node);
}

uint64_t kn_off_cookie_digest(const char *cookie)
{
    size_t n = strlen(cookie);
    uint32_t a = kn_crc32c(0x6b6e6974u, cookie, n);
    uint32_t b = kn_crc32c(a ^ 0x5bd1e995u, cookie, n);
    return (uint64_t)a << 32 | b;
}

static const char *machine_name(unsigned m)
{
    switch (m) {
    case EM_386: return "i386";
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "arm";
    case EM_PPC64: return "ppc64";
    case EM_RISCV: return "riscv";
    case EM_S390: return "s390";
    }
    return "unknown machine";
}

/* [off, off + n * size) inside a file of len bytes, without overflow. */
static int table_in(uint64_t off, uint64_t n, uint64_t size, size_t len)
{
    return off <= len && (size == 0 || n <= (len - off) / size);
}

/* The tables and segments dlopen will read or map lie inside the file:
 * a truncated or scribbled file is refused here with a reason, instead of
 * faulting (SIGBUS on a mapping past the end) in the loader. */
static const char *check_layout(const unsigned char *b, size_t len, const Elf64_Ehdr *eh)
{
    if (eh->e_ehsize < sizeof(Elf64_Ehdr))
        return "bad ELF header size";
    if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 || eh->e_phnum == PN_XNUM)
        return "no usable program header table";
    if (!table_in(eh->e_phoff, eh->e_phnum, sizeof(Elf64_Phdr), len))
        return "program header table outside the file";
    if (eh->e_shnum && (eh->e_shentsize != sizeof(Elf64_Shdr) ||
                        !table_in(eh->e_shoff, eh->e_shnum, sizeof(Elf64_Shdr), len)))
        return "section header table outside the file";
    int loads = 0, dynamic = 0;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, b + eh->e_phoff + (size_t)i * sizeof(ph), sizeof(ph));
        if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC)
            continue;
        if (!table_in(ph.p_offset, 1, ph.p_filesz, len) || ph.p_filesz > ph.p_memsz)
            return "segment outside the file";
        loads += ph.p_type == PT_LOAD;
        dynamic += ph.p_type == PT_DYNAMIC;
    }
    if (!loads || dynamic != 1)
        return "no loadable segment or no single dynamic section";
    return NULL;
}

knit_status_t kn_mod_check_elf(const void *bytes, size_t len, char *err, size_t errlen)
{
    const unsigned char *b = bytes;
    if (len < SELFMAG || memcmp(b, ELFMAG, SELFMAG)) {
        snprintf(err, errlen, "not an ELF file");
        return KNIT_ERR_INVAL;
    }
    /* the class byte comes after the magic: a file of the magic alone is
     * truncated too (fuzz_loader found it read one byte past the file) */
    if (len <= EI_CLASS || (len < sizeof(Elf64_Ehdr) && b[EI_CLASS] == ELFCLASS64)) {
        snprintf(err, errlen, "truncated ELF header (%zu bytes)", len);
        return KNIT_ERR_INVAL;
    }
    if (len < sizeof(Elf64_Ehdr) || b[EI_CLASS] != ELFCLASS64) {
        snprintf(err, errlen, "wrong architecture: 32-bit ELF, this host runs 64-bit %s", HOST_ARCH);
        return KNIT_ERR_INVAL;
    }
    Elf64_Ehdr eh;
    memcpy(&eh, b, sizeof(eh));
    if (b[EI_DATA] != ELFDATA2LSB || eh.e_machine != HOST_MACHINE) {
        snprintf(err, errlen, "wrong architecture: ELF for %s (e_machine %u), this host runs %s",
                 machine_name(eh.e_machine), eh.e_machine, HOST_ARCH);
        return KNIT_ERR_INVAL;
    }
    if (eh.e_type != ET_DYN) {
        snprintf(err, errlen, "not a shared object (ELF type %u): build it with -shared -fPIC",
                 eh.e_type);
        return KNIT_ERR_INVAL;
    }
    const char *bad = check_layout(b, len, &eh);
    if (bad) {
        snprintf(err, errlen, "truncated or corrupt ELF file (%zu bytes): %s", len, bad);
        return KNIT_ERR_INVAL;
    }
    return KNIT_OK;
}

static knit_status_t finish_open(void *dl, kn_mod_lib_t *out, char *err, size_t errlen)
{
    void *sym = dlsym(dl, KNIT_MOD_SYMBOL);
    if (!sym) {
        snprintf(err, errlen, "missing symbol '%s': not a knit module", KNIT_MOD_SYMBOL);
        dlclose(dl);
        return KNIT_ERR_INVAL;
    }
    out->dl = dl;
    out->entry = (knit_mod_entry_fn)sym;
    return KNIT_OK;
}

knit_status_t kn_mod_open_path(const char *path, const void *bytes, size_t len, kn_mod_lib_t *out, char *err,
                               size_t errlen)
{
    knit_status_t st = kn_mod_check_elf(bytes, len, err, errlen);
    if (st != KNIT_OK)
        return st;
    char *real = realpath(path, NULL);
    if (!real) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return KNIT_ERR_IO;
    }
    dlerror();
    void *dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    free(real);
    if (!dl) {
        const char *e = dlerror();
        snprintf(err, errlen, "cannot load it: %s", e ? e : "dlopen failed");
        return KNIT_ERR_INVAL;
    }
    return finish_open(dl, out, err, errlen);
}

knit_status_t kn_mod_open(const void *bytes, size_t len, kn_mod_lib_t *out, char *err, size_t errlen)
{
    const unsigned char *b = bytes;
    knit_status_t st = kn_mod_check_elf(bytes, len, err, errlen);
    if (st != KNIT_OK)
        return st;
    /* A private file under a name never used before in this process:
     * glibc's dlopen returns an already loaded object for a name it has
     * seen, so /proc/self/fd/N of a memfd (N reused) would not do.  The
     * file is unlinked as soon as it is mapped; its name carries the job's
     * id, so that knitrun's clean-up removes it should this process die
     * in between. */
    static unsigned serial;
    char path[256];
    unsigned short rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) < 0)
        rnd = 0;
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    const char *job = getenv(KN_ENV_JOBID);
    if (job && *job && !strchr(job, '/'))
        snprintf(path, sizeof(path), "%s/knit-%.64s-module.%d.%u.%04x.so", dir, job, (int)getpid(), ++serial, rnd);
    else
        snprintf(path, sizeof(path), "%s/knit-module.%d.%u.%04x.so", dir, (int)getpid(), ++serial, rnd);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "creating %s: %s", path, strerror(errno));
        return KNIT_ERR_IO;
    }
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, b + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, errlen, "writing the module to %s: %s", path, strerror(errno));
            close(fd);
            unlink(path);
            return KNIT_ERR_IO;
        }
        off += (size_t)w;
    }
    close(fd);
    dlerror();
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    unlink(path); /* the mappings keep what they need */
    if (!dl) {
        const char *e = dlerror();
        snprintf(err, errlen, "cannot load it: %s", e ? e : "dlopen failed");
        return KNIT_ERR_INVAL;
    }
    return finish_open(dl, out, err, errlen);
}

knit_status_t kn_mod_check_desc(const knit_mod_descriptor_t *d, char *err, size_t errlen)
{
    if (!d) {
        snprintf(err, errlen, "%s() returned no descriptor", KNIT_MOD_SYMBOL);
        return KNIT_ERR_INVAL;
    }
    if (d->abi_version < KNIT_MOD_ABI_OLDEST || d->abi_version > KNIT_MOD_ABI_VERSION) {
        snprintf(err, errlen, "wrong ABI version %u (this knit supports %u to %u): rebuild it against this "
                 "knit/module.h", d->abi_version, KNIT_MOD_ABI_OLDEST, KNIT_MOD_ABI_VERSION);
        return KNIT_ERR_INVAL;
    }
    if (d->size < sizeof(*d)) {
        snprintf(err, errlen, "descriptor of %u bytes, expected %zu", d->size, sizeof(*d));
        return KNIT_ERR_INVAL;
    }
    size_t n = d->name ? strnlen(d->name, KNIT_MOD_NAME_MAX) : 0;
    int ok = n > 0 && n < KNIT_MOD_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        char c = d->name[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
             c == '-' || c == '.';
    }
    if (!ok) {
        snprintf(err, errlen, "invalid module name (1..%d of [A-Za-z0-9_.-])", KNIT_MOD_NAME_MAX - 1);
        return KNIT_ERR_INVAL;
    }
    if (!d->init || !d->on_request) {
        snprintf(err, errlen, "module '%s' has no %s", d->name, d->init ? "on_request" : "init");
        return KNIT_ERR_INVAL;
    }
    return KNIT_OK;
}

void kn_mod_close(kn_mod_lib_t *lib)
{
    if (lib->dl)
        dlclose(lib->dl);
    lib->dl = NULL;
    lib->entry = NULL;
}

knit_status_t kn_mod_read_file(const char *path, void **bytes, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? KNIT_ERR_NOT_FOUND : KNIT_ERR_IO;
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size > (off_t)KN_OFF_MSG_MAX) {
        snprintf(err, errlen, "%s: not a regular file of at most %u bytes", path, KN_OFF_MSG_MAX);
        close(fd);
        return KNIT_ERR_INVAL;
    }
    size_t n = (size_t)sb.st_size;
    char *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return KNIT_ERR_NOMEM;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got != n) {
        snprintf(err, errlen, "%s: short read", path);
        free(buf);
        return KNIT_ERR_IO;
    }
    *bytes = buf;
    *len = n;
    return KNIT_OK;
}
