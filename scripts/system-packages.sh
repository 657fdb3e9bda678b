#!/usr/bin/env bash
# The system packages `make run` (run) and `make install` (install) need, before any other work:
# bubblewrap (TIR Math's sandbox), cmake and a C++ compiler (ALFWorld's planner builds from
# source), Python's venv module, and for install Chromium (the WebShop browser test). Missing
# ones are installed with apt-get or dnf when this user can (root, or sudo without a password);
# otherwise it stops with one line naming the command to run.
#   scripts/system-packages.sh run|install [PYTHON]
set -euo pipefail
mode=${1:-run}
python=${2:-python3}

if command -v apt-get >/dev/null 2>&1; then
    manager=apt-get compiler=g++ venv=python3-venv
elif command -v dnf >/dev/null 2>&1; then
    manager=dnf compiler=gcc-c++ venv=
else
    manager= compiler=g++ venv=python3-venv
fi

missing=()
check() {  # check COMMAND PACKAGE: PACKAGE provides COMMAND
    command -v "$1" >/dev/null 2>&1 || missing+=("$2")
}
check_all() {
    missing=()
    check bwrap bubblewrap
    check cmake cmake
    check g++ "$compiler"
    "$python" -c "import ensurepip, venv" >/dev/null 2>&1 || missing+=("${venv:-python3-venv}")
    if [ "$mode" = install ]; then
        command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
            || missing+=(chromium)
    fi
}

check_all
[ ${#missing[@]} -eq 0 ] && exit 0

install="$manager install -y ${missing[*]}"
if [ -z "$manager" ]; then
    echo "error: make $mode needs the system packages ${missing[*]}: install them with your package manager, then run make $mode again" >&2
    exit 1
fi
if [ "$(id -u)" = 0 ]; then
    sudo=
elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
    sudo="sudo -n "
else
    echo "error: make $mode needs the system packages ${missing[*]}: run \`sudo $install\`, then make $mode again" >&2
    exit 1
fi
echo "installing the system packages ${missing[*]} ($manager)" >&2
if [ "$manager" = apt-get ]; then
    ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
fi
${sudo}env DEBIAN_FRONTEND=noninteractive $install >/dev/null
check_all
if [ ${#missing[@]} -ne 0 ]; then
    echo "error: $manager installed nothing that provides ${missing[*]}: install them, then run make $mode again" >&2
    exit 1
fi
