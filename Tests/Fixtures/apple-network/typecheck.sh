#!/usr/bin/env bash
# Type-checks every source of Sources/RealtimeWebSocket — the Apple-only files under Apple/ included, which
# SwiftPM skips on Linux (`#if canImport(Network)`) — against the stub Network module in this directory,
# with the package's compiler settings (Swift 6, ExistentialAny, MemberImportVisibility) and warnings as
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

# 1. RealtimeCore, built by SwiftPM. The same flags as run-all's build step, so that right after it this
#    is a no-op; the module lands in <bin>/Modules.
if ! swift build --target RealtimeCore -Xswiftc -warnings-as-errors >"$tmp/build.log" 2>&1; then
    cat "$tmp/build.log" >&2
    fail "swift build --target RealtimeCore"
fi
bin=$(swift build --show-bin-path) || fail "swift build --show-bin-path"
[ -f "$bin/Modules/RealtimeCore.swiftmodule" ] || fail "no RealtimeCore.swiftmodule in $bin/Modules"

# 2. The stub, as a resilient module like the SDK's (so its enums are non-frozen to clients). Its only
#    expected warnings are that Foundation and Dispatch are not resilient, so its output is shown on
#    failure only.
mkdir -p "$tmp/stub"
if ! swiftc -emit-module -module-name Network -parse-as-library -swift-version 6 -enable-library-evolution \
        -emit-module-path "$tmp/stub/Network.swiftmodule" "$here/Network.swift" >"$tmp/stub.log" 2>&1; then
    cat "$tmp/stub.log" >&2
    fail "the stub Network module did not build"
fi

# 3. The C modules as SwiftPM exposes them: COpenSSL through its own module map; CRealtimeAEAD, which has
#    none, through the umbrella-directory map SwiftPM generates for it.
mkdir -p "$tmp/aead"
printf 'module CRealtimeAEAD {\n    umbrella "%s"\n    export *\n}\n' "$root/Sources/CRealtimeAEAD/include" \
    >"$tmp/aead/module.modulemap"

# 4. The whole RealtimeWebSocket target in one type-check. `package` declarations need the package name,
#    which SwiftPM takes from the package directory's name.
package_name=$(basename "$root" | tr '[:upper:]' '[:lower:]')
sources=()
while IFS= read -r -d '' file; do sources+=("$file"); done \
    < <(find Sources/RealtimeWebSocket -name '*.swift' -print0 | sort -z)
[ ${#sources[@]} -gt 0 ] || fail "no sources found"
swiftc -typecheck -module-name RealtimeWebSocket -package-name "$package_name" -parse-as-library \
    -swift-version 6 -warnings-as-errors \
    -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility \
    -I "$tmp/stub" -I "$bin/Modules" \
    -Xcc "-fmodule-map-file=$root/Sources/COpenSSL/module.modulemap" \
    -Xcc "-fmodule-map-file=$tmp/aead/module.modulemap" -Xcc -I -Xcc "$root/Sources/CRealtimeAEAD/include" \
    -module-cache-path "$bin/ModuleCache" \
    "${sources[@]}" || fail "swiftc -typecheck of Sources/RealtimeWebSocket"
echo "apple-network: type-check passed"
