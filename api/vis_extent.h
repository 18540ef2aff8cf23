// The bytes one side of a strided VIS transfer touches (api/vis.cc): what
// the segment check of gex_VIS_Strided{Put,Get}* is made against.
//
// A strided side is a base address, an element size and, per level k, a
// count c_k and a stride s_k (bytes, any sign, in any order: the levels
// need not be increasing, nor contiguous, nor even distinct). Its elements
// start at base + sum_k i_k * s_k for 0 <= i_k < c_k, each elemsz bytes
// long. Every element lies in [base + lo, base + lo + bytes), where lo sums
// (c_k - 1) * s_k over the negative strides and hi over the positive ones,
// and bytes = hi - lo + elemsz: the extreme elements are reached by taking
// each index at its end that pushes the address down (for lo) or up (for
// hi), and the last one runs elemsz bytes past its start. The bound is
// exact: both extreme elements exist. It depends on the element size the
// caller passed, never on a merged one (levels contiguous on both sides
// fold into a larger element for the copy, but that larger element starts
// at the same addresses only along the folded levels, so adding its size
// to hi overstates the extent by the folded part).
#ifndef GEX_API_VIS_EXTENT_H_
#define GEX_API_VIS_EXTENT_H_

#include <cstddef>
#include <cstdint>

namespace gexrt::api {

struct StridedExtent {
  ptrdiff_t lo = 0;  // Lowest byte, relative to the base address (<= 0).
  size_t bytes = 0;  // From there; 0 when the shape has no element.
};

// The extent of a side with `levels` levels; false when it does not fit in
// the address space (a stride times a count, or their sum, overflows).
// A side with a zero count or a zero elemsz has no element: bytes 0.
inline bool ComputeStridedExtent(size_t elemsz, const size_t* count,
                                 const ptrdiff_t* strides, size_t levels,
                                 StridedExtent* out) {
  *out = StridedExtent{};
  if (elemsz == 0) return true;
  for (size_t k = 0; k < levels; ++k) {
    if (count[k] == 0) return true;
  }
  ptrdiff_t lo = 0;
  ptrdiff_t hi = 0;
  for (size_t k = 0; k < levels; ++k) {
    if (count[k] - 1 > static_cast<size_t>(PTRDIFF_MAX)) return false;
    ptrdiff_t reach;
    if (__builtin_mul_overflow(static_cast<ptrdiff_t>(count[k] - 1), strides[k],
                               &reach)) {
      return false;
    }
    if (__builtin_add_overflow(reach < 0 ? lo : hi, reach,
                               reach < 0 ? &lo : &hi)) {
      return false;
    }
  }
  // hi - lo as an unsigned distance (hi >= 0 >= lo), plus the element.
  const size_t span = static_cast<size_t>(hi) + (0 - static_cast<size_t>(lo));
  if (span < static_cast<size_t>(hi) ||
      __builtin_add_overflow(span, elemsz, &out->bytes)) {
    return false;
  }
  out->lo = lo;
  return true;
}

}  // namespace gexrt::api

#endif  // GEX_API_VIS_EXTENT_H_
