# The attention trail (issue 16): bench/attention/attn_versions.cu holds the
# numbered versions (naive, tiled, online softmax, split-KV, GQA-shared) of
# causal GQA attention over a KV cache; m40-attn-versions
# (bench/attention/attn_check.c) checks each against a CPU double reference,
# then times them beside the library's m40_attention on ChatGLM2 shapes.
# docs/attention.md tells the story. `m40-attn-versions --check` is also a
# gpu-labelled test (exit 77 without a GPU).

if(M40_HAVE_CUDA)
  add_library(m40_attn_versions OBJECT ${PROJECT_SOURCE_DIR}/bench/attention/attn_versions.cu)
  target_include_directories(m40_attn_versions PRIVATE ${PROJECT_SOURCE_DIR}/include)
  if(M40_CUDA_OVERLAY_DIR)
    target_include_directories(m40_attn_versions BEFORE PRIVATE ${M40_CUDA_OVERLAY_DIR})
  endif()
  target_compile_options(m40_attn_versions PRIVATE
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${M40_PTXAS_VERBOSE}>>:-Xptxas=-v>)
  add_executable(m40-attn-versions ${PROJECT_SOURCE_DIR}/bench/attention/attn_check.c
                 $<TARGET_OBJECTS:m40_attn_versions>)
  if(M40_CUDA_OVERLAY_DIR)
    target_include_directories(m40-attn-versions BEFORE PRIVATE ${M40_CUDA_OVERLAY_DIR})
  endif()
  target_link_libraries(m40-attn-versions PRIVATE m40_static CUDA::cudart_static m)
  target_compile_options(m40-attn-versions PRIVATE -Wall -Wextra $<$<BOOL:${M40_WERROR}>:-Werror>)
  if(M40_BUILD_TESTS)
    enable_testing()
    add_test(NAME m40_attn_versions COMMAND m40-attn-versions --check)
    set_tests_properties(m40_attn_versions PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
  endif()
endif()
# m40-fence-cost (bench/attention/fence_cost.cu): what the "last block
# folds" pattern (the fused decode combine) costs a kernel, fence or not
if(M40_HAVE_CUDA)
  add_executable(m40-fence-cost ${PROJECT_SOURCE_DIR}/bench/attention/fence_cost.cu)
  if(M40_CUDA_OVERLAY_DIR)
    target_include_directories(m40-fence-cost BEFORE PRIVATE ${M40_CUDA_OVERLAY_DIR})
  endif()
  target_link_libraries(m40-fence-cost PRIVATE CUDA::cudart_static)
endif()
# m40-bench attention (tools/bench/attention.c):
# the harness on the CPU reference, and a short GPU run (77 without a GPU)
if(M40_BUILD_TESTS AND M40_BUILD_EXAMPLES)
  enable_testing()
  add_test(NAME m40_bench_attention_cpu
    COMMAND m40-bench attention --cpu --sizes 64 --warmup 1 --repeats 2 --json)
  set_tests_properties(m40_bench_attention_cpu PROPERTIES LABELS cpu
    PASS_REGULAR_EXPRESSION "\"label\":\"decode ctx 64\".*\"label\":\"prefill T 128\"")
  add_test(NAME m40_bench_gpu_attention
    COMMAND m40-bench attention --sizes 1024,8192 --warmup 1 --repeats 3)
  set_tests_properties(m40_bench_gpu_attention PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
endif()
# decode v3/v4 (kernels/attention.cu attn_decode_kernel) and the BM-64 prefill
# kernel (attention_prefill64.cuh) emulated on the host from the kernels' own
# source against a double reference (no GPU needed; bench/attention/emu_common.h)
# They compile their own host program, the same in every configuration: the
# sanitizer build skips them (scripts/test.sh would run them twice, ~5 min).
if(M40_BUILD_TESTS AND UNIX AND NOT M40_SANITIZE)
  enable_testing()
  foreach(emu decode_v4 prefill64 rope_ways)
    add_test(NAME attn_${emu}_emu COMMAND sh ${PROJECT_SOURCE_DIR}/bench/attention/${emu}_emu.sh
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    # decode_v4 took 287 s on 2 cores beside the rest of the ctest (session 27's CI; one run
    # timed out at 300): 600 for headroom, the v5 cases at the library's 32-split cap
    set_tests_properties(attn_${emu}_emu PROPERTIES LABELS cpu TIMEOUT 600)
  endforeach()
endif()
