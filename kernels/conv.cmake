# Convolution (issue 5) and pooling: kernels/conv.cu (direct NCHW, NHWC
# implicit GEMM, algorithm choice), kernels/winograd.cu (F(2x2, 3x3) passes),
# kernels/pool.cu; launchers in kernels/conv.h, kernels/pool.h.
if(M40_HAVE_CUDA)
  list(APPEND M40_CUDA_SOURCES kernels/conv.cu kernels/winograd.cu kernels/pool.cu)
endif()
