#!/usr/bin/env bash
# Type-checks every source of Sources/RealtimeCore, Sources/RealtimeWebSocket and Adapters/SocketIO — the
# Apple-only parts included, which SwiftPM skips on Linux (`#if canImport(Network)`, `canImport(Security)`)
# — against the stub Security and Network modules in this directory, with the package's compiler settings (Swift 6, ExistentialAny, MemberImportVisibility) and warnings as
# errors. Prints `apple-network: type-check passed`, or the compiler's errors and exits non-zero.
# Usage: Tests/Fixtures/apple-network/typecheck.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
    echo "apple-network: type-check FAILED ($1)" >&2
    exit 1
}

# 1. SwiftPM's bin path, whose module cache the C modules share with the build.
bin=$(swift build --show-bin-path) || fail "swift build --show-bin-path"
mkdir -p "$bin/ModuleCache"
package_name=$(basename "$root" | tr '[:upper:]' '[:lower:]')
flags=(-package-name "$package_name" -parse-as-library -swift-version 6 -warnings-as-errors
       -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility
       -module-cache-path "$bin/ModuleCache")
sources_of() {
    local file
    sources=()
    while IFS= read -r -d '' file; do sources+=("$file"); done < <(find "$1" -name '*.swift' -print0 | sort -z)
    [ ${#sources[@]} -gt 0 ] || fail "no sources found in $1"
}

# 2. The stubs, as resilient modules like the SDK's (so their enums are non-frozen to clients): Security,
#    then Network, which re-exports it. Their only expected warnings are that Foundation and Dispatch are
#    not resilient, so their output is shown on failure only.
mkdir -p "$tmp/stub"
for module in Security Network; do
    if ! swiftc -emit-module -module-name "$module" -parse-as-library -swift-version 6 -enable-library-evolution \
            -I "$tmp/stub" -emit-module-path "$tmp/stub/$module.swiftmodule" "$here/$module.swift" >"$tmp/stub.log" 2>&1; then
        cat "$tmp/stub.log" >&2
        fail "the stub $module module did not build"
    fi
done

# 3. RealtimeCore with its `canImport(Security)` parts, type-checked against the stubs, then emitted as the
#    module the next steps import.
sources_of Sources/RealtimeCore
mkdir -p "$tmp/core"
swiftc -typecheck -module-name RealtimeCore "${flags[@]}" -I "$tmp/stub" "${sources[@]}" \
    || fail "swiftc -typecheck of Sources/RealtimeCore"
swiftc -emit-module -module-name RealtimeCore "${flags[@]}" -I "$tmp/stub" \
    -emit-module-path "$tmp/core/RealtimeCore.swiftmodule" "${sources[@]}" >"$tmp/core.log" 2>&1 \
    || { cat "$tmp/core.log" >&2; fail "emitting the RealtimeCore module"; }

# 4. The C modules as SwiftPM exposes them: COpenSSL, CRealtimeLinux and CZlib through their own module maps; CRealtimeAEAD, which has
#    none, through the umbrella-directory map SwiftPM generates for it.
mkdir -p "$tmp/aead"
printf 'module CRealtimeAEAD {\n    umbrella "%s"\n    export *\n}\n' "$root/Sources/CRealtimeAEAD/include" \
    >"$tmp/aead/module.modulemap"

# 5. The whole RealtimeWebSocket target in one type-check. `package` declarations need the package name,
#    which SwiftPM takes from the package directory's name.
sources_of Sources/RealtimeWebSocket
swiftc -typecheck -module-name RealtimeWebSocket "${flags[@]}" -I "$tmp/stub" -I "$tmp/core" \
    -Xcc "-fmodule-map-file=$root/Sources/COpenSSL/module.modulemap" \
    -Xcc "-fmodule-map-file=$root/Sources/CRealtimeLinux/module.modulemap" \
    -Xcc "-fmodule-map-file=$root/Sources/CZlib/module.modulemap" \
    -Xcc "-fmodule-map-file=$tmp/aead/module.modulemap" -Xcc -I -Xcc "$root/Sources/CRealtimeAEAD/include" \
    "${sources[@]}" || fail "swiftc -typecheck of Sources/RealtimeWebSocket"

# 6. The Socket.IO adapter, whose long-polling takes its HTTP trust policy from the session's transport
#    (an evaluator where Security exists).
sources_of Adapters/SocketIO
swiftc -typecheck -module-name RealtimeSocketIO "${flags[@]}" -I "$tmp/stub" -I "$tmp/core" "${sources[@]}" \
    || fail "swiftc -typecheck of Adapters/SocketIO"
echo "apple-network: type-check passed"
