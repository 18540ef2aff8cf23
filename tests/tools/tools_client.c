/* The tools-only client as C11: see tools_client.inc. */
#include "tests/tools/tools_client.inc"
