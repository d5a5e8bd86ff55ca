# m40-doctor (issue 8): checks the machine's NVIDIA stack for an M40.
add_executable(m40-doctor ${CMAKE_CURRENT_LIST_DIR}/m40-doctor.c)
target_link_libraries(m40-doctor PRIVATE m40_static)
target_compile_options(m40-doctor PRIVATE -Wall -Wextra $<$<BOOL:${M40_WERROR}>:-Werror>)
install(TARGETS m40-doctor RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
