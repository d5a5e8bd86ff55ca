# Model file readers (safetensors) and the small JSON cursor they use.
list(APPEND M40_C_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/json.c
  ${CMAKE_CURRENT_LIST_DIR}/safetensors.c)
