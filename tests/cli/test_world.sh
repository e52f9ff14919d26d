#!/bin/sh
# test_world.sh COMMLAB TOOLDIR - tcp runs whose processes are started
# elsewhere, one process per rank: by hand (--rank/--world/--master), with
# torchrun's variables, and under mpirun; their faults (a deadlock, a killed
# rank, a process started with other options); and the errors of a world
# that cannot be joined.
. "$(dirname "$0")/lib.sh"

# A port for this run's rendezvous, different in parallel runs of the suite.
port=$((20000 + $$ % 20000))
next_port() { port=$((port + 1)); }

# world N OUTPREFIX ARGS... : starts ranks 1..N-1 in the background, rank 0
# in the foreground (each bounded by $limit); rank r's stdout, stderr and
# exit status go to OUTPREFIX.r.{out,err,rc}.
world() {
    n=$1
    pre=$2
    shift 2
    r=1
    while [ "$r" -lt "$n" ]; do
        ( $limit "$cl" "$@" --rank "$r" --world "$n" --master "127.0.0.1:$port" \
            >"$pre.$r.out" 2>"$pre.$r.err"; echo $? >"$pre.$r.rc" ) &
        r=$((r + 1))
    done
    $limit "$cl" "$@" --rank 0 --world "$n" --master "127.0.0.1:$port" \
        >"$pre.0.out" 2>"$pre.0.err"
    echo $? >"$pre.0.rc"
    wait
    next_port
}
# rcs PREFIX N WANT : every rank exited WANT.
rcs() {
    r=0
    while [ "$r" -lt "$2" ]; do
        got=$(cat "$1.$r.rc")
        if [ "$got" = "$3" ]; then ok; else
            bad "world $1: rank $r exited $got, want $3: $(cat "$1.$r.err")"; fi
        r=$((r + 1))
    done
}

# --- by hand: every pattern's data check over 2 and 4 processes ---
for p in pingpong ring exchange relay pipeline chunked allreduce-ring; do
    world 2 "$tmpd/w2$p" run "$p" --backend tcp --sizes 8,100KiB,1MiB --iters 2 --check
    rcs "$tmpd/w2$p" 2 0
done
world 4 "$tmpd/w4" run allreduce-ring --backend tcp --sizes 8,1MiB --iters 2 --check
rcs "$tmpd/w4" 4 0
has "$tmpd/w4.0.out" "allreduce-ring on tcp: 4 ranks"
if [ -s "$tmpd/w4.1.out" ]; then bad "rank 1 printed results: only rank 0 should"; else ok; fi

# rdma finds its endpoints through the same rendezvous
world 2 "$tmpd/wr" run pingpong --backend rdma --provider tcp --sizes 8,1MiB --iters 2 --check
rcs "$tmpd/wr" 2 0
has "$tmpd/wr.0.out" "pingpong on rdma: 2 ranks"

# --- torchrun's variables, with a secret: the rendezvous is TCP ---
secret=commlab-test-secret-0123456789
( MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=1 WORLD_SIZE=2 COMMLAB_SECRET=$secret \
    $limit "$cl" run ring --backend tcp --json >"$tmpd/t1.out" 2>"$tmpd/t1.err";
  echo $? >"$tmpd/t1.rc" ) &
MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=0 WORLD_SIZE=2 COMMLAB_SECRET=$secret \
    $limit "$cl" run ring --backend tcp --json >"$out" 2>"$err"
rc=$?
wait
next_port
if [ "$rc" = 0 ] && [ "$(cat "$tmpd/t1.rc")" = 0 ]; then ok
else bad "torchrun variables: rank 0 exited $rc, rank 1 $(cat "$tmpd/t1.rc")"; fi
json "torchrun-style run"
has "$out" '"binding": "left to the launcher that started the processes"'

# --- COMMLAB_SECRET is read once and leaves the environment: neither the
# compiler of a pattern file nor the pattern (every rank) can find it ---
cat >"$tmpd/cc.sh" <<EOF
#!/bin/sh
env >"$tmpd/cc.env"
exec cc "\$@"
EOF
chmod +x "$tmpd/cc.sh"
leak=tests/data/secret/env_leak.c
( MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=1 WORLD_SIZE=2 COMMLAB_SECRET=$secret \
    CC="$tmpd/cc.sh" $limit "$cl" run $leak --backend tcp -i 1 --warmup 0 \
    >"$tmpd/s1.out" 2>"$tmpd/s1.err"; echo $? >"$tmpd/s1.rc" ) &
MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=0 WORLD_SIZE=2 COMMLAB_SECRET=$secret \
    CC="$tmpd/cc.sh" $limit "$cl" run $leak --backend tcp -i 1 --warmup 0 >"$out" 2>"$err"
rc=$?
wait
next_port
if [ "$rc" = 0 ] && [ "$(cat "$tmpd/s1.rc")" = 0 ]; then ok
else bad "secret leak run: rank 0 exited $rc, rank 1 $(cat "$tmpd/s1.rc"): $(cat "$err")"; fi
has "$out" "rank 0: getenv: [] environ: []"
has "$tmpd/s1.out" "rank 1: getenv: [] environ: []"
for b in shm sim; do
    COMMLAB_SECRET=$secret $limit "$cl" run $leak --backend $b -i 1 --warmup 0 \
        >>"$tmpd/s1.out" 2>&1 || bad "secret leak run on $b failed"
done
has "$tmpd/s1.out" "rank 1: getenv: [] environ: []"
has "$tmpd/cc.env" "PATH="
for f in "$out" "$tmpd/s1.out" "$tmpd/cc.env"; do
    if grep -q "$secret" "$f"; then bad "COMMLAB_SECRET found in $f"; else ok; fi
done

# ... and no copy of its text is left in a rank's memory once the key is
# stretched from it (a copy used to stay on the heap of every rank).
scan=tests/data/secret/mem_scan.c
( MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=1 WORLD_SIZE=2 \
    COMMLAB_SECRET=sekrit-TEST-0123456789 $limit "$cl" run $scan --backend tcp -i 1 \
    --warmup 0 >/dev/null 2>"$tmpd/m1.err" ) &
MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=0 WORLD_SIZE=2 \
    COMMLAB_SECRET=sekrit-TEST-0123456789 $limit "$cl" run $scan --backend tcp -i 1 \
    --warmup 0 >/dev/null 2>"$err"
wait
next_port
has "$err" "rank 0: copies of the secret: 0"
has "$tmpd/m1.err" "rank 1: copies of the secret: 0"

# --- under mpirun: rank and size from Open MPI's environment, no set-up ---
if command -v mpirun >/dev/null 2>&1; then
    $limit mpirun --allow-run-as-root --oversubscribe -np 2 "$cl" run ring --backend tcp \
        --sizes 8,1MiB --check >"$out" 2>"$err"
    rc=$?
    if [ "$rc" = 0 ]; then ok; else bad "mpirun -np 2 exited $rc"; fi
    has "$out" "ring on tcp: 2 ranks"
else
    bad "mpirun is missing: make deps installs openmpi-bin"
fi

# --- faults: a deadlock is reported by rank 0, every process exits 3 ---
world 2 "$tmpd/dl" run deadlock --backend tcp --bytes 1MiB --deadlock-timeout 300ms
rcs "$tmpd/dl" 2 3
has "$tmpd/dl.0.err" "cycle: rank 0 -> rank 1 -> rank 0"
world 2 "$tmpd/ok" run deadlock --backend tcp --bytes 1KiB
rcs "$tmpd/ok" 2 0
# A rank that returned, as rank 1's process tells rank 0's (job_wait.outside).
world 2 "$tmpd/er" run tests/data/fault/early_return.c --backend tcp --bytes 8 --deadlock-timeout 300ms
rcs "$tmpd/er" 2 3
has "$tmpd/er.0.err" "rank 0 waits on rank 1, which already returned"

# A rank killed from outside (its launcher's child): named, exit 4 for all.
# pgrep finds it (procps, which `make deps` installs); without it the
# checks below could not see a process left behind.
command -v pgrep >/dev/null 2>&1 || bad "pgrep is missing: make deps installs procps"
( $limit "$cl" run pingpong --backend tcp --bytes 8 --iters 1000000 --rank 1 --world 2 \
    --master "127.0.0.1:$port" >"$tmpd/k.1.out" 2>"$tmpd/k.1.err"; echo $? >"$tmpd/k.1.rc" ) &
( $limit "$cl" run pingpong --backend tcp --bytes 8 --iters 1000000 --rank 0 --world 2 \
    --master "127.0.0.1:$port" >"$tmpd/k.0.out" 2>"$tmpd/k.0.err"; echo $? >"$tmpd/k.0.rc" ) &
agent=
tries=0
while [ -z "$agent" ] && [ "$tries" -lt 100 ]; do
    agent=$(pgrep -o -f "^$cl run pingpong .*--rank 1 --world 2 --master 127.0.0.1:$port" \
            2>/dev/null)
    kid=
    [ -n "$agent" ] && kid=$(pgrep -P "$agent" | head -n 1)
    [ -z "$kid" ] && agent=
    tries=$((tries + 1))
    sleep 0.1
done
if [ -n "$kid" ]; then
    sleep 0.5
    kill -9 "$kid"
    wait
    rcs "$tmpd/k" 2 4
    has "$tmpd/k.0.err" "rank 1 was killed by signal 9 (SIGKILL)"
else
    bad "rank 1 of the kill test never started"
    pkill -9 -f "127.0.0.1:$port"
    wait
fi
next_port
if pgrep -f "commlab run pingpong .*127.0.0.1:$((port - 1))" >/dev/null; then
    bad "processes left behind after a killed rank"
else ok; fi

# --- processes started with other options are refused ---
( $limit "$cl" run ring --backend tcp --iters 3 --rank 1 --world 2 --master "127.0.0.1:$port" \
    >"$tmpd/m.1.out" 2>"$tmpd/m.1.err"; echo $? >"$tmpd/m.1.rc" ) &
run 2 run ring --backend tcp --rank 0 --world 2 --master "127.0.0.1:$port"
wait
next_port
has "$err" "started with other options than rank 0"
if [ "$(cat "$tmpd/m.1.rc")" = 2 ]; then ok; else bad "refused rank 1 exited $(cat "$tmpd/m.1.rc")"; fi

# --- errors of a world that cannot be joined ---
run 2 run ring --backend tcp --rank 1;           has "$err" "--rank and --world go together"
run 2 run ring --backend shm --rank 0 --world 2; has "$err" "--rank is an option of --backend tcp"
run 2 run ring --backend tcp -n 3 --rank 0 --world 2 --master 127.0.0.1:1
has "$err" "-n 3 disagrees with the world of 2 ranks"
run 2 run ring --backend tcp --rank 0 --world 2 --master 10.1.2.3:29500
has "$err" "COMMLAB_SECRET"
run 2 run ring --backend tcp --rank 0 --world 2 --master nocolon; has "$err" "HOST:PORT"
run 2 run ring --backend tcp --rank 0 --world 2 --master 127.0.0.1:1 --join-timeout 0s
has "$err" "--join-timeout must be"
export MASTER_ADDR=127.0.0.1 RANK=0 WORLD_SIZE=2
run 2 run ring --backend tcp
has "$err" "MASTER_PORT"
unset MASTER_ADDR RANK WORLD_SIZE
run 4 run ring --backend tcp --rank 0 --world 2 --master "127.0.0.1:$port" --join-timeout 300ms
has "$err" "rank 1 did not"

finish
