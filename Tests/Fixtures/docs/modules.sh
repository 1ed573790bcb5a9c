# Sourced by build.sh and snippets.sh: builds the library modules the docs need and sets
#   bin          SwiftPM's bin directory (its Modules/ holds the .swiftmodule files)
#   import_flags the flags that let swiftc and swift-symbolgraph-extract import them (the C modules
#                COpenSSL, CRealtimeLinux, CZlib and CRealtimeAEAD included, as SwiftPM exposes them)
# Expects `root` (the package directory), `tmp` (a scratch directory) and `fail` to be defined.
#
# The build uses no extra flags, like run-all's `swift run realtime demo` step that precedes the docs step,
# so right after it this is a no-op instead of a rebuild.
for target in Realtime RealtimeTesting RealtimeSocketIOTesting RealtimePusherTesting RealtimeActionCableTesting; do
    if ! swift build --package-path "$root" --target "$target" >"$tmp/build-$target.log" 2>&1; then
        cat "$tmp/build-$target.log" >&2
        fail "swift build --target $target"
    fi
done
bin=$(swift build --package-path "$root" --show-bin-path) || fail "swift build --show-bin-path"
[ -f "$bin/Modules/Realtime.swiftmodule" ] || fail "no Realtime.swiftmodule in $bin/Modules"

# CRealtimeAEAD has no module map of its own: SwiftPM generates an umbrella-directory one.
mkdir -p "$tmp/aead"
printf 'module CRealtimeAEAD {\n    umbrella "%s"\n    export *\n}\n' "$root/Sources/CRealtimeAEAD/include" \
    >"$tmp/aead/module.modulemap"
import_flags=(
    -I "$bin/Modules"
    -Xcc "-fmodule-map-file=$root/Sources/COpenSSL/module.modulemap"
    -Xcc "-fmodule-map-file=$root/Sources/CRealtimeLinux/module.modulemap"
    -Xcc "-fmodule-map-file=$root/Sources/CZlib/module.modulemap"
    -Xcc "-fmodule-map-file=$tmp/aead/module.modulemap" -Xcc -I -Xcc "$root/Sources/CRealtimeAEAD/include"
    -module-cache-path "$bin/ModuleCache"
)
