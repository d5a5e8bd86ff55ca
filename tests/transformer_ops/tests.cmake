# Issue 16, the small transformer ops (RMSNorm, RoPE, SwiGLU, embedding,
# TAKE_LAST): the CPU ops against formulas written in the test, bad inputs
# and graph nodes; on a GPU every op against the CPU (exits 77 without one).
m40_add_test(NAME test_transformer_ops SOURCES tests/transformer_ops/test_transformer_ops.c
             LABELS cpu)
target_link_libraries(test_transformer_ops PRIVATE m)
if(M40_HAVE_CUDA)
  m40_add_test(NAME test_transformer_ops_gpu
               SOURCES tests/transformer_ops/test_transformer_ops_gpu.c LABELS gpu)
  target_link_libraries(test_transformer_ops_gpu PRIVATE m)
endif()
