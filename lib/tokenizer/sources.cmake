# SentencePiece tokenizer and ChatGLM2 chat layer (plain C, no dependencies).
# Layers, bottom up: util.c (errors, buffers, UTF-8, limits) <- proto.c,
# maps.c, normalize.c <- bpe.c, unigram.c <- tokenizer.c, decode.c <- chatglm.c.
set(M40_TOKENIZER_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/util.c
    ${CMAKE_CURRENT_LIST_DIR}/proto.c
    ${CMAKE_CURRENT_LIST_DIR}/maps.c
    ${CMAKE_CURRENT_LIST_DIR}/normalize.c
    ${CMAKE_CURRENT_LIST_DIR}/bpe.c
    ${CMAKE_CURRENT_LIST_DIR}/unigram.c
    ${CMAKE_CURRENT_LIST_DIR}/tokenizer.c
    ${CMAKE_CURRENT_LIST_DIR}/decode.c
    ${CMAKE_CURRENT_LIST_DIR}/chatglm.c)
# libm40 contains the tokenizer ...
list(APPEND M40_C_SOURCES ${M40_TOKENIZER_SOURCES})
# ... and m40_tokenizer is the tokenizer alone (no CUDA, no libm40 core), for
# programs that only tokenize. Its API is include/m40/tokenizer.h (which uses
# only m40_status from m40.h). Sources are compiled again for it (a second).
add_library(m40_tokenizer STATIC ${M40_TOKENIZER_SOURCES})
target_include_directories(m40_tokenizer
  PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
  PRIVATE ${PROJECT_SOURCE_DIR}/lib)
target_link_libraries(m40_tokenizer PUBLIC m)
set_target_properties(m40_tokenizer PROPERTIES POSITION_INDEPENDENT_CODE ON LINKER_LANGUAGE C)
target_compile_options(m40_tokenizer PRIVATE -Wall -Wextra -Wshadow -Wstrict-prototypes
  $<$<BOOL:${M40_WERROR}>:-Werror>)
if(M40_SANITIZE)
  target_compile_options(m40_tokenizer PUBLIC -fsanitize=address,undefined -fno-sanitize-recover=all
    -fno-omit-frame-pointer)
  target_link_options(m40_tokenizer PUBLIC -fsanitize=address,undefined)
endif()
add_library(m40::m40_tokenizer ALIAS m40_tokenizer)
