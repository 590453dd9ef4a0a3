/*
 * Tunables: one table (tunables.def), read from KNIT_* environment
 * variables by kn_config_load() into the global kn_cfg.
 */
#ifndef KN_UTIL_CONFIG_H
#define KN_UTIL_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "knit.h"

typedef enum { KN_CT_SIZE, KN_CT_TIME, KN_CT_INT, KN_CT_BOOL, KN_CT_ENUM, KN_CT_STR } kn_config_type_t;

#define KN_CTYPE_SIZE uint64_t
#define KN_CTYPE_TIME uint64_t
#define KN_CTYPE_INT int64_t
#define KN_CTYPE_BOOL int
#define KN_CTYPE_ENUM int
#define KN_CTYPE_STR const char *

struct kn_config {
#define KN_TUNABLE(NAME, field, TYPE, def, choices, help) KN_CTYPE_##TYPE field;
#include "util/tunables.def"
#undef KN_TUNABLE
};

/* The values in force (defaults until kn_config_load succeeds). */
extern struct kn_config kn_cfg;

typedef struct kn_config_entry {
    const char *name;       /* without the KNIT_ prefix */
    kn_config_type_t type;
    const char *def;
    const char *choices;    /* ENUM only: "a|b|c" */
    const char *help;
    size_t offset;          /* of the field in struct kn_config */
} kn_config_entry_t;

extern const kn_config_entry_t kn_config_table[];
extern const size_t kn_config_count;

/*
 * Read every tunable from the environment.  A malformed value is logged
 * with the variable's name and makes the call fail with KNIT_ERR_INVAL (the
 * remaining values keep their defaults).  Unknown KNIT_* variables get a
 * warning (they are usually typos).  Idempotent.
 */
knit_status_t kn_config_load(void);

/* Parse one value of the entry's type into *out (the field's type).
 * On error returns KNIT_ERR_INVAL and writes a reason into err. */
knit_status_t kn_config_parse(const kn_config_entry_t *e, const char *text,
                              void *out, char *err, size_t errlen);

knit_status_t kn_parse_size(const char *text, uint64_t *out);
knit_status_t kn_parse_time(const char *text, uint64_t *out_ns);
knit_status_t kn_parse_int(const char *text, int64_t *out);
knit_status_t kn_parse_bool(const char *text, int *out);
/* A job variable (util/env.h, PMI_RANK ...) holding a count: 1 with *out
 * set when it is a decimal in 0..max, 0 when unset, -1 otherwise. */
int kn_env_count(const char *name, int max, int *out);
/* index of text in "a|b|c", or KNIT_ERR_INVAL */
knit_status_t kn_parse_enum(const char *choices, const char *text, int *out);

/* Format a value for display ("8k", "250us", ...). */
void kn_format_size(uint64_t v, char *buf, size_t len);
void kn_format_time(uint64_t ns, char *buf, size_t len);
void kn_config_format(const kn_config_entry_t *e, const struct kn_config *cfg,
                      char *buf, size_t len);

const kn_config_entry_t *kn_config_find(const char *name);

/* Apply one "KNIT_NAME=value" to cfg (a copy of kn_cfg, say) when NAME is
 * a tunable: KNIT_OK, also for anything else, or KNIT_ERR_INVAL (logged)
 * for a bad value.  The value is not copied (STR tunables point into it). */
knit_status_t kn_config_apply(struct kn_config *cfg, const char *assignment);

/* Print every tunable: name, value in force, default, help. */
void kn_config_print(FILE *f);
/* Markdown reference (docs/tunables.md). */
void kn_config_print_markdown(FILE *f);

#endif
