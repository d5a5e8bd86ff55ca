# Quantized GEMV/GEMM bench (issue 6): bench/quant/quant_bench.c -> m40-bench-quant.
# Talks to the CUDA runtime and cuBLAS directly (baselines, events).
if(M40_HAVE_CUDA AND M40_CUBLAS)  # the baselines are cuBLAS
  add_executable(m40-bench-quant ${PROJECT_SOURCE_DIR}/bench/quant/quant_bench.c)
  target_include_directories(m40-bench-quant PRIVATE ${PROJECT_SOURCE_DIR}/lib)
  if(M40_CUDA_OVERLAY_DIR)
    target_include_directories(m40-bench-quant BEFORE PRIVATE ${M40_CUDA_OVERLAY_DIR})
  endif()
  target_link_libraries(m40-bench-quant PRIVATE m40_static CUDA::cudart_static CUDA::cublas m)
  target_compile_options(m40-bench-quant PRIVATE -Wall -Wextra $<$<BOOL:${M40_WERROR}>:-Werror>)
endif()
