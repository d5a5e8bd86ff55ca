# Weight-only quantized GEMV/GEMM (issue 6): ${CMAKE_CURRENT_LIST_DIR}/quant_gemv.cu (decode,
# M <= 8: the kernel instances the library runs, code in quant_gemv_*.cuh),
# ${CMAKE_CURRENT_LIST_DIR}/quant_dispatch.cu (which GEMV for which shape, the split-K scratch,
# m40k_quant_linear) and ${CMAKE_CURRENT_LIST_DIR}/quant_gemm.cu (prefill); launchers in
# kernels/quant.h. The teaching versions: bench/quant/gemv_versions.cu.
if(M40_HAVE_CUDA)
  list(APPEND M40_CUDA_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/quant_gemv.cu
    ${CMAKE_CURRENT_LIST_DIR}/quant_dispatch.cu
    ${CMAKE_CURRENT_LIST_DIR}/quant_gemm.cu)
endif()
