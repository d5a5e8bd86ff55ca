# Fault injection (issue 15): test_fault makes the N-th host allocation fail
# for every N along a reduced-ResNet pass, a ChatGLM2 pass on the tiny
# fixture (fp16 and int4: load, plan, prefill, decode, sample, teardown; and a
# pre-quantized int4 checkpoint in two shards written from it), a
# tokenizer load and a safetensors open; test_gpu_fault does the same with the N-th device
# allocation / stream, copy or launch call. The hooks reach the static
# library's calls through the linker's --wrap, so no library source changes.
set(_f ${CMAKE_CURRENT_LIST_DIR})
set(_fault_srcs ${_f}/test_fault.c ${_f}/fault_hooks.c)
set(_fault_wrap "LINKER:--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=free")
if(M40_HAVE_CUDA)
  list(APPEND _fault_srcs ${_f}/fault_cuda.c)
  string(APPEND _fault_wrap ",--wrap=cudaMalloc,--wrap=cudaFree,--wrap=cudaStreamCreateWithFlags"
         ",--wrap=cudaStreamDestroy,--wrap=cudaMemcpyAsync,--wrap=cudaMemsetAsync"
         ",--wrap=cudaLaunchKernel,--wrap=cudaEventCreate,--wrap=cudaGetLastError"
         ",--wrap=cudaPeekAtLastError")
endif()
m40_add_test(NAME test_fault SOURCES ${_fault_srcs} LABELS cpu)
target_link_options(test_fault PRIVATE "${_fault_wrap}")
if(M40_HAVE_CUDA)
  target_compile_definitions(test_fault PRIVATE M40_HAVE_CUDA)  # the device sweep
  if(M40_CUDA_OVERLAY_DIR)
    target_include_directories(test_fault BEFORE PRIVATE ${M40_CUDA_OVERLAY_DIR})
  endif()
  target_link_libraries(test_fault PRIVATE CUDA::cudart_static)
  add_test(NAME test_gpu_fault COMMAND test_fault --gpu WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(test_gpu_fault PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
endif()

# The graph's non-finite check mode (m40_graph_set_check).
m40_add_test(NAME test_nonfinite SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_nonfinite.c LABELS cpu)
if(M40_HAVE_CUDA)
  add_test(NAME test_gpu_nonfinite COMMAND test_nonfinite --gpu WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(test_gpu_nonfinite PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
endif()

# m40-soak (bench/soak/) in CI: a few CPU batches of the reduced ResNet, and
# 240 ChatGLM2 decode steps of the tiny fixture (12 rounds: prefill, 20
# steps, rewinds, a full reset every 3 rounds that must repeat round 0's ids)
# must leave RSS and descriptors flat. The 1,000-batch and 10,000-step runs:
# scripts/h200-soak.sh.
if(TARGET m40-soak)
  add_test(NAME m40_soak_cpu_smoke COMMAND m40-soak --cpu --weights
           tests/fixtures/resnet/reduced_resnet.safetensors --batch 1 --size 32 --batches 40
           --every 4 --warmup 8 --csv ${CMAKE_BINARY_DIR}/soak_cpu_smoke.csv
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(m40_soak_cpu_smoke PROPERTIES LABELS cpu
                       PASS_REGULAR_EXPRESSION "flat within 1 MB after warm-up: yes")
  add_test(NAME m40_soak_glm_cpu_smoke COMMAND m40-soak --model chatglm2 --cpu --weights
           tests/fixtures/chatglm2/tiny.safetensors --steps 240 --round 20 --prompt 12
           --chunk 8 --reset-every 3 --ctx 96 --every 20
           --csv ${CMAKE_BINARY_DIR}/soak_glm_cpu_smoke.csv
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(m40_soak_glm_cpu_smoke PROPERTIES LABELS cpu
                       PASS_REGULAR_EXPRESSION "3/3 rounds said round 0's 21 ids.*flat within 1 MB after warm-up: yes")
endif()

# A prefill that fails part-way (examples/chatglm2's model API, CPU): every
# host allocation of a three-chunk prefill fails in turn; the conversation
# must keep the chunks that went in, refuse its stale logits and stay usable.
if(TARGET m40_chatglm2_example)
  m40_add_test(NAME test_fault_glm SOURCES ${_f}/test_fault_glm.c ${_f}/fault_hooks.c LABELS cpu)
  target_link_libraries(test_fault_glm PRIVATE m40_chatglm2_example)
  target_link_options(test_fault_glm PRIVATE
                      "LINKER:--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=free")
endif()
