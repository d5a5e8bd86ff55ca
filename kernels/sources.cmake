# The CUDA kernels: one op family per kernels/<family>.cu with its launcher
# header kernels/<family>.h (plus the .cuh pieces of the quantized GEMV).
# Every .cu here is part of the library, so a new family needs no line here.
# Teaching versions that production does not dispatch live under bench/.
if(M40_HAVE_CUDA)
  file(GLOB _m40_kernels CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cu)
  list(APPEND M40_CUDA_SOURCES ${_m40_kernels})
endif()
