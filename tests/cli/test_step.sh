#!/bin/sh
# test_step.sh - `commlab step` (chapter 07): its help, the figures of the
# small example (configs/steps/small-8.yaml) and their JSON, a measured
# step on shm beside its model, and a refusal with the reason for every
# bad input.
. "$(dirname "$0")/lib.sh"
small=configs/steps/small-8.yaml

run 0 step --help; has "$out" "usage: commlab step FILE.yaml"
run 0 help step; has "$out" "--sharing HOW"

# The small example: 4 all-reduces of 2 MiB per layer per microbatch on
# tp 2 send 2(K-1)/K x 2 MiB x 4 x 2 layers x 4 microbatches = 64 MiB a
# rank (Narayanan et al., SC 2021); the stage's 24 MiB of gradients
# all-reduced on dp 2: 24 MiB; the pipeline: 4 activations or gradients
# of 2 MiB.  Exact bytes from the JSON.
run 0 step $small --json; json step --json
has "$out" '"most_bytes": 67108864'
has "$out" '"least_bytes": 8388608'
has "$out" '"most_bytes": 25165824'
has "$out" '"closed_form_bytes": 67108864'
has "$out" '"sharing": "maxmin"'
# The step's time under --sharing none: (m + 1)(F + B) + 2 m S + 3 ring
# all-reduces of 8 MiB (test_step.c works it out): 30.593573 ms.
run 0 step $small --sharing none; has "$out" "step time            30.5936 ms"
has "$out" "sharing none"
has "$out" "bubble (ideal)       20.00 %"
run 0 step $small --tier infiniband; has "$out" "tier infiniband"
# Memory (test_step.c derives both): 4 microbatches x 2 layers x 22 MiB
# of activations on stage 0 (Korthikanti et al., MLSys 2023), 16 bytes
# x 12 Mi parameters of model states (Rajbhandari et al., SC 2020).
has "$out" "activations (peak)   176 MiB on stage 0"
has "$out" "model states         192 MiB a rank"
# --overlap: the first of the three 8 MiB buckets sums during the last
# backward, the last tensor-parallel all-reduce hides 10.5 us of the
# other two (chapter 07): 108.39 us after the pipeline becomes 61.7277.
run 0 step $small --sharing none --overlap
has "$out" "buckets of 8 MiB, overlapped"
has "$out" "after the pipeline   61.7277 us (the gradient buckets the last backward"
run 0 step $small --sharing none --overlap --json; json step --overlap --json
# dp waited: the 61.7277 us exposed and the 6.168 us sum the first
# bucket's ring made the rank do during the backward (4 MiB at 680 GB/s).
has "$out" '"waited_s": 6.7895'
has "$out" '"peak_microbatches": 4'
# ZeRO 3 gathers each layer when it needs it: nothing to overlap.
sed 's/zero: 0/zero: 3/' $small > "$tmpd/z3.yaml"
run 2 step "$tmpd/z3.yaml" --overlap; has "$err" "--overlap hides gradient buckets (ZeRO 0 to 2)"
run 0 step $small --sweep --csv --overlap --tier infiniband
has "$out" "dp_wait_s,activation_bytes,model_state_bytes"
run 0 step $small --sweep --overlap --tier infiniband
has "$out" "fastest: tp 1, dp 8, pp 1"
# --algo: chapter 04's other algorithms per kind; the closed forms are
# the ring's.  Recursive doubling on the 2 tp ranks sends what the ring
# does (one exchange of n), and the step takes longer: the ring sends
# halves, rd the whole 2 MiB at once.
run 0 step $small --sharing none --algo tp=rd,dp=rabenseifner
has "$out" "algorithms tp rd, dp rabenseifner"
has "$out" "ring only"
has "$out" "step time            30.6"
run 0 step $small --sharing none --algo tp=rd --json; json step --algo --json
has "$out" '"most_bytes": 67108864'
run 2 step $small --algo tp=nope; has "$err" "unknown --algo tp=nope: allreduce has naive, ring"
run 2 step $small --algo pp=ring; has "$err" "no kind 'pp' (tp or dp)"
run 2 step $small --algo tp; has "$err" "KIND=NAME pairs"
run 2 step $small --overlap --algo dp=rd; has "$err" "overlap steps the buckets' ring by hand"
# 1F1B: stage 0 holds pp = 2 microbatches, stage 1 one (test_step.c):
# 88 and 44 MiB, each stage in the JSON.
sed 's/gpipe/1f1b/' $small > "$tmpd/f1b.yaml"
run 0 step "$tmpd/f1b.yaml"; has "$out" "88 MiB on stage 0: 2 microbatches held (the ranks counted 2)"
has "$out" "; 44 MiB on stage 1 (1 held)"
run 0 step "$tmpd/f1b.yaml" --json; has "$out" '"activation_bytes_per_stage": ['
has "$out" "46137344"
# --scale: the same layout with hidden and sequence a quarter (test_step.c
# works the sizes out): 64 MiB of tp all-reduces become 4 MiB.
run 0 step $small --scale 0.25; has "$out" "hidden 256, sequence 256"
has "$out" "scaled by 0.25 (--scale)"
has "$out" "tp                   4 MiB    4 MiB        4 MiB"
run 2 step $small --scale 2; has "$err" "--scale must be a number in 1e-06..1, got '2'"
# The simulator's memory: said in the header (3 MiB and a 64 KiB stack a
# rank, with 2m request pointers: 3.5 MiB for 8 ranks), and before a run
# of 256 ranks or more on stderr; the peak measured in the JSON.
run 0 step $small; has "$out" "simulator: about 3.5 MiB of memory (8 ranks, a 64 KiB stack each"
cat >"$tmpd/wide.yaml" <<'EOF'
model: {layers: 1, hidden: 16, sequence: 4, microbatch_size: 1, dtype_bytes: 2,
        forward: 1us, backward: 2us}
layout: {tp: 1, dp: 256, pp: 1, microbatches: 1, schedule: gpipe, zero: 0, bucket: 3KiB}
EOF
run 0 step "$tmpd/wide.yaml"; has "$err" "simulating 256 ranks, about 19 MiB of memory"
run 0 step $small --json; has "$out" '"memory_peak_bytes": '
# --trace: per rank a track of its program and one per kind of traffic.
run 0 step $small --trace "$tmpd/step.json"; has "$out" "trace: $tmpd/step.json"
"$tools/tool_jsoncheck" < "$tmpd/step.json" > /dev/null && ok || bad "the step's trace is no JSON"
for track in '"rank 0"' '"rank 0 tp (async 1)"' '"rank 7 pp"' '"rank 3 dp (async 1)"'; do
    has "$tmpd/step.json" "$track"
done
run 2 step $small --sweep --trace "$tmpd/no.json"; has "$err" "--trace draws one step"
# pipeline-2.yaml: the same model on 2 stages alone; only the pipeline
# talks, 4 activations or gradients of 2 MiB a rank.
# llama-7b-64.yaml on 8 hosts of 8 (tp inside a host): tp 2(K-1)/K x
# s b h x 4 x 32 layers x 32 microbatches = 1.75 x 16 MiB x 4,096 =
# 112 GiB a rank; dp 1.75 x 32 layers x 12 h^2 x 2 B / 8 = 2.625 GiB.
run 0 step configs/steps/llama-7b-64.yaml --topology configs/topologies/8x8-nvlink-ib.yaml --json
json step llama-7b-64 --json
has "$out" '"most_bytes": 120259084288'
has "$out" '"most_bytes": 2818572288'
has "$out" '"ranks": 64'
run 0 step configs/steps/pipeline-2.yaml --json; json step pipeline-2 --json
has "$out" '"most_bytes": 8388608'
has "$out" '"most_bytes": 0'
has "$out" '"ranks": 2'
run 0 step $small --topology configs/topologies/2x4-nvlink-ib.yaml
has "$out" "step time"

# --sweep: small-8's model and batch of 8 microbatches on every layout of
# its 8 ranks, ranked by step time (pinned: tp on NVLink is cheap, every
# pipeline stage adds a bubble, so tp 2 x dp 4 leads and tp 1 x dp 2 x pp 4
# trails); pp 8 cannot split 4 layers.  tp 1 x dp 8: the whole model's
# 4 x 12 h^2 x 2 B = 96 MiB of gradients all-reduced on 8, 1.75 x 96 MiB.
run 0 step $small --sweep
order=$(awk '/^[0-9]/ {printf "%s:%s:%s ", $2, $3, $4}' "$out")
if [ "$order" = "2:4:1 1:8:1 4:2:1 8:1:1 4:1:2 2:2:2 2:1:4 1:4:2 1:2:4 " ]; then ok
else bad "step --sweep ranked '$order'"; fi
has "$out" "not laid out: tp 1 x dp 1 x pp 8: pp 8 does not divide the 4 layers"
has "$out" "8 microbatches a step in all"
run 0 step $small --sweep --json; json step sweep --json
has "$out" '"dp": 176160768'
has "$out" '"refused": "pp 8 does not divide the 4 layers"'
run 2 step $small --sweep --backend shm; has "$err" "--sweep models every layout: it runs on sim only"
# --csv: a row a step, a row a layout with --sweep (the exercises read it).
run 0 step $small --csv
has "$out" "tp,dp,pp,microbatches,step_s,pipeline_s,compute_s,bubble_ideal,tp_bytes,pp_bytes,dp_bytes"
has "$out" ",67108864,8388608,25165824"
run 0 step $small --sweep --csv
if [ "$(grep -c '^[0-9]' "$out")" -eq 9 ]; then ok; else bad "step --sweep --csv: not 9 rows"; fi
has "$out" "2,4,1,2,"
run 2 step $small --backend shm --csv; has "$err" "--csv is a modeled step's row"

# Refusals, each naming what is wrong.
run 2 step; has "$err" "which step file?"
run 2 step $small extra; has "$err" "extra"
run 2 step "$tmpd/none.yaml"; has "$err" "none.yaml"
run 2 step $small --backend mpi; has "$err" "step --backend mpi is not built"
run 2 step $small --iters 3; has "$err" "--iters is for a measured step"
run 2 step $small --model "$tmpd/m.yaml"; has "$err" "--model is for a measured step"
run 2 step $small --backend shm --model "$tmpd/m.yaml" --tier pcie
has "$err" "give it or --tier, not both"
run 2 step $small --backend shm --iters 0; has "$err" "--iters"
run 2 step $small --backend carrier-pigeon; has "$err" "unknown backend 'carrier-pigeon'"
run 2 step $small --sharing some; has "$err" "--sharing must be maxmin or none, got 'some'"
run 2 step $small --tier warp; has "$err" "warp"
run 2 step $small --tier nvlink --topology configs/topologies/ring-8.yaml
has "$err" "either --tier or --topology"
run 2 step $small --topology configs/topologies/pcie-4gpu.yaml; has "$err" "devices"
run 2 step $small --frobnicate; has "$err" "--frobnicate"
run 2 run training-step -n 8; has "$err" "commlab step FILE.yaml"

# Measured on shm: 8 processes (tp 2 x dp 2 x pp 2, 1F1B) of a step small
# enough to take a fraction of a second.  The bytes each rank sent come
# back from the processes and equal the closed forms exactly: tp
# 2(K-1)/K x 4 KiB x 4 all-reduces x 1 layer x 2 microbatches = 32 KiB;
# pp 2 microbatches of s b h = 4 KiB each, 8 KiB; dp the stage's 12 h^2
# dtype / tp = 48 KiB, all-reduced on 2 ranks: 48 KiB.  The times are
# measured: only that they are there, and the model's (tier pcie) beside
# them.
cat >"$tmpd/tiny.yaml" <<'EOF'
model:
  layers: 2
  hidden: 64
  sequence: 32
  microbatch_size: 1
  dtype_bytes: 2
  forward: 10us
  backward: 20us
layout:
  tp: 2
  dp: 2
  pp: 2
  microbatches: 2
  schedule: 1f1b
  zero: 0
  bucket: 16KiB
EOF
run 0 step "$tmpd/tiny.yaml" --backend shm --tier pcie --iters 2 --json; json step measured --json
has "$out" '"backend": "shm"'
has "$out" '"iters": 2'
has "$out" '"network": "tier pcie, full mesh of 8 ranks"'
has "$out" '"error_pct":'
has "$out" '"median":'
has "$out" '"most_bytes": 32768'
has "$out" '"least_bytes": 8192'
has "$out" '"most_bytes": 49152'
has "$out" '"closed_form_bytes": 49152'
run 0 step "$tmpd/tiny.yaml" -b shm --tier pcie --iters 1 --warmup 0
has "$out" "training step on shm, measured beside its model"
has "$out" "step time"
has "$out" "tp                  32 KiB   32 KiB       32 KiB"

sed 's/schedule: gpipe/schedule: zigzag/' $small >"$tmpd/bad.yaml"
run 2 step "$tmpd/bad.yaml"; has "$err" "bad.yaml:25:13: 'schedule' must be gpipe or 1f1b, got 'zigzag'"
sed 's/  forward: 1ms/  forward: 1 fortnight/' $small >"$tmpd/bad.yaml"
run 2 step "$tmpd/bad.yaml"; has "$err" "bad.yaml:18:12: 'forward'"
sed 's/  tp: 2/  tp: 2\n  ep: 4/' $small >"$tmpd/bad.yaml"
run 2 step "$tmpd/bad.yaml"; has "$err" "bad.yaml:22:3:"; has "$err" "ep"
grep -v 'bucket' $small >"$tmpd/bad.yaml"
run 2 step "$tmpd/bad.yaml"; has "$err" "'bucket'"

# --plot: the layouts as stacked bars, the last rank's compute and waits
# (figures go to ./plots/out: drawn in the temporary folder).
run 2 step $small --backend shm --plot; has "$err" "--plot draws modeled steps"
case $cl in /*) ;; *) cl=$PWD/$cl ;; esac
root=$PWD
cd "$tmpd" || exit 1
if command -v gnuplot >/dev/null 2>&1; then
    run 0 step "$root/$small" --sweep --overlap --tier infiniband --plot=png
    has "$out" "plots/out/step-small-8.png"
    has plots/out/step-small-8.csv "# commlab-plot: step"
    has plots/out/step-small-8.csv "tp1.dp8.pp1,"
    run 0 plot plots/out/step-small-8.csv --term dumb; has "$out" "dp: gradients not hidden"
else
    echo "gnuplot not installed: the step's plot is not drawn"
fi
cd "$root" || exit 1

finish
