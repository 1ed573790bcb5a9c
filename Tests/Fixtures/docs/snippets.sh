#!/usr/bin/env bash
# Compiles every ```swift block of README.md and of the DocC articles (Sources/Realtime/Realtime.docc) against
# the package's modules, in Swift 6 mode with the package's upcoming features and warnings as errors.
# Errors point at the Markdown file and line. The convention for blocks is in snippets.py: statements by
# default (inside an `async throws` function that has `session` and `channel` in scope),
# `<!-- snippet: declarations -->` for file-scope code, `<!-- snippet: skip REASON -->` to leave one out.
# Each Markdown file is its own module, so two files may declare the same names.
# Prints `snippets: N blocks in M files compiled`. Usage: Tests/Fixtures/docs/snippets.sh [MARKDOWN...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "snippets: FAILED ($1)" >&2; exit 1; }

if [ $# -gt 0 ]; then
    markdown=("$@")
else
    markdown=("$root/README.md")
    while IFS= read -r -d '' file; do markdown+=("$file"); done \
        < <(find "$root/Sources/Realtime/Realtime.docc" -name '*.md' -print0 2>/dev/null | sort -z)
fi

source "$here/modules.sh"

python3 "$here/snippets.py" "$tmp/swift" "${markdown[@]}" >"$tmp/generated" || fail "snippets.py"
total=0
failed=()
while read -r file count; do
    total=$((total + count))
    [ "$count" -gt 0 ] || continue
    # -emit-sil runs the mandatory SIL diagnostics (definite initialization, unreachable code) as a build
    # would, without generating machine code.
    if ! swiftc -emit-sil -o /dev/null -module-name "$(basename "$file" .swift)" -parse-as-library \
            -swift-version 6 -warnings-as-errors \
            -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility \
            "${import_flags[@]}" "$file" 2>"$tmp/error.log"; then
        cat "$tmp/error.log" >&2
        failed+=("$(basename "$file")")
    fi
done <"$tmp/generated"
[ ${#failed[@]} = 0 ] || fail "${#failed[@]} file(s) did not compile: ${failed[*]}"
echo "snippets: $total blocks in ${#markdown[@]} files compiled"
