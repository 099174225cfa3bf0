#pragma once
// The fixture the minter's, the leaf cache's and the handshake tests share: a CA made in a
// temporary directory and a leaf minter on it.

#include "tls/ca.hpp"
#include "tls/leaf_minter.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "test_util.hpp"

namespace airlock::tls::test {

class MinterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = make_ca(dir_.path());
    ASSERT_TRUE(ca_);
    std::string error;
    minter_ = leaf_minter::create(ca_, error);
    ASSERT_TRUE(minter_) << error;
  }

  std::shared_ptr<const leaf_certificate> mint(std::string_view host) {
    std::string error;
    auto leaf = minter_->mint(host, error);
    EXPECT_TRUE(leaf) << error;
    return leaf;
  }

  temp_dir dir_;
  std::shared_ptr<const certificate_authority> ca_;
  std::shared_ptr<const leaf_minter> minter_;
};

}  // namespace airlock::tls::test
