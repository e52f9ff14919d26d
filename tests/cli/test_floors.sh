#!/bin/sh
# test_floors.sh - the floors of DESIGN.md, read from the objects' symbols:
# include/ at the bottom; core/ uses only itself (its pattern registry,
# core/pattern.o, names the chapters' patterns); sim/ and real/ use core/
# and never each other (the mpi backend's library row, real/mpi/mpib_coll.o,
# sets up and checks its data with the collectives chapter's coll_*
# helpers, so its figures check what the chapter's algorithms check);
# chapters use only the public cl_* calls; cli/ sits on top.  A symbol an
# object needs that another folder defines is a crossing, named with the
# object and the symbol.  Also: a pattern's exit() and fork() are caught by
# the simulator through --wrap only (sim/fault.h), so the tool defines no
# exit, _exit, _Exit or fork of its own for the rest of the binary to call.
. "$(dirname "$0")/lib.sh"
rel=$(dirname "$cl")/rel

# defs DIR...: "symbol folder" for every global symbol the objects of the
# given top-level folders define.
defs() {
    for d in "$@"; do
        find "$rel/$d" -name '*.o' | sort | xargs nm -g --defined-only 2>/dev/null |
            awk -v d="$d" 'NF == 3 { print $3, d }'
    done
}

# crossings ROOT DEFS FOLDER: "object symbol folder" for every symbol an
# object of ROOT/FOLDER needs that DEFS says another folder defines and
# the floors do not allow.
crossings() {
    find "$1/$3" -name '*.o' | sort | xargs nm -A -u 2>/dev/null |
        awk -v root="$1/" '{ o = $1; sub(/:$/, "", o); print substr(o, length(root) + 1), $NF }' |
        awk -v me="$3" '
        NR == FNR { at[$1] = $2; next }
        !($2 in at) || at[$2] == me { next }
        {
            from = at[$2]
            ok = 0
            if (me == "sim" || me == "real")
                ok = from == "core"
            if (me == "core" && $1 == "core/pattern.o")
                ok = from == "chapters"
            if (me == "chapters")
                ok = from == "core" && $2 ~ /^cl_/
            if ($1 == "real/mpi/mpib_coll.o")
                ok = ok || (from == "chapters" && $2 ~ /^coll_/)
            if (!ok)
                print $1, $2, from
        }' "$2" -
}

all=$tmpd/defs
defs core sim real chapters cli >"$all"
if [ -s "$all" ]; then ok; else bad "no symbols read from the objects under $rel"; fi
for f in core sim real chapters; do
    crossings "$rel" "$all" $f >"$tmpd/cross"
    if [ -s "$tmpd/cross" ]; then
        bad "$f/ crosses a floor (object, symbol, the folder defining it):
$(cat "$tmpd/cross")"
    else
        ok
    fi
done

# The check can fail: an object of a copied core/ that calls the
# simulator's engine and a sim/ object that calls the launcher are named.
fake=$tmpd/objs
mkdir -p "$fake/core" "$fake/sim"
cp "$rel"/core/*.o "$fake/core/"
cp "$rel"/sim/*.o "$fake/sim/"
sim_sym=$(awk '$2 == "sim" { print $1; exit }' "$all")
real_sym=$(awk '$2 == "real" { print $1; exit }' "$all")
printf 'void %s(void);\nvoid crossing_core(void) { %s(); }\n' "$sim_sym" "$sim_sym" >"$tmpd/c.c"
printf 'void %s(void);\nvoid crossing_sim(void) { %s(); }\n' "$real_sym" "$real_sym" >"$tmpd/s.c"
if cc -c -o "$fake/core/crossing.o" "$tmpd/c.c" && cc -c -o "$fake/sim/crossing.o" "$tmpd/s.c"; then
    crossings "$fake" "$all" core >"$tmpd/cross"
    if grep -q "^core/crossing.o $sim_sym sim$" "$tmpd/cross"; then ok; else
        bad "a core/ object calling sim's $sim_sym was not named: $(cat "$tmpd/cross")"
    fi
    crossings "$fake" "$all" sim >"$tmpd/cross"
    if grep -q "^sim/crossing.o $real_sym real$" "$tmpd/cross"; then ok; else
        bad "a sim/ object calling real's $real_sym was not named: $(cat "$tmpd/cross")"
    fi
else
    bad "cannot compile the crossing objects"
fi

# Chapters include commlab.h and their own folder's headers, nothing else.
for c in chapters/*/*.c chapters/*/*.h; do
    [ -f "$c" ] || continue
    sed -n 's/^#include "\(.*\)"/\1/p' "$c" | while read -r h; do
        [ "$h" = commlab.h ] || [ -f "$(dirname "$c")/$h" ] || echo "$c: $h"
    done
done >"$tmpd/inc"
if [ -s "$tmpd/inc" ]; then bad "a chapter includes beyond commlab.h: $(cat "$tmpd/inc")"; else ok; fi

# cli/ reaches the simulator and the transports through the backend table
# (cli/backend.h): only the table (backend.c) and its rows (row_*.c,
# row_*.h: each backend's session, and its own benchmark and listing)
# include sim/ or real/ headers.
# cli_includes DIR: "FILE: HEADER" for each file of DIR/cli that includes a
# sim/ or real/ header and may not.
cli_includes() {
    for f in "$1"/cli/*.c "$1"/cli/*.h; do
        [ -f "$f" ] || continue
        name=cli/${f##*/}
        case "$name" in cli/backend.c | cli/row_*.c | cli/row_*.h) continue ;; esac
        sed -n 's/^#[[:space:]]*include[[:space:]]*"\(\(sim\|real\)\/[^"]*\)".*/\1/p' "$f" |
            while read -r h; do echo "$name: $h"; done
    done
}
cli_includes . >"$tmpd/inc"
if [ -s "$tmpd/inc" ]; then
    bad "a cli/ file includes sim/ or real/ beyond the backend table: $(cat "$tmpd/inc")"
else
    ok
fi
# ... and the check can fail: a copied cli/ with a file that includes one is named.
mkdir -p "$tmpd/src/cli"
printf '#include "cli/cli.h"\n#include "sim/net.h"\n' >"$tmpd/src/cli/crossing.c"
cli_includes "$tmpd/src" >"$tmpd/inc"
if grep -q '^cli/crossing.c: sim/net.h$' "$tmpd/inc"; then ok; else
    bad "a cli/ file including sim/net.h was not named: $(cat "$tmpd/inc")"
fi

# No exit, _exit, _Exit or fork defined by the tool.
nm --defined-only "$cl" | awk '$3 ~ /^(exit|_exit|_Exit|fork)$/' >"$tmpd/own"
if [ -s "$tmpd/own" ]; then bad "the tool defines libc's: $(cat "$tmpd/own")"; else ok; fi

finish
