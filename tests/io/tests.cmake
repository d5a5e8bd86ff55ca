m40_add_test(NAME test_safetensors SOURCES tests/io/test_safetensors.c LABELS cpu)
