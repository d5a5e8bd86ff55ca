# NHWC conv algorithms (issue 5): implicit GEMM and Winograd forced one by
# one against the CPU reference. Exits 77 without a GPU.
if(M40_HAVE_CUDA)
  m40_add_test(NAME test_conv_algo SOURCES tests/conv/test_conv_algo.c LABELS gpu)
endif()
