// Fuzz target for every GASNET_* value parser.
//
// The first input byte picks the parser, the rest is the value text. Besides
// "never crashes", it checks properties any accepted value must have: a
// parsed integer lies in the requested range, and node lists, port filters
// and absolute memory amounts survive a render-and-reparse round trip.
//
// Built two ways: with --config=fuzz as a libFuzzer binary (clang), and in
// the normal test suite linked with //base/testing:fuzz_replay_main, which
// replays the seed corpus and deterministic mutations of it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/env/parse.h"

namespace gexrt::env {
namespace {

void Check(bool ok, const char* property, std::string_view input) {
  if (ok) return;
  std::fprintf(stderr, "parse fuzzer: property violated: %s (input \"%.*s\")\n",
               property, static_cast<int>(input.size()), input.data());
  std::abort();
}

void FuzzOne(uint8_t selector, std::string_view text) {
  switch (selector % 8) {
    case 0:
      (void)ParseBool(text);
      break;
    case 1: {
      const int64_t min = -1000;
      const int64_t max = 1 << 20;
      absl::StatusOr<int64_t> v = ParseInt(text, min, max);
      if (v.ok()) Check(*v >= min && *v <= max, "int in range", text);
      // GASNet-EX's reading agrees with the exact one where that accepts.
      absl::StatusOr<Leading<int64_t>> lead = ParseLeadingInt(text, min, max);
      if (lead.ok()) {
        Check(lead->value >= min && lead->value <= max, "leading in range",
              text);
      }
      if (v.ok()) {
        Check(lead.ok() && lead->value == *v && lead->ignored.empty(),
              "leading int agrees with exact", text);
      }
      break;
    }
    case 2:
      (void)ParseDecimal(text);
      break;
    case 3: {
      for (SizeUnit unit : {SizeUnit::kBytes, SizeUnit::kKiB, SizeUnit::kMiB}) {
        absl::StatusOr<uint64_t> v = ParseSize(text, unit);
        absl::StatusOr<Leading<uint64_t>> lead = ParseLeadingSize(text, unit);
        if (v.ok()) {
          Check(lead.ok() && lead->value == *v && lead->ignored.empty(),
                "leading size agrees with exact", text);
        }
        if (v.ok() && *v != 0) {
          // The canonical rendering reads back as the same number of bytes.
          absl::StatusOr<uint64_t> again = ParseSize(
              MemoryAmount::Absolute(*v).ToString(), SizeUnit::kBytes);
          Check(again.ok() && *again == *v, "size round trip", text);
        }
      }
      break;
    }
    case 4: {
      absl::StatusOr<MemoryAmount> v = ParseMemoryAmount(text, SizeUnit::kMiB);
      if (v.ok() && v->is_fraction) {
        Check(v->fraction >= 0 && v->fraction < 1, "fraction in [0,1)", text);
      } else if (v.ok() && v->bytes != 0) {
        absl::StatusOr<MemoryAmount> again =
            ParseMemoryAmount(v->ToString(), SizeUnit::kBytes);
        Check(again.ok() && *again == *v, "memory round trip", text);
      }
      break;
    }
    case 5: {
      absl::StatusOr<NodeList> v = ParseNodeList(text);
      if (v.ok()) {
        absl::StatusOr<NodeList> again = ParseNodeList(v->ToString());
        Check(again.ok() && *again == *v, "node list round trip", text);
        for (const auto& [lo, hi] : v->ranges()) {
          Check(lo <= hi && v->Contains(lo) && v->Contains(hi),
                "node list ranges", text);
        }
      }
      break;
    }
    case 6: {
      absl::StatusOr<std::vector<PortSpec>> v = ParsePortFilter(text);
      if (v.ok()) {
        absl::StatusOr<std::vector<PortSpec>> again =
            ParsePortFilter(PortFilterToString(*v));
        Check(again.ok() && *again == *v, "port filter round trip", text);
      }
      break;
    }
    case 7:
      (void)ParseTopologyLevel(text);
      break;
  }
}

}  // namespace
}  // namespace gexrt::env

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  gexrt::env::FuzzOne(
      data[0],
      std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  return 0;
}
