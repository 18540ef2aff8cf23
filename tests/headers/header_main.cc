/* See header_main.inc, compiled as C++. */
#include "tests/headers/header_main.inc"
