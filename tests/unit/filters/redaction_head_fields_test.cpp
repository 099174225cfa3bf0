#include "filters/redaction/head_fields.hpp"

#include <gtest/gtest.h>

namespace {

namespace http = boost::beast::http;
using namespace airlock::filters::redaction;

TEST(RedactionHeadFields, AcceptEncodingNarrowedToDecodableCodings) {
  http::fields head;
  head.insert(http::field::accept_encoding, "br, GZIP;q=0.5");
  head.insert(http::field::accept_encoding, "zstd, deflate, identity;q=0.1");
  narrow_accept_encoding(head);
  EXPECT_EQ(head.count(http::field::accept_encoding), 1u);
  EXPECT_EQ(head[http::field::accept_encoding], "GZIP;q=0.5, deflate, identity;q=0.1");

  http::fields only_br;
  only_br.insert(http::field::accept_encoding, "br, zstd");
  narrow_accept_encoding(only_br);
  EXPECT_EQ(only_br[http::field::accept_encoding], "identity");
}

TEST(RedactionHeadFields, WholeRepresentationDropsEveryRangeField) {
  http::fields head;
  head.insert(http::field::range, "bytes=0-9");
  head.insert("RANGE", "bytes=10-19");
  head.insert(http::field::if_range, "\"v1\"");
  head.insert(http::field::if_none_match, "\"v1\"");
  ask_for_whole_representation(head);
  EXPECT_EQ(head.count(http::field::range), 0u);
  EXPECT_EQ(head.count(http::field::if_range), 0u);
  // Validators that ask for the whole representation or none stay.
  EXPECT_EQ(head[http::field::if_none_match], "\"v1\"");
}

}  // namespace
