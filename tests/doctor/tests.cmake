# m40-doctor and m40-bench (issue 8).
m40_add_test(NAME test_doctor SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_doctor.c LABELS cpu)
m40_add_test(NAME test_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_bench.c LABELS cpu)
if(M40_BUILD_EXAMPLES)
  # The tools themselves. The doctor must run and print its JSON anywhere
  # (its exit status says FAIL on a machine without a GPU, so match output).
  add_test(NAME m40_doctor_json COMMAND m40-doctor --json --quick)
  set_tests_properties(m40_doctor_json PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "^\\{\"tool\":\"m40-doctor\".*\"items\":\\[")
  add_test(NAME m40_bench_harness_cpu
    COMMAND m40-bench gemm --cpu --sizes 17x33x9,8 --warmup 1 --repeats 3 --json)
  set_tests_properties(m40_bench_harness_cpu PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "\"schema\":\"m40-bench/1\".*\"label\":\"8x8x8\"")
  # the ChatGLM2 workload's harness on a tiny model on the CPU reference
  add_test(NAME m40_bench_chatglm2_cpu
    COMMAND m40-bench chatglm2 --cpu --sizes 32 --warmup 1 --repeats 2 --json)
  set_tests_properties(m40_bench_chatglm2_cpu PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "\"label\":\"fp16 decode ctx 32\".*\"label\":\"fp16 prefill 16\"")
  add_test(NAME m40_bench_gemv_cpu
    COMMAND m40-bench gemv --cpu --sizes 2x64x96 --warmup 1 --repeats 2 --json)
  set_tests_properties(m40_bench_gemv_cpu PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "\"label\":\"2x64x96 q4/row/f16\"")
  # On a GPU: measures (exit 0); without one: 77 = skipped.
  add_test(NAME m40_bench_gpu
    COMMAND m40-bench copy --sizes 1,16 --warmup 1 --repeats 5)
  add_test(NAME m40_bench_gpu_gemm
    COMMAND m40-bench gemm --sizes 1x256x256,256 --warmup 1 --repeats 5)
  add_test(NAME m40_bench_gpu_gemv
    COMMAND m40-bench gemv --sizes 1x4096x4096,8x4096x4096 --warmup 1 --repeats 5)
  add_test(NAME m40_bench_gpu_conv COMMAND m40-bench conv --sizes 1 --warmup 1 --repeats 3)
  set_tests_properties(m40_bench_gpu m40_bench_gpu_gemm m40_bench_gpu_gemv m40_bench_gpu_conv
    PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
  if(TARGET m40_resnet_example)
    add_test(NAME m40_bench_gpu_resnet50 COMMAND m40-bench resnet50 --sizes 1 --warmup 1 --repeats 3)
    set_tests_properties(m40_bench_gpu_resnet50 PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
  endif()
endif()
