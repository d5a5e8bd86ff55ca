# The CPU reference, one file per op family (lib/ref/<family>.c): every .c
# here is part of the library, so a new family's file needs no line here.
file(GLOB _m40_ref CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
list(APPEND M40_C_SOURCES ${_m40_ref})
