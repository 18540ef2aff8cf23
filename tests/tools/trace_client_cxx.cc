// The traced conduit client as C++: see trace_client.inc.
#include "tests/tools/trace_client.inc"
