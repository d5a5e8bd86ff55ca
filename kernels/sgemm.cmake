# FP32 SGEMM (issue 4): kernels/sgemm.cu, launcher declared in kernels/sgemm.h.
if(M40_HAVE_CUDA)
  list(APPEND M40_CUDA_SOURCES kernels/sgemm.cu)
endif()
