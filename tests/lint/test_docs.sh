#!/usr/bin/env bash
# docs/tunables.md is generated from the table (make docs) and must match it.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
if diff -u docs/tunables.md <("$BUILD/bin/knit-info" --tunables-md) >/tmp/knit-docs-diff.$$ 2>&1; then
    echo "PASS docs.tunables_md_matches_table"
else
    echo "FAIL docs.tunables_md_matches_table: run 'make docs'"
    head -n 20 /tmp/knit-docs-diff.$$
fi
rm -f /tmp/knit-docs-diff.$$
