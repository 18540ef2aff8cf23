#include "am/token.h"

extern "C" {
__thread unsigned _gex_am_handler_depth = 0;
}
