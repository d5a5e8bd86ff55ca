# Quantized GEMV/GEMM bench (issue 6): bench/quant/quant_bench.c -> m40-bench-quant.
# Talks to the CUDA runtime and cuBLAS directly (baselines, events).
# The GEMV's numbered versions (bench/quant/gemv_versions.cu: every kernel and
# rows-per-warp setting, from the library's kernel code) are built once and
# used by the bench and by m40-quant-versions (bench/quant/gemv_check.c),
# which checks each against the CPU reference.
if(M40_HAVE_CUDA)
  add_library(m40_quant_versions OBJECT ${PROJECT_SOURCE_DIR}/bench/quant/gemv_versions.cu)
  target_include_directories(m40_quant_versions PRIVATE ${PROJECT_SOURCE_DIR}/kernels
                             ${PROJECT_SOURCE_DIR}/include)
  if(M40_CUDA_OVERLAY_DIR)
    target_include_directories(m40_quant_versions BEFORE PRIVATE ${M40_CUDA_OVERLAY_DIR})
  endif()
  target_compile_options(m40_quant_versions PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${M40_PTXAS_VERBOSE}>>:-Xptxas=-v>)
  add_executable(m40-quant-versions ${PROJECT_SOURCE_DIR}/bench/quant/gemv_check.c
                 $<TARGET_OBJECTS:m40_quant_versions>)
  if(M40_CUDA_OVERLAY_DIR)
    target_include_directories(m40-quant-versions BEFORE PRIVATE ${M40_CUDA_OVERLAY_DIR})
  endif()
  target_link_libraries(m40-quant-versions PRIVATE m40_static CUDA::cudart_static m)
  target_compile_options(m40-quant-versions PRIVATE -Wall -Wextra $<$<BOOL:${M40_WERROR}>:-Werror>)
endif()
# A bench program of one .cu file on the kernels' headers and the static
# library (m40-gemv-boundary, m40-gemv-pattern)
function(m40_quant_bench name src)
  add_executable(${name} ${PROJECT_SOURCE_DIR}/bench/quant/${src})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/kernels ${PROJECT_SOURCE_DIR}/include)
  if(M40_CUDA_OVERLAY_DIR)
    target_include_directories(${name} BEFORE PRIVATE ${M40_CUDA_OVERLAY_DIR})
  endif()
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${M40_PTXAS_VERBOSE}>>:-Xptxas=-v>)
  target_link_libraries(${name} PRIVATE m40_static CUDA::cudart_static)
endfunction()
if(M40_HAVE_CUDA)
  # what a kernel boundary costs the batch-1 GEMVs inside a CUDA graph
  # (split matrices against one), and the chained-launch prototype
  m40_quant_bench(m40-gemv-boundary boundary_cost.cu)
  if(M40_BUILD_TESTS)  # the chained launch equals the separate launches, bit for bit
    enable_testing()
    add_test(NAME m40_gemv_boundary_chain COMMAND m40-gemv-boundary chain)
    set_tests_properties(m40_gemv_boundary_chain PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu TIMEOUT 120)
  endif()
  # the int4 GEMV's address pattern read with no arithmetic, v3's ring with
  # arithmetic, against the plain read and the GEMV
  m40_quant_bench(m40-gemv-pattern read_pattern.cu)
  # a layer's GEMVs with the next weights fetched into L2 during the attention
  m40_quant_bench(m40-l2-prefetch prefetch_overlap.cu)
endif()
if(M40_HAVE_CUDA AND M40_CUBLAS)  # the baselines are cuBLAS
  add_executable(m40-bench-quant ${PROJECT_SOURCE_DIR}/bench/quant/quant_bench.c
                 $<TARGET_OBJECTS:m40_quant_versions>)
  target_include_directories(m40-bench-quant PRIVATE ${PROJECT_SOURCE_DIR}/lib)
  if(M40_CUDA_OVERLAY_DIR)
    target_include_directories(m40-bench-quant BEFORE PRIVATE ${M40_CUDA_OVERLAY_DIR})
  endif()
  target_link_libraries(m40-bench-quant PRIVATE m40_static CUDA::cudart_static CUDA::cublas m)
  target_compile_options(m40-bench-quant PRIVATE -Wall -Wextra $<$<BOOL:${M40_WERROR}>:-Werror>)
endif()
# the batch-1 GEMV v2 (kernels/quant_gemv_v2.cuh gemv_v2_kernel) emulated on
# the host from its own source against a double reference: x staged in passes
# and the forms the GPU tests pass (no GPU needed; bench/quant/gemv_emu.sh v2 and v3)
# They compile their own host program, the same in every configuration: the
# sanitizer build skips them (scripts/test.sh would run them twice, ~5 min).
if(M40_BUILD_TESTS AND UNIX AND NOT M40_SANITIZE)
  enable_testing()
  add_test(NAME quant_gemv_v2_emu COMMAND sh ${PROJECT_SOURCE_DIR}/bench/quant/gemv_emu.sh v2
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(quant_gemv_v2_emu PROPERTIES LABELS cpu TIMEOUT 300)
  add_test(NAME quant_gemv_v3_emu COMMAND sh ${PROJECT_SOURCE_DIR}/bench/quant/gemv_emu.sh v3
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(quant_gemv_v3_emu PROPERTIES LABELS cpu TIMEOUT 300)
endif()
