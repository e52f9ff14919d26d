#!/bin/sh
# test_compare.sh COMMLAB TOOLDIR - calibrate, machine files, run --model
# FILE and compare as a user meets them: exit codes, messages, the CSV
# schema `commlab plot` reads, the JSON fields, nothing left behind.
# Behaviour only: no check depends on how fast this machine is.
. "$(dirname "$0")/lib.sh"

# A synthetic machine: T(n) = 1 us + n / 1 GB/s up to 64 KiB, then
# 5 us + n / 2 GB/s.
m="$tmpd/synthetic.yaml"
cat >"$m" <<'EOF'
host: elsewhere
backend: shm
eager_limit: 64KiB
segments:
  - {upto: 64KiB, alpha: 1us, bandwidth: 1GB/s}
  - {upto: 64MiB, alpha: 5us, bandwidth: 2GB/s}
EOF

# --- help ---
run 0 --help;                  has "$out" "calibrate"; has "$out" "compare"
run 0 calibrate --help;        has "$out" "usage: commlab calibrate"; has "$out" "--quick"
run 0 help compare;            has "$out" "usage: commlab compare"; has "$out" "error_pct"
run 0 run --help;              has "$out" "--model FILE.yaml"

# --- calibrate: bad usage ---
run 2 calibrate;               has "$err" "give --backend shm, tcp or rdma"
run 2 calibrate --backend mpi; has "$err" "not built"
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
run 0 calibrate --backend shm --quick --out "$q"
has "$out" "alpha"; has "$out" "R^2"; has "$out" "max residual"; has "$out" "model written to $q"
has "$q" "backend: \"shm\""; has "$q" "eager_limit: 65536"; has "$q" "segments:"
has "$q" "{upto: 65536, "; has "$q" ", gap: "; has "$q" "gap_bandwidth: "
has "$out" "gap bandwidth"
has "$out" "duplex: an exchange"; has "$q" "duplex:"
if [ "$(ls -A "$tmpd" | grep -c tmp)" -eq 0 ]; then ok; else bad "a temporary file was left in $tmpd"; fi
run 0 run pingpong --model "$q" --sizes 8,1MiB; has "$out" "machine $q (shm on"
has "$out" "segments, duplex), full mesh of 2 ranks"
run 0 calibrate --backend shm --quick --out "$tmpd/q2.yaml" --csv
has "$out" "# commlab-plot: compare"; has "$out" "# title: pingpong, shm, 2 ranks, host "
has "$out" "pattern,backend,ranks,bytes,modeled_s,measured_median_s,measured_min_s,measured_max_s,error_pct"
has "$out" "pingpong,shm,2,65536,"
run 0 calibrate --backend tcp --quick --out "$tmpd/q-tcp.yaml" --json; json calibrate
has "$out" '"command": "calibrate"'; has "$out" '"alpha_s"'; has "$out" '"r2"'
has "$out" '"modeled_s"'; has "$out" '"backend": "tcp"'; has "$out" '"gap_s"'
has "$out" '"duplex_segments"'; has "$out" '"exchange_s"'; has "$out" '"exchange_modeled_s"'

# --- rdma: calibrated through libfabric, the provider recorded ---
r="$tmpd/quick-rdma.yaml"
run 0 calibrate --backend rdma --provider tcp --quick --out "$r"
has "$out" "calibrate rdma on "; has "$out" "model written to $r"
has "$r" 'backend: "rdma"'; has "$r" 'provider: "tcp"'; has "$r" ", gap: "
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
has "$out" "pattern,backend,ranks,bytes,modeled_s,measured_median_s,measured_min_s,measured_max_s,error_pct"
has "$out" "pingpong,shm,2,8,1.008e-06,"; has "$out" "pingpong,shm,2,1048576,0.000529288,"
if [ "$(grep -c '^pingpong,shm,2,' "$out")" -eq 2 ]; then ok; else bad "compare --csv: want 2 rows"; fi
run 0 compare pingpong --model "$m" --sizes 8,4KiB,1MiB -i 3 --json; json compare
has "$out" '"command": "compare"'; has "$out" '"results": ['
has "$out" '"modeled_s": 1.008e-06'; has "$out" '"measured_s": {'
has "$out" '"median": '; has "$out" '"min": '; has "$out" '"max": '; has "$out" '"error_pct": '
if [ "$(grep -c '"error_pct"' "$out")" -eq 3 ]; then ok; else bad "compare --json: want 3 results"; fi
run 0 compare pingpong --model "$m" --bytes 4KiB -i 3
has "$out" "modeled"; has "$out" "measured (median)"; has "$out" "median |error|"
run 0 compare ring -n 2 --model "$m" --sizes 8,128KiB -i 3
run 0 compare pipeline -n 2 --model "$m" --sizes 8,128KiB -i 3 --compute 10us
run 0 compare pingpong --backend tcp --model "$m" --sizes 8,128KiB -i 3 --csv
has "$out" "pingpong,tcp,2,131072,"
# a student's own pattern file, compiled and loaded as `run FILE.c` does
run 0 compare chapters/02-point-to-point/solutions/ring_relay.c -n 3 --model "$m" --sizes 8,1MiB -i 3 --csv
has "$out" "ring_relay.c,shm,3,1048576,"
printf 'int pattern(void) { return oops; }\n' >"$tmpd/broken.c"
run 2 compare "$tmpd/broken.c" --model "$m"; has "$err" "oops"
run 2 compare "$tmpd/missing.c" --model "$m"; has "$err" "cannot read the pattern file"

# --- compare: bad usage ---
run 2 compare;                      has "$err" "which pattern?"
run 2 compare warp --model "$m";    has "$err" "unknown pattern 'warp'"
run 2 compare deadlock --model "$m"; has "$err" "is about deadlock"
run 2 compare pingpong --backend mpi --model "$m"; has "$err" "not built"
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
run 0 compare pingpong --quick --sizes 8,64KiB -i 3
has "$err" "calibrating first (--quick)"
if ls "$home"/configs/machines/*-shm.yaml >/dev/null 2>&1; then ok; else bad "no machine file written"; fi
run 0 compare pingpong --sizes 8 -i 3
if grep -q "calibrating" "$err"; then bad "calibrated again"; else ok; fi
# rdma's file is the provider's: <host>-rdma-<provider>.yaml
host=$(hostname | tr -c 'A-Za-z0-9._\n-' '-')
cp "$r" "$home/configs/machines/$host-rdma-tcp.yaml"
run 0 compare pingpong --backend rdma --provider tcp --sizes 8 -i 3
has "$out" "machines/$host-rdma-tcp.yaml"
if grep -q "calibrating" "$err"; then bad "rdma: calibrated despite its file"; else ok; fi
unset COMMLAB_HOME

# --- nothing is left behind: only the files asked for ---
if [ -z "$(find "$tmpd" -name '*.tmp.*')" ]; then ok; else bad "temporary files left in $tmpd"; fi
finish
