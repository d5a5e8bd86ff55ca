# elementwise launchers: kernels/elementwise.cu, declared in kernels/elementwise.h.
if(M40_HAVE_CUDA)
  list(APPEND M40_CUDA_SOURCES ${CMAKE_CURRENT_LIST_DIR}/elementwise.cu)
endif()
