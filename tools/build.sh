#!/bin/sh
# tools/build.sh - install missing Debian packages, generate the build system,
# configure out of tree and build.  Used by README's two commands and CI.
#
#   tools/build.sh [CONFIGURE-ARGS...]
#
# BUILD_DIR (default: build) is where it configures; CUPTOP_NO_APT=1 skips
# the package step.  Safe to run again: it only re-configures when asked to
# by new arguments or when the build directory is missing.  When another
# apt-get or dpkg holds the package lock, it says so and waits for it, at
# most CUPTOP_APT_WAIT seconds (default 300), then gives up with a message.

set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
. "$here/tools/apt_wait.sh"   # apt_lock_wait
build=${BUILD_DIR:-build}

pkgs="build-essential autoconf automake autoconf-archive libtool pkg-config
      liblmdb-dev lmdb-utils libncurses-dev libcmocka-dev liblz4-dev libdeflate-dev tmux
      python3 procps binutils libmicrohttpd-dev prometheus curl protobuf-compiler strace"

if [ "${CUPTOP_NO_APT:-0}" != 1 ]; then
    missing=""
    for p in $pkgs; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        echo "build.sh: installing Debian packages:$missing"
        sudo=""
        [ "$(id -u)" = 0 ] || sudo=sudo
        apt_lock_wait "${CUPTOP_APT_WAIT:-300}" "$sudo" || exit 1
        $sudo apt-get update -qq
        apt_lock_wait "${CUPTOP_APT_WAIT:-300}" "$sudo" || exit 1
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
            -o DPkg::Lock::Timeout="${CUPTOP_APT_WAIT:-300}" $missing
    fi
fi

if [ ! -x configure ] || [ configure.ac -nt configure ]; then
    autoreconf -fi
fi

mkdir -p "$build"
cd "$build"
args="$*"
if [ ! -f Makefile ] || [ "$(cat .configure-args 2>/dev/null)" != "$args" ]; then
    "$here/configure" "$@"
    printf '%s' "$args" > .configure-args
fi
make -j"$(nproc 2>/dev/null || echo 2)"
