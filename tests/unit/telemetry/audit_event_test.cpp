// Audit records of operators' actions and approvals' events (telemetry/audit_event.hpp).
#include "telemetry/audit_event.hpp"
#include "telemetry/audit_log.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace airlock::telemetry {
namespace {

using namespace std::chrono_literals;

TEST(AuditEvent, AnApprovalWithEveryKeyInOrder) {
  audit_event e;
  e.time = std::chrono::system_clock::time_point(1'700'000'000'123ms);
  e.type = "operator";
  e.action = "approve";
  e.by = "alice";
  e.agent = "coder";
  e.method = "GET";
  e.host = "api.example.test";
  e.port = 443;
  e.path = "/v1/x";
  e.approval_id = 7;
  e.scope = "agent_host";
  e.duration = 3600s;
  e.outcome = "ok";
  e.detail = "approval 7 approved (agent_host)";
  e.client = "127.0.0.1:5000";
  std::string line;
  append_event_line(line, e);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  const auto v = boost::json::parse(line).as_object();
  std::vector<std::string> keys;
  for (const auto& kv : v)
    keys.emplace_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"time", "type", "action", "by", "agent", "method",
                                            "host", "port", "path", "approval_id", "scope",
                                            "duration_s", "outcome", "detail", "client"}));
  EXPECT_EQ(v.at("time").as_string(), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(v.at("port").as_int64(), 443);
  EXPECT_EQ(v.at("approval_id").as_int64(), 7);
  EXPECT_EQ(v.at("duration_s").as_int64(), 3600);
  EXPECT_EQ(v.at("scope").as_string(), "agent_host");
}

TEST(AuditEvent, ScopeAndDurationAreNullWhenTheyDoNotApply) {
  audit_event e;
  e.type = "operator";
  e.action = "stop";
  e.agent = "bad\xff\"agent";
  e.outcome = "ok";
  std::string line;
  append_event_line(line, e);
  const auto v = boost::json::parse(line).as_object();
  EXPECT_TRUE(v.at("scope").is_null());
  EXPECT_TRUE(v.at("duration_s").is_null());
  EXPECT_EQ(v.at("agent").as_string(), "bad\xEF\xBF\xBD\"agent");
}

TEST(AuditEvent, WrittenToTheAuditLogBesideExchanges) {
  char tmpl[] = "/tmp/airlock-audit-event-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::string error;
    auto log = audit_log::open(tmpl, error);
    ASSERT_TRUE(log) << error;
    audit_record r;
    r.agent = "coder";
    r.decision = "allow";
    log->write(r);
    audit_event e;
    e.type = "approval";
    e.action = "held";
    log->write(e);
    log->flush();
    EXPECT_EQ(log->written_records(), 2u);
  }
  std::ifstream in(tmpl);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  std::remove(tmpl);
  EXPECT_FALSE(boost::json::parse(first).as_object().contains("type"));
  EXPECT_EQ(boost::json::parse(second).as_object().at("type").as_string(), "approval");
}

}  // namespace
}  // namespace airlock::telemetry
