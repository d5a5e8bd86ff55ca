# SentencePiece tokenizer and ChatGLM2 chat layer (plain C, no dependencies).
list(APPEND M40_C_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/proto.c
    ${CMAKE_CURRENT_LIST_DIR}/maps.c
    ${CMAKE_CURRENT_LIST_DIR}/normalize.c
    ${CMAKE_CURRENT_LIST_DIR}/bpe.c
    ${CMAKE_CURRENT_LIST_DIR}/unigram.c
    ${CMAKE_CURRENT_LIST_DIR}/tokenizer.c
    ${CMAKE_CURRENT_LIST_DIR}/decode.c
    ${CMAKE_CURRENT_LIST_DIR}/chatglm.c)
