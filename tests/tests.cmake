# Core tests. CPU tests always run; `gpu`-labelled tests exit 77 (skipped)
# without a GPU. GPU verification: scripts/gpu-check.sh.
m40_add_test(NAME test_check SOURCES tests/test_check.c LABELS cpu)
m40_add_test(NAME test_api SOURCES tests/test_api.c LABELS cpu)
m40_add_test(NAME test_ref SOURCES tests/test_ref.c LABELS cpu)
m40_add_test(NAME test_conv SOURCES tests/test_conv.c LABELS cpu)
if(M40_HAVE_CUDA)
  m40_add_test(NAME test_gpu_ops SOURCES tests/test_gpu_ops.c LABELS gpu)
  m40_add_test(NAME test_gpu_errors SOURCES tests/test_gpu_errors.c LABELS gpu)
  add_test(NAME test_gpu_conv COMMAND test_conv --gpu WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(test_gpu_conv PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
endif()
# The Threads rule (m40.h): N contexts used at once from N threads. Linked
# with -pthread (Threads::Threads), so it also builds under -fsanitize=thread.
find_package(Threads REQUIRED)
m40_add_test(NAME test_threads SOURCES tests/test_threads.c LABELS cpu)
target_link_libraries(test_threads PRIVATE Threads::Threads m)
if(M40_HAVE_CUDA)
  add_test(NAME test_threads_gpu COMMAND test_threads --gpu WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(test_threads_gpu PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
  # Devices, foreign tensors, the workspace fallback and lifetime on a GPU.
  m40_add_test(NAME test_ctx_gpu SOURCES tests/test_ctx_gpu.c LABELS gpu)
endif()
