# The ChatGLM2 builder on a tiny model of ChatGLM2's shape whose reference
# outputs come from an independent implementation (transformers'
# GlmForCausalLM; tests/fixtures/chatglm2/make_fixture.py): prefill and
# greedy decode through a shared KV cache, fp32/fp16/int8/int4 weights, and
# the builder's refusals (missing, extra and malformed tensors).
m40_add_test(NAME test_chatglm2 SOURCES tests/chatglm2/test_chatglm2.c LABELS cpu)
if(M40_HAVE_CUDA)
  add_test(NAME test_gpu_chatglm2 COMMAND test_chatglm2 --gpu WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(test_gpu_chatglm2 PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
endif()
# The layer split (issue 20): a random 4-block checkpoint whole on one
# context against 2 and 3 pipeline stages on separate contexts (the CPU
# reference here; `--gpu`: every context on GPU 0, "two contexts on one
# device emulate two cards"), logits within 1e-5 and the same greedy ids.
m40_add_test(NAME test_chatglm2_split SOURCES tests/chatglm2/test_chatglm2_split.c LABELS cpu)
if(M40_HAVE_CUDA)
  add_test(NAME test_gpu_chatglm2_split COMMAND test_chatglm2_split --gpu
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(test_gpu_chatglm2_split PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
endif()
# m40-chat's test-friendly flags on the CPU reference: the fixture's greedy
# continuation (the first 12 of transformers' ids), and a refusal.
if(TARGET m40-chat)
  # m40_chat_greedy(NAME CHUNK [m40-chat args...]): the fixture's 11 ids, 12
  # greedy ids out, which must be transformers' (the expression below)
  function(m40_chat_greedy name chunk)
    add_test(NAME ${name}
             COMMAND m40-chat --cpu ${ARGN}
                     --model tests/fixtures/chatglm2/tiny.safetensors --dtype fp16
                     --ids 64,17,250,3,99,42,7,128,5,211,33 --max-new-tokens 12 --greedy --print-ids
                     --chunk ${chunk} --ctx 128
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(${name} PROPERTIES LABELS cpu
                         PASS_REGULAR_EXPRESSION "^55,243,243,243,243,243,50,60,53,5,243,287\n")
  endfunction()
  m40_chat_greedy(m40_chat_cli_greedy 4)
  # the same ids with the model split over 2 CPU contexts by layers, and over
  # 2 and 4 by tensor parallelism (issue 20), and the refused device lists
  m40_chat_greedy(m40_chat_cli_greedy_layer01 4 --devices 0,1 --split layer)
  foreach(devs 0,1 0,1,2,3)
    string(REPLACE "," "" _n ${devs})
    m40_chat_greedy(m40_chat_cli_greedy_tp${_n} 4 --devices ${devs} --split tensor)
  endforeach()
  # the rank threads starting after the first job is posted (a loaded
  # machine; each waited for the second job before session 20, a hang)
  m40_chat_greedy(m40_chat_cli_greedy_tp0123_late 4 --devices 0,1,2,3 --split tensor)
  set_tests_properties(m40_chat_cli_greedy_tp0123_late PROPERTIES
                       ENVIRONMENT "GLM_TEST_RANK_START_MS=300" TIMEOUT 60)
  # the same ids through a short prefill graph (chunk 64: the 11 ids run in
  # its 16-row graph), on one context, a layer split and tensor parallelism
  foreach(mode one layer tensor)
    set(_dev)
    if(NOT mode STREQUAL "one")
      set(_dev --devices 0,1 --split ${mode})
    endif()
    m40_chat_greedy(m40_chat_cli_greedy_short_${mode} 64 ${_dev})
  endforeach()
  foreach(bad "0,1" "0,0" "0,x" "0,1,2")  # no --split; twice; not a number; 3 ranks of 4 heads
    string(MAKE_C_IDENTIFIER "${bad}" _b)
    set(_split --split tensor)
    if(bad STREQUAL "0,1")
      set(_split)
    endif()
    add_test(NAME m40_chat_cli_bad_devices_${_b}
             COMMAND m40-chat --cpu --devices ${bad} ${_split}
                     --model tests/fixtures/chatglm2/tiny.safetensors --ids 1,2)
    set_tests_properties(m40_chat_cli_bad_devices_${_b} PROPERTIES LABELS cpu WILL_FAIL TRUE)
  endforeach()
  add_test(NAME m40_chat_cli_missing
           COMMAND m40-chat --cpu --model tests/fixtures/chatglm2/nope.safetensors --ids 1,2)
  set_tests_properties(m40_chat_cli_missing PROPERTIES LABELS cpu WILL_FAIL TRUE)
endif()
# Hugging Face-style directories (config.json + sharded safetensors + index,
# made from the fixture with the standard library) and their refusals.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(TARGET m40-chat AND Python3_FOUND)
  add_test(NAME m40_chat_dirs
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/check_dirs.sh $<TARGET_FILE:m40-chat>
                   ${PROJECT_BINARY_DIR}/chatglm2_dirs
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(m40_chat_dirs PROPERTIES LABELS cpu)
endif()
# The interactive chat (issue 18) on a model and tokenizer that the tests
# make with the standard library (make_chat_model.py: ChatGLM2's id
# layout, 65024 ids, random weights): the streaming decoder alone, then
# the real program through a pseudo-terminal, a pipe and --prompt.
if(TARGET m40-chat AND Python3_FOUND)
  set(M40_CHAT_MODEL ${PROJECT_BINARY_DIR}/chat_model)
  add_test(NAME m40_chat_make_model
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/make_chat_model.py ${M40_CHAT_MODEL})
  set_tests_properties(m40_chat_make_model PROPERTIES LABELS cpu FIXTURES_SETUP chat_model)
  m40_add_test(NAME test_chat_stream
               SOURCES tests/chatglm2/test_chat_stream.c examples/chatglm2/stream.c
               LABELS cpu ARGS ${M40_CHAT_MODEL}/tokenizer.model)
  target_include_directories(test_chat_stream PRIVATE ${PROJECT_SOURCE_DIR}/examples/chatglm2)
  set_tests_properties(test_chat_stream PROPERTIES FIXTURES_REQUIRED chat_model)
  # a round stopped while its prompt was read leaves no trace (chat.c)
  m40_add_test(NAME test_chat_rounds
               SOURCES tests/chatglm2/test_chat_rounds.c examples/chatglm2/chat.c examples/chatglm2/stream.c
               LABELS cpu ARGS ${M40_CHAT_MODEL})
  target_link_libraries(test_chat_rounds PRIVATE m40_chatglm2_example)
  set_tests_properties(test_chat_rounds PROPERTIES FIXTURES_REQUIRED chat_model)
  foreach(case pty interrupt reuse utf8 bad overflow glm3 io)
    add_test(NAME m40_chat_${case}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/chat_test.py
                     $<TARGET_FILE:m40-chat> ${M40_CHAT_MODEL} ${case}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(m40_chat_${case} PROPERTIES LABELS cpu FIXTURES_REQUIRED chat_model
                         TIMEOUT 300)
  endforeach()
endif()
# --random-weights (the GPU's full-size chat test without a 12.5 GB file,
# scripts/h200-server.sh): the terminal chat on seeded random weights.
if(TARGET m40-chat AND Python3_FOUND)
  add_test(NAME m40_chat_random_weights
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/chat_test.py
                   $<TARGET_FILE:m40-chat> ${M40_CHAT_MODEL} pty
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(m40_chat_random_weights PROPERTIES LABELS cpu FIXTURES_REQUIRED chat_model
                       TIMEOUT 300 ENVIRONMENT "M40_CHAT_ARGS=--cpu --dtype fp32 --random-weights tiny")
endif()
# A short soak (20 s here; 30 minutes on the H200 with the 6B-shaped model:
# chat_soak.py's header): host memory stays flat over many rounds, resets
# and context rebuilds.
if(TARGET m40-chat AND Python3_FOUND)
  add_test(NAME m40_chat_soak
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/chat_soak.py
                   $<TARGET_FILE:m40-chat> ${M40_CHAT_MODEL} 20)
  set_tests_properties(m40_chat_soak PROPERTIES LABELS cpu FIXTURES_REQUIRED chat_model TIMEOUT 200)
  if(M40_SANITIZE) # host RSS is ASan's quarantine there: LeakSanitizer judges instead
    set_tests_properties(m40_chat_soak PROPERTIES ENVIRONMENT "M40_SOAK_ASAN=1")
  endif()
endif()
# Continuous batching in the example's model API (glm_open_opts.parallel):
# conversations joining and leaving a batched decode get what they get alone.
if(TARGET m40_chatglm2_example)
  m40_add_test(NAME test_glm_parallel SOURCES tests/chatglm2/test_glm_parallel.c LABELS cpu)
  target_link_libraries(test_glm_parallel PRIVATE m40_chatglm2_example)
  if(M40_HAVE_CUDA)
    add_test(NAME test_gpu_glm_parallel COMMAND test_glm_parallel --gpu
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(test_gpu_glm_parallel PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
  endif()
endif()
# Tensor parallelism (issue 20): 2 and 4 ranks on CPU contexts in threads,
# all-reduced on the host, equal to the whole model; --gpu: contexts on one GPU.
m40_add_test(NAME test_chatglm2_tp SOURCES tests/chatglm2/test_chatglm2_tp.c LABELS cpu)
target_link_libraries(test_chatglm2_tp PRIVATE Threads::Threads)
if(M40_HAVE_CUDA)
  add_test(NAME test_gpu_chatglm2_tp COMMAND test_chatglm2_tp --gpu WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(test_gpu_chatglm2_tp PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
endif()
