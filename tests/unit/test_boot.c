/* Unit tests of the boot layer: hostfiles and placement, the wire header,
 * keys and cookies, the key-value table, the singleton store, and the
 * client against a scripted store. */
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot/boot.h"
#include "boot/hostfile.h"
#include "boot/kv.h"
#include "boot/launcher.h"
#include "boot/proto.h"
#include "harness.h"
#include "util/config.h"

static char err[512];

KN_TEST(hostfile_good)
{
    kn_hostlist_t hl = {0};
    const char *text = "# cluster\n"
                       "alpha slots=4\n"
                       "\n"
                       "  beta   # one slot\n"
                       "gamma:2\n"
                       "alpha slots=2\n"  /* merged: alpha has 6 */
                       "10.0.0.7 slots=3";  /* no final newline */
    KN_CHECK_EQ(kn_hostfile_parse(text, &hl, err, sizeof(err)), KNIT_OK);
    KN_CHECK_EQ(hl.count, 4);
    KN_CHECK_STR(hl.hosts[0].name, "alpha");
    KN_CHECK_EQ(hl.hosts[0].slots, 6);
    KN_CHECK_STR(hl.hosts[1].name, "beta");
    KN_CHECK_EQ(hl.hosts[1].slots, 1);
    KN_CHECK_STR(hl.hosts[2].name, "gamma");
    KN_CHECK_EQ(hl.hosts[2].slots, 2);
    KN_CHECK_STR(hl.hosts[3].name, "10.0.0.7");
    KN_CHECK_EQ(kn_hostlist_slots(&hl), 12);
    kn_hostlist_free(&hl);
}

KN_TEST(hostfile_bad)
{
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"a slots=0\n", "line 1"},
        {"a\nb slots=x\n", "line 2"},
        {"a slots=2 slots=3\n", "twice"},
        {"a b\n", "unexpected 'b'"},
        {"-oProxyCommand=evil\n", "invalid host name"},
        {"a:0\n", "slot count"},
        {"# nothing\n\n", "no hosts"},
        {"a max_slots=3\n", "unexpected"},
        {"bad$name\n", "invalid host name"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        kn_hostlist_t hl = {0};
        err[0] = '\0';
        KN_CHECK_EQ(kn_hostfile_parse(bad[i].text, &hl, err, sizeof(err)), KNIT_ERR_INVAL);
        if (!strstr(err, bad[i].msg))
            kn_test_fail(__FILE__, __LINE__, "'%s': message '%s' lacks '%s'", bad[i].text, err,
                         bad[i].msg);
        KN_CHECK(hl.hosts == NULL && hl.count == 0);
    }
    kn_hostlist_t hl = {0};
    KN_CHECK_EQ(kn_hostfile_load("/nonexistent/hostfile", &hl, err, sizeof(err)), KNIT_ERR_INVAL);
    KN_CHECK(strstr(err, "/nonexistent/hostfile") != NULL);
}

KN_TEST(hostlist)
{
    kn_hostlist_t hl = {0};
    KN_CHECK_EQ(kn_hostlist_parse("a,b:3,c", &hl, err, sizeof(err)), KNIT_OK);
    KN_CHECK_EQ(hl.count, 3);
    KN_CHECK_EQ(hl.hosts[1].slots, 3);
    kn_hostlist_free(&hl);
    KN_CHECK_EQ(kn_hostlist_parse("a,,b", &hl, err, sizeof(err)), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_hostlist_parse("", &hl, err, sizeof(err)), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_hostlist_parse("a:x", &hl, err, sizeof(err)), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_hostlist_parse("a b", &hl, err, sizeof(err)), KNIT_ERR_INVAL);
}

KN_TEST(placement)
{
    kn_hostlist_t hl = {0};
    int c[3];
    KN_CHECK_EQ(kn_hostlist_parse("a:2,b:2,c:1", &hl, err, sizeof(err)), KNIT_OK);
    kn_place_hosts(&hl, 3, c); /* fill in order */
    KN_CHECK(c[0] == 2 && c[1] == 1 && c[2] == 0);
    kn_place_hosts(&hl, 5, c);
    KN_CHECK(c[0] == 2 && c[1] == 2 && c[2] == 1);
    kn_place_hosts(&hl, 8, c); /* wraps in blocks of slots: a+2, b+1 */
    KN_CHECK(c[0] == 4 && c[1] == 3 && c[2] == 1);
    kn_hostlist_free(&hl);
    KN_CHECK_EQ(kn_hostlist_parse("x,y", &hl, err, sizeof(err)), KNIT_OK);
    kn_place_hosts(&hl, 4, c); /* one slot each: 2 and 2 */
    KN_CHECK(c[0] == 2 && c[1] == 2);
    kn_hostlist_free(&hl);
    kn_place_block(5, 2, c);
    KN_CHECK(c[0] == 3 && c[1] == 2);
    kn_place_block(7, 3, c);
    KN_CHECK(c[0] == 3 && c[1] == 2 && c[2] == 2);
}

KN_TEST(header_roundtrip)
{
    uint8_t raw[KN_BOOT_HDR_SIZE];
    kn_boot_hdr_t h;
    kn_boot_hdr_encode(raw, KN_BOOT_PUT, 12);
    KN_CHECK_EQ(raw[0], 'K'); /* big-endian magic spells KNBT */
    KN_CHECK_EQ(kn_boot_hdr_decode(raw, &h, NULL), KNIT_OK);
    KN_CHECK_EQ(h.type, KN_BOOT_PUT);
    KN_CHECK_EQ(h.len, 12);
    KN_CHECK_EQ(h.version, KN_BOOT_VERSION);
}

KN_TEST(header_rejects)
{
    uint8_t raw[KN_BOOT_HDR_SIZE];
    kn_boot_hdr_t h = {0};
    const char *why = NULL;
    struct {
        int byte;
        uint8_t val;
        const char *why;
    } cases[] = {
        {0, 'X', "bad magic"},
        {5, KN_BOOT_VERSION + 1, "unsupported protocol version"},
        {15, 1, "reserved field not zero"},
        {7, 0, "unknown message type"},
        {7, KN_BOOT_TYPE_END, "unknown message type"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kn_boot_hdr_encode(raw, KN_BOOT_GET, 4);
        raw[cases[i].byte] = cases[i].val;
        h.type = 99;
        KN_CHECK_EQ(kn_boot_hdr_decode(raw, &h, &why), KNIT_ERR_PROTO);
        KN_CHECK_STR(why, cases[i].why);
        KN_CHECK_EQ(h.type, 99); /* out-parameter untouched */
    }
    /* lengths outside the type's bounds */
    kn_boot_hdr_encode(raw, KN_BOOT_HELLO, KN_BOOT_HELLO_LEN - 1);
    KN_CHECK_EQ(kn_boot_hdr_decode(raw, &h, &why), KNIT_ERR_PROTO);
    kn_boot_hdr_encode(raw, KN_BOOT_GET, KN_BOOT_KEY_MAX + 1);
    KN_CHECK_EQ(kn_boot_hdr_decode(raw, &h, &why), KNIT_ERR_PROTO);
    kn_boot_hdr_encode(raw, KN_BOOT_FENCE, 1);
    KN_CHECK_EQ(kn_boot_hdr_decode(raw, &h, &why), KNIT_ERR_PROTO);
    kn_boot_hdr_encode(raw, KN_BOOT_VALUE, 0xffffffffu);
    KN_CHECK_EQ(kn_boot_hdr_decode(raw, &h, &why), KNIT_ERR_PROTO);
    KN_CHECK_STR(why, "bad length for message type");
}

KN_TEST(keys_and_cookies)
{
    KN_CHECK(kn_boot_key_valid("a", 1));
    KN_CHECK(!kn_boot_key_valid("", 0));
    KN_CHECK(!kn_boot_key_valid("a b", 3));
    KN_CHECK(!kn_boot_key_valid("a\n", 2));
    char big[KN_BOOT_KEY_MAX + 1];
    memset(big, 'k', sizeof(big));
    KN_CHECK(kn_boot_key_valid(big, KN_BOOT_KEY_MAX));
    KN_CHECK(!kn_boot_key_valid(big, KN_BOOT_KEY_MAX + 1));
    char c1[KN_BOOT_COOKIE_LEN + 1], c2[KN_BOOT_COOKIE_LEN + 1];
    KN_CHECK_EQ(kn_boot_cookie_new(c1), KNIT_OK);
    KN_CHECK_EQ(kn_boot_cookie_new(c2), KNIT_OK);
    KN_CHECK(kn_boot_cookie_valid(c1, strlen(c1)));
    KN_CHECK(strcmp(c1, c2) != 0);
    KN_CHECK(kn_boot_cookie_equal(c1, c1));
    KN_CHECK(!kn_boot_cookie_equal(c1, c2));
    c1[3] = 'G';
    KN_CHECK(!kn_boot_cookie_valid(c1, strlen(c1)));
    KN_CHECK(!kn_boot_cookie_valid(c2, KN_BOOT_COOKIE_LEN - 1));
}

KN_TEST(addresses)
{
    struct sockaddr_storage ss;
    socklen_t len;
    KN_CHECK_EQ(kn_boot_addr_parse("unix:/tmp/x.sock", &ss, &len), KNIT_OK);
    KN_CHECK_EQ(ss.ss_family, AF_UNIX);
    KN_CHECK_EQ(kn_boot_addr_parse("127.0.0.1:80", &ss, &len), KNIT_OK);
    KN_CHECK_EQ(ss.ss_family, AF_INET);
    KN_CHECK_EQ(kn_boot_addr_parse("ipv4:10.1.2.3:9", &ss, &len), KNIT_OK);
    KN_CHECK_EQ(kn_boot_addr_parse("[::1]:80", &ss, &len), KNIT_OK);
    KN_CHECK_EQ(ss.ss_family, AF_INET6);
    KN_CHECK_EQ(kn_boot_addr_parse("127.0.0.1", &ss, &len), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_boot_addr_parse("127.0.0.1:0", &ss, &len), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_boot_addr_parse("127.0.0.1:65536", &ss, &len), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_boot_addr_parse("unix:", &ss, &len), KNIT_ERR_INVAL);
}

KN_TEST(kv_table)
{
    kn_kv_t *kv;
    KN_CHECK_EQ(kn_kv_create(&kv), KNIT_OK);
    char key[32];
    for (int i = 0; i < 1000; i++) { /* forces growth */
        int n = snprintf(key, sizeof(key), "key%d", i);
        KN_CHECK_EQ(kn_kv_put(kv, key, (size_t)n, &i, sizeof(i)), KNIT_OK);
    }
    KN_CHECK_EQ(kn_kv_count(kv), 1000);
    size_t len;
    const int *v = kn_kv_get(kv, "key777", 6, &len);
    KN_CHECK(v && len == sizeof(int) && *v == 777);
    KN_CHECK(kn_kv_get(kv, "key77", 4, &len) != NULL); /* "key7": prefix is its own key */
    KN_CHECK(kn_kv_get(kv, "nokey", 5, &len) == NULL);
    KN_CHECK_EQ(kn_kv_put(kv, "key1", 4, "", 0), KNIT_OK); /* replace, empty value */
    KN_CHECK(kn_kv_get(kv, "key1", 4, &len) != NULL && len == 0);
    KN_CHECK_EQ(kn_kv_count(kv), 1000);
    kn_kv_destroy(kv);
}

KN_TEST(singleton_store)
{
    kn_boot_t *b;
    KN_CHECK_EQ(kn_boot_connect(NULL, NULL, 0, 0, &b), KNIT_OK);
    KN_CHECK(kn_boot_is_singleton(b));
    KN_CHECK_EQ(kn_boot_put(b, "k", "hello", 5), KNIT_OK);
    KN_CHECK_EQ(kn_boot_fence(b), KNIT_OK);
    char buf[8];
    size_t len = 0;
    KN_CHECK_EQ(kn_boot_get(b, "k", buf, sizeof(buf), &len), KNIT_OK);
    KN_CHECK(len == 5 && !memcmp(buf, "hello", 5));
    KN_CHECK_EQ(kn_boot_get(b, "k", buf, 2, &len), KNIT_ERR_TRUNCATE);
    KN_CHECK_EQ(len, 5);
    KN_CHECK_EQ(kn_boot_get(b, "missing", buf, sizeof(buf), &len), KNIT_ERR_NOT_FOUND);
    KN_CHECK_EQ(kn_boot_put(b, "bad key", "x", 1), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_boot_put(b, "", "x", 1), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_boot_finalize(b), KNIT_OK);
}

/* The client against a scripted store on a Unix socket: the store answers
 * HELLO with the given reply bytes; returns what kn_boot_connect says. */
static knit_status_t client_vs(const uint8_t *reply, size_t rlen)
{
    char path[108];
    snprintf(path, sizeof(path), "/tmp/knit-test-boot-%d.sock", (int)getpid());
    unlink(path);
    int ls = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    strcpy(un.sun_path, path);
    if (ls < 0 || bind(ls, (struct sockaddr *)&un, sizeof(un)) < 0 || listen(ls, 1) < 0)
        kn_test_fail(__FILE__, __LINE__, "cannot listen on %s", path);
    pid_t pid = fork();
    if (pid == 0) {
        int c = accept(ls, NULL, NULL);
        uint8_t hello[KN_BOOT_HDR_SIZE + KN_BOOT_HELLO_LEN];
        size_t got = 0;
        while (c >= 0 && got < sizeof(hello)) {
            ssize_t n = read(c, hello + got, sizeof(hello) - got);
            if (n <= 0)
                _exit(1);
            got += (size_t)n;
        }
        if (write(c, reply, rlen) != (ssize_t)rlen)
            _exit(1);
        close(c);
        _exit(0);
    }
    char addrs[128], cookie[KN_BOOT_COOKIE_LEN + 1];
    snprintf(addrs, sizeof(addrs), "unix:%s", path);
    kn_boot_cookie_new(cookie);
    kn_boot_t *b = NULL;
    knit_status_t st = kn_boot_connect(addrs, cookie, KN_BOOT_ROLE_RANK, 0, &b);
    if (st == KNIT_OK)
        kn_boot_close(b);
    waitpid(pid, NULL, 0);
    close(ls);
    unlink(path);
    return st;
}

KN_TEST(client_checks_replies)
{
    kn_config_load();
    uint8_t msg[KN_BOOT_HDR_SIZE + 4];
    kn_boot_hdr_encode(msg, KN_BOOT_ACK, 4);
    kn_boot_put32(msg + KN_BOOT_HDR_SIZE, 0);
    KN_CHECK_EQ(client_vs(msg, sizeof(msg)), KNIT_OK);
    kn_boot_put32(msg + KN_BOOT_HDR_SIZE, (uint32_t)KNIT_ERR_AUTH);
    KN_CHECK_EQ(client_vs(msg, sizeof(msg)), KNIT_ERR_AUTH);
    kn_boot_put32(msg + KN_BOOT_HDR_SIZE, 0);
    msg[1] ^= 1; /* bad magic */
    KN_CHECK_EQ(client_vs(msg, sizeof(msg)), KNIT_ERR_PROTO);
    kn_boot_hdr_encode(msg, KN_BOOT_VALUE, 4); /* wrong reply type */
    KN_CHECK_EQ(client_vs(msg, sizeof(msg)), KNIT_ERR_PROTO);
}

KN_TEST(client_rejects_bad_arguments)
{
    kn_boot_t *b = NULL;
    KN_CHECK_EQ(kn_boot_connect("unix:/x", "notacookie", KN_BOOT_ROLE_RANK, 0, &b), KNIT_ERR_INVAL);
    char cookie[KN_BOOT_COOKIE_LEN + 1];
    kn_boot_cookie_new(cookie);
    KN_CHECK_EQ(kn_boot_connect("nonsense", cookie, KN_BOOT_ROLE_RANK, 0, &b), KNIT_ERR_INVAL);
    KN_CHECK_EQ(kn_boot_connect("unix:/x", cookie, 42, 0, &b), KNIT_ERR_INVAL);
    KN_CHECK(b == NULL);
}

/* ------------------------------------------------------------ PMI client */

/* The client of src/boot/pmi.c against answers written beforehand; what
 * it sent is returned in sent (NUL-terminated). */
static void pmi_script(int version, const char *answers, size_t alen, int *node_of, char *val, size_t vcap,
                       char *sent, size_t scap, kn_launcher_t **out)
{
    int sv[2];
    KN_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    KN_CHECK(write(sv[1], answers, alen) == (ssize_t)alen);
    KN_CHECK(shutdown(sv[1], SHUT_WR) == 0);
    char fd[16];
    snprintf(fd, sizeof(fd), "%d", sv[0]);
    setenv("PMI_FD", fd, 1);
    setenv("PMI_RANK", "1", 1);
    setenv("PMI_SIZE", "3", 1);
    kn_launcher_t *l = &kn_launch_pmi;
    l->version = version;
    char why[512] = "";
    KN_CHECK_EQ(l->init(l, why, sizeof(why)), KNIT_OK);
    KN_CHECK_EQ(l->rank, 1);
    KN_CHECK_EQ(l->size, 3);
    KN_CHECK_EQ(l->nodes(l, node_of, why, sizeof(why)), KNIT_OK);
    KN_CHECK_EQ(l->put(l, "knit.job", "a!b!c"), KNIT_OK);
    KN_CHECK_EQ(l->fence(l), KNIT_OK);
    KN_CHECK_EQ(l->get(l, 0, "knit.job", val, vcap), KNIT_OK);
    KN_CHECK_EQ(l->get(l, 0, "missing", why, sizeof(why)), KNIT_ERR_NOT_FOUND);
    l->finalize(l);
    close(sv[0]);
    ssize_t n = read(sv[1], sent, scap - 1);
    sent[n > 0 ? n : 0] = '\0';
    close(sv[1]);
    unsetenv("PMI_FD");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
    *out = l;
}

KN_TEST(pmi1_client)
{
    static const char answers[] = "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"
                                  "cmd=my_kvsname kvsname=kvs_7_0 rc=0\n"
                                  "cmd=get_result rc=0 value=(vector,(0,3,1))\n"
                                  "cmd=put_result rc=0 msg=success\n"
                                  "cmd=barrier_out\n"
                                  "cmd=get_result rc=0 value=a!b!c\n"
                                  "cmd=get_result rc=-1 msg=key_missing_not_found\n"
                                  "cmd=finalize_ack\n";
    int node_of[3];
    char val[64], sent[2048];
    kn_launcher_t *l;
    /* asked for version 2 first, the server answers in 1: knit speaks 1 */
    pmi_script(0, answers, sizeof(answers) - 1, node_of, val, sizeof(val), sent, sizeof(sent), &l);
    KN_CHECK_EQ(l->version, 1);
    KN_CHECK(node_of[0] == 0 && node_of[1] == 1 && node_of[2] == 2);
    KN_CHECK_STR(val, "a!b!c");
    KN_CHECK_STR(sent, "cmd=init pmi_version=2 pmi_subversion=0\n"
                       "cmd=get_my_kvsname\n"
                       "cmd=get kvsname=kvs_7_0 key=PMI_process_mapping\n"
                       "cmd=put kvsname=kvs_7_0 key=knit.job value=a!b!c\n"
                       "cmd=barrier_in\n"
                       "cmd=get kvsname=kvs_7_0 key=knit.job\n"
                       "cmd=get kvsname=kvs_7_0 key=missing\n"
                       "cmd=finalize\n");
}

KN_TEST(pmi2_client)
{
    static const char answers[] = "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n"
                                  "55    cmd=fullinit-response;rc=0;pmi-version=2;rank=1;size=3;"
                                  "76    cmd=info-getjobattr-response;rc=0;found=TRUE;value=(vector,(0,1,2),(1,1,1));"
                                  "26    cmd=kvs-put-response;rc=0;"
                                  "28    cmd=kvs-fence-response;rc=0;"
                                  "50    cmd=kvs-get-response;rc=0;found=TRUE;value=a!b;;c;"
                                  "38    cmd=kvs-get-response;rc=0;found=FALSE;"
                                  "27    cmd=finalize-response;rc=0;";
    int node_of[3];
    char val[64], sent[2048];
    kn_launcher_t *l;
    setenv("PMI_JOBID", "7.0", 1);
    pmi_script(2, answers, sizeof(answers) - 1, node_of, val, sizeof(val), sent, sizeof(sent), &l);
    unsetenv("PMI_JOBID");
    KN_CHECK_EQ(l->version, 2);
    KN_CHECK(node_of[0] == 0 && node_of[1] == 0 && node_of[2] == 1);
    KN_CHECK_STR(val, "a!b;c");
    KN_CHECK_STR(sent, "cmd=init pmi_version=2 pmi_subversion=0\n"
                       "51    cmd=fullinit;pmijobid=7.0;pmirank=1;threaded=FALSE;"
                       "44    cmd=info-getjobattr;key=PMI_process_mapping;"
                       "37    cmd=kvs-put;key=knit.job;value=a!b!c;"
                       "14    cmd=kvs-fence;"
                       "33    cmd=kvs-get;srcid=0;key=knit.job;"
                       "32    cmd=kvs-get;srcid=0;key=missing;"
                       "13    cmd=finalize;");
}
