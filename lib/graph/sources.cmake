# Static graphs, the memory planner, the executor and the built-in model
# descriptions (issue 3). CUDA graph capture only with the CUDA backend.
list(APPEND M40_C_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/graph.c
    ${CMAKE_CURRENT_LIST_DIR}/shapes.c
    ${CMAKE_CURRENT_LIST_DIR}/planner.c
    ${CMAKE_CURRENT_LIST_DIR}/budget.c
    ${CMAKE_CURRENT_LIST_DIR}/exec.c
    ${CMAKE_CURRENT_LIST_DIR}/models.c
    ${CMAKE_CURRENT_LIST_DIR}/model_plan.c
    ${CMAKE_CURRENT_LIST_DIR}/conv_tune.c
    ${CMAKE_CURRENT_LIST_DIR}/check.c)  # non-finite check mode; its kernel: kernels/check.cu
if(M40_HAVE_CUDA)
  list(APPEND M40_C_SOURCES ${CMAKE_CURRENT_LIST_DIR}/capture_cuda.c)
endif()
