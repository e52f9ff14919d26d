#!/bin/sh
# test_input.sh COMMLAB TOOLDIR - hostile and mistaken input (issue 23,
# items 5, 7 and 8): files that are not regular files, files that would
# cost minutes or gigabytes, configs that used to be half-read silently, and
# the exit codes of a failed trace, a foreign --listen, an oversized
# --eager-limit and a send to a rank that does not exist.  Ends with
# "N passed, N failed".
. "$(dirname "$0")/lib.sh"
case "$cl" in /*) ;; *) cl="$(pwd)/$cl" ;; esac
mkdir -p "$tmpd/tmp"
export TMPDIR="$tmpd/tmp"

# --- not a regular file: refused at once, never read (a FIFO blocked) ---
mkfifo "$tmpd/fifo.yaml" "$tmpd/fifo.c" "$tmpd/fifo.csv"
run 2 price --config "$tmpd/fifo.yaml"; has "$err" "cannot read config '$tmpd/fifo.yaml': it is a FIFO"
run 2 run pingpong --topology "$tmpd/fifo.yaml"; has "$err" "it is a FIFO"
run 2 run pingpong --model "$tmpd/fifo.yaml"; has "$err" "it is a FIFO"
run 2 run "$tmpd/fifo.c"; has "$err" "cannot read the pattern file '$tmpd/fifo.c': it is a FIFO"
run 2 plot "$tmpd/fifo.csv"; has "$err" "cannot read CSV file '$tmpd/fifo.csv': it is a FIFO"
run 2 price --config "$tmpd"; has "$err" "it is a folder"

# --- small files, large costs ---
# 400 KB of '[' took over 60 s; 'devices: 100000000' 57 s and 6.75 GB;
# 100,000 tiers 12 s.  Each is refused where the file says too much.
head -c 400000 /dev/zero | tr '\0' '[' >"$tmpd/deep.yaml"
run 2 run pingpong --topology "$tmpd/deep.yaml"; has "$err" "deep.yaml:1:33: lists and mappings nest more than 32 deep"
printf 'devices: 100000000\nlinks: [{a: 0, b: 1, tier: nvlink}]\n' >"$tmpd/huge.yaml"
run 2 run pingpong --topology "$tmpd/huge.yaml"; has "$err" "huge.yaml:1:10: 'devices' must be in 1..1048576, got '100000000'"
awk 'BEGIN { print "tiers:"; for (i = 0; i < 100000; i++) printf "  - {name: t%d, alpha: 1us, bandwidth: 1GB/s}\n", i }' >"$tmpd/many.yaml"
run 2 price --config "$tmpd/many.yaml"; has "$err" "many.yaml:2:3: 'tiers' must list 1 to 256 tiers, got 100000"
head -c 17000000 /dev/zero | tr '\0' '#' >"$tmpd/big.yaml"
run 2 price --config "$tmpd/big.yaml"; has "$err" "is larger than 16777216 bytes"

# --- silent acceptance: every one named by file:line:column ---
printf 'tiers:\n  - name: a\n    alpha: 1us\n    bandwith: 1GB/s\n    bandwidth: 2GB/s\n' >"$tmpd/typo.yaml"
run 2 price --config "$tmpd/typo.yaml"; has "$err" "typo.yaml:4:5: unknown key 'bandwith' in a tier"
printf 'tiers:\n  - {name: a, alpha: 1us, bandwidth: 1GB/s, scope: galaxy}\n' >"$tmpd/galaxy.yaml"
run 2 price --config "$tmpd/galaxy.yaml"; has "$err" "galaxy.yaml:2:52: 'scope' must be 'intra-node' or 'inter-node', got 'galaxy'"
printf 'tiers:\n  - name: a\n    alpha: 1us\n    alpha: 9us\n    bandwidth: 1GB/s\n' >"$tmpd/twice.yaml"
run 2 price --config "$tmpd/twice.yaml"; has "$err" "twice.yaml:4:5: key 'alpha' is given twice (first on line 3)"
printf 'tiers:\n  - {name: a, alpha: 1us, bandwidth: 1GB/s}\n---\ntiers: []\n' >"$tmpd/docs.yaml"
run 2 price --config "$tmpd/docs.yaml"; has "$err" "docs.yaml:3:1: a second YAML document"
printf 'host: h\nbackend: shm\neager_limit: 0x10\nsegments:\n  - {upto: 1KiB, alpha: 1us, bandwidth: 3GB/s}\n' >"$tmpd/hex.yaml"
run 2 run pingpong --model "$tmpd/hex.yaml"; has "$err" "hex.yaml:3:14: 'eager_limit': cannot parse size '0x10': write it in decimal"
run 2 run pingpong --bytes 0x10; has "$err" "write it in decimal"
# A value no link can have: an alpha of 1e30 s modeled the 1 MiB ping-pong at
# 1e30 s and compare printed a 2e38 % error.  Machine files keep the bounds
# tiers keep; both name the file, the place and the key.
printf 'host: h\nbackend: shm\neager_limit: 64KiB\nsegments:\n  - {upto: 64MiB, alpha: 1e30s, bandwidth: 10GB/s}\n' >"$tmpd/slow.yaml"
run 2 run pingpong --model "$tmpd/slow.yaml"; has "$err" "slow.yaml:5:26: 'alpha' must be at most 3600s"
run 2 compare pingpong --model "$tmpd/slow.yaml" --sizes 1MiB; has "$err" "slow.yaml:5:26: 'alpha' must be at most 3600s"
printf 'tiers:\n  - {name: a, alpha: 1us, bandwidth: 1e20TB/s}\n' >"$tmpd/fast.yaml"
run 2 price --config "$tmpd/fast.yaml"; has "$err" "fast.yaml:2:38: 'bandwidth' must be in 1kB/s..1000TB/s"

# --- exit codes ---
run 2 run pingpong --trace /nonexistent/x.json; has "$err" "cannot write trace '/nonexistent/x.json'"
if [ -c /dev/full ]; then
    run 2 run pingpong --trace /dev/full; has "$err" "cannot write trace '/dev/full': No space left on device"
    # A failed write removes what it wrote, never a device.
    if [ -c /dev/full ]; then ok; else bad "/dev/full is no longer a device"; fi
fi
run 2 run pingpong --backend tcp -n 2 --listen 8.8.8.8; has "$err" "--listen 8.8.8.8 is not an address of this host"
run 2 run pingpong --backend rdma -n 2 --eager-limit 1TiB; has "$err" "--eager-limit on --backend rdma is at most 64 MiB"
cat >"$tmpd/r99.c" <<'C'
#include "commlab.h"
int pattern(cl_comm *c, const cl_args *a)
{
    (void)a;
    char x[8] = {0};
    return cl_rank(c) == 0 ? cl_send(c, x, sizeof x, 99, 0) : 0;
}
C
for b in sim shm; do
    run 4 run "$tmpd/r99.c" --backend $b; has "$err" "rank 0: cl_send to rank 99: the world has ranks 0..1 (2 ranks)"
done
if [ -z "$(ls -A "$tmpd/tmp")" ]; then ok; else bad "left in TMPDIR: $(ls "$tmpd/tmp")"; fi
finish
