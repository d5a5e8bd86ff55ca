# The op layer: the registry and one file per op family (lib/ops/<family>.c),
# each exporting the m40__op_<name> entries of M40_OP_TABLE. Every .c here is
# part of the library, so a new family's file needs no line in this list.
file(GLOB _m40_ops CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
list(APPEND M40_C_SOURCES ${_m40_ops})
