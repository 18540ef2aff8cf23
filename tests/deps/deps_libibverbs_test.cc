// libibverbs links and runs: the device list comes back (no device at all is
// a valid answer on a machine without RDMA hardware) and every device
// listed opens and answers a query.

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "gtest/gtest.h"

namespace {

TEST(LibibverbsTest, DeviceListIsConsistent) {
  int count = -1;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) {
    // Documented answer when the kernel has no verbs support at all (no
    // /sys/class/infiniband_verbs): no device, so nothing to open.
    int err = errno;
    std::printf("0 verbs device(s): ibv_get_device_list: %s\n",
                std::strerror(err));
    EXPECT_EQ(err, ENOSYS);
    return;
  }
  std::printf("%d verbs device(s)\n", count);
  ASSERT_GE(count, 0);
  for (int i = 0; i < count; ++i) {
    ASSERT_NE(list[i], nullptr) << "list shorter than its count";
    const char* name = ibv_get_device_name(list[i]);
    ASSERT_NE(name, nullptr);
    std::printf("  %s (%s)\n", name, ibv_node_type_str(list[i]->node_type));

    ibv_context* ctx = ibv_open_device(list[i]);
    ASSERT_NE(ctx, nullptr) << name << ": " << std::strerror(errno);
    ibv_device_attr attr = {};
    EXPECT_EQ(ibv_query_device(ctx, &attr), 0) << name;
    EXPECT_GE(attr.phys_port_cnt, 1) << name;
    EXPECT_EQ(ibv_close_device(ctx), 0);
  }
  EXPECT_EQ(list[count], nullptr) << "list not NULL-terminated at its count";
  ibv_free_device_list(list);
}

}  // namespace
