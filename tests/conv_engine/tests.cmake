# Conv engines (issue 5: ours / cuDNN / auto per conv). test_conv_engine:
# the API's errors on any build (cuDNN asked for but not built in, bad
# enums, wrong states) and that the library prints nothing. test_gpu_conv_engine
# (exit 77 without a GPU): the cuDNN path against the CPU reference, and the
# graph auto-tuner's choices, runs and CUDA-graph replays.
set(_ce ${CMAKE_CURRENT_LIST_DIR})
m40_add_test(NAME test_conv_engine SOURCES ${_ce}/test_conv_engine.c LABELS cpu)
if(M40_HAVE_CUDA)
  m40_add_test(NAME test_gpu_conv_engine SOURCES ${_ce}/test_gpu_conv_engine.c LABELS gpu)
endif()
