# Sourced by the scripts: picks the build configuration for this machine.
# M40_NVCC: a CUDA < 13 nvcc (targets sm_52), or empty for a CPU-only build.
M40_NVCC=""
for n in ${CUDACXX:-} /usr/bin/nvcc /usr/local/cuda-12*/bin/nvcc /usr/local/cuda-11*/bin/nvcc; do
    [ -x "$n" ] || continue
    v=$("$n" --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
    if [ -n "$v" ] && [ "$v" -lt 13 ]; then M40_NVCC=$n; break; fi
done
if [ -n "$M40_NVCC" ]; then
    # nvcc finds ptxas and cudafe++ on PATH: its own must come first, or a
    # newer toolkit's (e.g. CUDA 13 in /usr/local/bin) runs and fails on sm_52
    PATH="$(dirname "$M40_NVCC"):$PATH"
    export PATH
    M40_CMAKE_CUDA=(-DCMAKE_CUDA_COMPILER="$M40_NVCC" -DM40_CUDA=ON)
else
    M40_CMAKE_CUDA=(-DM40_CUDA=OFF)
fi
M40_GEN=(); command -v ninja >/dev/null && M40_GEN=(-G Ninja)
