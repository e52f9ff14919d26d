#!/bin/sh
# test_validate.sh COMMLAB TOOLDIR - `commlab validate`: every tutorial
# pattern measured next to its model, a line each with its figures; its
# JSON and figure; skipped lines say why; a model of another --cache mode
# is refused; bad usage.  Behaviour only: the figures of a loaded machine
# are whatever they are, so no check reads their values.
. "$(dirname "$0")/lib.sh"
case $cl in /*) ;; *) cl=$PWD/$cl ;; esac
case $tools in /*) ;; *) tools=$PWD/$tools ;; esac
cd "$tmpd" || exit 1 # --plot writes ./plots/out: keep it in the temporary folder

# Synthetic machines measured with fresh buffers (the default): shm, tcp,
# and tcp over a netlab of 1 Gbit/s ports (incast's).
m="$tmpd/shm.yaml"
cat >"$m" <<'EOM'
host: elsewhere
backend: shm
eager_limit: 64KiB
cache: fresh
segments:
  - {upto: 64KiB, alpha: 1us, bandwidth: 1GB/s}
  - {upto: 64MiB, alpha: 5us, bandwidth: 2GB/s}
EOM
sed 's/^backend: shm$/backend: tcp/' "$m" >"$tmpd/tcp.yaml"
sed 's/^backend: shm$/backend: tcp\nnetlab: 1Gbit\/s/' "$m" >"$tmpd/lab.yaml"

ids="pingpong relay ring exchange chunked relay-chunked pipeline-gpipe pipeline-1f1b overlap
broadcast-binomial reduce-binomial gather-binomial scatter-binomial allgather-ring
reducescatter-ring allreduce-ring alltoall-pairwise barrier-dissemination"

# --- help ---
run 0 --help;              has "$out" "validate"
run 0 validate --help;     has "$out" "usage: commlab validate"; has "$out" "--quick"
has "$out" "pipeline-1f1b"; has "$out" "--plot[=TERMS]"; has "$out" "--cache MODE"
run 0 help validate;       has "$out" "median |error|"

# --- bad usage: exit 2, why, nothing measured ---
run 2 validate --backend sim;        has "$err" "is the model itself"
run 2 validate --backend warp;       has "$err" "unknown backend 'warp'"
run 2 validate --model "$m" --patterns pingpog
has "$err" "unknown pattern 'pingpog'; did you mean 'pingpong'?"
run 0 validate --model "$m" --patterns pingpong, --sizes 8 -i 3 # a trailing comma is nothing
# A model with a reference probe gates every size on it with
# --regime-wait (cli/regime.h): the JSON says what the gate did, and how
# many of each line's sizes were kept from another regime.
{ cat "$m"; printf 'reference:\n  - {bytes: 8, time: 300ns}\n  - {bytes: 1048576, time: 100us}\n'; } >"$tmpd/ref.yaml"
run 0 validate --model "$tmpd/ref.yaml" --patterns pingpong,relay --sizes 8,1KiB -i 3 \
    --regime-wait 1s --json
json "validate --regime-wait"; has "$out" '"regime": {'; has "$out" '"other_regime_sizes": '
has "$out" '"other_regime": '
run 0 validate --model "$tmpd/ref.yaml" --patterns pingpong --sizes 8 -i 3 --regime-wait 1s
has "$out" "regime: each run between 8 B probes within "
run 2 validate --model "$m" --regime-wait -3s; has "$err" "--regime-wait"
run 0 validate --help; has "$out" "--regime-wait TIME"
run 2 validate --model "$m" --patterns ""; has "$err" "--patterns names no pattern"
run 2 validate --model "$m" --cache tepid; has "$err" "--cache must be fresh, warm or cold"
run 2 validate --netlab 1Gbit/s;      has "$err" "--netlab is an option of --backend tcp"
run 2 validate --model "$m" extra;   has "$err" "unexpected argument 'extra'"
run 2 validate --model "$m" --frobnicate; has "$err" "unknown option '--frobnicate'"
run 2 validate --model "$tmpd/none.yaml"; has "$err" "none.yaml"
run 2 validate --model "$m" --plot=gif; has "$err" "unknown --term 'gif'"
# A file without a cache key was measured warm: refused against fresh.
grep -v '^cache:' "$m" >"$tmpd/old.yaml"
run 2 validate --model "$tmpd/old.yaml" --patterns pingpong --sizes 8
has "$err" "was calibrated with --cache warm (it records no cache mode"
run 0 validate --model "$tmpd/old.yaml" --patterns pingpong --sizes 8 -i 3 --cache warm

# --- every pattern: a line each with its figures ---
run 0 validate --model "$m" --quick --sizes 8,64KiB,1MiB
has "$out" "validate shm, 2 ranks: every tutorial pattern measured"
has "$out" "vs modeled by $m (calibrated --cache fresh)"
for id in $ids; do
    if grep -Eq "^$id +2 +3 +[0-9]+\.[0-9] % +[0-9]+\.[0-9] % +[0-9.]+ [KM]?i?B +(yes|no)( .*)?$" "$out"
    then ok; else bad "no line with figures for $id"; fi
done
has "$out" "incast: skipped: measured over a netlab, which --backend shm has not"
has "$out" "of 18 patterns within bounds (median |error| <= 10 %, every size <= 25 %)"
# the patterns' own lines (a relay's value, the overlap's buckets) stay out
if grep -q "^rank " "$out" "$err"; then bad "a pattern's line was printed"; else ok; fi

# --- JSON: each line's figures and rows, a skipped one's reason ---
run 0 validate --model "$m" --quick --sizes 8,1MiB --patterns pingpong,pipeline-1f1b,incast --json
json "validate --json"
has "$out" '"command": "validate"'; has "$out" '"cache": "fresh"'; has "$out" '"model_cache": "fresh"'
has "$out" '"id": "pipeline-1f1b"'; has "$out" '"schedule": "1f1b"'
has "$out" '"median_abs_error_pct": '; has "$out" '"worst_abs_error_pct": '
has "$out" '"worst_bytes": '; has "$out" '"within": '
has "$out" '"skipped": "measured over a netlab'
if [ "$(grep -c '"error_pct"' "$out")" -eq 4 ]; then ok; else bad "--json: want 2 sizes of 2 patterns"; fi

# --- tcp, and incast over a netlab where this runs as root ---
# (run through a shell that records its pid: a netlab's names carry it)
$limit sh -c 'echo $$ >"$0"; exec "$@"' "$tmpd/pid" "$cl" validate --backend tcp \
    --model "$tmpd/tcp.yaml" --quick --sizes 8,1MiB --patterns ring,incast \
    --incast-model "$tmpd/lab.yaml" >"$out" 2>"$err"
rc=$?
if [ "$rc" -eq 0 ]; then ok; else bad "validate --backend tcp --patterns ring,incast exited $rc"; fi
pid=$(cat "$tmpd/pid")
if grep -Eq '^ring +2 +2 +[0-9.]+ %' "$out"; then ok; else bad "tcp: no line for ring"; fi
if [ "$(id -u)" -ne 0 ]; then
    has "$out" "incast: skipped: a netlab needs root"
elif grep -q "incast: skipped: no netlab here" "$out"; then
    ok; echo "note: no netlab on this machine: $(grep 'incast: skipped' "$out")"
else
    if grep -Eq '^incast +3 +2 +[0-9.]+ %' "$out"; then ok; else bad "no line for incast"; fi
    if ip netns list 2>/dev/null | grep -q "^clnl-$pid-"; then bad "a netlab was left behind"
    else ok; fi
fi

# --- --plot: the CSV of every row and its figure ---
if command -v gnuplot >/dev/null 2>&1; then
    run 0 validate --model "$m" --quick --sizes 8,1MiB --patterns pingpong,relay --plot=png
    has "$out" "plots/out/validate-shm.csv"; has "$out" "plots/out/validate-shm.png"
    has plots/out/validate-shm.csv "# commlab-plot: validate"
    has plots/out/validate-shm.csv "pattern,bytes,modeled_s,measured_median_s,error_pct"
    if [ "$(grep -c '^pingpong,\|^relay,' plots/out/validate-shm.csv)" -eq 4 ]; then ok
    else bad "--plot: want 4 rows"; fi
    run 0 plot plots/out/validate-shm.csv --term dumb; has "$out" "every tutorial pattern"
else
    echo "skip: gnuplot is not installed, validate --plot not drawn"
fi
finish
