# m40-doctor's checks (issue 8): NVML (lib/measure/nvml.c), CUDA/cuBLAS/cuDNN
# versions, per-GPU health, a quick functional check. Public API:
# include/m40/doctor.h.
list(APPEND M40_C_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/doctor.c
    ${CMAKE_CURRENT_LIST_DIR}/report.c
    ${CMAKE_CURRENT_LIST_DIR}/sys.c)
if(M40_HAVE_CUDA)
  list(APPEND M40_CUDA_SOURCES ${CMAKE_CURRENT_LIST_DIR}/probe.cu)
endif()
# dlopen/dlsym (NVML, cuDNN): CMAKE_DL_LIBS is linked by the top-level CMakeLists.txt.
