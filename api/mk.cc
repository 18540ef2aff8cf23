// gasnet_mk.h: memory kinds. Host memory is the only kind here: the host
// class gives GEX_MK_HOST, which needs no state; the device classes are
// refused.
#include <string>

#include "absl/strings/str_format.h"
#include "api/runtime.h"
#include "base/fatal.h"
#include "gasnet_mk.h"

extern "C" {

int gex_MK_Create(gex_MK_t* memkind_p, gex_Client_t client,
                  const gex_MK_Create_args_t* args, gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_MK_Create";
  gexrt::api::Runtime& rt = gexrt::api::RuntimeFor(kCall);
  if (memkind_p == nullptr || args == nullptr) {
    return gexrt::api::ReportError(kCall, GASNET_ERR_BAD_ARG,
                                   "NULL memkind_p or args");
  }
  *memkind_p = GEX_MK_INVALID;
  if (client != &rt.client) {
    return gexrt::api::ReportError(kCall, GASNET_ERR_BAD_ARG,
                                   "client is not this process's client");
  }
  if (flags != 0 || args->gex_flags != 0) {
    return gexrt::api::ReportError(
        kCall, GASNET_ERR_BAD_ARG,
        absl::StrFormat("flags %#x and args->gex_flags %#x must be 0", flags,
                        args->gex_flags));
  }
  switch (args->gex_class) {
    case GEX_MK_CLASS_HOST:
      *memkind_p = GEX_MK_HOST;
      return GASNET_OK;
    case GEX_MK_CLASS_CUDA_UVA:
    case GEX_MK_CLASS_HIP:
    case GEX_MK_CLASS_ZE:
      return gexrt::api::ReportError(
          kCall, GASNET_ERR_BAD_ARG,
          absl::StrFormat("memory kind class %d is not available in this "
                          "build (host memory only)",
                          static_cast<int>(args->gex_class)));
  }
  return gexrt::api::ReportError(
      kCall, GASNET_ERR_BAD_ARG,
      absl::StrFormat("unknown memory kind class %d",
                      static_cast<int>(args->gex_class)));
}

void gex_MK_Destroy(gex_MK_t kind, gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_MK_Destroy";
  gexrt::api::RuntimeFor(kCall);
  if (kind != GEX_MK_HOST) {
    gexrt::FatalErrorF("%s: %p is not a memory kind gex_MK_Create made", kCall,
                       static_cast<void*>(kind));
  }
  if (flags != 0) gexrt::FatalErrorF("%s: flags %#x must be 0", kCall, flags);
}

}  // extern "C"
