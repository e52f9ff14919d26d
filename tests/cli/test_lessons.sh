#!/bin/sh
# test_lessons.sh COMMLAB TOOLDIR - the lessons of issue 19 item 5 built on
# the pipeline and on subgroups: `--schedule gpipe|1f1b` (its errors, its
# printed activations, measured runs above the eager limit), the grid of
# data- and pipeline-parallel groups, and exercises 2.8 and 4.6 passing
# with their solutions and failing, with a hint and no expected figure,
# on plausible wrong work.  Ends with "N passed, N failed".
. "$(dirname "$0")/lib.sh"

# --- pipeline schedules ---
run 0 run --help;           has "$out" "--schedule NAME"
run 0 compare --help;       has "$out" "--schedule NAME"
run 0 run pipeline -n 4 --microbatches 8 --compute 1ms --bytes 1KiB --schedule 1f1b
has "$out" "rank 0: stage 0 kept the activations of at most 4 microbatches"
has "$out" "rank 3: stage 3 kept the activations of at most 1 microbatch"
has "$out" "8 microbatches, 1f1b: busy 16 ms of"
run 0 run pipeline -n 4 --microbatches 8 --compute 1ms --bytes 1KiB
has "$out" "rank 3: stage 3 kept the activations of at most 8 microbatches"
has "$out" "8 microbatches, gpipe: busy 16 ms of 22.01 ms, bubble 27.29%"
run 2 run pipeline --schedule gpip
has "$err" "unknown --schedule 'gpip' for pipeline; did you mean 'gpipe'? (gpipe,1f1b)"
run 2 run pipeline --schedule zigzag; has "$err" "unknown --schedule 'zigzag' for pipeline (gpipe,1f1b)"
run 2 run ring --schedule 1f1b;  has "$err" "--schedule applies to the pipeline pattern, not 'ring'"
run 2 compare relay --schedule 1f1b --quick; has "$err" "--schedule applies to the pipeline pattern"
run 2 run pipeline --shedule 1f1b; has "$err" "did you mean '--schedule'"
run 2 run pipeline --schedule; has "$err" "--schedule"
# Above the eager limit 1F1B's steady phase sends both ways at once.
for b in shm tcp; do
    run 0 run pipeline -n 4 --schedule 1f1b --bytes 1MiB --microbatches 6 --compute 10us \
        --backend $b -i 2 --bind none
    has "$out" "rank 1: stage 1 kept the activations of at most 3 microbatches"
done
run 0 run pipeline -n 3 --schedule 1f1b --bytes 1MiB --backend rdma --provider tcp -i 2 --bind none
run 0 run pipeline -n 4 --schedule 1f1b --bytes 1MiB --json; json "pipeline 1f1b json"

# --- the grid: data- and pipeline-parallel groups ---
run 0 patterns;             has "$out" "grid"
run 0 run grid -n 8 --group 2 --bytes 1KiB
has "$out" "rank 5: stage 2 of replica 1: pipeline group rank 2 of 4, data-parallel group rank 1 of 2"
has "$out" "messages"
run 0 run grid -n 8 --group 4 --bytes 1MiB --csv
has "$out" ",52"            # 4 pipeline messages; 2 rings of 2 (4 - 1) steps of 4 messages
run 2 run grid -n 5;        has "$err" "grid: -n 5 does not split into groups of 2"
run 2 run grid -n 6 --group 4; has "$err" "grid: -n 6 does not split into groups of 4"
run 2 run grid -n 4 --group 0; has "$err" "--group"
run 2 compare grid -n 3 --quick; has "$err" "grid: -n 3 does not split into groups of 2"
for b in shm tcp; do
    run 0 run grid -n 4 --bytes 1MiB --backend $b -i 2 --bind none
    has "$out" "rank 3: stage 1 of replica 1"
done

# --- exercise 2.8: peak activations and the bubble ---
run 0 exercise list;        has "$out" "2.8 "; has "$out" "4.6 "
run 0 exercise check 2.8 --solution; has "$out" "passed: "
run 1 exercise check 2.8 --answer "32 32 2 17.95"
has "$out" "number 2 (32) is too high: that is GPipe's"
run 1 exercise check 2.8 --answer "32 8 1 21.875"
has "$out" "number 3 (1) is too low: count the warm-up forwards"
has "$out" "number 4 (21.875) is too high: that is (S - 1) / M"
run 1 exercise check 2.8 --answer "32 8 2"
has "$out" "the answer has 3 numbers, the question asks for 4"
run 1 exercise check 2.8 --answer "0 0 0 0"
# 8 and 2 also number the answer's items: only the figures that cannot be
# mistaken for something else are looked for
for fig in 32 '17\.9[0-9]*' '18\.0[0-9]*'; do  # below its title line
    if tail -n +2 "$out" | grep -Eq "(^|[^0-9.])$fig([^0-9.]|$)"; then
        bad "2.8's failure shows $fig"
    else
        ok
    fi
done
run 0 exercise show 2.8;    has "$out" "compares with the figure after 'stage 0 kept the activations"

# --- exercise 2.9: the 1F1B schedule written by hand (issue 36) ---
run 0 exercise check 2.9 --solution; has "$out" "passed: all"
run 0 exercise check 2.9 --solution --backend shm; has "$out" "passed: all"
# (the wrong attempts are the grader's own cases: tests/cli/test_grader.sh)

# --- exercise 4.6: groups, graded on routes and the sums each rank holds ---
run 0 exercise check 4.6 --solution; has "$out" "passed: all"
run 0 exercise check 4.6 --solution --backend shm; has "$out" "passed: all"
data=tests/data/course
run 1 exercise check 4.6 --file $data/grid_world_allreduce.c  # the all-reduce leaves its group
has "$out" "rank 0 sends to rank 3: no message of this exercise goes from 0 to 3"
has "$out" "hint: the activation goes to the same replica's next stage"
has "$out" "FAILED: "
run 1 exercise check 4.6 --file $data/grid_no_add.c           # right messages, no sum
has "$out" "rank 0 does not end with the sum over ranks 0 and 1"
has "$out" "rank 0 does not end with the sum over ranks 0, 1 and 2"
has "$out" "hint: add what arrives from the other members"
run 1 exercise check 4.6 --file $data/grid_no_add.c --backend shm
has "$out" "does not end with the sum over ranks"
run 0 exercise show 4.6;    has "$out" "the data each rank ends with"
finish
