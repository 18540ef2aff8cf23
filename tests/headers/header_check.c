/* See header_checks.inc: the check compiled as C. */
#include "tests/headers/header_checks.inc"
