# m40-plan: device-memory plans of the built-in models (no GPU needed).
add_executable(m40-plan ${PROJECT_SOURCE_DIR}/tools/m40-plan.c)
target_link_libraries(m40-plan PRIVATE m40_static)
target_compile_options(m40-plan PRIVATE -Wall -Wextra $<$<BOOL:${M40_WERROR}>:-Werror>)
install(TARGETS m40-plan RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
