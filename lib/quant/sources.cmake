# Weight-only quantization (issue 6): formats, quantizer, CPU reference and
# the m40_quant_linear entry point (include/m40/quant.h).
list(APPEND M40_C_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/quantize.c
  ${CMAKE_CURRENT_LIST_DIR}/linear.c)
