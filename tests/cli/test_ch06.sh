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

# pingpong-stream is the ping-pong 32 round trips an iteration, its time
# divided by 64: modeled, each size's times are pingpong's to the digit (a
# divisor that did not match its round trips would show here), with 64
# messages an iteration against 2.  On a tier and on the example file,
# eager and rendezvous sizes.
for src in "--tier nvlink" "--model $ex"; do
    # shellcheck disable=SC2086 # $src: two words
    run 0 run pingpong --sizes 8,64KiB,1MiB,4MiB --csv $src
    cut -d, -f1-6 "$out" | tail -n +2 >"$tmpd/pp"
    cut -d, -f7 "$out" | tail -n +2 | sort -u >"$tmpd/ppm"
    # shellcheck disable=SC2086
    run 0 run pingpong-stream --sizes 8,64KiB,1MiB,4MiB --csv $src
    cut -d, -f1-6 "$out" | tail -n +2 >"$tmpd/ps"
    cut -d, -f7 "$out" | tail -n +2 | sort -u >"$tmpd/psm"
    if [ -s "$tmpd/pp" ] && cmp -s "$tmpd/pp" "$tmpd/ps"; then ok; else
        bad "pingpong-stream ($src) is not pingpong's one-way: $(cat "$tmpd/ps")"; fi
    if [ "$(cat "$tmpd/ppm")" = 2 ] && [ "$(cat "$tmpd/psm")" = 64 ]; then ok; else
        bad "messages an iteration ($src): pingpong $(cat "$tmpd/ppm"), stream $(cat "$tmpd/psm")"; fi
done
# Measured, its data checks pass every round trip (each has its own seed),
# and each size counts 64 messages an iteration.
run 0 run pingpong-stream --backend shm --sizes 8,4KiB --iters 2 --check --csv
m=$(cut -d, -f7 "$out" | tail -n +2 | tr '\n' ' ')
if [ "$m" = "64 64 " ]; then ok; else bad "measured pingpong-stream's messages: '$m'"; fi
finish
