// <gex/gex.hpp>: the C++ API of gex, a header-only layer over <gasnetex.h>.
//
//   gex/types.hpp   Rank, Flags, Error
//   gex/event.hpp   Event, Leaf, ec, wait_all/wait_some/test_all/test_some
//   gex/client.hpp  Client, Endpoint, Team, Segment, poll, exit_job
//   gex/rma.hpp     put/get (blocking, _nb, _nbi, _val), lc, nbi_wait,
//                   AccessRegion
//   gex/am.hpp      Token, typed handlers, request_*/reply_*
//
// Depend on //api/cpp:gex_cpp and on a conduit target
// (//conduit/smp:gasnet_smp_seq or _par). See api/cpp/README.md.
#ifndef GEX_CPP_GEX_HPP_
#define GEX_CPP_GEX_HPP_

#include "gex/am.hpp"
#include "gex/client.hpp"
#include "gex/event.hpp"
#include "gex/rma.hpp"
#include "gex/types.hpp"

#endif  // GEX_CPP_GEX_HPP_
