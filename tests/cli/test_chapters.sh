#!/bin/sh
# test_chapters.sh COMMLAB TOOLDIR - every command shown in the course's
# chapters (chapters/*/README.md) runs as written, and every modeled output
# shown is what the tool prints, byte for byte.
#
# The markup, in a chapter's Markdown:
#   ```console    lines "$ commlab ARGS" each followed by its output (stdout
#                 and stderr as one stream): checked byte for byte.
#   ```measured   the same, but the output is an example from one machine:
#                 only the exit status is checked.
#   ```sh         lines "commlab ARGS": each must exit as stated.
# A command ending in "# exit N" must exit with N, others with 0.  Commands
# run from a scratch folder that sees the repository's chapters/, configs/
# and include/, so files they write (traces) are left nowhere.
#
# UPDATE=1 rewrites the console blocks with what the tool printed (run it
# after changing the tool, then read the diff).
. "$(dirname "$0")/lib.sh"
root=$(pwd)
case "$cl" in /*) ;; *) cl="$root/$cl" ;; esac
work="$tmpd/work"
mkdir -p "$work" "$tmpd/cmd"
for d in chapters configs include; do ln -s "$root/$d" "$work/$d"; done

for md in chapters/*/README.md; do
    rm -f "$tmpd"/cmd/*
    # One numbered item per command: N.cmd, N.exp (expected output), N.kind.
    awk -v dir="$tmpd/cmd" '
        function flush() { if (n > 0 && cur != "") close(dir "/" n ".exp") }
        /^```(console|measured|sh)[ \t]*$/ && !inblock { inblock = 1; kind = substr($0, 4); gsub(/[ \t]/, "", kind); cur = ""; next }
        /^```[ \t]*$/ && inblock { flush(); inblock = 0; cur = ""; next }
        inblock && kind == "sh" {
            if ($0 ~ /^commlab /) { n++; print $0 > (dir "/" n ".cmd"); close(dir "/" n ".cmd");
                print kind > (dir "/" n ".kind"); close(dir "/" n ".kind"); print NR > (dir "/" n ".line"); close(dir "/" n ".line") }
            next }
        inblock && /^\$ / {
            flush(); n++; cur = n
            print substr($0, 3) > (dir "/" n ".cmd"); close(dir "/" n ".cmd")
            print kind > (dir "/" n ".kind"); close(dir "/" n ".kind")
            print NR > (dir "/" n ".line"); close(dir "/" n ".line")
            printf "" > (dir "/" n ".exp")
            next }
        inblock && cur != "" { print $0 > (dir "/" n ".exp") }
    ' "$md"
    i=1
    while [ -f "$tmpd/cmd/$i.cmd" ]; do
        cmd=$(cat "$tmpd/cmd/$i.cmd")
        kind=$(cat "$tmpd/cmd/$i.kind")
        line=$(cat "$tmpd/cmd/$i.line")
        want=0
        case "$cmd" in *"# exit "*) want=${cmd##*# exit }; want=${want%% *} ;; esac
        case "$cmd" in
        "commlab "*)
            rest=${cmd#commlab }
            # A measured command may calibrate (lib.sh's calib_limit).
            lim=$limit
            [ "$kind" = console ] || lim=$calib_limit
            (cd "$work" && eval "$lim \"\$cl\" $rest") >"$tmpd/cmd/$i.act" 2>&1
            rc=$?
            cp "$tmpd/cmd/$i.act" "$out"
            : >"$err"
            if [ "$rc" -eq "$want" ]; then ok; else bad "$md:$line: '$cmd' exited $rc, want $want"; fi
            if [ "$kind" = console ]; then
                if cmp -s "$tmpd/cmd/$i.exp" "$tmpd/cmd/$i.act"; then
                    ok
                else
                    bad "$md:$line: the output of '$cmd' differs from the text"
                    diff "$tmpd/cmd/$i.exp" "$tmpd/cmd/$i.act" | head -20
                fi
            fi
            ;;
        *) bad "$md:$line: not a commlab command: '$cmd'" ;;
        esac
        i=$((i + 1))
    done
    if [ "${UPDATE:-0}" = 1 ]; then
        # Console blocks get the outputs just printed.
        awk -v dir="$tmpd/cmd" '
            /^```(console|measured|sh)[ \t]*$/ && !inblock { inblock = 1; kind = substr($0, 4); gsub(/[ \t]/, "", kind); print; next }
            /^```[ \t]*$/ && inblock { inblock = 0; print; next }
            inblock && kind == "sh" { if ($0 ~ /^commlab /) n++; print; next }
            inblock && /^\$ / { n++; print;
                if (kind == "console") { skip = 1; f = dir "/" n ".act"; while ((getline l < f) > 0) print l; close(f) } else skip = 0
                next }
            inblock && kind == "console" && skip { next }
            { print }
        ' "$md" >"$tmpd/new.md" && cp "$tmpd/new.md" "$md"
    fi
done
finish
