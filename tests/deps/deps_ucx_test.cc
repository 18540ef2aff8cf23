// UCX links and initialises: a UCP context and worker come up, the worker
// has an address, and everything tears down cleanly.

#include <ucp/api/ucp.h>

#include <cstdio>

#include "gtest/gtest.h"

namespace {

TEST(UcxTest, ContextWorkerAndAddress) {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  std::printf("UCX %u.%u.%u (%s)\n", major, minor, release,
              ucp_get_version_string());
  EXPECT_EQ(major, static_cast<unsigned>(UCP_API_MAJOR));
  EXPECT_GE(minor, static_cast<unsigned>(UCP_API_MINOR));

  ucp_config_t* config = nullptr;
  ASSERT_EQ(ucp_config_read(nullptr, nullptr, &config), UCS_OK);

  ucp_params_t params = {};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_RMA;
  ucp_context_h context = nullptr;
  ucs_status_t status = ucp_init(&params, config, &context);
  ucp_config_release(config);
  ASSERT_EQ(status, UCS_OK) << ucs_status_string(status);

  ucp_worker_params_t wparams = {};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h worker = nullptr;
  status = ucp_worker_create(context, &wparams, &worker);
  ASSERT_EQ(status, UCS_OK) << ucs_status_string(status);

  ucp_worker_attr_t attr = {};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
  status = ucp_worker_query(worker, &attr);
  ASSERT_EQ(status, UCS_OK) << ucs_status_string(status);
  EXPECT_NE(attr.address, nullptr);
  EXPECT_GT(attr.address_length, 0u);
  std::printf("worker address: %zu bytes\n", attr.address_length);
  ucp_worker_release_address(worker, attr.address);

  // Nothing is pending, so progress has nothing to do.
  EXPECT_EQ(ucp_worker_progress(worker), 0u);

  ucp_worker_destroy(worker);
  ucp_cleanup(context);
}

}  // namespace
