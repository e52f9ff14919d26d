#!/bin/sh
# run.sh BUILD TEST... -- SANITIZED_TEST...
# Runs every unit test binary (cmocka), the CLI tests (tests/cli/test_*.sh,
# each sourcing tests/cli/lib.sh; two of them again on the sanitized
# BUILD/commlab-san), then the unit tests built with
# AddressSanitizer + UndefinedBehaviorSanitizer, and ends with one line
# "N passed, N failed" counting test cases.
build=$1
shift
passed=0
failed=0
failed_names=
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# cmocka prints "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s)".
# Each suite's name is printed as it starts (a CLI suite takes a minute),
# its outcome and seconds when it ends.
count() {
    name=$1
    shift
    printf '%-30s ' "$name"
    t0=$(date +%s)
    "$@" >"$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    # The CLI driver prints its own "N passed, N failed" line.
    if [ -z "$p" ]; then
        p=$(sed -n 's/^\([0-9]*\) passed, [0-9]* failed$/\1/p' "$log" | tail -n 1)
        f=$(sed -n 's/^[0-9]* passed, \([0-9]*\) failed$/\1/p' "$log" | tail -n 1)
    fi
    p=${p:-0}
    f=${f:-0}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1 # crashed or exited non-zero without reporting a failed case
    fi
    if [ "$f" -ne 0 ]; then
        echo "FAIL ($p passed, $f failed, $secs s)"
        cat "$log"
        failed_names="$failed_names $name"
        echo "FAIL $name"
    else
        echo "ok   ($p passed, $secs s)"
    fi
    passed=$((passed + p))
    failed=$((failed + f))
}

san=0
for t in "$@"; do
    if [ "$t" = "--" ]; then
        for c in tests/cli/test_*.sh; do
            count "cli/$(basename "$c" .sh)" sh "$c" "$build/commlab" "$build/tests"
        done
        # The CLI built with ASan+UBSan under the tests of its parsers and
        # error paths and the main command tests.
        for c in tests/cli/test_input.sh tests/cli/test_cli.sh; do
            ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
                count "cli-san/$(basename "$c" .sh)" sh "$c" "$build/commlab-san" "$build/tests"
        done
        san=1
        continue
    fi
    if [ "$san" = 1 ]; then
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 count "$t" "$t"
    else
        count "$t" "$t"
    fi
done
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
