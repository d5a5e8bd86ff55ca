# Core tests. CPU tests always run; `gpu`-labelled tests exit 77 (skipped)
# without a GPU. GPU verification: scripts/gpu-check.sh.
m40_add_test(NAME test_check SOURCES tests/test_check.c LABELS cpu)
m40_add_test(NAME test_api SOURCES tests/test_api.c LABELS cpu)
m40_add_test(NAME test_ref SOURCES tests/test_ref.c LABELS cpu)
if(M40_HAVE_CUDA)
  m40_add_test(NAME test_gpu_ops SOURCES tests/test_gpu_ops.c LABELS gpu)
  m40_add_test(NAME test_gpu_errors SOURCES tests/test_gpu_errors.c LABELS gpu)
endif()
