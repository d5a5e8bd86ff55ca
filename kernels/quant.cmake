# Weight-only quantized GEMV/GEMM (issue 6): kernels/quant_gemv.cu (decode,
# M <= 8: the kernel instances the library runs, code in quant_gemv_*.cuh),
# kernels/quant_dispatch.cu (which GEMV for which shape, the split-K scratch,
# m40k_quant_linear) and kernels/quant_gemm.cu (prefill); launchers in
# kernels/quant.h. The teaching versions: bench/quant/gemv_versions.cu.
if(M40_HAVE_CUDA)
  list(APPEND M40_CUDA_SOURCES
    kernels/quant_gemv.cu
    kernels/quant_dispatch.cu
    kernels/quant_gemm.cu)
endif()
