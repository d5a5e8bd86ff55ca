# FP32 SGEMM (issue 4): ${CMAKE_CURRENT_LIST_DIR}/sgemm.cu, launcher declared in kernels/sgemm.h.
if(M40_HAVE_CUDA)
  list(APPEND M40_CUDA_SOURCES ${CMAKE_CURRENT_LIST_DIR}/sgemm.cu)
endif()
