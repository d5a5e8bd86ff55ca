# Weight-only quantization (issue 6): formats and the quantizer
# (include/m40/quant.h). The op m40_quant_linear is lib/ops/quant_linear.c,
# its reference lib/ref/quant.c.
list(APPEND M40_C_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/quantize.c)
