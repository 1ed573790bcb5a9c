#!/usr/bin/env bash
# The public API surface check. Extracts the symbol graph of every library module (the modules.sh build of
# the docs step, then `swift-symbolgraph-extract` at public level, SPI symbols and members synthesized from
# protocol extensions left out), prints each module's public symbols as a sorted list, one a line:
#     <kind> <full path> :: <declaration>
# and compares it with the recorded baseline Tests/APISurface/<Module>.txt. A symbol that is not recorded
# fails the check; a recorded symbol that disappeared is printed as a `warning: removed` line and fails too,
# so that a removal is always a decision. `--update` rewrites the baselines instead of failing. A public
# symbol without a doc comment (its own, or the one it inherits from the protocol requirement it implements)
# fails the check in both modes.
# Prints `api-surface: <Module> <count> public symbols` per module and `api-surface: passed` at the end.
# Usage: Tests/APISurface/check.sh [--update]
set -uo pipefail
export LC_ALL=C   # comm and the sorted lists agree on byte order
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "api-surface: FAILED ($1)" >&2; exit 1; }

update=0
case "${1:-}" in
    "") ;;
    --update) update=1 ;;
    *) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac

# The library products, in dependency order.
modules=(RealtimeCore RealtimeWebSocket RealtimeSocketIO RealtimePusher RealtimeActionCable Realtime RealtimeTesting
         RealtimeSocketIOTesting RealtimePusherTesting RealtimeActionCableTesting)

docs="$root/Tests/Fixtures/docs"
source "$docs/modules.sh"
for module in "${modules[@]}"; do
    [ -f "$bin/Modules/$module.swiftmodule" ] || fail "no $module.swiftmodule in $bin/Modules"
done

case "$(uname -m)" in
    arm64 | aarch64) arch=aarch64 ;;
    *) arch=x86_64 ;;
esac
case "$(uname -s)" in
    Darwin) target="$(uname -m)-apple-macosx13.0" ;;
    *) target="$arch-unknown-linux-gnu" ;;
esac

status=0
undocumented=0
for module in "${modules[@]}"; do
    out="$tmp/graphs/$module"
    mkdir -p "$out"
    if ! swift-symbolgraph-extract -module-name "$module" -target "$target" "${import_flags[@]}" \
            -minimum-access-level public -skip-synthesized-members -output-dir "$out" \
            >"$tmp/extract-$module.log" 2>&1; then
        cat "$tmp/extract-$module.log" >&2
        fail "swift-symbolgraph-extract -module-name $module"
    fi
    # One line per public symbol, from the module's own graph and its graphs of extensions to other
    # modules' types (`<Module>@<Other>.symbols.json`, listed with `(extension in <Other>)`).
    python3 - "$module" "$out" "$tmp/$module.undocumented" >"$tmp/$module.txt" <<'EOF' || fail "reading the symbol graph of $module"
import json, os, re, sys
module, directory, undocumented_path = sys.argv[1], sys.argv[2], sys.argv[3]
lines = set()
undocumented = set()
for name in sorted(os.listdir(directory)):
    if not name.endswith(".symbols.json"):
        continue
    extended = name[:-len(".symbols.json")].partition("@")[2]
    with open(os.path.join(directory, name)) as f:
        graph = json.load(f)
    for symbol in graph.get("symbols", []):
        if symbol.get("accessLevel") not in ("public", "open"):
            continue
        kind = symbol["kind"]["identifier"].removeprefix("swift.")
        path = ".".join(symbol["pathComponents"])
        declaration = "".join(f["spelling"] for f in symbol.get("declarationFragments", []))
        declaration = re.sub(r"\s+", " ", declaration).strip()
        where = f" (extension in {extended})" if extended else ""
        lines.add(f"{kind} {path}{where} :: {declaration}")
        if "docComment" not in symbol:
            undocumented.add(f"{kind} {path}{where}")
for line in sorted(lines):
    print(line)
with open(undocumented_path, "w") as f:
    f.writelines(line + "\n" for line in sorted(undocumented))
EOF
    count=$(wc -l <"$tmp/$module.txt")
    echo "api-surface: $module $count public symbols"
    if [ -s "$tmp/$module.undocumented" ]; then
        echo "api-surface: $module has public symbols without a /// comment:" >&2
        sed 's/^/  ? /' "$tmp/$module.undocumented" >&2
        undocumented=1
    fi
    baseline="$here/$module.txt"
    if [ "$update" = 1 ]; then
        cp "$tmp/$module.txt" "$baseline"
        continue
    fi
    if [ ! -f "$baseline" ]; then
        echo "api-surface: no baseline $baseline (run $0 --update to record it)" >&2
        status=1
        continue
    fi
    added=$(comm -13 "$baseline" "$tmp/$module.txt")
    removed=$(comm -23 "$baseline" "$tmp/$module.txt")
    if [ -n "$added" ]; then
        echo "api-surface: $module has public symbols that are not recorded in ${baseline#"$root/"}:" >&2
        sed 's/^/  + /' <<<"$added" >&2
        status=1
    fi
    if [ -n "$removed" ]; then
        sed "s/^/warning: removed from $module: /" <<<"$removed" >&2
        status=1
    fi
done

if [ "$undocumented" = 1 ]; then
    echo "api-surface: FAILED (public API without documentation; every public symbol has a /// comment)" >&2
    exit 1
fi
if [ "$update" = 1 ]; then
    echo "api-surface: baselines rewritten in ${here#"$root/"}"
elif [ "$status" = 0 ]; then
    echo "api-surface: passed"
else
    echo "api-surface: FAILED (public API changed; if on purpose, run Tests/APISurface/check.sh --update and commit the baselines)" >&2
fi
exit $status
