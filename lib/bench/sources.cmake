# m40-bench's helpers (telemetry summary, result records, direct
# cuBLAS/cudaMemcpy baselines) on top of lib/measure/.
list(APPEND M40_C_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/results.c
    ${CMAKE_CURRENT_LIST_DIR}/telemetry.c)
if(M40_HAVE_CUDA)
  list(APPEND M40_C_SOURCES ${CMAKE_CURRENT_LIST_DIR}/cuda.c)
endif()
