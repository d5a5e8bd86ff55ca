# Tokenizer tests. Fixtures and goldens come from tests/fixtures/tokenizer/make_fixtures.py.
set(_m40_tok_fix ${PROJECT_SOURCE_DIR}/tests/fixtures/tokenizer)
m40_add_test(NAME tokenizer_golden
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer_golden.c
    LABELS tokenizer
    ARGS ${_m40_tok_fix}/bpe_bf.model ${_m40_tok_fix}/bpe_bf.golden
         ${_m40_tok_fix}/unigram_bf.model ${_m40_tok_fix}/unigram_bf.golden
         ${_m40_tok_fix}/bpe_unk.model ${_m40_tok_fix}/bpe_unk.golden)
m40_add_test(NAME tokenizer_malformed
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer_malformed.c
    LABELS tokenizer
    ARGS ${_m40_tok_fix}/bpe_bf.model ${_m40_tok_fix}/unigram_bf.model ${_m40_tok_fix}/bpe_unk.model)
set_tests_properties(tokenizer_malformed PROPERTIES TIMEOUT 120) # a piece map that fills probes forever
m40_add_test(NAME tokenizer_chatglm
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_chatglm.c
    LABELS tokenizer
    ARGS ${_m40_tok_fix}/bpe_bf.model ${_m40_tok_fix}/chatglm.golden)
# Needs the real model: M40_CHATGLM2_TOKENIZER=/path/tokenizer.model, else skipped (77).
m40_add_test(NAME tokenizer_chatglm2_real
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_chatglm2_real.c
    LABELS tokenizer)
# Issue 15: a model path that never ends is refused quickly, with the limit named.
if(TARGET m40-tokenize)
  add_test(NAME m40_tokenize_dev_zero COMMAND m40-tokenize --model /dev/zero)
  set_tests_properties(m40_tokenize_dev_zero PROPERTIES LABELS tokenizer TIMEOUT 30
                       PASS_REGULAR_EXPRESSION "over the 64 MiB limit")
endif()
