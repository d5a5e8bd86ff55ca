# Communicators (m40/comm.h): the host backend here; NCCL where built.
list(APPEND M40_C_SOURCES ${CMAKE_CURRENT_LIST_DIR}/comm.c)
