# Long runs (issue 15): bench/soak/soak.c -> m40-soak. The library's ResNet-50
# graph (m40_resnet50_graph) for many batches, sampling device memory, host RSS
# and descriptors. H200: scripts/h200-soak.sh; CI: a few CPU batches
# (tests/fault/tests.cmake).
add_executable(m40-soak ${PROJECT_SOURCE_DIR}/bench/soak/soak.c)
target_include_directories(m40-soak PRIVATE ${PROJECT_SOURCE_DIR}/lib)
target_link_libraries(m40-soak PRIVATE m40_static m)
target_compile_options(m40-soak PRIVATE -Wall -Wextra $<$<BOOL:${M40_WERROR}>:-Werror>)
