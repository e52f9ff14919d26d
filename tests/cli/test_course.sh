#!/bin/sh
# test_course.sh COMMLAB TOOLDIR - the course as a student meets it: the
# exercise command, every reference solution passing its check (modeled
# and on shm), wrong work failing with a message that helps, and a
# student's own .c file compiled, run on every backend, and refused
# cleanly when broken.  Ends with "N passed, N failed".
. "$(dirname "$0")/lib.sh"
case "$cl" in /*) ;; *) cl="$(pwd)/$cl" ;; esac
stu="$tmpd/student"
mkdir -p "$stu" "$tmpd/tmp"
export TMPDIR="$tmpd/tmp" # where the compiled objects would be left

# --- the exercise command ---
run 0 exercise --help;      has "$out" "usage: commlab exercise list"; has "$out" "--solution"
run 0 help exercise;        has "$out" "commlab exercise check ID"
run 0 --help;               has "$out" "exercise"
run 0 exercise list
for id in 1.1 2.1 2.2 2.3 2.4 2.5 3.1 3.2 4.1 5.1 5.2; do has "$out" "$id "; done
run 0 exercise show 2.1;    has "$out" "Turn the relay into a ring"; has "$out" "myring.c"
has "$out" "commlab exercise check 2.1 --file myring.c"
run 0 exercise show 3.1;    has "$out" "--answer"
run 2 exercise;             has "$err" "list, show, run or check"
run 2 exercise frob 2.1;    has "$err" "unknown action 'frob'"
run 2 exercise show;        has "$err" "which exercise?"
run 2 exercise show 9.9;    has "$err" "unknown exercise '9.9'"
run 2 exercise check 2.1 --file a.c --solution; has "$err" "either --file or --solution"
run 2 exercise check 2.1 --backend mpi; has "$err" "not built"
run 2 exercise show 2.1 --answer 3; has "$err" "apply to check"
run 2 exercise check 3.1;   has "$err" "answer with: commlab exercise check 3.1 --answer"
run 2 exercise check 3.1 --file x.c; has "$err" "answered with --answer"
run 2 exercise check 2.1 --answer 3; has "$err" "checked on a pattern file"
run 2 exercise check 3.1 --answer "0.9 ten"; has "$err" "got 'ten'"
run 2 exercise check 2.4 --answer 2.5; has "$err" "one whole number"
(cd "$stu" && $limit "$cl" exercise check 2.1 >"$out" 2>"$err"); rc=$?
if [ $rc -eq 2 ]; then ok; else bad "check without the student's file exited $rc, want 2"; fi
has "$err" "no file 'myring.c' here"

# --- every reference solution passes, modeled and measured ---
for id in 1.1 2.1 2.2 2.3 2.4 2.5 3.1 3.2 4.1 5.1 5.2; do
    run 0 exercise check "$id" --solution; has "$out" "passed: "
done
for id in 1.1 2.1 2.2 2.3 2.5 5.1 5.2; do
    run 0 exercise check "$id" --solution --backend shm; has "$out" "passed: "
    has "$out" "--backend shm"
done
run 0 exercise check 2.1 --solution --backend tcp; has "$out" "--backend tcp"
run 0 exercise check 3.1 --answer "0.90 10.74 5.37 86.62"
run 0 exercise check 3.2 --answer "292.97KiB 48.83KiB 146.48KiB 90.82KiB"
run 0 exercise run 3.1;     has "$out" "$ commlab price --bytes 256MiB"; has "$out" "86.62"
run 0 exercise run 2.1 --solution; has "$out" "rank 0: after the full circle: 40"
has "$out" "on shm"

# --- wrong work fails, and says why ---
sed 's/^int relay(/int pattern(/' chapters/02-point-to-point/relay.c >"$stu/myring.c"
run 1 exercise check 2.1 --file "$stu/myring.c"
has "$out" "expected the line 'rank 0: after the full circle: 30' in its output"
has "$out" "hint: a ring of K ranks sends K messages"
has "$out" "| rank 2: the value after 2 hops is 20"; has "$out" "FAILED: 0 of 3 checks passed"
cat >"$stu/swap.c" <<'C'
#include "commlab.h"
int pattern(cl_comm *c, const cl_args *a)
{
    int rank = cl_rank(c), partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    if (partner >= cl_size(c))
        return 0;
    unsigned char *out = cl_alloc(c, a->bytes), *in = cl_alloc(c, a->bytes);
    CL_TRY(cl_send(c, out, a->bytes, partner, 0));
    return cl_recv(c, in, a->bytes, partner, 0, NULL);
}
C
run 1 exercise check 2.2 --file "$stu/swap.c"
has "$out" "exited 3 (deadlock), expected 0 (success)"
has "$out" "hint: two blocking sends head to head wait forever above the eager limit"
has "$out" "| rank 0: blocked in send(dst=1, tag=0, 1 MiB)"; has "$out" "never calls cl_isend"; has "$out" "FAILED: 0 of 4 checks passed"
run 1 exercise check 2.2 --file "$stu/swap.c" --backend shm
has "$out" "exited 3 (deadlock)"
run 1 exercise check 5.2 --file chapters/05-deadlock/solutions/fix_order.c
has "$out" "takes 8.991 us modeled, expected 4.495 us (the time of \`commlab run deadlock --fix nonblocking --bytes 1MiB\`)"
run 1 exercise check 2.3 --file chapters/05-deadlock/solutions/fix_order.c; has "$out" "never calls cl_isend"
run 1 exercise check 3.1 --answer "0.90 10.74 5.37 8.66"
has "$out" "number 4 is 8.66, but commlab gives 86.6221"
run 1 exercise check 3.1 --answer "0.90 10.74 5.37"
has "$out" "the answer has 3 numbers, the question asks for 4"
run 1 exercise check 2.4 --answer 27; has "$out" "27 is not enough"
run 1 exercise check 2.4 --answer 40; has "$out" "40 is not the smallest"
run 1 exercise check 4.1 --answer "161.15 10.156 30 30"; has "$out" "number 4 is 30, but commlab gives 480"

# --- a student's own file ---
hello=chapters/01-ranks-and-worlds/solutions/hello.c
run 0 run "$hello" -n 3;    has "$out" "rank 2: hello from rank 2 of 3"; has "$out" "hello.c on sim"
run 0 run "$hello" -n 3 --backend shm; has "$out" "rank 1: hello from rank 1 of 3"
run 0 run "$hello" -n 2 --backend tcp; has "$out" "hello.c on tcp"
run 0 run chapters/02-point-to-point/solutions/swap.c -n 2 --json; json "student json"; has "$out" '"pattern": "swap.c"'
cp "$hello" "$stu/hello.c"
(cd "$stu" && $limit "$cl" run hello.c -n 2 >"$out" 2>"$err"); rc=$?
if [ $rc -eq 0 ]; then ok; else bad "run hello.c from its folder exited $rc"; fi
has "$out" "rank 1: hello from rank 1 of 2"
# Helpers named like a built-in pattern stay the student's own.
cat >"$stu/shadow.c" <<'C'
#include "commlab.h"
int ring(cl_comm *c, const cl_args *a) { (void)a; cl_printf(c, "my own ring"); return 0; }
int pattern(cl_comm *c, const cl_args *a) { return ring(c, a); }
C
run 0 run "$stu/shadow.c" --bytes 8; has "$out" "rank 0: my own ring"
printf '#include "commlab.h"\nint pattern(cl_comm *c, const cl_args *a) { return oops; }\n' >"$stu/broken.c"
run 2 run "$stu/broken.c";  has "$err" "broken.c:2:"; has "$err" "oops"
has "$err" "commlab: cannot compile '$stu/broken.c'"
printf 'int pattern(int x) { return x; }\n' >"$stu/sig.c"
run 2 run "$stu/sig.c";     has "$err" "conflicting types for"
printf '#include "commlab.h"\nint patern(cl_comm *c, const cl_args *a) { (void)a; (void)c; return 0; }\n' >"$stu/name.c"
run 2 run "$stu/name.c";    has "$err" "defines no function 'pattern'"
printf '#include "commlab.h"\nint cl_nothing(void);\nint pattern(cl_comm *c, const cl_args *a) { (void)a; (void)c; return cl_nothing(); }\n' >"$stu/undef.c"
run 2 run "$stu/undef.c";   has "$err" "cannot load the compiled"; has "$err" "cl_nothing"
run 2 run "$stu/none.c";    has "$err" "cannot read the pattern file '$stu/none.c'"
run 2 run "$stu/hello.txt/";  has "$err" "cannot read the pattern file"
CC=no-such-cc run 2 run "$hello"; has "$err" "cannot run the C compiler 'no-such-cc'"
run 1 exercise check 2.1 --file "$stu/broken.c"; has "$out" "exited 2 (bad usage or a compile error)"
has "$out" "stopped: the file does not compile or load"; has "$out" "FAILED: 0 of 1 checks passed"
# Nothing is left behind: no object in TMPDIR, nothing new next to the files.
if [ -z "$(ls -A "$tmpd/tmp")" ]; then ok; else bad "left in TMPDIR: $(ls "$tmpd/tmp")"; fi
n=$(ls -A "$stu" | wc -l)
if [ "$n" -eq 8 ]; then ok; else bad "the student's folder holds $n files, want 8: $(ls -A "$stu")"; fi
finish
