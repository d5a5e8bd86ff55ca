# The CPU reference: plain C, one file per op family (no kernel headers).
list(APPEND M40_C_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/random.c
  ${CMAKE_CURRENT_LIST_DIR}/elementwise.c
  ${CMAKE_CURRENT_LIST_DIR}/softmax.c
  ${CMAKE_CURRENT_LIST_DIR}/matmul.c
  ${CMAKE_CURRENT_LIST_DIR}/conv.c
  ${CMAKE_CURRENT_LIST_DIR}/quant.c)
