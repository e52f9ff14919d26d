#!/bin/sh
# demo.sh COMMLAB - the main job: the course's cost model, printed.
set -e
cl=$1
echo "== the price of one 256 MiB message on each tier (commlab price) =="
"$cl" price --bytes 256MiB
echo
echo "== T(n) from 4 KiB to 1 GiB and each tier's crossover (commlab sweep) =="
"$cl" sweep --from 4KiB --to 1GiB
