# Command-line tools.
add_executable(m40-tokenize ${CMAKE_CURRENT_LIST_DIR}/m40-tokenize.c)
target_link_libraries(m40-tokenize PRIVATE m40_tokenizer)  # the tokenizer alone, no libm40 core
target_include_directories(m40-tokenize PRIVATE ${PROJECT_SOURCE_DIR}/include)
install(TARGETS m40-tokenize RUNTIME DESTINATION bin)
