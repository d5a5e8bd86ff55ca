# The transformer's ops (issue 16). test_attention: the CPU op (m40_kv_append,
# m40_attention, the ATTENTION node) against a naive implementation in the
# test, and every bad-input status. test_attention_gpu: the kernels against
# the CPU reference (exits 77 without a GPU).
set(_t ${CMAKE_CURRENT_LIST_DIR})
m40_add_test(NAME test_attention SOURCES ${_t}/test_attention.c LABELS cpu)
target_link_libraries(test_attention PRIVATE m)
m40_add_test(NAME test_attention_gpu SOURCES ${_t}/test_attention_gpu.c LABELS gpu)
target_link_libraries(test_attention_gpu PRIVATE m)
