// The full-mode half of gasnet_tools.h (what a conduit client gets after
// gasnetex.h): the enum/mask and VIS formatters and the self-check
// diagnostics. This file does not include gasnetex.h (the tools library sits
// below the API layer); its functions take the gasnetex.h types' underlying
// types, which are ABI-identical: gex_DT_t, gex_OP_t and gex_Rank_t are
// uint32_t, gex_TI_t is unsigned int, gex_TM_t a pointer. The bit tables
// below must match gasnetex.h: tests/tools checks every name against it.
#include <pthread.h>

#include <atomic>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "gasnet_tools.h"

namespace gexrt::tools {
namespace {

struct BitName {
  uint64_t bit;
  const char* name;
};

// gasnetex.h's GEX_DT_*.
constexpr BitName kDtNames[] = {
    {1u << 0, "I32"}, {1u << 1, "U32"}, {1u << 2, "I64"},  {1u << 3, "U64"},
    {1u << 4, "FLT"}, {1u << 5, "DBL"}, {1u << 6, "USER"},
};

// gasnetex.h's GEX_OP_*: a non-fetching opcode in bits 0-11, its fetching
// form 12 bits up, then GET, USER, USER_NC.
constexpr BitName kOpNames[] = {
    {1u << 0, "ADD"},   {1u << 1, "MULT"},   {1u << 2, "MIN"},
    {1u << 3, "MAX"},   {1u << 4, "SUB"},    {1u << 5, "INC"},
    {1u << 6, "DEC"},   {1u << 7, "AND"},    {1u << 8, "OR"},
    {1u << 9, "XOR"},   {1u << 10, "SET"},   {1u << 11, "CAS"},
    {1u << 12, "FADD"}, {1u << 13, "FMULT"}, {1u << 14, "FMIN"},
    {1u << 15, "FMAX"}, {1u << 16, "FSUB"},  {1u << 17, "FINC"},
    {1u << 18, "FDEC"}, {1u << 19, "FAND"},  {1u << 20, "FOR"},
    {1u << 21, "FXOR"}, {1u << 22, "SWAP"},  {1u << 23, "FCAS"},
    {1u << 24, "GET"},  {1u << 25, "USER"},  {1u << 26, "USER_NC"},
};

// gasnetex.h's GEX_TI_*.
constexpr BitName kTiNames[] = {
    {1u << 0, "SRCRANK"}, {1u << 1, "ENTRY"}, {1u << 2, "IS_REQ"},
    {1u << 3, "IS_LONG"}, {1u << 4, "EP"},
};

// Writes `text` into buf (if any) and returns its size with the NUL.
size_t Emit(char* buf, const std::string& text) {
  if (buf != nullptr) std::memcpy(buf, text.c_str(), text.size() + 1);
  return text.size() + 1;
}

template <size_t N>
size_t FormatMask(char* buf, uint64_t value, const BitName (&names)[N],
                  const char* prefix) {
  if (value == 0) return Emit(buf, "(empty)");
  uint64_t known = 0;
  for (const BitName& entry : names) known |= entry.bit;
  if ((value & ~known) != 0) return Emit(buf, "(invalid)");
  std::string text;
  for (const BitName& entry : names) {
    if ((value & entry.bit) == 0) continue;
    if (!text.empty()) text += '|';
    text += prefix;
    text += entry.name;
  }
  return Emit(buf, text);
}

// "[a, b, c]" for a list of strides or counts.
template <typename T>
std::string FormatList(const T* list, size_t count) {
  std::string text = "[";
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(list[i]);
  }
  return text + "]";
}

// Room for one "0x" pointer and decimal size with punctuation.
constexpr size_t kEntryChars = 2 * 20 + 8;

}  // namespace
}  // namespace gexrt::tools

using gexrt::tools::Emit;

extern "C" {

size_t gasnett_format_dt(char* buf, uint32_t dt) {
  return gexrt::tools::FormatMask(buf, dt, gexrt::tools::kDtNames, "GEX_DT_");
}

size_t gasnett_format_op(char* buf, uint32_t op) {
  return gexrt::tools::FormatMask(buf, op, gexrt::tools::kOpNames, "GEX_OP_");
}

size_t gasnett_format_ti(char* buf, unsigned int ti) {
  return gexrt::tools::FormatMask(buf, ti, gexrt::tools::kTiNames, "GEX_TI_");
}

size_t gasnett_format_memveclist_bufsz(size_t count) {
  return 64 + count * gexrt::tools::kEntryChars;
}

size_t gasnett_format_memveclist(char* buf, size_t count, const void* list) {
  // gex_Memvec_t: { void *gex_addr; size_t gex_len; }.
  struct Memvec {
    void* addr;
    size_t len;
  };
  const Memvec* entries = static_cast<const Memvec*>(list);
  std::string text = "{";
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) text += ",";
    text += absl::StrFormat("[%p,%u]", entries[i].addr, entries[i].len);
    total += entries[i].len;
  }
  text += absl::StrFormat("} (%u entries, %u bytes)", count, total);
  Emit(buf, text);
  return total;
}

size_t gasnett_format_addrlist_bufsz(size_t count) {
  return 64 + count * gexrt::tools::kEntryChars;
}

size_t gasnett_format_addrlist(char* buf, size_t count, void* const* list,
                               size_t len) {
  std::string text = "{";
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) text += ",";
    text += absl::StrFormat("%p", list[i]);
  }
  const size_t total = count * len;
  text += absl::StrFormat("} (%u entries of %u bytes, %u bytes)", count, len,
                          total);
  Emit(buf, text);
  return total;
}

size_t gasnett_format_putsgets_bufsz(size_t stridelevels) {
  return 256 + 3 * (stridelevels + 1) * 24;
}

size_t gasnett_format_putsgets(char* buf, void* pstats, void* tm, uint32_t rank,
                               void* dstaddr, const ptrdiff_t dststrides[],
                               void* srcaddr, const ptrdiff_t srcstrides[],
                               size_t elemsz, const size_t count[],
                               size_t stridelevels) {
  (void)pstats;
  // The bytes moved: elemsz times every count.
  size_t total = elemsz;
  for (size_t i = 0; i < stridelevels; ++i) total *= count[i];
  std::string text = absl::StrFormat(
      "(%u data bytes) tm=%p rank=%u elemsz=%u stridelevels=%u count=%s\n"
      "dst: addr=%p strides=%s\nsrc: addr=%p strides=%s",
      total, tm, rank, elemsz, stridelevels,
      gexrt::tools::FormatList(count, stridelevels), dstaddr,
      gexrt::tools::FormatList(dststrides, stridelevels), srcaddr,
      gexrt::tools::FormatList(srcstrides, stridelevels));
  Emit(buf, text);
  return total;
}

}  // extern "C"
