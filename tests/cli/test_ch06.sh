#!/bin/sh
# test_ch06.sh COMMLAB TOOLDIR - chapter 06 (measuring) as a student meets
# it: exercise 6.1 is listed, its reference answer passes, a wrong answer
# fails naming the number and how it is off, and the example machine file it reads prices a
# ping-pong as alpha + n / bandwidth of the right segment.  Commands run
# from the repository's root, as the course says.
. "$(dirname "$0")/lib.sh"
ex=chapters/06-measuring/example-shm.yaml

run 0 exercise list;        has "$out" "6.1 "; has "$out" "06-measuring"
run 0 exercise show 6.1;    has "$out" "Read a calibration"; has "$out" "$ex"
run 0 exercise check 6.1 --solution; has "$out" "passed: the check"
# 4 KiB:  678.712 ns + 4096 / 7.09974 GB/s         = 1.256 us  (eager)
# 32 KiB: 1345.04 ns + 32768 / 9.14742 GB/s        = 4.927 us  (eager)
# 4 MiB:  24143.1 ns + 4194304 / 20.5844 GB/s      = 227.9 us  (rendezvous)
run 0 exercise check 6.1 --answer "1.256, 4.927, 227.9"
run 1 exercise check 6.1 --answer "1.256 7.5 227.9"
has "$out" "number 2 (7.5) is too high"
if grep -q "4.927" "$out"; then bad "a wrong answer shows the figure"; else ok; fi
run 1 exercise check 6.1 --answer "1.256 4.927 459.88"  # 4 MiB on the eager segment
has "$out" "4 MiB is above the eager limit"
run 1 exercise check 6.1 --answer "1.256 4.927"
has "$out" "the answer has 2 numbers, the question asks for 3"

# The example file's segments, priced by hand (example-shm.yaml):
#   8 B:    366.829 ns + 8 / 1.13623 GB/s          = 373.9 ns  (eager)
#   64 KiB: 1345.04 ns + 65536 / 9.14742 GB/s      = 8.509 us  (eager, at the limit)
#   1 MiB:  24143.1 ns + 1048576 / 20.5844 GB/s    = 75.08 us  (rendezvous)
run 0 run pingpong --model "$ex" --sizes 8,64KiB,1MiB
has "$out" "(shm on vm, 7 segments)"
has "$out" "8 B          373.9 ns"
has "$out" "64 KiB       8.509 us"
has "$out" "1 MiB        75.08 us"
finish
