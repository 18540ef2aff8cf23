/* The traced conduit client as C11: see trace_client.inc. */
#include "tests/tools/trace_client.inc"
