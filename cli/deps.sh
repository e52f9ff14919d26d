#!/bin/sh
# deps.sh PKG... - install the Debian packages that are missing; silent when
# none is.  Root uses apt-get, others sudo; where neither can, print the
# exact command and fail.
missing=
for p in "$@"; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
    case "$st" in
    *" installed") ;;
    *) missing="$missing $p" ;;
    esac
done
[ -z "$missing" ] && exit 0
cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" = 0 ]; then
    run=
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    run=sudo
else
    echo "commlab: missing packages:$missing" >&2
    echo "commlab: install them with: sudo apt-get update && sudo $cmd" >&2
    exit 1
fi
echo "commlab: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$run apt-get update -qq >&2 || true
if ! $run $cmd >&2; then
    echo "commlab: could not install; run: sudo apt-get update && sudo $cmd" >&2
    exit 1
fi
