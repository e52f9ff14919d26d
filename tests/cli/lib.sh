# lib.sh - sourced by every tests/cli/test_*.sh: a command runner with an
# expected exit status, output checks, and the pass/fail count.  The sourcing
# script is called as  SCRIPT COMMLAB TOOLDIR  and ends with `finish`.
cl=$1
tools=$2
passed=0
failed=0
out=$(mktemp)
err=$(mktemp)
tmpd=$(mktemp -d)
trap 'rm -rf "$out" "$err" "$tmpd"' EXIT

ok() { passed=$((passed + 1)); }
bad() {
    failed=$((failed + 1))
    echo "FAIL: $*"
    echo "  stdout: $(head -c 600 "$out")"
    echo "  stderr: $(head -c 600 "$err")"
}

# Every command is bounded: a hang fails its check instead of hanging the
# suite (timeout exits 124, or 137 once -k has to kill).
limit="timeout -k 5 120"
# A calibration's time is the machine's: on a loaded machine it measures a
# segment the load bent again (up to 3 times), which can pass two minutes
# though nothing hangs.  Commands that calibrate get this bound instead.
calib_limit="timeout -k 5 900"
# A machine running the suites (or two suites side by side) is loaded by
# design: calibrate, compare and validate are not to wait for the
# reference's regime (cli/regime.h) unless a test asks with --regime-wait.
export COMMLAB_REGIME_WAIT=0

# run RC CMD... : runs commlab with CMD, expects exit status RC (under the
# command $wrap names, when a script sets it).
run() {
    want=$1
    shift
    # A student's record of tries and passes (exercise check) starts fresh
    # for every command, unless the script keeps one (CL_KEEP_STATE).
    runs=$((${runs:-0} + 1))
    [ -n "${CL_KEEP_STATE:-}" ] || export XDG_STATE_HOME="$tmpd/state.$runs"
    # shellcheck disable=SC2086 # $wrap: a script's command before commlab, or nothing
    $limit $wrap "$cl" "$@" >"$out" 2>"$err"
    rc=$?
    if [ "$rc" -eq "$want" ]; then ok; else bad "commlab $* exited $rc, want $want"; fi
}
# record_pids: every later run goes through $wrap, which adds commlab's pid
# to $tmpd/pids ($tmpd/pid: the last one's), for a script that looks for
# what its own commands left by names that carry their pid, never at
# another job's beside it.
record_pids() {
    printf '#!/bin/sh\necho $$ >>"%s/pids"\necho $$ >"%s/pid"\nexec "$@"\n' "$tmpd" "$tmpd" \
        >"$tmpd/rec"
    chmod +x "$tmpd/rec"
    wrap=$tmpd/rec
    : >"$tmpd/pids"
}

# has FILE TEXT : the last run's stdout/stderr contains TEXT.
has() {
    if grep -qF -- "$2" "$1"; then ok; else bad "expected '$2' in $(basename "$1")"; fi
}
json() {
    if "$tools/tool_jsoncheck" <"$out" 2>>"$err"; then ok; else bad "invalid JSON from: $*"; fi
}


# finish: the one summary line; exit status says whether all passed.
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
