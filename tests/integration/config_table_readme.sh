#!/usr/bin/env bash
# The README's configuration table (between its config-table:begin and config-table:end lines)
# must list exactly the variables of core/config_vars.cpp, in its order, with its defaults:
# column 1 and 2 of every row against `hcomm-info --config --markdown`. Meanings may differ.
# Usage: config_table_readme.sh README HCOMM_INFO
set -euo pipefail
readme=$1
info=$2
fail() { echo "config_table_readme: $*" >&2; exit 1; }

# "| `HCOMM_X` | default | meaning |" -> "`HCOMM_X` | default", blanks around cells dropped.
names_and_defaults() {
  awk -F'|' '/^\| *`HCOMM_/ {
    gsub(/^[ \t]+|[ \t]+$/, "", $2); gsub(/^[ \t]+|[ \t]+$/, "", $3); print $2 " | " $3 }'
}

code=$("$info" --config --markdown | names_and_defaults)
[ -n "$code" ] || fail "hcomm-info --config --markdown printed no variable"
grep -q '<!-- config-table:begin' "$readme" || fail "$readme has no config-table:begin line"
grep -q '<!-- config-table:end' "$readme" || fail "$readme has no config-table:end line"
doc=$(sed -n '/<!-- config-table:begin/,/<!-- config-table:end/p' "$readme" | names_and_defaults)
if ! differences=$(diff <(echo "$code") <(echo "$doc")); then
  fail "the README's table (>) differs from the code's (<):"$'\n'"$differences"
fi
echo "config_table_readme: ok ($(wc -l <<<"$code") variables)"
