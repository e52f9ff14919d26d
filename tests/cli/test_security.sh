#!/bin/sh
# test_security.sh COMMLAB TOOLDIR - another local user against a run
# (issue 37): outputs planted as links or files of theirs, a squatted
# rendezvous folder, and the secret left in a rank's memory.  The other
# user is nobody (setpriv); skipped without root.  Ends with
# "N passed, N failed".
. "$(dirname "$0")/lib.sh"
case "$cl" in /*) ;; *) cl="$(pwd)/$cl" ;; esac

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
    echo "skipped: needs root and setpriv, to act as user nobody"
    finish
    exit $?
fi
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# A folder anyone may write in, as /tmp is (sticky); only this test's.
chmod 711 "$tmpd"
pub="$tmpd/pub"
mkdir "$pub"
chmod 1777 "$pub"

# --- outputs: never written through a link, never into another's file ---
# The victim: a file of root's that a link points at.  A root run used to
# overwrite it through any of these outputs.
printf 'precious\n' >"$tmpd/victim"
chmod 600 "$tmpd/victim"
as_nobody ln -s "$tmpd/victim" "$pub/trace.json"
ln -s "$tmpd/victim" "$tmpd/own-link.json"
for f in "$pub/trace.json" "$tmpd/own-link.json"; do
    run 2 run pingpong --sizes 8 -i 1 --trace "$f"
    has "$err" "cannot write trace '$f': it is a symbolic link"
    run 2 run pingpong --sizes 8 -i 1 --timeline "$f"
    has "$err" "cannot write timeline '$f': it is a symbolic link"
    run 2 calibrate --backend shm --quick --out "$f"
    has "$err" "cannot write the machine file '$f': it is a symbolic link"
    run 2 compare pingpong --backend shm --sizes 8 -i 1 --save "$f"
    has "$err" "cannot write the --save file '$f': it is a symbolic link"
done
if [ "$(cat "$tmpd/victim")" = precious ]; then ok; else bad "a link's target was written"; fi

# A file another user made (0666: they could read and change what we
# write) is refused, and stays theirs.
as_nobody sh -c "umask 0; : >'$pub/theirs.csv'"
run 2 run pingpong --sizes 8 -i 1 --timeline "$pub/theirs.csv"
has "$err" "cannot write timeline '$pub/theirs.csv': it belongs to another user (uid 65534"
if [ ! -s "$pub/theirs.csv" ]; then ok; else bad "another user's file was written"; fi

# Our own file is replaced, its mode kept; nothing else is left beside it.
: >"$pub/mine.json"
chmod 640 "$pub/mine.json"
run 0 run pingpong --sizes 8 -i 1 --trace "$pub/mine.json"
has "$pub/mine.json" '"traceEvents"'
if [ "$(stat -c %a "$pub/mine.json")" = 640 ]; then ok; else bad "the trace's mode was not kept"; fi
if [ "$(ls -A "$pub" | wc -l)" -eq 3 ]; then ok; else bad "left in $pub: $(ls -A "$pub")"; fi

# --- the rendezvous folder: another user made /tmp/commlab-UID first ---
# A world on one host (a loopback master, no secret) meets on a Unix socket
# in a private folder.  Its name used to be /tmp/commlab-UID: root (here
# the other user) making that folder first stopped every such run of
# nobody's ("remove it", which nobody cannot).
squat=/tmp/commlab-65534
made_squat=
if mkdir "$squat" 2>/dev/null; then made_squat=1; fi
trap 'rm -rf "$out" "$err" "$tmpd"; [ -n "$made_squat" ] && rmdir "$squat"' EXIT
if [ "$(stat -c %u "$squat")" != 65534 ]; then
    port=$((30000 + $$ % 20000))
    world() { $limit setpriv --reuid=65534 --regid=65534 --clear-groups \
                  env -u XDG_RUNTIME_DIR -u TMPDIR "$cl" run ring --backend tcp --sizes 1KiB \
                  -i 2 --world 2 --master "127.0.0.1:$port" --rank "$@"; }
    world 1 >"$tmpd/r1.out" 2>&1 &
    r1=$!
    world 0 >"$out" 2>"$err"
    rc=$?
    wait $r1
    rc1=$?
    if [ "$rc" -eq 0 ] && [ "$rc1" -eq 0 ]; then ok
    else bad "a world of nobody's beside a squatted $squat: exit $rc and $rc1 ($(cat "$tmpd/r1.out"))"; fi
    # Its fresh folder went with it: no socket of this port is left.
    left=
    for d in /tmp/commlab-65534.*; do
        if [ -e "$d/port-$port" ]; then left=$d; fi
    done
    if [ -z "$left" ]; then ok; else bad "the rendezvous of port $port was left in $left"; fi
fi

finish
