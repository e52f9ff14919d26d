#!/bin/sh
# test_bench.sh COMMLAB TOOLDIR - `bench sim --profile` (on the plain build
# only: two million simulated messages are minutes under the sanitizers).
# Checks what the profile names, never a speed.  Ends with "N passed, N failed".
. "$(dirname "$0")/lib.sh"
# The sampled breakdown: every phase named, and the samples named by the
# executable's own symbols (the engine's send among the top functions).
run 0 bench sim --quick --profile
has "$out" "context switches (sim/coro)"; has "$out" "matching (core/match)"
has "$out" "event queue (sim/queue)"; has "$out" "pattern code and the cl_* API"
has "$out" "per message: "; has "$out" "%  engine__isend"
finish
