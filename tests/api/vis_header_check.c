/* See vis_header_check.inc, compiled as C. */
#include "tests/api/vis_header_check.inc"
