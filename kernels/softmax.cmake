# softmax launchers: kernels/softmax.cu, declared in kernels/softmax.h.
if(M40_HAVE_CUDA)
  list(APPEND M40_CUDA_SOURCES ${CMAKE_CURRENT_LIST_DIR}/softmax.cu)
endif()
