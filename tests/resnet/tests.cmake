# The library's ResNet builder on the reduced-ResNet fixture (no image
# libraries needed), and the example's image decoding.
m40_add_test(NAME test_resnet SOURCES tests/resnet/test_resnet.c LABELS cpu)
if(M40_HAVE_CUDA)
  add_test(NAME test_gpu_resnet COMMAND test_resnet --gpu WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(test_gpu_resnet PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
endif()
if(TARGET m40_resnet_example)
  m40_add_test(NAME test_image SOURCES tests/resnet/test_image.c LABELS cpu)
  target_link_libraries(test_image PRIVATE m40_resnet_example)
endif()
