# Measurement helpers (statistics, JSON, telemetry summary, event timers,
# direct cuBLAS/cudaMemcpy baselines) used by m40-bench and m40-doctor.
list(APPEND M40_C_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/stats.c
    ${CMAKE_CURRENT_LIST_DIR}/json.c
    ${CMAKE_CURRENT_LIST_DIR}/telemetry.c
    ${CMAKE_CURRENT_LIST_DIR}/timer.c)
if(M40_HAVE_CUDA)
  list(APPEND M40_C_SOURCES ${CMAKE_CURRENT_LIST_DIR}/cuda.c)
endif()
