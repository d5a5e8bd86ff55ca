# Weight-only quantization (issue 6). The CPU test compares the quantizer with
# numpy goldens (tests/quant/make_golden.py writes tests/quant/quant.golden).
m40_add_test(NAME test_quant_cpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_quant_cpu.c
             LABELS cpu ARGS ${CMAKE_CURRENT_LIST_DIR}/quant.golden)
# LINEAR_Q's fusions (norm_w, residual): CPU, fused == separate nodes bit
# for bit; --gpu, the GPU graphs against the CPU's (77 without a GPU)
m40_add_test(NAME test_qlinear_fused SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_qlinear_fused.c LABELS cpu)
if(M40_HAVE_CUDA)
  add_test(NAME test_qlinear_fused_gpu COMMAND test_qlinear_fused --gpu)
  set_tests_properties(test_qlinear_fused_gpu PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
  m40_add_test(NAME test_quant_gpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_quant_gpu.c LABELS gpu)
  # the dispatch rules, host side: no GPU needed
  m40_add_test(NAME test_quant_dispatch SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_quant_dispatch.c
               LABELS cpu)
  # CI (no GPU): the sm_52 inner loop stays within its instruction budget
  # (7 per int4 weight, 12 per int8 weight at batch 1).
  find_package(Python3 COMPONENTS Interpreter QUIET)
  find_program(M40_CUOBJDUMP cuobjdump HINTS ${CUDAToolkit_BIN_DIR})
  if(Python3_FOUND AND M40_CUOBJDUMP AND "${CMAKE_CUDA_ARCHITECTURES}" MATCHES "52")
    add_test(NAME quant_sass_budget
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/sass_quant_ipw.py
                     $<TARGET_OBJECTS:m40_obj> --check --batch 1 --cuobjdump ${M40_CUOBJDUMP})
    set_tests_properties(quant_sass_budget PROPERTIES LABELS cpu)
    # the transformer kernels' hot loops: <= 6 instructions per DRAM byte
    # (scripts/sass_ops_ipe.py; the M40 issues 11.9 per byte at 100%)
    add_test(NAME ops_sass_budget
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/sass_ops_ipe.py
                     $<TARGET_OBJECTS:m40_obj> --check --cuobjdump ${M40_CUOBJDUMP})
    set_tests_properties(ops_sass_budget PROPERTIES LABELS cpu)
  endif()
endif()
