/* See conformance_check.inc, compiled as C11. */
#include "tests/conformance/conformance_check.inc"
