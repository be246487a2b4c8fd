#!/usr/bin/env bash
# The style CI holds the tree to: every tracked C/C++ file as clang-format (.clang-format) writes
# it, no unit case name that ctest would split, and no file of the library (the layers of
# layers.txt but tools) over 600 lines.
# Usage: tests/style/style.sh REPOSITORY_ROOT
set -euo pipefail
root=${1:?usage: style.sh REPOSITORY_ROOT}
cd "$root"
command -v clang-format >/dev/null || { echo "style: clang-format is missing (apt-get install clang-format)"; exit 1; }
failed=0
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.c')
if ! clang-format --dry-run --Werror "${sources[@]}" 2>/tmp/style.$$; then
  grep -E '^[^ ].*: (error|warning):' /tmp/style.$$ | cut -d: -f1 | sort -u | sed 's/^/style: not clang-formatted: /'
  echo "style: run clang-format -i on the files above"
  failed=1
fi
rm -f /tmp/style.$$
# ctest would split a unit case whose name has a ';' into two tests that match nothing.
if grep -n 'TEST_CASE("[^"]*;' tests/unit/*.cpp; then
  echo "style: a unit case name above contains ';': use a comma"
  failed=1
fi
layers=$(grep -E '^[a-z]' layers.txt | grep -vx tools)
for layer in $layers; do
  while read -r lines file; do
    [[ $file == total ]] && continue
    if ((lines > 600)); then
      echo "style: $file has $lines lines: split it along its concepts (at most 600)"
      failed=1
    fi
  done < <(git ls-files "$layer/*.cpp" "$layer/*.hpp" | xargs -r wc -l)
done
((failed == 0)) && echo "style: ${#sources[@]} files formatted, no library file over 600 lines"
exit $failed
