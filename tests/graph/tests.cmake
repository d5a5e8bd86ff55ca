# Graphs, planner, executor (issue 3). CPU tests always run; test_graph_gpu
# exits 77 (skipped) without a GPU.
set(_g ${CMAKE_CURRENT_LIST_DIR})
m40_add_test(NAME test_graph_planner SOURCES ${_g}/test_graph_planner.c ${_g}/fixtures.c LABELS cpu)
m40_add_test(NAME test_graph_errors SOURCES ${_g}/test_graph_errors.c LABELS cpu)
m40_add_test(NAME test_graph_exec SOURCES ${_g}/test_graph_exec.c ${_g}/fixtures.c LABELS cpu)
m40_add_test(NAME test_graph_gpu SOURCES ${_g}/test_graph_gpu.c ${_g}/fixtures.c LABELS gpu)
# ops through the registry (LINEAR_Q in graphs, struct_size, int checks)
m40_add_test(NAME test_graph_ops SOURCES ${_g}/test_graph_ops.c LABELS cpu)
add_test(NAME test_graph_ops_gpu COMMAND test_graph_ops --gpu WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(test_graph_ops_gpu PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
if(M40_BUILD_EXAMPLES)
  # m40-plan must print JSON with "fits", and exit 2 on bad options.
  add_test(NAME m40_plan_cli_glm COMMAND m40-plan --model chatglm2-6b --dtype int4 --card m40-12g
           --ctx 8192 --json)
  set_tests_properties(m40_plan_cli_glm PROPERTIES LABELS cpu
                       PASS_REGULAR_EXPRESSION "\"fits\": true")
  add_test(NAME m40_plan_cli_resnet COMMAND m40-plan --model resnet50 --batch 64 --card m40-24g
           --json)
  set_tests_properties(m40_plan_cli_resnet PROPERTIES LABELS cpu
                       PASS_REGULAR_EXPRESSION "\"fits\": true")
  add_test(NAME m40_plan_cli_fp16_12g COMMAND m40-plan --model chatglm2-6b --dtype fp16
           --card m40-12g --json)
  set_tests_properties(m40_plan_cli_fp16_12g PROPERTIES LABELS cpu
                       PASS_REGULAR_EXPRESSION "\"fits\": false")
  add_test(NAME m40_plan_cli_bad_option COMMAND sh -c
           "\"$0\" --model resnet50 --batch -3; test $? -eq 2 && \"$0\" --frobnicate; test $? -eq 2"
           $<TARGET_FILE:m40-plan>)
  set_tests_properties(m40_plan_cli_bad_option PROPERTIES LABELS cpu)
endif()
