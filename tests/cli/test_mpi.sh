#!/bin/sh
# test_mpi.sh COMMLAB TOOLDIR - `--backend mpi`: every pattern's data check
# over 2 and 4 MPI processes (run starts itself under mpirun, or is started
# by it), MPI's own matching (wildcards, oneself, groups, truncation), the
# faults (a deadlock exits 3 with the report, a killed rank 4 with its
# name), records, --debug, the library's eager limits, and nothing left
# behind.  Skips, saying why, where the backend is not built or mpirun is
# missing.
. "$(dirname "$0")/lib.sh"

if ! "$cl" --version | grep -q "^  mpi   built"; then
    echo "skipped: the mpi backend is not built here (no mpicc when commlab was built)"
    run 2 run ring --backend mpi; has "$err" "the 'mpi' backend is not built here"
    run 2 run allreduce --library; has "$err" "none is built here"
    finish
    exit $?
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "skipped: mpirun is missing (make deps installs openmpi-bin)"
    run 2 run ring --backend mpi; has "$err" "mpirun cannot be started here"
    finish
    exit $?
fi
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
# mpirun starts this program by its full path: what pgrep looks for.
exe=$(readlink -f "$cl")

run 0 --version; has "$out" "  mpi   built ("
# The commands that take it say so in their help.
run 0 help calibrate; has "$out" "--backend shm|tcp|rdma|mpi"
run 0 help compare; has "$out" "shm (the default), tcp, rdma or mpi"
run 0 help bench; has "$out" "bench start|sim|shm|tcp|rdma|mpi|all"
has "$out" "mpi: 8 B, 64 KiB, 1 MiB"

# --- every pattern, checked, on 2 and 4 processes ---
for p in pingpong ring exchange relay pipeline chunked incast allreduce-naive allreduce-ring; do
    for n in 2 4; do
        run 0 run "$p" --backend mpi -n "$n" --sizes 8,100KiB,1MiB --iters 2 --check
        has "$out" "$p on mpi: $n ranks"
    done
done
run 0 run tests/data/mpi/tags_and_groups.c --backend mpi -n 4 --sizes 8,1MiB --check
run 0 run tests/data/mpi/tags_and_groups.c --backend mpi -n 5 --bytes 1KiB

# --- started by mpirun itself: rank 0's process alone prints ---
$limit mpirun $root --oversubscribe -q -np 2 "$cl" run ring --backend mpi --sizes 8,1MiB \
    --check --json >"$out" 2>"$err"
rc=$?
if [ "$rc" = 0 ]; then ok; else bad "mpirun -np 2 commlab run ring --backend mpi exited $rc"; fi
json "run ring --backend mpi under mpirun"
has "$out" '"backend": "mpi"'
has "$out" '"binding": "left to the launcher that started the processes"'
if [ "$(grep -c '"command"' "$out")" = 1 ]; then ok; else bad "more than one process printed"; fi

# --- usage ---
run 2 run ring --backend mpi --eager-limit 1KiB; has "$err" "eager limit is its own"
run 2 run ring --backend mpi --shm-copy cma; has "$err" "--shm-copy is an option of"
run 2 exercise check 1.1 --backend mpi; has "$err" "run, compare and calibrate start an MPI job"

# --- --library: the library's own collective beside the hand-written ones ---
# The table of the issue: every all-reduce algorithm and the library, 8 B to
# 64 MiB, each with the chapter's data check, on 2 and 4 processes.
for n in 2 4; do
    run 0 run allreduce --backend mpi --algo all --library -n "$n" \
        --sizes 8,1KiB,64KiB,1MiB,64MiB --iters 2 --warmup 1 --check --json
    json "allreduce --algo all --library -n $n"
    for a in naive ring rd rabenseifner tree hierarchical library; do
        k=$(grep -c "\"algorithm\": \"$a\"" "$out")
        if [ "$k" = 5 ]; then ok; else bad "-n $n: $k rows of $a, want one a size (5)"; fi
    done
    has "$out" '"bytes": 67108864'
done
run 0 run allreduce --backend mpi --algo all --library -n 4 --sizes 8,1MiB --iters 2
has "$out" "allreduce on mpi: 4 ranks"
if grep -q '^1 MiB  *library  .* -$' "$out"; then ok; else bad "no library row at 1 MiB"; fi
# The hierarchical all-reduce's groups are MPI communicators made in every
# iteration: the table says so, and says nothing of the ring's.
run 0 run allreduce --backend mpi -n 2 --algo hierarchical --sizes 8 --iters 2
has "$out" "hierarchical makes its groups (cl_group) in every iteration, and on mpi each one is an MPI_Comm_split"
run 0 run allreduce --backend mpi -n 2 --algo ring --sizes 8 --iters 2
if grep -q "makes its groups" "$out"; then bad "a groups note for the ring"; else ok; fi
# Its messages are the library's, never counted; it moved bytes all the same.
if grep -q '^1 MiB  *library  .* 0 B/s' "$out"; then bad "the library row shows 0 B/s"; else ok; fi
# Every collective's library call from the chapter's data, with its check, on 3
# ranks: blocks of unequal size (7 and 100001 bytes do not divide by 3).
for c in allreduce broadcast allgather reducescatter alltoall barrier reduce gather scatter; do
    run 0 run "$c" --backend mpi --algo all --library -n 3 --sizes 7,100001 --iters 2 --check
    has "$out" "library"
done
# The library's row with the run's operator and type (issue 36): MPI's own
# for f32, i32, i64; bf16 and f16 through a user MPI_Op; avg divided after.
for t in f32 bf16 f16 i64; do
    run 0 run allreduce --backend mpi --algo ring --library -n 3 --sizes 7,100001 --iters 2 \
        --op max --dtype $t
    has "$out" "reducing: max of $t elements"
done
run 0 run reduce --backend mpi --library -n 3 --bytes 100001 --iters 2 --op avg --dtype bf16
run 0 run reducescatter --backend mpi --library -n 3 --bytes 100001 --iters 2 --op bxor \
    --dtype i32
run 0 run allreduce --backend mpi --library --bytes 1MiB --json
has "$out" '"pattern": "allreduce-library"'
run 2 run allreduce --backend shm --library; has "$err" "--backend shm has none"
run 2 run allreduce --library; has "$err" "--backend sim has none"
run 2 run pingpong --backend mpi --library; has "$err" "'pingpong' is not one"
run 2 run allreduce --backend mpi --algo all --library --trace "$tmpd/l.json"
has "$err" "give --library alone, or one --algo without it"

# --- calibrate and compare: the whole command in every process of an MPI job ---
# A machine file from calibrate --quick, compared.
q="$tmpd/q-mpi.yaml"
$calib_limit "$cl" calibrate --backend mpi --quick --out "$q" >"$out" 2>"$err"
rc=$?
if [ "$rc" = 0 ]; then
    ok
    has "$out" "calibrate mpi on "; has "$out" "model written to $q"
    has "$q" "backend: \"mpi\""; has "$q" "reference:"
    # one process wrote it: no other's temporary file is left
    if ls "$q".tmp.* >/dev/null 2>&1; then bad "a temporary machine file is left"; else ok; fi
    run 0 compare pingpong --backend mpi --model "$q" --sizes 8,64KiB,1MiB --json \
        --save "$tmpd/c.csv"
    json "compare --backend mpi"
    has "$out" '"backend": "mpi"'; has "$out" '"model_backend": "mpi"'
    if [ "$(grep -c '"command"' "$out")" = 1 ]; then ok; else bad "more than one process printed"; fi
    has "$tmpd/c.csv" "pingpong,mpi,2,65536,"
else
    bad "calibrate --backend mpi --quick exited $rc"
fi
# compare on a model of another machine: the MPI job runs, the table prints.
printf '%s\n' "host: elsewhere" "backend: mpi" "eager_limit: 4KiB" "cache: fresh" "segments:" \
    "  - {upto: 4KiB, alpha: 1us, bandwidth: 1GB/s}" \
    "  - {upto: 64MiB, alpha: 5us, bandwidth: 2GB/s}" "reference:" \
    "  - {bytes: 8, time: 1us}" "  - {bytes: 1MiB, time: 500us}" >"$tmpd/m.yaml"
run 0 compare pingpong --backend mpi --model "$tmpd/m.yaml" --sizes 8,1MiB
has "$out" "pingpong, 2 ranks: mpi measured"; has "$out" "median |error|"
has "$err" "was calibrated for mpi on elsewhere"
run 0 compare exchange --backend mpi --model "$tmpd/m.yaml" --sizes 8,1MiB --csv
has "$out" "exchange,mpi,2,1048576,"
run 2 compare ring -n 4 --backend mpi --model "$tmpd/m.yaml"; has "$err" "runs on 2 ranks"
run 2 compare pingpong --backend mpi --model "$tmpd/none.yaml"; has "$err" "$tmpd/none.yaml"
if grep -q "killed by signal" "$err"; then bad "a process was reported killed"; else ok; fi
run 2 calibrate --backend mpi --out /proc/none/m.yaml; has "$err" "cannot write the machine file"

# --- the library's eager limits ---
run 0 fabric --mpi; has "$out" "btl_self_eager_limit"; has "$out" "eager limits"
run 0 fabric --mpi --json; json "fabric --mpi --json"; has "$out" '"eager_limits"'

# --- faults: a deadlock; the library's eager limit is where it starts ---
limit_b=$("$cl" fabric --mpi --json | grep -A1 '"btl_vader_eager_limit"' |
          sed -n 's/.*"bytes": \([0-9]*\).*/\1/p')
run 3 run deadlock --backend mpi --bytes 1MiB --deadlock-timeout 300ms
has "$err" "rank 0: blocked in send(dst=1, tag=0, 1 MiB)"
has "$err" "cycle: rank 0 -> rank 1 -> rank 0"
has "$err" "a message above the eager limit"
if [ -n "$limit_b" ] && [ "$limit_b" -gt 64 ]; then
    ok
    run 0 run deadlock --backend mpi --bytes $((limit_b / 2)) # (the default timeout: no false alarm under load)
    run 3 run deadlock --backend mpi --bytes $((limit_b * 2)) --deadlock-timeout 300ms
else
    bad "btl_vader_eager_limit not read: '$limit_b'"
fi
run 0 run deadlock --backend mpi --bytes 1MiB --fix nonblocking

# A data check that fails: exit 1, the rank named.
run 1 run tests/data/debug/send_modified.c --backend mpi --bytes 1MiB --debug
has "$err" "rank 0: misuse: the send buffer of isend #1 (dst=1, tag=0, 1 MiB at cl_alloc #1) was modified before the send completed"
run 0 run tests/data/debug/legal.c --backend mpi -n 3 --sizes 8,1MiB --debug

# A rank killed from outside: its guardian names it, every process ends, exit 4.
( $limit "$cl" run pingpong --backend mpi --bytes 1MiB --iters 1000000 \
    >"$tmpd/k.out" 2>"$tmpd/k.err"; echo $? >"$tmpd/k.rc" ) &
kid=
tries=0
while [ -z "$kid" ] && [ "$tries" -lt 100 ]; do
    for g in $(pgrep -f "^$exe run .*--iters 1000000" 2>/dev/null); do
        if tr '\0' '\n' <"/proc/$g/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1; then
            kid=$(pgrep -P "$g" | head -n 1)
            [ -n "$kid" ] && break
        fi
    done
    tries=$((tries + 1))
    sleep 0.1
done
if [ -n "$kid" ]; then
    sleep 0.5
    kill -9 "$kid"
    wait
    if [ "$(cat "$tmpd/k.rc")" = 4 ]; then ok; else bad "killed rank: exit $(cat "$tmpd/k.rc")"; fi
    has "$tmpd/k.err" "rank 1 was killed by signal 9 (SIGKILL)"
else
    bad "rank 1 of the kill test never started"
    pkill -f "^mpirun .*$exe run .*--iters 1000000"
    wait
fi

# --- records: a trace and a timeline from every rank ---
run 0 run pipeline --backend mpi -n 4 --compute 100us --bytes 64KiB \
    --trace "$tmpd/p.json" --timeline "$tmpd/p.csv"
"$tools/tool_jsoncheck" <"$tmpd/p.json" && ok || bad "the mpi trace is not JSON"
for r in 0 1 2 3; do has "$tmpd/p.json" "\"name\":\"rank $r\""; done
has "$tmpd/p.csv" "# side: mpi"
run 3 run deadlock --backend mpi --bytes 1MiB --deadlock-timeout 300ms --timeline "$tmpd/d.csv"
has "$tmpd/d.csv" "# status: deadlock"

# --- chapter 06's mpi commands, as written (run in a scratch folder) ---
root=$(pwd)
case "$cl" in /*) abs=$cl ;; *) abs="$root/$cl" ;; esac
sed -n '/^## Which backend/,/^## /s/^    commlab //p' chapters/06-measuring/README.md >"$tmpd/ch6"
if [ "$(wc -l <"$tmpd/ch6")" -ge 5 ]; then ok; else bad "chapter 06 lists no mpi commands"; fi
mkdir -p "$tmpd/ch6work"
while IFS= read -r line; do
    want=0
    case "$line" in *"# exit "*) want=${line##*# exit }; want=${want%%[!0-9]*} ;; esac
    (cd "$tmpd/ch6work" && eval "$limit \"\$abs\" $line") >"$out" 2>"$err" </dev/null
    rc=$?
    if [ "$rc" = "$want" ]; then ok; else bad "chapter 06: 'commlab $line' exited $rc, want $want"; fi
done <"$tmpd/ch6"

# --- bench mpi: its table, beside a stand-in for the library's ping-pong ---
# commlab's side runs for real; the reference is a script beside a copy of
# the binary (where bench looks for it) printing fixed figures, so the
# table's shape is checked, never a timing, and a reference that prints
# garbage or leaves a size out is an error, never a zero.
mkdir -p "$tmpd/bench"
cp "$cl" "$tmpd/bench/commlab"
# stand_in LINE... : the reference prints these lines, from rank 0 alone.
stand_in() {
    {
        echo '#!/bin/sh'
        # shellcheck disable=SC2016 # the stand-in expands it
        echo '[ "$OMPI_COMM_WORLD_RANK" = 0 ] || exit 0'
        for l in "$@"; do echo "echo '$l'"; done
    } >"$tmpd/bench/mpi_pingpong"
    chmod +x "$tmpd/bench/mpi_pingpong"
}
# fig BYTES US : a line of the reference with latency US and 1 GB/s.
fig() {
    echo "size=$1 lat_us_median=$2 lat_us_min=$2 lat_us_max=$2 bw_Bps_median=1e+09" \
        "bw_Bps_min=1e+09 bw_Bps_max=1e+09"
}
cl_built=$cl
cl=$tmpd/bench/commlab
stand_in "$(fig 8 0.5)" "$(fig 16 0.6)" "$(fig 65536 20)" "$(fig 1048576 200)"
run 0 bench mpi --quick
has "$out" "median [min-max]"
has "$out" "size     commlab latency                library      ratio"
t='[0-9.]+ [num]?s'
for row in "8 B:500 ns" "64 KiB:20 us" "1 MiB:200 us"; do
    if grep -Eq "^${row%%:*} +$t \[$t-$t\] +${row#*:} +[0-9]+\.[0-9][0-9]\$" "$out"; then ok
    else bad "bench mpi: no row '${row%%:*}' with its range, '${row#*:}' and a ratio"; fi
done
if [ "$(grep -Ec '^[0-9]+ (B|KiB|MiB) ' "$out")" = 3 ]; then ok; else bad "bench mpi: not 3 rows"; fi
has "$out" "ratio: commlab / the library's own"
stand_in "$(fig 8 0.5)" "size=65536 lat_us_median=abc lat_us_min=1 lat_us_max=1" "$(fig 1048576 200)"
run 4 bench mpi --quick
has "$err" "bench mpi: the library's ping-pong printed 'size=65536 lat_us_median=abc lat_us_min=1 lat_us_max=1', which is not one of its figures"
if grep -Eq '^64 KiB .* - +-$' "$out"; then ok; else bad "bench mpi: garbled, yet figures"; fi
stand_in "$(fig 8 0.5)" "$(fig 65536 20)"
run 4 bench mpi --quick
has "$err" "bench mpi: the library's ping-pong printed no figures for 1048576 bytes"
rm "$tmpd/bench/mpi_pingpong"
# shellcheck disable=SC2034 # lib.sh's run starts commlab through $wrap
wrap="env -u COMMLAB_HOME"
run 0 bench mpi --quick
# shellcheck disable=SC2034 # (as above)
wrap=
has "$out" "Open MPI: skipped, $tmpd/bench/mpi_pingpong is missing and its source is not here"
if grep -Eq '^1 MiB .* - +-$' "$out"; then ok; else bad "bench mpi: no reference, yet figures"; fi
cl=$cl_built

# --- nothing left behind ---
sleep 0.2
if pgrep -f "^$exe (run|calibrate|compare) .*--backend mpi" >/dev/null || pgrep -f "^mpirun .*$exe " >/dev/null; then
    bad "processes of mpi runs are still alive"
else ok; fi
finish
