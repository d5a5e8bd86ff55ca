# Long runs (issue 15): bench/soak/soak.c (+ soak_glm.c) -> m40-soak. The
# library's ResNet-50 graph for many batches, or ChatGLM2 for many decode
# steps, sampling device memory, host RSS and descriptors. H200:
# scripts/h200-soak.sh; CI: a few CPU units (tests/fault/tests.cmake).
add_executable(m40-soak ${PROJECT_SOURCE_DIR}/bench/soak/soak.c ${PROJECT_SOURCE_DIR}/bench/soak/soak_glm.c)
target_include_directories(m40-soak PRIVATE ${PROJECT_SOURCE_DIR}/lib)
target_link_libraries(m40-soak PRIVATE m40_static m)
target_compile_options(m40-soak PRIVATE -Wall -Wextra $<$<BOOL:${M40_WERROR}>:-Werror>)
