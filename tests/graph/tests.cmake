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
# the layer split over several cards (issue 20): m40_model_plan_split
m40_add_test(NAME test_plan_split SOURCES ${_g}/test_plan_split.c LABELS cpu)
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
  # --cards (issue 20): fp16 fits 2x m40-12g (1x does not: m40_plan_cli_fp16_12g and
  # the one-card split), a mix gives the 24 GB card more layers, fp32 on 2x 12 GB is
  # refused with the shortfall and what fits, bad lists exit 2.
  add_test(NAME m40_plan_cli_cards_2x12g COMMAND m40-plan --model chatglm2-6b --dtype fp16
           --cards 2xm40-12g --json)
  set_tests_properties(m40_plan_cli_cards_2x12g PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION
      "\"layer_begin\": 0, \"layer_end\": 14, \"embedding\": true.*\"layer_begin\": 14, \"layer_end\": 28, \"embedding\": false, \"output\": true.*\"shortfall_bytes\": 0, \"fullest_card_fill\": [0-9.]+, \"fits\": true")
  add_test(NAME m40_plan_cli_cards_1x12g COMMAND m40-plan --model chatglm2-6b --dtype fp16
           --cards 1xm40-12g --json)
  set_tests_properties(m40_plan_cli_cards_1x12g PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION
      "\"fullest_card_fill\": [0-9.]+, \"fits\": false")
  add_test(NAME m40_plan_cli_cards_mix COMMAND m40-plan --model chatglm2-6b --dtype fp32
           --cards m40-24g,m40-12g --json)
  set_tests_properties(m40_plan_cli_cards_mix PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION
      "\"card\": \"m40-24g\", [^}]*\"layer_begin\": 0, \"layer_end\": 19,.*\"card\": \"m40-12g\", [^}]*\"layer_begin\": 19, \"layer_end\": 28,.*\"shortfall_bytes\": 0, \"fullest_card_fill\": [0-9.]+, \"fits\": true")
  add_test(NAME m40_plan_cli_cards_refused COMMAND m40-plan --model chatglm2-6b --dtype fp32
           --cards 2xm40-12g)
  set_tests_properties(m40_plan_cli_cards_refused PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION
      "fits +NO .*short by [0-9.]+ GiB over all cards. Would fit: fp16 with ctx <= 32768 \\(fits as asked\\)")
  add_test(NAME m40_plan_cli_cards_bad COMMAND sh -c
           "for c in '' 3xfoo 0xm40-12g 100xm40-12g 17xm40-12g m40-12g,,m40-12g m40-12g, 9xm40-12g,8xm40-12g x2; do \"$0\" --model chatglm2-6b --cards \"$c\" 2>/dev/null; test $? -eq 2 || exit 1; done; \"$0\" --model resnet50 --cards 2xm40-12g; test $? -eq 2 || exit 1; \"$0\" --model chatglm2-6b --cards 2xm40-12g --budget 11GiB; test $? -eq 2"
           $<TARGET_FILE:m40-plan>)
  set_tests_properties(m40_plan_cli_cards_bad PROPERTIES LABELS cpu)
  # --split tensor: each card holds 1/N of every block (0.54 of the weights at
  # N = 2: the embedding and output layer on both), so fp16 fits 2x m40-12g;
  # 3 cards do not divide 32 heads (exit 2); fp32 on 2x 12 GB does not fit;
  # --split without --cards or with another word exits 2.
  add_test(NAME m40_plan_cli_cards_tensor COMMAND m40-plan --model chatglm2-6b --dtype fp16
           --cards 2xm40-12g --split tensor --json)
  set_tests_properties(m40_plan_cli_cards_tensor PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION
      "\"split\": \"tensor\".*\"layer_begin\": 0, \"layer_end\": 28, \"embedding\": true, \"output\": true.*\"layer_begin\": 0, \"layer_end\": 28,.*\"shortfall_bytes\": 0, \"fullest_card_fill\": 0[.][0-9]+, \"fits\": true")
  add_test(NAME m40_plan_cli_cards_tensor_refused COMMAND sh -c
           "\"$0\" --model chatglm2-6b --cards 3xm40-12g --split tensor 2>/dev/null; test $? -eq 2 || exit 1; \"$0\" --model chatglm2-6b --split tensor 2>/dev/null; test $? -eq 2 || exit 1; \"$0\" --model chatglm2-6b --cards 2xm40-12g --split diagonal 2>/dev/null; test $? -eq 2 || exit 1; \"$0\" --model chatglm2-6b --dtype fp32 --cards 2xm40-12g --split tensor | grep -q 'fits *NO'"
           $<TARGET_FILE:m40-plan>)
  set_tests_properties(m40_plan_cli_cards_tensor_refused PROPERTIES LABELS cpu)
endif()
