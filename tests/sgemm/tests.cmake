# SGEMM (issue 4): kernels/sgemm.cu vs the CPU reference. Exits 77 without a GPU.
if(M40_HAVE_CUDA)
  m40_add_test(NAME test_sgemm SOURCES tests/sgemm/test_sgemm.c LABELS gpu)
  # The main kernel's inner loop must stay >= 90% FFMA in the sm_52 SASS.
  if("${CMAKE_CUDA_ARCHITECTURES}" MATCHES "(^|;)52")
    find_package(Python3 COMPONENTS Interpreter QUIET)
    find_program(M40_CUOBJDUMP cuobjdump HINTS ${CUDAToolkit_BIN_DIR})
    if(Python3_FOUND AND M40_CUOBJDUMP)
      add_test(NAME sgemm_ffma_ratio
        COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/sass_ffma_ratio.py
                $<TARGET_FILE:m40_static> --cuobjdump ${M40_CUOBJDUMP})
      set_tests_properties(sgemm_ffma_ratio PROPERTIES LABELS cpu SKIP_RETURN_CODE 77)
      # The implicit-GEMM conv variant (patch gather in the tile loader):
      # 85.8% when it was written; the gather must stay cheap.
      add_test(NAME conv_ffma_ratio
        COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/sass_ffma_ratio.py
                $<TARGET_FILE:m40_static> --cuobjdump ${M40_CUOBJDUMP}
                --kernel sgemm_tile_kernelILi128ELi128ELb1ELb0ELb1ELb1E --min 0.85)
      set_tests_properties(conv_ffma_ratio PROPERTIES LABELS cpu SKIP_RETURN_CODE 77)
    endif()
  endif()
endif()
