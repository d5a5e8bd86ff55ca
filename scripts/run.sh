#!/usr/bin/env bash
# The main job on a fresh machine: installs what is missing (scripts/setup.sh),
# builds libm40 (for sm_52 when a Maxwell-capable CUDA is present, else the
# CPU reference only), runs m40-demo (a GPU-vs-reference check and a few timed
# ops), then scripts/mission.sh: ResNet-50 images/s and ChatGLM2-6B tokens/s
# beside PyTorch on a GPU, or the CPU reference with a clear notice when there
# is no GPU. --no-setup skips the package step; the other arguments go to
# scripts/mission.sh (--model PATH [--dtype int4|int8|fp16], --quick).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--no-setup" ]; then shift; else scripts/setup.sh; fi
source scripts/env.sh
cmake -S . -B build "${M40_GEN[@]}" "${M40_CMAKE_CUDA[@]}" > build.configure.log 2>&1 ||
    { cat build.configure.log; exit 1; }
cmake --build build -j"$(nproc)" > build.log 2>&1 || { tail -40 build.log; exit 1; }
build/m40-demo
exec scripts/mission.sh "$@"
