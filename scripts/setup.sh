#!/usr/bin/env bash
# Installs what libm40 needs to build and test on Debian 12 / Ubuntu (as
# root, or through sudo): CMake, Ninja, zlib, libpng, libjpeg, jansson, libmicrohttpd
# (m40-server), curl and python3-venv (its tests), pkg-config,
# Python, and a CUDA toolkit that can still target Maxwell (sm_52): Debian's
# nvidia-cuda-toolkit 11.8 from non-free, with g++-11 as its host compiler.
# Idempotent: installs only what is missing. Set M40_SETUP_CUDA=0 to skip
# the toolkit (about 3 GB). Extra Debian packages: M40_SETUP_EXTRA="...".
set -euo pipefail
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs=(cmake ninja-build pkg-config zlib1g-dev libpng-dev libjpeg-dev libjansson-dev libmicrohttpd-dev curl python3 python3-venv gcc g++ ${M40_SETUP_EXTRA:-})
want_cuda=${M40_SETUP_CUDA:-1}
maxwell_nvcc() { # a CUDA < 13 nvcc?
    for n in ${CUDACXX:-} /usr/bin/nvcc /usr/local/cuda-12*/bin/nvcc /usr/local/cuda-11*/bin/nvcc; do
        [ -x "$n" ] || continue
        v=$("$n" --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
        [ -n "$v" ] && [ "$v" -lt 13 ] && { echo "$n"; return 0; }
    done
    return 1
}
if [ "$want_cuda" = 1 ] && ! maxwell_nvcc >/dev/null; then
    pkgs+=(nvidia-cuda-toolkit g++-11)
    # the toolkit is in non-free; Debian 12's deb822 sources list only main
    if [ -f /etc/apt/sources.list.d/debian.sources ] &&
       grep -q '^Components: main$' /etc/apt/sources.list.d/debian.sources; then
        $SUDO sed -i 's/^Components: main$/Components: main contrib non-free/' \
            /etc/apt/sources.list.d/debian.sources
    fi
fi
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if n=$(maxwell_nvcc); then echo "setup: Maxwell-capable CUDA: $n ($("$n" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
else echo "setup: no CUDA toolkit that targets sm_52; builds will be CPU-only"; fi
