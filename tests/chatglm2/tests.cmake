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
