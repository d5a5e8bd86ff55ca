# Conv algorithms (issue 5): NHWC implicit GEMM vs Winograd on ResNet-50's 3x3/1 layers.
#   conv_algo_bench [--sizes 1,8,32,64,128] [--repeats N]
if(M40_HAVE_CUDA)
  add_executable(conv_algo_bench bench/conv/conv_algo_bench.cu)
  target_include_directories(conv_algo_bench PRIVATE ${PROJECT_SOURCE_DIR}/kernels)
  if(M40_CUDA_OVERLAY_DIR)
    target_include_directories(conv_algo_bench BEFORE PRIVATE ${M40_CUDA_OVERLAY_DIR})
  endif()
  target_link_libraries(conv_algo_bench PRIVATE m40_static)
endif()
