# Measurement helpers shared by m40-bench (lib/bench/) and m40-doctor
# (lib/doctor/), so that those two do not include each other: statistics,
# JSON writer, timers, NVML through dlopen.
list(APPEND M40_C_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/stats.c
    ${CMAKE_CURRENT_LIST_DIR}/json.c
    ${CMAKE_CURRENT_LIST_DIR}/timer.c
    ${CMAKE_CURRENT_LIST_DIR}/nvml.c)
if(M40_HAVE_CUDA)
  list(APPEND M40_C_SOURCES ${CMAKE_CURRENT_LIST_DIR}/events_cuda.c)
endif()
