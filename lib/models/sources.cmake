# Model builders (include/m40/models.h): each model's graph declared once,
# planned without weights, run with them.
list(APPEND M40_C_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/build.c
    ${CMAKE_CURRENT_LIST_DIR}/resnet50.c
    ${CMAKE_CURRENT_LIST_DIR}/chatglm2.c)
