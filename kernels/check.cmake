# The graph's non-finite check mode (issue 15): lib/graph/check.c (host side,
# called by the executor after each node) and, with CUDA, its reduction
# kernel kernels/check.cu (launcher in kernels/check.h). Both listed here so
# the check mode plugs in without editing lib/graph/sources.cmake.
list(APPEND M40_C_SOURCES ${PROJECT_SOURCE_DIR}/lib/graph/check.c)
if(M40_HAVE_CUDA)
  list(APPEND M40_CUDA_SOURCES kernels/check.cu)
endif()
