// `audit.format: ocsf` (telemetry/ocsf_format.hpp): the class, activity and type of each kind
// of record, the verdict attributes, and hostile text kept one valid line.
#include "telemetry/ocsf_format.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace airlock::telemetry {
namespace {

using namespace std::chrono_literals;

boost::json::object parse_line(const std::string& line) {
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  return boost::json::parse(line).as_object();
}

TEST(OcsfFormat, AnHttpExchangeIsHttpActivity) {
  audit_record r;
  r.time = std::chrono::system_clock::time_point(1'700'000'000'123ms);
  r.agent = "coder";
  r.method = "POST";
  r.scheme = "https";
  r.host = "api.example.test";
  r.port = 443;
  r.path = "/v1/x";
  r.rule = "api";
  r.decision = "allow";
  r.reason = "ok";
  r.status = 201;
  r.bytes_in = 10;
  r.bytes_out = 20;
  r.duration = 2500us;
  r.client = "10.0.0.2:5000";
  r.upstream = "[2001:db8::1]:443";
  std::string line;
  append_ocsf_line(line, r);
  const auto e = parse_line(line);
  EXPECT_EQ(e.at("class_uid").as_int64(), 4002);
  EXPECT_EQ(e.at("category_uid").as_int64(), 4);
  EXPECT_EQ(e.at("activity_id").as_int64(), 6);
  EXPECT_EQ(e.at("type_uid").as_int64(), 400206);
  EXPECT_EQ(e.at("time").as_int64(), 1'700'000'000'123);
  EXPECT_EQ(e.at("duration").as_int64(), 2);
  EXPECT_EQ(e.at("action").as_string(), "Allowed");
  EXPECT_EQ(e.at("metadata").at("version").as_string(), "1.1.0");
  EXPECT_EQ(e.at("src_endpoint").at("ip").as_string(), "10.0.0.2");
  EXPECT_EQ(e.at("src_endpoint").at("port").as_int64(), 5000);
  EXPECT_EQ(e.at("dst_endpoint").at("ip").as_string(), "2001:db8::1");
  EXPECT_EQ(e.at("traffic").at("bytes_out").as_int64(), 10);  // from the client
  EXPECT_EQ(e.at("traffic").at("bytes_in").as_int64(), 20);
  EXPECT_EQ(e.at("http_request").at("url").at("path").as_string(), "/v1/x");
  EXPECT_EQ(e.at("http_response").at("code").as_int64(), 201);
  EXPECT_EQ(e.at("unmapped").at("agent").as_string(), "coder");
}

TEST(OcsfFormat, UnknownMethodsAreOtherAndDenialsBlocked) {
  audit_record r;
  r.method = "PATCH";
  r.decision = "deny";
  r.reason = "host_denied";
  r.path = "/\xff\"x";
  std::string line;
  append_ocsf_line(line, r);
  const auto e = parse_line(line);
  EXPECT_EQ(e.at("activity_id").as_int64(), 99);
  EXPECT_EQ(e.at("activity_name").as_string(), "PATCH");
  EXPECT_EQ(e.at("type_uid").as_int64(), 400299);
  EXPECT_EQ(e.at("action_id").as_int64(), 2);
  EXPECT_EQ(e.at("disposition").as_string(), "Blocked");
  EXPECT_EQ(e.at("status_code").as_string(), "host_denied");
  EXPECT_EQ(e.at("src_endpoint").at("name").as_string(), "unknown");
}

TEST(OcsfFormat, ATunnelIsNetworkActivity) {
  audit_record r;
  r.method = "CONNECT";
  r.scheme = "connect";
  r.decision = "allow";
  std::string line;
  append_ocsf_line(line, r);
  auto e = parse_line(line);
  EXPECT_EQ(e.at("class_uid").as_int64(), 4001);
  EXPECT_EQ(e.at("activity_id").as_int64(), 2);
  EXPECT_FALSE(e.contains("http_request"));
  r.decision = "deny";
  line.clear();
  append_ocsf_line(line, r);
  e = parse_line(line);
  EXPECT_EQ(e.at("type_uid").as_int64(), 400105);
}

TEST(OcsfFormat, OperatorsAndApprovalsAreApiActivity) {
  audit_event ev;
  ev.type = "operator";
  ev.action = "approve";
  ev.by = "alice";
  ev.client = "127.0.0.1:4000";
  ev.scope = "agent_host";
  ev.duration = 600s;
  ev.outcome = "ok";
  std::string line;
  append_ocsf_line(line, ev);
  auto e = parse_line(line);
  EXPECT_EQ(e.at("class_uid").as_int64(), 6003);
  EXPECT_EQ(e.at("category_uid").as_int64(), 6);
  EXPECT_EQ(e.at("type_uid").as_int64(), 600303);
  EXPECT_EQ(e.at("actor").at("user").at("name").as_string(), "alice");
  EXPECT_EQ(e.at("api").at("operation").as_string(), "approve");
  EXPECT_EQ(e.at("unmapped").at("duration_s").as_int64(), 600);
  EXPECT_TRUE(e.at("metadata").at("profiles").as_array().empty());
  ev.type = "approval";
  ev.action = "held";
  ev.agent = "coder";
  ev.outcome = "pending";
  line.clear();
  append_ocsf_line(line, ev);
  e = parse_line(line);
  EXPECT_EQ(e.at("activity_id").as_int64(), 1);
  EXPECT_EQ(e.at("actor").at("user").at("name").as_string(), "coder");
  EXPECT_EQ(e.at("src_endpoint").at("name").as_string(), "airlock");
}

}  // namespace
}  // namespace airlock::telemetry
