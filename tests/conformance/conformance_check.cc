// See conformance_check.inc, compiled as C++20.
#include "tests/conformance/conformance_check.inc"
