/*
 * The fuzz targets (tests/fuzz/fuzz_*.c) built by the normal compiler,
 * replaying every seed (tests/fuzz/corpus/<name>/) and every input that
 * once found a bug (tests/fuzz/regress/<name>/): make test covers them
 * without clang.  A failed property aborts: the test fails, and its output
 * names the file.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

#define TARGETS(X) X(boot) X(proxy) X(pkt) X(net) X(wire) X(sqe) X(sbx) X(loader) X(config) X(rmamod) X(rmadefer) X(dsmmod) X(pmi)

#define DECLARE(name) int kn_fuzz_##name(const uint8_t *data, size_t size);
TARGETS(DECLARE)

static int replay_dir(const char *name, const char *kind, int (*fn)(const uint8_t *, size_t))
{
    const char *root = getenv("ROOT") ? getenv("ROOT") : ".";
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/tests/fuzz/%s/%s", root, kind, name);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[8192];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            kn_test_fail(__FILE__, __LINE__, "cannot open %s", path);
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        rewind(f);
        uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
        if (!buf || (len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len))
            kn_test_fail(__FILE__, __LINE__, "cannot read %s", path);
        fclose(f);
        fprintf(stderr, "replaying %s\n", path);
        fn(buf, (size_t)len);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

#define REPLAY(name)                                                               \
    KN_TEST(replay_##name)                                                         \
    {                                                                              \
        int seeds = replay_dir(#name, "corpus", kn_fuzz_##name);                   \
        replay_dir(#name, "regress", kn_fuzz_##name);                              \
        if (seeds == 0)                                                            \
            kn_test_fail(__FILE__, __LINE__, "no seeds in tests/fuzz/corpus/" #name); \
    }
TARGETS(REPLAY)
