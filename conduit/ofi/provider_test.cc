// The requirement checks on hand-made fi_info records (every refusal the
// conduit can make, whatever providers this machine has), and the
// selection over this machine's real libfabric.
#include "conduit/ofi/provider.h"

#include <rdma/fi_domain.h>
#include <stdlib.h>

#include <string>

#include "gtest/gtest.h"

namespace gexrt::ofi {
namespace {

// A record that meets every requirement of a SEQ client.
InfoPtr Good() {
  InfoPtr i(fi_allocinfo());
  i->ep_attr->type = FI_EP_RDM;
  i->caps = FI_MSG | FI_RMA | FI_MULTI_RECV;
  i->domain_attr->threading = FI_THREAD_DOMAIN;
  i->domain_attr->mr_key_size = 8;
  i->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_SAW;
  return i;
}

std::string Refusal(const fi_info& info, Requirements r = {}) {
  const absl::Status s = CheckProvider(info, r);
  return s.ok() ? "accepted" : std::string(s.message());
}

TEST(CheckProviderTest, AcceptsWhatMeetsTheRequirements) {
  InfoPtr i = Good();
  EXPECT_EQ(Refusal(*i), "accepted");
  // The MAY list.
  i->domain_attr->mr_mode =
      FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ENDPOINT | FI_MR_ALLOCATED;
  i->mode = FI_RX_CQ_DATA | FI_ASYNC_IOV;
  EXPECT_EQ(Refusal(*i), "accepted");
}

TEST(CheckProviderTest, NamesEachMustNotRequire) {
  for (auto [mode, name] :
       {std::pair{FI_CONTEXT, "FI_CONTEXT"},
        std::pair{FI_CONTEXT2, "FI_CONTEXT2"},
        std::pair{FI_MSG_PREFIX, "FI_MSG_PREFIX"},
        std::pair{FI_RESTRICTED_COMP, "FI_RESTRICTED_COMP"}}) {
    InfoPtr i = Good();
    i->mode = mode;
    EXPECT_EQ(Refusal(*i), std::string("requires ") + name);
  }
  InfoPtr i = Good();
  i->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR;
  EXPECT_EQ(Refusal(*i), "requires FI_MR_LOCAL");
}

TEST(CheckProviderTest, NamesEachMissingCapability) {
  InfoPtr i = Good();
  i->caps &= ~FI_MULTI_RECV;
  EXPECT_NE(Refusal(*i).find("lacks FI_MULTI_RECV"), std::string::npos);
  Requirements plain;
  plain.multi_recv = false;
  EXPECT_EQ(Refusal(*i, plain), "accepted");
  i = Good();
  i->caps &= ~FI_RMA;
  EXPECT_EQ(Refusal(*i), "lacks FI_RMA");
  i = Good();
  i->ep_attr->type = FI_EP_MSG;
  EXPECT_EQ(Refusal(*i), "has no FI_EP_RDM endpoint");
}

TEST(CheckProviderTest, NeedsOrderedSends) {
  InfoPtr i = Good();
  i->tx_attr->msg_order = FI_ORDER_SAW;
  EXPECT_NE(Refusal(*i).find("lacks FI_ORDER_SAS"), std::string::npos);
  i->tx_attr->msg_order = FI_ORDER_SAS;
  EXPECT_NE(Refusal(*i).find("lacks FI_ORDER_SAW"), std::string::npos);
}

TEST(CheckProviderTest, ParNeedsThreadSafe) {
  InfoPtr i = Good();
  Requirements par;
  par.thread_safe = true;
  EXPECT_NE(Refusal(*i, par).find("FI_THREAD_SAFE"), std::string::npos);
  i->domain_attr->threading = FI_THREAD_SAFE;
  EXPECT_EQ(Refusal(*i, par), "accepted");
  EXPECT_EQ(Refusal(*i), "accepted");  // serves SEQ too
}

// Over this machine's libfabric (its providers run over loopback only).
class SelectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("FI_TCP_IFACE", "lo", 1);
    setenv("FI_SOCKETS_IFACE", "lo", 1);
  }
};

TEST_F(SelectTest, AnUnknownDeviceListsTheKnownOnes) {
  Settings s;
  s.device = "no-such-nic";
  absl::StatusOr<InfoPtr> info = SelectProvider(s, Requirements{});
  ASSERT_FALSE(info.ok());
  const std::string e(info.status().message());
  EXPECT_NE(e.find("GASNET_OFI_DEVICE=no-such-nic"), std::string::npos) << e;
  EXPECT_NE(e.find("lo"), std::string::npos) << e;
}

TEST_F(SelectTest, FindsARealProviderOverLoopback) {
  absl::StatusOr<InfoPtr> info = SelectProvider(Settings{}, Requirements{});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(CheckProvider(**info, Requirements{}).ok());
}

}  // namespace
}  // namespace gexrt::ofi
