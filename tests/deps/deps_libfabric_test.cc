// libfabric links and initialises: fi_getinfo finds the tcp provider, and a
// fabric and a domain open on what it found.

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace {

// The oldest API the conduit is written against; the installed header must
// be at least that.
constexpr uint32_t kApiVersion = FI_VERSION(1, 17);
static_assert(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION) >= kApiVersion,
              "libfabric headers older than 1.17");

TEST(LibfabricTest, RuntimeIsAtLeastTheHeaderVersion) {
  EXPECT_GE(fi_version(), kApiVersion);
}

TEST(LibfabricTest, GetinfoFindsTcpAndOpensIt) {
  fi_info* hints = fi_allocinfo();
  ASSERT_NE(hints, nullptr);
  // fi_freeinfo frees prov_name, so it must come from the heap.
  hints->fabric_attr->prov_name = strdup("tcp");

  fi_info* info = nullptr;
  int rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  ASSERT_EQ(rc, 0) << "fi_getinfo: " << fi_strerror(-rc);
  ASSERT_NE(info, nullptr);

  int found = 0;
  fi_info* core_tcp = nullptr;  // The tcp provider itself, not one over it.
  for (fi_info* cur = info; cur != nullptr; cur = cur->next) {
    std::string prov = cur->fabric_attr->prov_name;
    std::printf("provider %-12s fabric %-16s domain %-6s %s\n", prov.c_str(),
                cur->fabric_attr->name, cur->domain_attr->name,
                fi_tostr(&cur->ep_attr->type, FI_TYPE_EP_TYPE));
    // Core "tcp" or a utility provider layered on it ("tcp;ofi_rxm").
    EXPECT_EQ(prov.rfind("tcp", 0), 0u) << prov;
    if (prov == "tcp" && core_tcp == nullptr) core_tcp = cur;
    ++found;
  }
  EXPECT_GT(found, 0);
  ASSERT_NE(core_tcp, nullptr) << "only utility providers over tcp found";

  // Open what was found: the provider really initialises here.
  fid_fabric* fabric = nullptr;
  rc = fi_fabric(core_tcp->fabric_attr, &fabric, nullptr);
  ASSERT_EQ(rc, 0) << "fi_fabric: " << fi_strerror(-rc);
  fid_domain* domain = nullptr;
  rc = fi_domain(fabric, core_tcp, &domain, nullptr);
  EXPECT_EQ(rc, 0) << "fi_domain: " << fi_strerror(-rc);
  if (domain != nullptr) {
    EXPECT_EQ(fi_close(&domain->fid), 0);
  }
  EXPECT_EQ(fi_close(&fabric->fid), 0);
  fi_freeinfo(info);
}

}  // namespace
