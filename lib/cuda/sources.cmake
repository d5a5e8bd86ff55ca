# The CUDA runtime layer: context, stream, memory, workspace, error mapping,
# the cuBLAS handle. It knows no op (those are in lib/ops/).
if(M40_HAVE_CUDA)
  list(APPEND M40_C_SOURCES ${CMAKE_CURRENT_LIST_DIR}/backend.c)
endif()
