#!/usr/bin/env bash
# Builds the libFuzzer binary (ASan + coverage, one build for every target) and runs each target for a
# bounded time from its committed seed corpus. Fails on any crash, leak, timeout or out-of-memory.
#
# Usage: Tests/Fixtures/fuzz/run.sh [SECONDS] [TARGET...]     (default: 20 s for each target)
#   Tests/Fixtures/fuzz/run.sh 3600 tls-records                a long run of one target
# Environment: REALTIME_FUZZ_CONFIG=debug builds without optimisation (faster to build).
# New inputs the fuzzer finds stay in .build-fuzz/corpus/<target>; failing inputs go to
# .build-fuzz/artifacts/. A failing input that is fixed belongs in regressions/<target>/ (the
# corpus-replay tests run it).
set -uo pipefail
cd "$(dirname "$0")/../../.."
root=$(pwd)
fuzz_dir="$root/Tests/Fixtures/fuzz"
seconds=${1:-20}
shift $(( $# > 0 ? 1 : 0 ))
config=${REALTIME_FUZZ_CONFIG:-release}
scratch="$root/.build-fuzz"

echo "fuzz: building realtime-fuzz ($config, ASan + libFuzzer)"
build_start=$(date +%s)
# --sanitize=fuzzer makes SwiftPM link libFuzzer's main; -Xswiftc passes both sanitizers to every Swift
# module (SwiftPM's own list keeps only the last one there) and -Xcc adds ASan to the C AES-GCM code.
mkdir -p "$scratch"
if ! REALTIME_FUZZ=1 swift build -c "$config" --product realtime-fuzz --scratch-path "$scratch" \
        --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xcc -fsanitize=address >"$scratch/build.log" 2>&1; then
    grep -vE '^\[[0-9]+/[0-9]+\]|Cannot export local symbol' "$scratch/build.log" | tail -n 30
    echo "fuzz: build failed"
    echo "fuzz targets: 0 passed, 1 failed, 0 known failures"
    exit 1
fi
binary="$scratch/$config/realtime-fuzz"
echo "fuzz: built in $(( $(date +%s) - build_start )) s"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(find "$fuzz_dir/corpus" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
fi

# Targets that fail today for a reason already filed: "<target> <text of the failure>  # why".
# Such a failure is reported as known, never as passed; a listed target that passes fails the run, so
# the line is removed when the fix lands.
known_failure_text() {
    grep -E "^$1 " "$fuzz_dir/known-failures" 2>/dev/null | sed -E 's/^[^ ]+ //; s/ *#.*$//'
}

passed=0
failed=0
known=0
summary=()
mkdir -p "$scratch/artifacts"
for target in "${targets[@]}"; do
    work="$scratch/corpus/$target"
    mkdir -p "$work"
    corpora=("$work" "$fuzz_dir/corpus/$target")
    [ -d "$fuzz_dir/regressions/$target" ] && corpora+=("$fuzz_dir/regressions/$target")
    log="$scratch/artifacts/$target.log"
    rm -f "$scratch/artifacts/$target"-*
    # Swift's own crash handler would print a second, slower report (and trips ASan); libFuzzer's is enough.
    REALTIME_FUZZ_TARGET="$target" SWIFT_BACKTRACE=enable=no \
        ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}" \
        "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2560 -max_len=4096 \
        -print_final_stats=1 -artifact_prefix="$scratch/artifacts/$target-" "${corpora[@]}" >"$log" 2>&1
    status=$?
    runs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n 1)
    runs=${runs:-0}
    artifact=$(ls "$scratch/artifacts/$target"-* 2>/dev/null | grep -v '\.log$' | head -n 1)
    expected=$(known_failure_text "$target")
    if [ $status = 0 ] && [ -z "$artifact" ]; then
        if [ -n "$expected" ]; then
            echo "fuzz $target: FAILED: passed $runs executions but is listed in known-failures; remove the line"
            failed=$((failed + 1))
            summary+=("$target $runs (listed as a known failure but passed)")
        else
            echo "fuzz $target: $runs executions in ${seconds} s, no failure"
            passed=$((passed + 1))
            summary+=("$target $runs")
        fi
        continue
    fi
    reason=$(grep -m1 -E 'Fatal error|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|SUMMARY' "$log" | sed -E 's/^.*Fatal error: //')
    if [ -n "$expected" ] && grep -qF -- "$expected" "$log" && ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)' "$log"; then
        echo "fuzz $target: KNOWN FAILURE after $runs executions (not counted as passed): $reason"
        known=$((known + 1))
        summary+=("$target $runs (known failure)")
        continue
    fi
    echo "fuzz $target: FAILED after $runs executions (exit $status): $reason"
    [ -n "$artifact" ] && echo "  input: $artifact (replay: REALTIME_FUZZ_TARGET=$target $binary $artifact)"
    grep -A12 -m1 -E 'Fatal error|ERROR: ' "$log" | head -n 20 | sed 's/^/  | /'
    failed=$((failed + 1))
    summary+=("$target $runs (FAILED)")
done

echo "fuzz executions: ${summary[*]/%/;}"
echo "fuzz targets: $passed passed, $failed failed, $known known failures"
[ $failed = 0 ]
