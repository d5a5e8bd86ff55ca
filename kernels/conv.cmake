# Convolution (issue 5) and pooling: ${CMAKE_CURRENT_LIST_DIR}/conv.cu (direct NCHW, NHWC
# implicit GEMM, algorithm choice), ${CMAKE_CURRENT_LIST_DIR}/winograd.cu (F(2x2, 3x3) passes),
# ${CMAKE_CURRENT_LIST_DIR}/pool.cu; launchers in kernels/conv.h, kernels/pool.h.
if(M40_HAVE_CUDA)
  list(APPEND M40_CUDA_SOURCES ${CMAKE_CURRENT_LIST_DIR}/conv.cu ${CMAKE_CURRENT_LIST_DIR}/winograd.cu ${CMAKE_CURRENT_LIST_DIR}/pool.cu)
endif()
