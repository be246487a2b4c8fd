#!/usr/bin/env bash
# Checks that an hcomm-visualize report renders in a browser: loads it in headless Chromium,
# lets its script run, and reads the DOM that results. It passes when the script drew the
# timeline (one .rank-row per rank of the embedded data, at least one holding .op-span
# elements) and the operation table has data rows. Exit 0 when it renders, 1 when it does not
# or Chromium is missing. --screenshot OUT.png also saves a 1400x900 picture of the page.
# Usage: tests/tools/report_dom.sh REPORT.html [--screenshot OUT.png]
set -euo pipefail
usage="usage: report_dom.sh REPORT.html [--screenshot OUT.png]"
report="" screenshot=""
while (($#)); do
  case $1 in
    --screenshot) screenshot=${2:?$usage}; shift 2 ;;
    --screenshot=*) screenshot=${1#*=}; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) [[ -z $report ]] || { echo "$usage" >&2; exit 1; }; report=$1; shift ;;
  esac
done
[[ -n $report ]] || { echo "$usage" >&2; exit 1; }
[[ -f $report ]] || { echo "report_dom: $report: no such file" >&2; exit 1; }
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $browser ]]; then
  echo "report_dom: chromium is not installed (apt-get install -y chromium)" >&2
  exit 1
fi
url="file://$(realpath "$report")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--headless --no-sandbox --disable-gpu --virtual-time-budget=5000 --window-size=1400,900)

if ! timeout 120 "$browser" "${flags[@]}" --dump-dom "$url" >"$work/dom.html" 2>"$work/stderr"; then
  echo "report_dom: chromium failed on $report:" >&2
  tail -n 20 "$work/stderr" >&2
  exit 1
fi

# The DOM is read with Python's HTML parser: counts per rank row and the table's data rows.
python3 - "$work/dom.html" "$report" <<'EOF'
import json, re, sys
from html.parser import HTMLParser

dom_path, report = sys.argv[1], sys.argv[2]
dom = open(dom_path, encoding="utf-8", errors="replace").read()

VOID = ("area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr")

class Walk(HTMLParser):
    """Counts .op-span and .link-mark per .rank-row, and the rows of #op-table with cells."""
    def __init__(self):
        super().__init__()
        self.stack = []   # (tag, data-rank of the enclosing .rank-row or None, inside #op-table)
        self.rows, self.table_rows, self.row_has_td = {}, 0, False
    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        rank, in_table = self.stack[-1][1:] if self.stack else (None, False)
        if "rank-row" in classes:
            rank = attrs.get("data-rank", "?")
            self.rows.setdefault(rank, {"spans": 0, "links": 0})
        in_table = in_table or attrs.get("id") == "op-table"
        if rank is not None:
            self.rows[rank]["spans"] += "op-span" in classes
            self.rows[rank]["links"] += "link-mark" in classes
        if in_table and tag == "tr":
            self.row_has_td = False
        if in_table and tag == "td" and not self.row_has_td:
            self.row_has_td = True
            self.table_rows += 1
        if tag not in VOID:
            self.stack.append((tag, rank, in_table))
    def handle_startendtag(self, tag, attrs):   # <rect/> in SVG: counted, not pushed
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()
    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

if 'id="timeline"' not in dom:
    sys.exit(f"report_dom: FAIL: {report}: no #timeline in the rendered page")
match = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', dom, re.S)
data = json.loads(match.group(1)) if match else {}
ranks, ops = len(data.get("ranks", [])), len(data.get("ops", []))
if match and ops == 0:
    sys.exit(f"report_dom: FAIL: {report}: the report holds no operations to draw")
walk = Walk()
walk.feed(dom)
spans = sum(r["spans"] for r in walk.rows.values())
links = sum(r["links"] for r in walk.rows.values())
problems = []
if match and len(walk.rows) != ranks:
    problems.append(f"{len(walk.rows)} .rank-row elements for {ranks} ranks in the data")
if not any(r["spans"] for r in walk.rows.values()):
    problems.append("no .rank-row holds an .op-span: the timeline script did not draw")
empty = 'no operations in these profiles' in dom
if walk.table_rows == 0 or empty:
    problems.append("#op-table has no data rows")
if problems:
    sys.exit(f"report_dom: FAIL: {report}: " + "; ".join(problems))
rows = sorted(walk.rows.items(), key=lambda item: (len(item[0]), item[0]))   # 2 before 10
per_row = ", ".join(f"rank {k}: {v['spans']}" for k, v in rows[:8]) + (", ..." if rows[8:] else "")
print(f"report_dom: OK: {report}: {len(walk.rows)} rank rows drawn ({per_row} spans), "
      f"{links} link marks, {walk.table_rows} op-table rows")
EOF

if [[ -n $screenshot ]]; then
  out=$(realpath -m "$screenshot")
  if ! (cd "$work" && timeout 120 "$browser" "${flags[@]}" --screenshot="$out" "$url" \
        >/dev/null 2>"$work/stderr") || [[ ! -s $out ]]; then
    echo "report_dom: chromium could not write the screenshot $screenshot:" >&2
    tail -n 20 "$work/stderr" >&2
    exit 1
  fi
  echo "report_dom: screenshot $screenshot"
fi
