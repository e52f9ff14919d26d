#!/bin/sh
# demo.sh COMMLAB - the main job: the course's cost model, then the same
# patterns modeled and measured side by side, with their figures.
#
# Everything it writes goes to plots/out/ (the machine file it calibrates
# included: configs/machines/ is left alone).  A step that fails stops the
# demo with its exit status; the deadlock steps are expected to exit 3.
set -eu
cl=$1
out=plots/out
mkdir -p "$out"
host=$(hostname)
model=$out/$host-shm.yaml

step() { printf '\n== %s ==\n' "$*"; }
# expect RC CMD... : runs CMD, which must exit RC.
expect() {
    want=$1
    shift
    rc=0
    "$@" || rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "demo: '$*' exited $rc, expected $want" >&2
        exit 1
    fi
}

step "the price of one 256 MiB message on each tier (commlab price)"
"$cl" price --bytes 256MiB --plot=png
step "T(n) from 4 KiB to 1 GiB and each tier's crossover (commlab sweep)"
"$cl" sweep --from 4KiB --to 1GiB --plot=png

step "calibrate shared memory: ping-pong 1 B .. 4 MiB, piecewise alpha-beta fit"
# calibrate keeps a fit that a slow spell of a busy machine bent, with a
# warning; a transport that fails (exit 4) is measured again, up to three
# times.
tries=0
until "$cl" calibrate --backend shm --quick --out "$model"; do
    rc=$?
    tries=$((tries + 1))
    if [ "$rc" -ne 4 ] || [ "$tries" -ge 3 ]; then
        echo "demo: calibrate exited $rc" >&2
        exit "$rc"
    fi
    echo "demo: calibration refused (the machine is busy); measuring again in 5 s" >&2
    sleep 5
done

# Each table and its figure are one measurement: compare prints the table
# and --save writes the very rows printed, which plot then draws.
for p in pingpong ring pipeline; do
    sizes=8:4MiB:x8
    repeat=1
    [ "$p" = pingpong ] && repeat=3
    [ "$p" = pingpong ] || sizes=8,64KiB,1MiB
    step "$p on 2 ranks: modeled with $model, measured on shm"
    "$cl" compare "$p" --backend shm --model "$model" -n 2 --sizes "$sizes" \
        --repeat "$repeat" --save "$out/$p-shm.csv"
    "$cl" plot "$out/$p-shm.csv" --term png
done
echo
echo "One measured run is one sample of a noisy machine: before believing an error,"
echo "repeat it (--repeat 5 gives the spread of the median |error| over 5 runs) and"
echo "read the drift line, if any (chapter 06, 'How many runs a claim needs')."

step "a pipeline's bubble: 4 stages, 4 microbatches, 200 us of compute each"
"$cl" run pipeline -n 4 --bytes 64KiB --compute 200us --model "$model" \
    --timeline "$out/pipeline-sim.csv"
"$cl" run pipeline -n 4 --bytes 64KiB --compute 200us --backend shm \
    --timeline "$out/pipeline-shm.csv"
"$cl" plot "$out/pipeline-sim.csv" "$out/pipeline-shm.csv" --term png

step "deadlock: head-to-head 1 MiB sends, modeled (exit 3)"
expect 3 "$cl" run deadlock --bytes 1MiB --model "$model" --timeline "$out/deadlock-sim.csv"
step "deadlock: the same, measured on shm (exit 3)"
expect 3 "$cl" run deadlock --bytes 1MiB --backend shm --deadlock-timeout 500ms \
    --timeline "$out/deadlock-shm.csv"
"$cl" plot "$out/deadlock-sim.csv" "$out/deadlock-shm.csv" --term png
step "deadlock: below the eager limit the same code completes (1 KiB)"
"$cl" run deadlock --bytes 1KiB --backend shm

step "figures"
echo "the figures are in $out/:"
ls "$out"/*.png | sed 's/^/  /'
echo "draw any saved CSV again with: $cl plot FILE.csv [--term dumb]"
