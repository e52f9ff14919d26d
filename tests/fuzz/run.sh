#!/bin/sh
# run.sh BUILD SECONDS - runs every libFuzzer target of tests/fuzz/ for
# SECONDS each, seeded from the repository's own inputs (configs/, the
# chapters' exercises, tests/fuzz/seeds/, frames written by seed_wire), and
# prints per target the executions and whether it crashed.  Inputs that
# found something new stay in BUILD/fuzz/corpus/TARGET for the next run;
# a crash's input is written to BUILD/fuzz/crashes/TARGET/.  Exits 1 when
# any target crashed.  SECONDS 0 runs each target once over the seeds
# alone and mutates nothing: the same inputs every time (`make test`).
build=$1
seconds=$2
# libfabric's PSM provider library, when loaded, writes a backtrace file
# into the working folder on abort; libFuzzer prints its own.
export IPATH_NO_BACKTRACE=1
fz=$build/fuzz
seeds=$fz/seeds
rm -rf "$seeds"
mkdir -p "$seeds/tiers" "$seeds/topology" "$seeds/machine" "$seeds/exercises" \
    "$seeds/units" "$seeds/wire"
cp configs/tiers.yaml "$seeds/tiers/"
cp configs/topologies/*.yaml "$seeds/topology/"
cp tests/fuzz/seeds/machine/* "$seeds/machine/"
for f in chapters/*/exercises.yaml; do cp "$f" "$seeds/exercises/$(dirname "$f" | tr / -).yaml"; done
cp tests/fuzz/seeds/units/* "$seeds/units/"
"$fz/seed_wire" "$seeds/wire" || exit 1
crashed=0
for src in tests/fuzz/fuzz_*.c; do
    t=$(basename "$src" .c | sed 's/^fuzz_//')
    bin=$fz/fuzz_$t
    mkdir -p "$fz/corpus/$t" "$fz/crashes/$t"
    log=$fz/$t.log
    if [ "$seconds" -eq 0 ]; then
        how="(its seeds, once)"
        set -- -runs=0 "$seeds/$t"
    else
        how="in ${seconds}s"
        set -- -max_total_time="$seconds" "$fz/corpus/$t" "$seeds/$t"
    fi
    "$bin" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="$fz/crashes/$t/" "$@" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    if [ "$rc" -eq 0 ]; then
        echo "fuzz $t: ${runs:-?} executions $how, no crash"
    else
        crashed=1
        echo "fuzz $t: CRASH after ${runs:-?} executions (exit $rc); input in $fz/crashes/$t/, log $log"
        grep -m 5 -E "ERROR|SUMMARY|invariant" "$log"
    fi
done
exit $crashed
