#!/bin/sh
# Creates (or refreshes) the Python venv for the interop peers and installs
# tests/interop/requirements.txt into it. Idempotent and fast when already done.
#
#   tests/interop/setup.sh            # venv at <repo>/target/interop-venv
#   A2AT_INTEROP_VENV=/tmp/v tests/interop/setup.sh
#
# A relative A2AT_INTEROP_VENV is taken relative to the repository root. Needs
# python3 >= 3.11 with the venv module and ensurepip (Debian/Ubuntu: python3-venv)
# and access to PyPI (or a pip mirror configured the usual way) on first run.
# The LAST line printed on stdout is the absolute path of the venv's python.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${A2AT_INTEROP_VENV:-target/interop-venv}
case $venv in
/*) ;;
*) venv=$root/$venv ;;
esac
req=$here/requirements.txt
py=$venv/bin/python
stamp=$venv/.a2at-requirements.sha256

say() { echo "interop setup: $*" >&2; }
die() { say "error: $*"; exit 1; }

python3=${PYTHON3:-python3}
command -v "$python3" >/dev/null 2>&1 || die "python3 not found (set PYTHON3 to a Python >= 3.11)"

want=$("$python3" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$req")

# Fast path: venv works and was installed from exactly this requirements file.
if [ -x "$py" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
    && "$py" -c 'import a2a, uvicorn, grpc' >/dev/null 2>&1; then
    echo "$py"
    exit 0
fi

"$python3" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
    || die "$("$python3" -V 2>&1) is too old: uvicorn 0.55 / a2a-sdk 1.3 need Python >= 3.11"

if [ ! -x "$py" ] || ! "$py" -m pip --version >/dev/null 2>&1; then
    "$python3" -c 'import venv' >/dev/null 2>&1 \
        || die "the python3 'venv' module is missing (Debian/Ubuntu: apt-get install python3-venv)"
    "$python3" -c 'import ensurepip' >/dev/null 2>&1 \
        || die "python3 has no 'ensurepip', so 'python3 -m venv' cannot install pip (Debian/Ubuntu: apt-get install python3-venv)"
    say "creating venv $venv"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    "$python3" -m venv "$venv" || die "'$python3 -m venv $venv' failed"
fi

say "installing $req"
"$py" -m pip install --disable-pip-version-check --quiet -r "$req" \
    || die "pip install failed (is PyPI reachable?)"
"$py" -c 'import a2a, uvicorn, grpc' || die "installed packages do not import"
echo "$want" >"$stamp"
echo "$py"
