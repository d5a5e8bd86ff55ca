# m40-server on the CPU reference with the tiny random chat model that
# tests/chatglm2/make_chat_model.py makes in the build directory: the HTTP
# API, streaming == non-streaming, concurrency, every bad input of issue 19,
# SIGTERM; curl for the raw SSE bytes and the official openai client from a
# venv the setup test makes (skipped, with a notice, without PyPI).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(TARGET m40-server AND Python3_FOUND)
  find_program(M40_CURL curl)
  set(_venv ${PROJECT_BINARY_DIR}/server-venv)
  add_test(NAME m40_server_venv COMMAND ${CMAKE_CURRENT_LIST_DIR}/make_venv.sh ${_venv})
  set_tests_properties(m40_server_venv PROPERTIES LABELS cpu TIMEOUT 300
                       FIXTURES_SETUP m40_server_venv)
  set(_curl)
  if(M40_CURL)
    set(_curl --curl ${M40_CURL})
  endif()
  add_test(NAME m40_server
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_test.sh ${_venv}
                   ${CMAKE_CURRENT_LIST_DIR}/test_server.py --server $<TARGET_FILE:m40-server>
                   --work ${PROJECT_BINARY_DIR}/server_test ${_curl})
  add_test(NAME m40_server_chatglm3
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_test.sh ${_venv}
                   ${CMAKE_CURRENT_LIST_DIR}/test_server.py --server $<TARGET_FILE:m40-server>
                   --work ${PROJECT_BINARY_DIR}/server_test --chatglm3 --quick
                   --parallel 1 --split layer)
  # the load tests' model: seeded random weights (--random-weights tiny)
  add_test(NAME m40_server_random
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_test.sh ${_venv}
                   ${CMAKE_CURRENT_LIST_DIR}/test_server.py --server $<TARGET_FILE:m40-server>
                   --work ${PROJECT_BINARY_DIR}/server_test --random-weights --split tensor)
  # timing checks (the 2 s connection timeout): not beside each other
  set_tests_properties(m40_server m40_server_chatglm3 m40_server_random PROPERTIES LABELS cpu TIMEOUT 400
                       FIXTURES_REQUIRED m40_server_venv RESOURCE_LOCK m40_server)
endif()
