#!/bin/sh
# test_install.sh COMMLAB TOOLDIR - an installed copy as a user who does
# not own it (issue 38): it finds the configs a README names in its share
# folder, and keeps machine files in the user's own data folder, checked
# before anything is measured.  The copy is laid out as `make install`
# lays it (PREFIX/bin, PREFIX/share/commlab); the user is nobody
# (setpriv), so it is skipped without root.  Ends with "N passed, N failed".
. "$(dirname "$0")/lib.sh"
case "$cl" in /*) ;; *) cl="$(pwd)/$cl" ;; esac
# The copy must find its own share folder: a COMMLAB_HOME in the caller's
# environment (a developer's checkout) would point it elsewhere.
unset COMMLAB_HOME

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
    echo "skipped: needs root and setpriv, to act as user nobody"
    finish
    exit $?
fi
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

chmod 711 "$tmpd"
prefix="$tmpd/prefix"
share="$prefix/share/commlab"
mkdir -p "$prefix/bin" "$share"
cp "$cl" "$prefix/bin/commlab"
for d in configs plots include; do cp -R "$d" "$share/"; done
rm -rf "$share/plots/out" "$share/configs/machines"
chmod -R go+rX "$prefix"
home="$tmpd/home"
work="$tmpd/work"
mkdir "$home" "$work"
chown 65534:65534 "$home" "$work"
icl="$prefix/bin/commlab"
# irun WANT ARGS... : the installed copy as nobody, in a folder of its own.
irun() {
    want=$1
    shift
    ( cd "$work" && HOME="$home" XDG_DATA_HOME= XDG_RUNTIME_DIR= \
        as_nobody $limit "$icl" "$@" >"$out" 2>"$err" )
    rc=$?
    if [ "$rc" -eq "$want" ]; then ok; else bad "installed commlab $* exited $rc, want $want"; fi
}

# The README's configs/... paths, from a folder that has none: the share
# folder's copy, named in the header; a name found nowhere says where it looked.
irun 0 run ring -n 4 --topology configs/topologies/ring-8.yaml
has "$out" "topology $share/configs/topologies/ring-8.yaml"
irun 0 price --config configs/tiers.yaml
irun 2 run ring -n 4 --topology configs/topologies/nope.yaml
has "$err" "cannot find the topology 'configs/topologies/nope.yaml': not in this folder, nor in"

# A machine file goes to the user's folder: the share folder is root's.
# Refused when that folder cannot be made either (checked before the
# measuring, cli/cmd_calibrate.c's check_writable).
host=$(hostname | tr -c 'A-Za-z0-9._\n-' -)
mkdir "$home/.local"
chmod 555 "$home/.local"
irun 2 calibrate --backend shm --quick
has "$err" "$home/.local/share/commlab/machines/$host-shm.yaml"
chown 65534:65534 "$home/.local"
chmod 755 "$home/.local"
# Measured, the file is there.
short=$limit
limit=$calib_limit
irun 0 calibrate --backend shm --quick
limit=$short
[ -f "$home/.local/share/commlab/machines/$host-shm.yaml" ] && ok ||
    bad "no machine file in the user's data folder"
has "$out" "$home/.local/share/commlab/machines/$host-shm.yaml"
if [ -e "$share/configs/machines" ]; then bad "a machine folder made in the share folder"; else ok; fi

finish
