# m40_sample (issue 16): the CPU reference and the GPU kernel (exits 77
# without a GPU).
set(_s ${CMAKE_CURRENT_LIST_DIR})
m40_add_test(NAME test_sample SOURCES ${_s}/test_sample.c LABELS cpu)
target_link_libraries(test_sample PRIVATE m)
if(M40_HAVE_CUDA)
  m40_add_test(NAME test_sample_gpu SOURCES ${_s}/test_sample_gpu.c LABELS gpu)
  target_link_libraries(test_sample_gpu PRIVATE m)
endif()
