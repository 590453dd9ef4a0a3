/*
 * The module loader's checks (src/offload/loader.c): what a module file
 * (bytes from a rank, or shipped between daemons) must be before it goes
 * near dlopen, and what its descriptor must be before anything of it is
 * called.  First input byte even: the rest is a module file for
 * kn_mod_check_elf; odd: the rest gives a descriptor for
 * kn_mod_check_desc (ABI version, size, name bytes, which entry points
 * exist).  Nothing is ever dlopen()ed here.
 * Properties: an accepted file is a 64-bit ELF shared object for this
 * machine whose program headers and loadable and dynamic segments lie in
 * the file (every byte of them is read here: the copy is exactly the
 * file's size, so a range outside it is a sanitizer report); an accepted
 * descriptor has this ABI, a name of 1..31 allowed characters, init and
 * on_request; a refusal says why.
 */
#include <elf.h>

#include "fuzz.h"
#include "offload/offload.h"

static void elf(const uint8_t *data, size_t size)
{
    uint8_t *b = kn_fz_dup(data, size);
    char err[256] = "";
    if (kn_mod_check_elf(b, size, err, sizeof(err)) != KNIT_OK) {
        KN_FUZZ_CHECK(err[0]);
        kn_fz_free(b, size);
        return;
    }
    Elf64_Ehdr eh;
    KN_FUZZ_CHECK(size >= sizeof(eh));
    memcpy(&eh, b, sizeof(eh));
    KN_FUZZ_CHECK(!memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64);
    KN_FUZZ_CHECK(eh.e_type == ET_DYN && eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0);
    volatile uint8_t sum = 0;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, b + eh.e_phoff + (size_t)i * sizeof(ph), sizeof(ph));
        if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC)
            continue;
        KN_FUZZ_CHECK(ph.p_filesz <= ph.p_memsz);
        for (uint64_t k = 0; k < ph.p_filesz; k++)
            sum ^= b[ph.p_offset + k];
    }
    (void)sum;
    kn_fz_free(b, size);
}

static int32_t d_init(knit_mod_ctx_t *m, const knit_mod_services_t *s)
{
    (void)m, (void)s;
    return 0;
}

static void d_req(knit_mod_ctx_t *m, const knit_mod_request_t *r, const void *a)
{
    (void)m, (void)r, (void)a;
}

static void desc(const uint8_t *data, size_t size)
{
    kn_fz_t f = {data, size};
    knit_mod_descriptor_t d;
    memset(&d, 0, sizeof(d));
    d.abi_version = kn_fz_u8(&f) & 1 ? KNIT_MOD_ABI_VERSION : kn_fz_u32(&f);
    d.size = kn_fz_u8(&f) & 1 ? (uint32_t)sizeof(d) : kn_fz_u32(&f);
    uint8_t which = kn_fz_u8(&f);
    d.init = which & 1 ? d_init : NULL;
    d.on_request = which & 2 ? d_req : NULL;
    /* the name: the rest of the input, in a buffer at least as long as the
     * longest name the check reads (a module's name is a string in its
     * image: bytes after it are there to read) */
    size_t n = f.n;
    char *name = calloc(n + KNIT_MOD_NAME_MAX + 1, 1);
    KN_FUZZ_CHECK(name);
    memcpy(name, f.p, n);
    d.name = which & 4 ? NULL : name;
    char err[256] = "";
    knit_status_t st = kn_mod_check_desc(&d, err, sizeof(err));
    if (st != KNIT_OK) {
        KN_FUZZ_CHECK(err[0]);
    } else {
        KN_FUZZ_CHECK(d.abi_version == KNIT_MOD_ABI_VERSION && d.size >= sizeof(d) && d.init && d.on_request);
        size_t len = strlen(d.name);
        KN_FUZZ_CHECK(len > 0 && len < KNIT_MOD_NAME_MAX);
        for (size_t i = 0; i < len; i++)
            KN_FUZZ_CHECK(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.", d.name[i]));
    }
    free(name);
}

KN_FUZZ_TARGET(loader)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        desc(data + 1, size - 1);
    else
        elf(data + 1, size - 1);
    return 0;
}
