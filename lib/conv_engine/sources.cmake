# Conv engines (issue 5): ours or cuDNN per conv, the graph's auto-tuner.
# The cuDNN path is compiled only when cmake/M40Cuda.cmake found cuDNN.
list(APPEND M40_C_SOURCES ${CMAKE_CURRENT_LIST_DIR}/engine.c)
if(M40_HAVE_CUDA)
  list(APPEND M40_C_SOURCES ${CMAKE_CURRENT_LIST_DIR}/tune_cuda.c)
  if(M40_HAVE_CUDNN)
    list(APPEND M40_C_SOURCES ${CMAKE_CURRENT_LIST_DIR}/cudnn_conv.c)
  endif()
endif()
