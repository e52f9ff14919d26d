#!/bin/sh
# test_grader.sh - the grader's own cases (tests/grader): every attempt a
# careless student might write fails `exercise check`, every right one in
# another style passes, on sim and (the files marked `shm: yes`) on shm;
# the answer cases of answers.txt; no answer or neighbour of one printed
# by `exercise show` or a failed check; the explanation only after a pass;
# direction hints only for the first tries.
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
cases="$root/tests/grader"
# The student's record (passes, tries) goes to a folder of this test's own,
# kept from one command to the next where a check needs it.
export CL_KEEP_STATE=1
export XDG_STATE_HOME="$tmpd/state"

field() { sed -n "s/^[/ ]\*[ ]*$2: *\([^ ]*\).*/\1/p" "$1" | head -n 1; }

for f in "$cases"/*.c; do
    id=$(field "$f" exercise)
    expect=$(field "$f" expect)
    want=0
    [ "$expect" = fail ] && want=1
    if [ -z "$id" ] || [ -z "$expect" ]; then
        bad "$f names no exercise or verdict"
        continue
    fi
    backends=sim
    [ "$(field "$f" shm)" = yes ] && backends="sim shm"
    for b in $backends; do
        run $want exercise check "$id" --file "$f" --backend "$b"
        if [ "$want" -eq 1 ]; then
            has "$out" "FAILED:"
            why=$(sed -n 's/^ \* why: //p' "$f" | head -n 1)
            has "$out" "$why"
        else
            has "$out" "passed:"
        fi
    done
done

# --- answers ---
grep -v '^#' "$cases/answers.txt" | while IFS='|' read -r id answer want text; do
    id=$(echo $id) want=$(echo $want) text=$(echo $text) answer=$(echo $answer)
    [ -n "$id" ] || continue
    XDG_STATE_HOME="$tmpd/fresh-$id-$want" $limit "$cl" exercise check "$id" --answer "$answer" \
        >"$out" 2>"$err"
    rc=$?
    if [ "$rc" -ne "$want" ]; then echo "FAIL: $id '$answer' exited $rc, want $want"; cat "$out"; exit 1; fi
    if [ "$text" != "-" ] && ! grep -qF -- "$text" "$out"; then
        echo "FAIL: $id '$answer': no '$text' in"; cat "$out"; exit 1
    fi
done && ok || bad "an answer case (above)"

# --- no answer leaks from show, and the explanation waits for a pass ---
# (7.2 asks to pick one of the layouts its task names: its numbers are the
# choices', so they are in the task; a wrong pick is not told which of its
# numbers is wrong: only "not this one" and its hints, as the 7.2 cases of
# answers.txt check)
for id in 2.4 2.7 3.1 3.3 4.1 4.5 6.1 7.1; do
    run 0 exercise show "$id"
    sol=$(sed -n "/id: \"$id\"/,/^  - id:/p" "$root"/chapters/*/exercises.yaml |
          sed -n 's/^ *solution: "\(.*\)"/\1/p')
    for n in $sol; do
        if grep -qF -- "$n" "$out"; then bad "exercise show $id prints '$n' of its answer"; else ok; fi
    done
done
export XDG_STATE_HOME="$tmpd/explain"
run 0 exercise check 4.1 --solution; has "$out" "shown once you pass"
if grep -q "^why:" "$out"; then bad "--solution printed the explanation before a pass"; else ok; fi
run 0 exercise check 4.1 --answer "167.07 10.526 130.77 30 480"; has "$out" "why:"
run 0 exercise check 4.1 --solution; has "$out" "why:"

# --- directions only for the first tries ---
export XDG_STATE_HOME="$tmpd/directions"
for try in 1 2 3; do
    run 1 exercise check 4.5 --answer 400000; has "$out" "too low"
done
run 1 exercise check 4.5 --answer 400000; has "$out" "not yet"
if grep -q "too low\|too high" "$out"; then bad "a direction after $try tries"; else ok; fi
run 1 exercise check 2.7 --answer "36 1580"; has "$out" "too low"

# --- a forged line is the forger's ---
run 0 run "$cases/hello_forged.c" -n 3
if grep -q "^rank 1: hello from rank 1 of 3" "$out"; then bad "rank 0 printed rank 1's line"; else ok; fi
has "$out" "rank 0: rank 1: hello from rank 1 of 3"

finish
