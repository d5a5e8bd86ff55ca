# Communicators and the ALLREDUCE node (m40/comm.h): ranks in threads on CPU
# contexts; --gpu: GPU contexts on one device through the host backend.
m40_add_test(NAME test_comm SOURCES tests/comm/test_comm.c LABELS cpu)
target_link_libraries(test_comm PRIVATE Threads::Threads)
if(M40_HAVE_CUDA)
  add_test(NAME test_gpu_comm COMMAND test_comm --gpu WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(test_gpu_comm PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
endif()
