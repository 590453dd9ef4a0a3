/*
 * Tunable parsing (src/util/config.c, the table in tunables.def): values
 * come from KNIT_* environment variables, which knitrun also carries to
 * other hosts.  The first input byte picks an entry of the table; the
 * rest is the text of its variable.
 * Properties: a value that parses formats (kn_config_format, what
 * knit-info prints) into text that parses back to the same value; a
 * refusal says why and leaves the field as it was.
 */
#include "fuzz.h"
#include "util/config.h"
#include "util/log.h"

KN_FUZZ_TARGET(config)
{
    kn_log_set_level(-1);
    if (size == 0 || !kn_config_count)
        return 0;
    const kn_config_entry_t *e = &kn_config_table[data[0] % kn_config_count];
    char *text = malloc(size);
    KN_FUZZ_CHECK(text);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    struct kn_config a, b;
    memset(&a, 0x77, sizeof(a));
    memset(&b, 0x11, sizeof(b));
    char err[256] = "";
    void *fa = (char *)&a + e->offset, *fb = (char *)&b + e->offset;
    if (kn_config_parse(e, text, fa, err, sizeof(err)) != KNIT_OK) {
        KN_FUZZ_CHECK(err[0]);
        struct kn_config untouched;
        memset(&untouched, 0x77, sizeof(untouched));
        KN_FUZZ_CHECK(!memcmp(&a, &untouched, sizeof(a)));
        free(text);
        return 0;
    }
    char shown[512];
    kn_config_format(e, &a, shown, sizeof(shown));
    if (e->type == KN_CT_STR) {
        KN_FUZZ_CHECK(*(const char **)fa == text);
        KN_FUZZ_CHECK(strlen(text) >= sizeof(shown) - 1 || !strcmp(shown, text));
        free(text);
        return 0;
    }
    KN_FUZZ_CHECK(kn_config_parse(e, shown, fb, err, sizeof(err)) == KNIT_OK);
    size_t width = e->type == KN_CT_SIZE || e->type == KN_CT_TIME || e->type == KN_CT_INT ? 8 : sizeof(int);
    KN_FUZZ_CHECK(!memcmp(fa, fb, width));
    free(text);
    return 0;
}
