# The ops (issue 14): one file per op family, each exporting its table
# entries (rule, workspace, CPU and GPU runs), and the registry that maps
# m40_op to them. Eager entry points, the planner and the executor all go
# through lib/ops/registry.c. GPU runs are compiled only with M40_HAVE_CUDA.
list(APPEND M40_C_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/registry.c
  ${CMAKE_CURRENT_LIST_DIR}/elementwise.c
  ${CMAKE_CURRENT_LIST_DIR}/softmax.c
  ${CMAKE_CURRENT_LIST_DIR}/matmul.c
  ${CMAKE_CURRENT_LIST_DIR}/quant_linear.c
  ${CMAKE_CURRENT_LIST_DIR}/conv.c
  ${CMAKE_CURRENT_LIST_DIR}/pool.c
  ${CMAKE_CURRENT_LIST_DIR}/planned.c)
