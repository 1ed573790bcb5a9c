#!/usr/bin/env bash
# Builds the DocC catalog Sources/Realtime/Realtime.docc with the toolchain's `docc`, over the symbol graph of
# the Realtime module and the modules it re-exports (RealtimeCore, RealtimeWebSocket and the three dialects),
# with warnings as errors: a broken symbol link, in an article or in a doc comment, an unknown article
# reference or any other DocC warning fails it. Then compiles every Swift snippet of README.md and of the
# articles (snippets.sh). Prints `docs: passed`; the archive is left in .build/docs/Realtime.doccarchive.
# Usage: Tests/Fixtures/docs/build.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "docs: FAILED ($1)" >&2; exit 1; }
catalog="$root/Sources/Realtime/Realtime.docc"
archive="$root/.build/docs/Realtime.doccarchive"
[ -d "$catalog" ] || fail "no catalog at $catalog"

source "$here/modules.sh"

# 1. The symbol graph. `@_exported import` alone does not put the re-exported modules' symbols in the
#    Realtime module's graph; naming them here does, so ``RealtimeSession`` resolves from the catalog.
mkdir -p "$tmp/symbols"
case "$(uname -m)" in
    arm64 | aarch64) arch=aarch64 ;;
    *) arch=x86_64 ;;
esac
case "$(uname -s)" in
    Darwin) target="$(uname -m)-apple-macosx13.0" ;;
    *) target="$arch-unknown-linux-gnu" ;;
esac
if ! swift-symbolgraph-extract -module-name Realtime -target "$target" "${import_flags[@]}" \
        -minimum-access-level public -output-dir "$tmp/symbols" \
        -experimental-allowed-reexported-modules=RealtimeCore,RealtimeWebSocket,RealtimePusher,RealtimeSocketIO,RealtimeActionCable \
        >"$tmp/extract.log" 2>&1; then
    cat "$tmp/extract.log" >&2
    fail "swift-symbolgraph-extract -module-name Realtime"
fi

# 2. The catalog. DocC prints each problem with its file, line and a source excerpt.
docc=$(command -v docc || true)
[ -n "$docc" ] || docc="$(dirname "$(command -v swift)")/docc"
[ -x "$docc" ] || fail "no docc next to swift ($docc)"
rm -rf "$archive"
mkdir -p "$(dirname "$archive")"
if ! "$docc" convert "$catalog" --additional-symbol-graph-dir "$tmp/symbols" --output-path "$archive" \
        --fallback-display-name Realtime --fallback-bundle-identifier realtime --warnings-as-errors \
        >"$tmp/docc.log" 2>&1; then
    cat "$tmp/docc.log" >&2
    fail "docc convert reported warnings or errors"
fi
# DocC exits 0 with warnings when they are not errors; be strict about anything it printed all the same.
if grep -qiE '^(warning|error):' "$tmp/docc.log"; then
    cat "$tmp/docc.log" >&2
    fail "docc convert printed diagnostics"
fi
pages=$(find "$archive/data/documentation" -name '*.json' | wc -l)
echo "docs: catalog built ($pages pages) into ${archive#"$root/"}"

# 3. Every snippet of README.md and of the articles.
bash "$here/snippets.sh" || fail "snippets.sh"
echo "docs: passed"
