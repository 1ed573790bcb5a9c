#!/usr/bin/env bash
# Keeps ARCHITECTURE.md true: compares its target table (target, kind, dependencies with their platform
# conditions, in order) and its product table (product, kind, targets) with `swift package dump-package`.
# The tables are the ones between `<!-- architecture-check: targets|products -->` and `<!-- /architecture-check -->`.
# Prints every disagreement and `architecture: FAILED`, or `architecture: N targets and M products agree`.
# Usage: Tests/Fixtures/architecture/check.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The fuzz executable exists only under REALTIME_FUZZ=1; the page describes the ordinary manifest.
if ! env -u REALTIME_FUZZ swift package --package-path "$root" dump-package >"$tmp/package.json" 2>"$tmp/dump.log"; then
    cat "$tmp/dump.log" >&2
    echo "architecture: FAILED (swift package dump-package)" >&2
    exit 1
fi
python3 - "$tmp/package.json" "$root/ARCHITECTURE.md" <<'PY'
import json, re, sys

package = json.load(open(sys.argv[1]))
page = open(sys.argv[2], encoding="utf-8").read()

def table(name):
    """The rows of the marked table, as lists of cells (header and separator left out)."""
    match = re.search(r"<!-- architecture-check: %s -->\n(.*?)<!-- /architecture-check -->" % name, page, re.S)
    if not match:
        sys.exit(f"architecture: FAILED (ARCHITECTURE.md has no '<!-- architecture-check: {name} -->' table)")
    rows = []
    for line in match.group(1).splitlines():
        if not line.startswith("|"):
            continue
        # `\|` inside a cell is a literal bar, not a column.
        cells = [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if cells and not set(cells[0]) <= set("- :"):
            rows.append(cells)
    return rows[1:]  # the header

NAME = re.compile(r"`([^`]+)`(?:\s*\(([^)]*)\))?")

def listed(cell):
    """`A`, `B` (linux, android) → ["A", "B (android, linux)"]; "—" is the empty list."""
    return [name + (" (%s)" % ", ".join(sorted(p.strip() for p in platforms.split(","))) if platforms else "")
            for name, platforms in NAME.findall(cell)]

def declared(dependency):
    kind, value = next(iter(dependency.items()))
    name = value[0]
    condition = value[-1] if kind in ("target", "product", "byName") else None
    platforms = (condition or {}).get("platformNames") or []
    return name + (" (%s)" % ", ".join(sorted(platforms)) if platforms else "")

problems = []

def compare(what, page_rows, manifest):
    page_map = {}
    for row in page_rows:
        names = NAME.findall(row[0])
        if not names:
            problems.append(f"{what}: a row without a `name`: {' | '.join(row)}")
            continue
        page_map[names[0][0]] = (row[1], listed(row[2]))
    for name in manifest:
        if name not in page_map:
            problems.append(f"{what} {name}: in Package.swift, missing from ARCHITECTURE.md")
    for name in page_map:
        if name not in manifest:
            problems.append(f"{what} {name}: in ARCHITECTURE.md, not in Package.swift")
    for name, (kind, items) in manifest.items():
        if name not in page_map:
            continue
        page_kind, page_items = page_map[name]
        if page_kind != kind:
            problems.append(f"{what} {name}: kind is {kind}, ARCHITECTURE.md says {page_kind}")
        if page_items != items:
            problems.append(f"{what} {name}: Package.swift has {', '.join(items) or 'nothing'}; "
                            f"ARCHITECTURE.md has {', '.join(page_items) or 'nothing'}")

targets = {t["name"]: (t["type"], [declared(d) for d in t["dependencies"]]) for t in package["targets"]}
products = {p["name"]: (next(iter(p["type"])), list(p["targets"])) for p in package["products"]}
compare("target", table("targets"), targets)
compare("product", table("products"), products)
if problems:
    print("\n".join("architecture: " + p for p in problems), file=sys.stderr)
    print("architecture: FAILED (ARCHITECTURE.md disagrees with Package.swift; update the page with the manifest)",
          file=sys.stderr)
    sys.exit(1)
print(f"architecture: {len(targets)} targets and {len(products)} products agree with Package.swift")
PY
