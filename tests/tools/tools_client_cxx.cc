// The tools-only client as C++ (C++20 here; header_check covers C++11 and
// C++17): the same checks as tools_client.c, see tools_client.inc.
#include "tests/tools/tools_client.inc"
