# SGEMM bench (issue 4): ours vs cuBLAS (pedantic FP32) + the teaching trail.
#   sgemm_bench [--trail N|--no-trail] [--shapes squares|resnet|chatglm|all]
if(M40_HAVE_CUDA AND M40_CUBLAS)  # the baselines are cuBLAS
  add_executable(sgemm_bench bench/sgemm/sgemm_bench.cu)
  target_include_directories(sgemm_bench PRIVATE ${PROJECT_SOURCE_DIR}/kernels
                             ${PROJECT_SOURCE_DIR}/bench/sgemm)
  if(M40_CUDA_OVERLAY_DIR)
    target_include_directories(sgemm_bench BEFORE PRIVATE ${M40_CUDA_OVERLAY_DIR})
  endif()
  target_compile_definitions(sgemm_bench PRIVATE
    M40_SGEMM_RESOURCES="${PROJECT_SOURCE_DIR}/bench/sgemm/resources_sm52.txt")
  target_compile_options(sgemm_bench PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${M40_PTXAS_VERBOSE}>>:-Xptxas=-v>)
  target_link_libraries(sgemm_bench PRIVATE m40_static CUDA::cublas)
endif()
