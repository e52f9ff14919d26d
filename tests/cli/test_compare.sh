#!/bin/sh
# test_compare.sh COMMLAB TOOLDIR - calibrate, machine files, run --model
# FILE and compare as a user meets them: exit codes, messages, the CSV
# schema `commlab plot` reads, the JSON fields, nothing left behind.
# Behaviour only: no check depends on how fast this machine is.
. "$(dirname "$0")/lib.sh"

# A synthetic machine: T(n) = 1 us + n / 1 GB/s up to 64 KiB, then
# 5 us + n / 2 GB/s, measured with fresh buffers (compare's default).
m="$tmpd/synthetic.yaml"
cat >"$m" <<'EOF'
host: elsewhere
backend: shm
eager_limit: 64KiB
cache: fresh
segments:
  - {upto: 64KiB, alpha: 1us, bandwidth: 1GB/s}
  - {upto: 64MiB, alpha: 5us, bandwidth: 2GB/s}
EOF

# calibrated FILE ARGS... : `commlab calibrate ARGS --out FILE` writes
# FILE (exit 0, true).  A segment a busy machine bent is kept with a
# warning, never refused (only --strict refuses), so anything else is a
# failure (false), and the caller skips what needs the file.
calibrated() {
    f=$1
    shift
    $calib_limit "$cl" calibrate "$@" --out "$f" >"$out" 2>"$err"
    rc=$?
    if [ "$rc" -eq 0 ] && [ -s "$f" ]; then ok; return 0; fi
    bad "commlab calibrate $* --out $f exited $rc, want 0 and the file written"
    return 1
}

# --- help ---
run 0 --help;                  has "$out" "calibrate"; has "$out" "compare"
run 0 calibrate --help;        has "$out" "usage: commlab calibrate"; has "$out" "--quick"
run 0 help compare;            has "$out" "usage: commlab compare"; has "$out" "error_pct"
run 0 run --help;              has "$out" "--model FILE.yaml"

# --- calibrate: bad usage ---
run 2 calibrate;               has "$err" "give --backend shm, tcp"
run 2 calibrate --backend shm --provider tcp; has "$err" "--provider is an option of --backend rdma"
run 2 calibrate --backend rdma --provider warp; has "$err" "warp"
run 2 calibrate --backend sim; has "$err" "is the model itself: calibrate takes a measured backend"
run 2 calibrate --backend warp; has "$err" "unknown backend 'warp'"
run 2 calibrate --backend shm --eager-limit 12XB; has "$err" "unknown size unit 'XB'"
run 2 calibrate --backend shm --eager-limit 64MiB; has "$err" "--eager-limit must leave sizes"
run 2 calibrate --backend shm --listen 127.0.0.1; has "$err" "--listen is an option of --backend tcp"
run 2 calibrate --backend shm --frobnicate; has "$err" "unknown option '--frobnicate'"
run 2 calibrate --backend shm extra; has "$err" "unexpected argument 'extra'"
run 2 calibrate --backend shm --out /proc/none/m.yaml; has "$err" "cannot write the machine file '/proc/none/m.yaml'"
run 2 calibrate --backend shm --out "$tmpd"; has "$err" "cannot write the machine file '$tmpd'"

# --- calibrate --quick: a machine file the simulator accepts ---
q="$tmpd/quick-shm.yaml"
if calibrated "$q" --backend shm --quick; then
has "$out" "alpha"; has "$out" "R^2"; has "$out" "max residual"; has "$out" "model written to $q"
has "$q" "backend: \"shm\""; has "$q" "eager_limit: 65536"; has "$q" "segments:"
has "$q" "cache: fresh"; has "$out" "(--cache fresh)"
has "$q" "{upto: 65536, "; has "$q" ", gap: "; has "$q" "gap_bandwidth: "
has "$out" "gap bandwidth"
# the posted gap (receives posted first), eager sizes only
has "$q" ", posted_gap: "; has "$out" "posted gap"; has "$out" "posted bw"
has "$out" "duplex: an exchange"; has "$q" "duplex:"
# the regime it was taken in: the reference probe, 8 B and 1 MiB
has "$out" "reference (the regime it was taken in"; has "$q" "reference:"
has "$q" "  - {bytes: 8, time: "; has "$q" "  - {bytes: 1048576, time: "
if [ "$(ls -A "$tmpd" | grep -c tmp)" -eq 0 ]; then ok; else bad "a temporary file was left in $tmpd"; fi
run 0 run pingpong --model "$q" --sizes 8,1MiB; has "$out" "machine $q (shm on"
has "$out" "segments, duplex), full mesh of 2 ranks"
# the host's reduction per type (issue 36), the gamma of a modeled reduction
has "$q" "reduce_bandwidth: {f64: "; has "$q" ", bf16: "; has "$q" ", i64: "
run 0 run allreduce -n 2 --model "$q" --bytes 1MiB --dtype bf16
has "$out" "reducing: sum of bf16 elements at "
# The regime gate (cli/regime.h): off under the suites (lib.sh sets
# COMMLAB_REGIME_WAIT=0), on with --regime-wait.  What it did (probes,
# waits, sizes kept from another regime) is the machine's, so only that
# it is said is checked.
run 0 compare pingpong --model "$q" --sizes 8,64KiB -i 3 --json
json "compare, no gate"; has "$out" '"other_regime": false'
if grep -q '"regime": {' "$out"; then bad "compare said what a gate that was off did"; else ok; fi
run 0 compare pingpong --model "$q" --sizes 8,64KiB -i 3 --regime-wait 1s --json
json "compare --regime-wait"; has "$out" '"regime": {'; has "$out" '"probes": '
has "$out" '"tolerance_pct": '; has "$out" '"kept_outside": '; has "$out" '"other_regime": '
has "$out" '"runs": 2'
run 0 compare pingpong --model "$q" --sizes 8 -i 3 --regime-wait 500ms
has "$out" "regime: each run between 8 B probes within "
fi
run 2 compare pingpong --regime-wait 2h; has "$err" "--regime-wait: unknown time unit 'h'"
run 2 compare pingpong --regime-wait 4000s
has "$err" "--regime-wait must be 0 (no gate) or a time up to an hour (3600s), got '4000s'"
run 2 calibrate --backend shm --regime-wait soon; has "$err" "--regime-wait"
export COMMLAB_REGIME_WAIT=soon
run 2 compare pingpong; has "$err" "COMMLAB_REGIME_WAIT: cannot parse time 'soon'"
export COMMLAB_REGIME_WAIT=0
if calibrated "$tmpd/q2.yaml" --backend shm --quick --csv; then
has "$out" "# commlab-plot: compare"; has "$out" "# title: pingpong, shm, 2 ranks, host "
has "$out" "pattern,backend,ranks,bytes,modeled_s,measured_median_s,measured_min_s,measured_max_s,error_pct,measured_q1_s,measured_q3_s"
has "$out" "pingpong,shm,2,65536,"
fi
if calibrated "$tmpd/q-tcp.yaml" --backend tcp --quick --json --regime-wait 1s; then json calibrate
has "$out" '"regime": {'; has "$out" '"reference_s": '
has "$out" '"command": "calibrate"'; has "$out" '"alpha_s"'; has "$out" '"r2"'
has "$out" '"modeled_s"'; has "$out" '"backend": "tcp"'; has "$out" '"gap_s"'
has "$out" '"posted_gap_s"'
has "$out" '"duplex_segments"'; has "$out" '"exchange_s"'; has "$out" '"exchange_modeled_s"'
has "$out" '"reference": ['; has "$out" '"time_s"'; has "$out" '"cache": "fresh"'
has "$out" '"reduce_bandwidth_Bps": {'
fi
# --cache: the mode measured in, recorded in the file
if calibrated "$tmpd/q-cold.yaml" --backend shm --quick --cache cold; then
has "$tmpd/q-cold.yaml" "cache: cold"; has "$out" "buffers flushed from the caches (--cache cold)"
fi
run 2 calibrate --backend shm --cache lukewarm; has "$err" "--cache must be fresh, warm or cold, got 'lukewarm'"

# --- rdma: calibrated through libfabric, the provider recorded ---
r="$tmpd/quick-rdma.yaml"
if calibrated "$r" --backend rdma --provider tcp --quick; then
has "$out" "calibrate rdma on "; has "$out" "model written to $r"
has "$r" 'backend: "rdma"'; has "$r" 'provider: "tcp"'; has "$r" ", gap: "
else
# a stand-in, so the checks of compare below still run
sed 's/^backend: shm$/backend: rdma\nprovider: tcp/; s/^host: elsewhere$/host: '"$(hostname)"'/' "$m" >"$r"
printf 'reference:\n  - {bytes: 8, time: 1us}\n' >>"$r"
fi
run 0 compare pingpong --backend rdma --provider tcp --model "$r" --sizes 8,128KiB -i 3 --csv
has "$out" "pingpong,rdma,2,8,"; has "$out" "pingpong,rdma,2,131072,"
if grep -q "note:" "$err"; then bad "compare rdma: a note for its own file"; else ok; fi
run 0 compare pipeline --backend rdma --provider tcp --model "$r" --sizes 8,128KiB -i 3
has "$out" "pipeline, 2 ranks: rdma measured"; has "$out" "median |error|"
run 0 compare pingpong --backend shm --model "$r" --sizes 8 -i 3
has "$err" "was calibrated for rdma/tcp on"

# --- machine files: errors name file:line:column ---
printf 'host: h\nbackend: shm\neager_limit: 64KiB\nsegments:\n  - {upto: 1KiB, alpha: 1us, bandwidth: -3GB/s}\n' >"$tmpd/neg.yaml"
run 2 run pingpong --model "$tmpd/neg.yaml"; has "$err" "neg.yaml:5:41: 'bandwidth' must be > 0, got '-3GB/s'"
run 2 compare pingpong --model "$tmpd/neg.yaml"; has "$err" "neg.yaml:5:41:"
printf 'host: h\nbackend: shm\nsegments: []\n' >"$tmpd/miss.yaml"
run 2 run pingpong --model "$tmpd/miss.yaml"; has "$err" "miss.yaml:1:1: missing key 'eager_limit'"
run 2 run pingpong --model "$tmpd/none.yaml"; has "$err" "none.yaml"
run 2 run pingpong --model "$m" --tier pcie; has "$err" "--tier does not apply"
run 2 run pingpong --model "$m" --rendezvous-handshake; has "$err" "the handshake is in its alpha"
run 2 run pingpong --model "$m" --backend shm; has "$err" "is an option of the model"
run 2 run pingpong --model flow; has "$err" "link sharing is --sharing maxmin"

# --- run --model FILE: the file's T(n), its eager limit ---
run 0 run pingpong --model "$m" --sizes 8,1MiB --csv
has "$out" "8,1,1.008e-06,"; has "$out" "1048576,1,0.000529288,"
run 0 run deadlock --model "$m" --bytes 1KiB   # eager below the file's 64 KiB
run 3 run deadlock --model "$m" --bytes 1MiB;  has "$err" "deadlock"

# --- compare: the CSV schema and the modeled column are exact ---
run 0 compare pingpong --model "$m" --sizes 8,1MiB -i 3 --csv
has "$err" "note: $m was calibrated for shm on elsewhere"
has "$out" "# commlab-plot: compare"; has "$out" "# title: pingpong, shm, 2 ranks, host "
has "$out" "pattern,backend,ranks,bytes,modeled_s,measured_median_s,measured_min_s,measured_max_s,error_pct,measured_q1_s,measured_q3_s"
has "$out" "pingpong,shm,2,8,1.008e-06,"; has "$out" "pingpong,shm,2,1048576,0.000529288,"
# Two measured rows, then the model alone at 4 sizes a doubling between
# them (8 x 2^(k/4) for k = 1..67, 17 doublings: 67 rows), measured columns empty.
if [ "$(grep -c '^pingpong,shm,2,[0-9]*,[^,]*,[0-9]' "$out")" -eq 2 ]; then ok; else bad "compare --csv: want 2 measured rows"; fi
if [ "$(grep -c '^pingpong,shm,2,[0-9]*,[^,]*,,,,,,$' "$out")" -eq 67 ]; then ok; else bad "compare --csv: want 67 rows of the model alone"; fi
# The synthetic machine's T(n): 1 us + 16 B / 1 GB/s; 5 us + 512 KiB / 2 GB/s.
has "$out" "pingpong,shm,2,16,1.016e-06,,,,,,"; has "$out" "pingpong,shm,2,524288,0.000267144,,,,,,"
run 0 compare pingpong --model "$m" --sizes 8,4KiB,1MiB -i 3 --json; json compare
has "$out" '"command": "compare"'; has "$out" '"results": ['
has "$out" '"modeled_s": 1.008e-06'; has "$out" '"measured_s": {'
has "$out" '"median": '; has "$out" '"min": '; has "$out" '"max": '; has "$out" '"error_pct": '
if [ "$(grep -c '"error_pct"' "$out")" -eq 3 ]; then ok; else bad "compare --json: want 3 results"; fi
run 0 compare pingpong --model "$m" --bytes 4KiB -i 3
has "$out" "modeled"; has "$out" "measured (median)"; has "$out" "median |error|"
run 0 compare ring -n 2 --model "$m" --sizes 8,128KiB -i 3
# the pattern's own lines stay out of the table's way (run shows them)
run 0 compare relay --model "$m" --sizes 8,16 -i 3; has "$out" "median |error|"
if grep -q "the value after" "$out" "$err"; then bad "compare printed the relay's line"; else ok; fi
run 0 run relay --model "$m" --sizes 8; has "$out" "rank 1: the value after 1 hops is 10"
run 0 compare pipeline -n 2 --model "$m" --sizes 8,128KiB -i 3 --compute 10us
run 0 compare pingpong --backend tcp --model "$m" --sizes 8,128KiB -i 3 --csv
has "$out" "pingpong,tcp,2,131072,"
# a student's own pattern file, compiled and loaded as `run FILE.c` does
run 0 compare chapters/02-point-to-point/solutions/ring_relay.c -n 3 --model "$m" --sizes 8,1MiB -i 3 --csv
has "$out" "ring_relay.c,shm,3,1048576,"
printf 'int pattern(void) { return oops; }\n' >"$tmpd/broken.c"
run 2 compare "$tmpd/broken.c" --model "$m"; has "$err" "oops"
run 2 compare "$tmpd/missing.c" --model "$m"; has "$err" "cannot read the pattern file"

# --- compare: the --cache of the measurement and of the model ---
# A file without the key was measured warm (before --cache): refused
# against the default fresh, with what to do; taken with --cache warm;
# with --mixed-cache the header, every row and the JSON say so.
grep -v '^cache:' "$m" >"$tmpd/old.yaml"
run 2 compare pingpong --model "$tmpd/old.yaml" --sizes 8 -i 3
has "$err" "was calibrated with --cache warm (it records no cache mode: it was written before --cache existed"
has "$err" "and this measures --cache fresh"; has "$err" "give --mixed-cache"
run 0 compare pingpong --model "$tmpd/old.yaml" --sizes 8 -i 3 --cache warm
has "$out" ", --cache warm"
run 0 compare pingpong --model "$tmpd/old.yaml" --sizes 8,1KiB -i 3 --mixed-cache
has "$out" "--cache fresh measured against a model calibrated --cache warm (no cache key)"
if [ "$(grep -c 'measured fresh, model warm (no cache key)$' "$out")" -eq 2 ]; then ok
else bad "--mixed-cache: want every row to say so"; fi
run 0 compare pingpong --model "$tmpd/old.yaml" --sizes 8 -i 3 --mixed-cache --json
json "compare --mixed-cache"; has "$out" '"cache_mismatch": true'
has "$out" '"model_cache": "warm"'; has "$out" '"model_cache_recorded": false'
run 0 compare pingpong --model "$tmpd/old.yaml" --sizes 8 -i 3 --mixed-cache --csv
has "$out" "# note: --mixed-cache: measured --cache fresh against a model calibrated --cache warm"
run 2 compare pingpong --model "$m" --cache cold --sizes 8 -i 3
has "$err" "was calibrated with --cache fresh, and this measures --cache cold"
run 0 compare pingpong --model "$m" --sizes 8 -i 3 --json
has "$out" '"cache": "fresh"'; has "$out" '"cache_mismatch": false'
run 2 compare pingpong --model "$m" --cache tepid; has "$err" "--cache must be fresh, warm or cold"

# --- compare: drift of the reference probe, --repeat, --save ---
# The synthetic file records no reference: compare says drift cannot be told.
run 0 compare pingpong --model "$m" --sizes 8 -i 3
has "$err" "records no reference probe"
if grep -q '"drift"' "$out"; then bad "a drift without a reference"; else ok; fi
# A reference no machine can meet (8 B in 1 ps, 1 MiB in 1 ns): the drift
# line, with the figures, whatever this machine's speed.
far="$tmpd/far.yaml"
cat "$m" >"$far"
printf 'reference:\n  - {bytes: 8, time: 0.001ns}\n  - {bytes: 1MiB, time: 1ns}\n' >>"$far"
run 0 compare pingpong --model "$far" --sizes 8,1KiB -i 3
has "$out" "drift: the 8 B reference took "; has "$out" "0.001 ns at calibration"
has "$out" "the 1 MiB reference took "; has "$out" "the machine changed since calibration"
if grep -q "records no reference" "$err"; then bad "a note despite the reference"; else ok; fi
run 0 compare pingpong --model "$far" --sizes 8 -i 3 --json; json compare
has "$out" '"drift": true'; has "$out" '"reference": ['; has "$out" '"calibrated_s": '
has "$out" '"before_s": '; has "$out" '"after_s": '; has "$out" '"moved": true'
has "$out" '"threshold_pct": 20'
has "$err" "commlab: drift: the 8 B reference took"
run 0 compare pingpong --model "$far" --sizes 8 -i 3 --csv
has "$err" "commlab: drift:"
if grep -q "drift" "$out"; then bad "compare --csv: drift in the CSV"; else ok; fi
# --repeat R: R fresh measurements, the spread of their median |error|
run 0 compare pingpong --model "$m" --sizes 8,1KiB -i 3 --repeat 3
has "$out" "over 3 runs the median |error| was "; has "$out" "the table is run "
if [ "$(grep -c '^8 B ' "$out")" -eq 1 ]; then ok; else bad "--repeat: want one table"; fi
run 0 compare pingpong --model "$m" --sizes 8 -i 3 --repeat 2 --json; json compare
has "$out" '"repeat": 2'; has "$out" '"median_abs_error_pct_runs": ['
run 2 compare pingpong --model "$m" --repeat 0; has "$err" "--repeat must be an integer in 1..1000, got '0'"
# --save: the rows printed, in the --csv schema, from the same measurement
run 0 compare pingpong --model "$m" --sizes 8,1KiB -i 3 --save "$tmpd/saved.csv"
has "$tmpd/saved.csv" "# commlab-plot: compare"
has "$tmpd/saved.csv" "# eager_limit_bytes: " # the latency figure marks it
saved8=$(grep '^pingpong,shm,2,8,' "$tmpd/saved.csv" | cut -d, -f9)
printed8=$(awk '$1 == "8" && $2 == "B" { print $NF == "%" ? $(NF-1) : $NF }' "$out")
if [ -n "$saved8" ] && [ "$(printf '%+.1f' "$saved8")" = "$printed8" ]; then ok
else bad "--save: the file's 8 B error '$saved8' is not the table's '$printed8'"; fi
run 2 compare pingpong --model "$m" --sizes 8 -i 3 --save /proc/none/x.csv
has "$err" "cannot write the --save file '/proc/none/x.csv'"

# --- compare: bad usage ---
run 2 compare;                      has "$err" "which pattern?"
run 2 compare warp --model "$m";    has "$err" "unknown pattern 'warp'"
run 2 compare deadlock --model "$m"; has "$err" "is about deadlock"
run 2 compare pingpong --backend tcp --provider tcp --model "$m"; has "$err" "--provider is an option of --backend rdma"
run 2 compare pingpong --model "$m" --bytes 8 --sizes 8; has "$err" "not both"
run 2 compare pingpong --model "$m" -n 0; has "$err" "--ranks must be an integer in 1..256, got '0'"
run 2 compare pingpong --model "$m" --iters x; has "$err" "--iters must be an integer"
run 2 compare pingpong --model "$m" --frobnicate; has "$err" "unknown option '--frobnicate'"

# --- compare without --model: this host's file, calibrated first when missing ---
home="$tmpd/home"
mkdir -p "$home/configs"
cp "$(dirname "$0")/../../configs/tiers.yaml" "$home/configs/"
export COMMLAB_HOME="$home"
host=$(hostname | tr -c 'A-Za-z0-9._\n-' '-')
$calib_limit "$cl" compare pingpong --quick --sizes 8,64KiB -i 3 >"$out" 2>"$err"
rc=$?
has "$err" "calibrating first (--quick)"
if [ "$rc" -eq 0 ]; then ok; else bad "compare pingpong --quick (calibrating first) exited $rc"; fi
if ls "$home"/configs/machines/*-shm.yaml >/dev/null 2>&1; then ok; else bad "no machine file written"; fi
run 0 compare pingpong --sizes 8 -i 3
if grep -q "calibrating" "$err"; then bad "calibrated again"; else ok; fi
# --recalibrate: calibrates although the file exists, and writes it
f=$(ls "$home"/configs/machines/*-shm.yaml)
before=$(cat "$f")
sleep 1
$calib_limit "$cl" compare pingpong --recalibrate --quick --sizes 8 -i 3 >"$out" 2>"$err"
rc=$?
has "$err" "--recalibrate: calibrating shm into $f (--quick)"
if [ "$rc" -eq 0 ] && [ "$(cat "$f")" != "$before" ]; then ok
else bad "--recalibrate: exit $rc, file changed: $([ "$(cat "$f")" != "$before" ] && echo yes || echo no)"; fi
# rdma's file is the provider's: <host>-rdma-<provider>.yaml
cp "$r" "$home/configs/machines/$host-rdma-tcp.yaml"
run 0 compare pingpong --backend rdma --provider tcp --sizes 8 -i 3
has "$out" "machines/$host-rdma-tcp.yaml"
if grep -q "calibrating" "$err"; then bad "rdma: calibrated despite its file"; else ok; fi
unset COMMLAB_HOME

# --- nothing is left behind: only the files asked for ---
if [ -z "$(find "$tmpd" -name '*.tmp.*')" ]; then ok; else bad "temporary files left in $tmpd"; fi
finish
