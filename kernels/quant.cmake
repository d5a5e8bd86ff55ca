# Weight-only quantized GEMV/GEMM (issue 6): kernels/quant_gemv.cu (decode,
# M <= 8) and kernels/quant_gemm.cu (prefill); launchers in kernels/quant.h.
if(M40_HAVE_CUDA)
  list(APPEND M40_CUDA_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/quant_gemv.cu
    ${CMAKE_CURRENT_LIST_DIR}/quant_gemm.cu)
endif()
