#!/bin/sh
# test_collectives.sh COMMLAB TOOLDIR - the collectives from the command
# line: `run COLLECTIVE --algo NAME|all`, the old names, algbw and busbw in
# text, CSV and JSON, `patterns`, and `collectives` (the crossover):
# formulas beside the simulated times, the fastest per size, its plot.
. "$(dirname "$0")/lib.sh"
case $cl in /*) ;; *) cl=$PWD/$cl ;; esac
case $tools in /*) ;; *) tools=$PWD/$tools ;; esac
root=$PWD
cd "$tmpd" || exit 1 # figures go to ./plots/out: keep them in the temporary folder
ib="-n 16 --tier infiniband --bytes 256MiB --no-payload"

# --- selection: the collective, an algorithm, every algorithm ---
run 0 patterns; has "$out" "allreduce-ring"; has "$out" "rabenseifner"
has "$out" "2(K-1)(a + n/(K B))"; has "$out" "barrier-dissemination"
run 0 run allreduce --algo ring $ib --csv; cp "$out" "$tmpd/algo.csv"
run 0 run allreduce-ring $ib --csv
if cmp -s "$out" "$tmpd/algo.csv"; then ok; else bad "allreduce --algo ring differs from allreduce-ring"; fi
run 0 run allreduce $ib --csv   # the default algorithm is the ring
if cmp -s "$out" "$tmpd/algo.csv"; then ok; else bad "allreduce's default is not the ring"; fi
run 0 run allreduce --algo naive $ib; has "$out" "allreduce-naive on sim"; has "$out" "167.1 ms"
run 0 run allreduce --algo all -n 8 --sizes 1KiB,1MiB
for a in naive ring rd rabenseifner tree hierarchical; do has "$out" " $a "; done
has "$out" "allreduce on sim: 8 ranks"
run 2 run allreduce --algo nope; has "$err" "unknown --algo 'nope' for allreduce (naive, ring, rd, rabenseifner, tree, hierarchical, or all)"
run 2 run allreduce-ring --algo tree; has "$err" "'allreduce-ring' is one algorithm of allreduce: run allreduce --algo tree"
run 2 run pingpong --algo ring; has "$err" "--algo picks an algorithm of a collective"
run 2 run allreduce --algo all --bytes 1KiB --trace x.json; has "$err" "--trace records one run"

# every collective and algorithm checks its data on sim, odd sizes and ranks
for c in broadcast reduce gather scatter allgather reducescatter allreduce alltoall barrier; do
    run 0 run $c --algo all -n 7 --sizes 13,100003
done
run 0 run allreduce --algo hierarchical -n 7 --group 3 --bytes 1001
run 0 run allreduce --algo hierarchical -n 16 --topology "$root/configs/topologies/dgx-2node.yaml" --bytes 1MiB
run 2 run allreduce --algo hierarchical --group 0; has "$err" "--group"
# measured, one collective of each kind
for c in broadcast allgather alltoall; do
    run 0 run $c --algo all --backend shm -n 3 --bind none --bytes 100003 -i 1 --warmup 0
done

# --- operators and types (issue 36): every algorithm checks its data ---
for t in f64 f32 bf16 f16 i32 i64; do
    run 0 run allreduce --algo all -n 5 --sizes 13,1003 --op max --dtype $t
done
for op in sum avg prod min max; do
    run 0 run reduce --algo all -n 6 --bytes 1003 --op $op --dtype bf16
done
for op in band bor bxor; do
    run 0 run reducescatter --algo all -n 6 --bytes 1003 --op $op --dtype i64
done
run 0 run allreduce -n 4 --op avg --dtype f16; has "$out" "reducing: avg of f16 elements at 680 GB/s a rank"
run 0 run allreduce -n 4 --reduce-bandwidth inf; has "$out" "reducing: sum of f64 elements, free"
run 0 run allreduce -n 4 --op min --json; json
has "$out" '"op": "min"'; has "$out" '"dtype": "f64"'; has "$out" '"gamma_s_per_byte": 1.47'
run 0 run broadcast -n 4
if grep -q "reducing:" "$out"; then bad "a broadcast says it reduces"; else ok; fi
run 2 run allreduce --op band; has "$err" "band applies to integer types (i32, i64), not f64"
run 2 run allreduce --op mean; has "$err" "unknown --op 'mean' (sum, avg, prod, min, max, band"
run 2 run allreduce --dtype fp16; has "$err" "unknown --dtype 'fp16' (f64, f32, bf16, f16, i32, i64)"
run 2 run broadcast --op max; has "$err" "--op and --dtype apply to the reductions"
run 2 run allreduce --reduce-bandwidth 0GB/s; has "$err" "--reduce-bandwidth must be > 0"
run 2 run allreduce --backend shm --reduce-bandwidth inf; has "$err" "reduce-bandwidth"
# measured: the ranks compute, and check, in the type asked
for b in shm tcp; do
    run 0 run allreduce --algo all --backend $b -n 3 --bind none --bytes 100003 --op avg \
        --dtype bf16 -i 1 --warmup 0
done
run 0 run reducescatter --algo all --backend shm -n 3 --bind none --bytes 100003 --op bxor \
    --dtype i32 -i 1 --warmup 0

# --- algbw and busbw: nccl-tests' factors ---
run 0 run allreduce-ring $ib --csv
has "$out" "bytes,iters,time_median_s,time_min_s,time_max_s,bandwidth_Bps,messages,algorithm,algbw_Bps,busbw_Bps"
# algbw = 256 MiB / 10.526 ms = 25.50 GB/s (2(K-1)(alpha + n/(K B)) +
# (K-1) n gamma / K, gamma = 1 / 680 GB/s); busbw = algbw x 2(K-1)/K = x 1.875
row=$(sed -n 2p "$out")
alg=$(echo "$row" | cut -d, -f9); bus=$(echo "$row" | cut -d, -f10)
if awk -v a="$alg" -v b="$bus" 'BEGIN { exit !(a > 25.49e9 && a < 25.51e9 && b / a > 1.87499 && b / a < 1.87501) }'
then ok; else bad "algbw $alg, busbw $bus: want 25.50 GB/s and 1.875 x it"; fi
run 0 run allreduce-ring $ib; has "$out" "algbw"; has "$out" "busbw"; has "$out" "25.5 GB/s"; has "$out" "47.81 GB/s"
run 0 run allgather-ring -n 4 --bytes 1MiB --json; json; has "$out" '"algbw_Bps"'; has "$out" '"busbw_Bps"'
has "$out" '"collective": "allgather"'; has "$out" '"algorithm": "ring"'
run 0 run pingpong --csv; has "$out" "bandwidth_Bps,messages"
if grep -q busbw "$out"; then bad "pingpong has no bus bandwidth"; else ok; fi
run 0 run barrier -n 4 --csv
if grep -q busbw "$out"; then bad "a barrier has no bus bandwidth"; else ok; fi

# --- the crossover ---
run 0 collectives allreduce -n 16 --tier infiniband --sizes 8:1GiB:x8
has "$out" "2(K-1)(a + n/(K B)) + (K-1)n g/K"; has "$out" "fastest:"; has "$out" "8 B to 32 KiB: rd"
has "$out" "256 KiB to 1 GiB: rabenseifner"
# 8 B on 16 ranks is not 16 whole doubles: "~" marks close formulas, and a
# line under the table says what it means; 64 KiB on 8 ranks has none.
has "$out" "~: the formula is close, not exact"
run 0 collectives allreduce -n 8 --sizes 64KiB --sharing none
if grep -q "~" "$out"; then bad "a '~' where every formula is exact"; else ok; fi
run 0 collectives allreduce -n 8 --sizes 64KiB --sharing none --csv
has "$out" "bytes,algorithm,simulated_s,formula_s,formula_exact,best"
# every message alone: each simulated time is its formula (8 ranks, blocks even)
if awk -F, 'NR > 1 && $5 == "yes" { d = $3 - $4; if (d < 0) d = -d; if (d > 1e-9) bad = 1; n++ }
            END { exit !(n == 6 && !bad) }' "$out"
then ok; else bad "simulated and formula differ with --sharing none"; fi
run 0 collectives broadcast -n 8 --sizes 1MiB --csv
# max-min: rank 0's port carries the linear broadcast's 7 copies
if awk -F, '$2 == "linear" { exit !($3 > 5 * $4) }' "$out"; then ok; else bad "linear broadcast not slowed by its port"; fi
run 0 collectives alltoall -n 4 --sizes 8,1MiB --json; json; has "$out" '"formula_exact": true'
run 0 collectives barrier -n 5 --sizes 8
run 2 collectives nope; has "$err" "unknown collective 'nope' (broadcast, reduce"
run 2 collectives; has "$err" "which collective?"
run 2 collectives allreduce -n 1; has "$err" "--ranks"
# A request per peer is on the heap (cl_array): no rank limit.
run 0 collectives broadcast -n 300 --sizes 8
run 0 run alltoall --algo all -n 300 --bytes 8 --no-payload; has "$out" "linear  "
run 0 run alltoall --algo pairwise -n 300 --bytes 8 --no-payload
run 0 collectives --help; has "$out" "usage: commlab collectives COLLECTIVE"
if command -v gnuplot >/dev/null 2>&1; then
    run 0 collectives allreduce -n 8 --sizes 8:1MiB:x8 --plot=png
    has plots/out/collectives-allreduce.csv "# commlab-plot: collectives"
    if [ "$(head -c 8 plots/out/collectives-allreduce.png | od -An -tx1 | tr -d ' \n')" = \
         "89504e470d0a1a0a" ]; then ok; else bad "no PNG of the crossover"; fi
    run 0 plot plots/out/collectives-allreduce.csv --term dumb; has "$out" "fastest at this size"
else
    echo "gnuplot not installed: the crossover's plot is not drawn"
fi
# --- the exercises: solutions pass, wrong data and too many messages fail ---
for id in 4.2 4.3 4.4 4.5 4.7 4.8 4.9 4.10; do
    run 0 exercise check $id --solution; has "$out" "passed: "
done
for id in 4.2 4.3 4.4 4.7 4.8 4.9 4.10; do
    run 0 exercise check $id --solution --backend shm; has "$out" "--backend shm"
done
# (the wrong attempts are the grader's own cases: tests/cli/test_grader.sh)
run 0 exercise check 4.5 --answer 490KiB
run 1 exercise check 4.5 --answer 150KB
run 0 collectives allreduce -n 16 --tier infiniband --between tree,ring
has "$out" "the formulas cross at n* = 502232 B (490.46 KiB): tree is faster below, ring above"
# gamma 0 (reducing free): the alpha-beta crossover, 22 alpha / (6.125 / B)
run 0 collectives allreduce -n 16 --tier infiniband --between tree,ring --reduce-bandwidth inf
has "$out" "the formulas cross at n* = 538776 B (526.15 KiB): tree is faster below, ring above"
run 0 collectives allreduce -n 16 --tier infiniband --between naive,ring
has "$out" "ring is faster than naive at every size"
run 2 collectives allreduce --between tree; has "$err" "--between takes two algorithms"
run 2 collectives allreduce --between tree,nope; has "$err" "unknown algorithm 'nope' of allreduce"
finish
