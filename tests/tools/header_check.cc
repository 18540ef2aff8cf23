// gasnet_tools.h as C++ (see header_check.inc).
#include "tests/tools/header_check.inc"
