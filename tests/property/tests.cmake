# Hostile-input tests (issue 15): the API property test, and the command-line
# tools refusing numbers that would overflow.
m40_add_test(NAME test_api_property SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_api_property.c LABELS cpu)
if(M40_BUILD_EXAMPLES)
  # --budget: NaN, 1e19 (over 2^62), 0.5 (half a byte) and -1 are refused
  # with exit 2 and a reason, not planned with a wrapped headroom
  add_test(NAME m40_plan_cli_bad_budget COMMAND sh -c
           "for b in nan inf 1e19 0.5 -1 12Q; do \"$0\" --model resnet50 --budget $b; test $? -eq 2 || exit 1; done; \"$0\" --model resnet50 --budget 4e18 | grep -q 'fits *yes'"
           $<TARGET_FILE:m40-plan>)
  set_tests_properties(m40_plan_cli_bad_budget PROPERTIES LABELS cpu)
  # --sizes: a size that would wrap (or a 2^63 MiB copy) is an option error (2)
  add_test(NAME m40_bench_cli_huge_sizes COMMAND sh -c
           "for s in 9223372036854775807 99999999999999999999 2097152 0 -4; do \"$0\" copy --cpu --sizes $s --warmup 1 --repeats 1; test $? -eq 2 || exit 1; done; \"$0\" gemm --cpu --sizes 2147483647x2147483647x2147483647 --warmup 1 --repeats 1; test $? -eq 1"
           $<TARGET_FILE:m40-bench>)
  set_tests_properties(m40_bench_cli_huge_sizes PROPERTIES LABELS cpu)
endif()
