# m40-bench (issue 8): timed workloads with baselines, spread and telemetry.
# Helpers: lib/bench (statistics, JSON, timers; in the library),
# tools/bench/harness.c (measure, results), tools/bench/nn.c (conv, resnet50
# workloads) and tools/bench/sampler.c (the NVML sampler thread).
find_package(Threads REQUIRED)
add_executable(m40-bench ${CMAKE_CURRENT_LIST_DIR}/m40-bench.c
               ${CMAKE_CURRENT_LIST_DIR}/bench/harness.c ${CMAKE_CURRENT_LIST_DIR}/bench/nn.c
               ${CMAKE_CURRENT_LIST_DIR}/bench/sampler.c ${CMAKE_CURRENT_LIST_DIR}/bench/attention.c
               ${CMAKE_CURRENT_LIST_DIR}/bench/norm.c ${CMAKE_CURRENT_LIST_DIR}/bench/sample.c
               ${CMAKE_CURRENT_LIST_DIR}/bench/chatglm2.c)
target_include_directories(m40-bench PRIVATE ${PROJECT_SOURCE_DIR}/lib ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(m40-bench PRIVATE m40_static Threads::Threads m)
target_compile_options(m40-bench PRIVATE -Wall -Wextra $<$<BOOL:${M40_WERROR}>:-Werror>)
install(TARGETS m40-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET m40_resnet_example)
  target_link_libraries(m40-bench PRIVATE m40_resnet_example)
  target_compile_definitions(m40-bench PRIVATE M40B_HAVE_RESNET)
endif()
