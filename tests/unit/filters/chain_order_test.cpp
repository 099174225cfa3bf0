#include "filters/chain.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

// The chain's own rules, with filters made for the test: order, refusals, report mode applied
// once, waits and resumption, the response path in reverse, body transforms piped, on_end once.
namespace airlock::filters {
namespace {

struct script {
  std::vector<std::string> calls;
};

// A filter whose head verdict, body use and transform are given; it logs every hook call.
class scripted final : public filter {
 public:
  scripted(script& s, std::string name, verdict head, body_use resp = body_use::none,
           std::string suffix = {})
      : s_(s),
        name_(std::move(name)),
        head_(std::move(head)),
        resp_(resp),
        suffix_(std::move(suffix)) {}
  verdict on_request_head(exchange&) override {
    s_.calls.push_back(name_ + ".head");
    return head_;
  }
  verdict on_forward(exchange&) override {
    s_.calls.push_back(name_ + ".forward");
    return verdict::next();
  }
  verdict on_response_head(exchange&) override {
    s_.calls.push_back(name_ + ".response");
    return verdict::next();
  }
  body_use response_body_use(const exchange&) const override { return resp_; }
  verdict on_response_body(exchange&, body_chunk& c) override {
    s_.calls.push_back(name_ + ".body");
    if (resp_ == body_use::transform) {
      c.out->append(c.data);
      if (!c.data.empty()) c.out->append(suffix_);
    }
    return verdict::next();
  }
  void on_end(exchange&) override { s_.calls.push_back(name_ + ".end"); }

 private:
  script& s_;
  std::string name_;
  verdict head_;
  body_use resp_;
  std::string suffix_;
};

class scripted_factory final : public filter_factory {
 public:
  scripted_factory(script& s, std::string name, verdict head, body_use resp = body_use::none,
                   std::string suffix = {})
      : s_(s), name_(std::move(name)), head_(std::move(head)), resp_(resp), suffix_(suffix) {}
  filter* create(const exchange&, std::pmr::memory_resource& arena) const override {
    return make<scripted>(arena, s_, name_, head_, resp_, suffix_);
  }

 private:
  script& s_;
  std::string name_;
  verdict head_;
  body_use resp_;
  std::string suffix_;
};

// A pending outcome the test completes by hand.
class manual_pending final : public pending {
 public:
  void start(std::function<void(verdict)> done) override { done_ = std::move(done); }
  void cancel() noexcept override { cancelled = true; }
  void complete(verdict v) { done_(std::move(v)); }
  bool cancelled = false;

 private:
  std::function<void(verdict)> done_;
};

using factory_list = std::vector<std::unique_ptr<filter_factory>>;

TEST(Chain, HeadHooksRunInOrderAndStopAtTheFirstRefusal) {
  script s;
  factory_list f;
  f.push_back(std::make_unique<scripted_factory>(s, "a", verdict::next()));
  f.push_back(std::make_unique<scripted_factory>(
      s, "b", verdict::refuse(core::errc::host_denied, "no rule")));
  f.push_back(std::make_unique<scripted_factory>(s, "c", verdict::next()));
  exchange ex;
  {
    chain c(f, ex);
    auto v = c.request_head();
    EXPECT_TRUE(v.refused());
    EXPECT_EQ(ex.record.reason, core::errc::host_denied);
    EXPECT_EQ(ex.record.detail, "no rule");
    EXPECT_EQ(ex.record.decision(), "deny");
  }
  EXPECT_EQ(s.calls, (std::vector<std::string>{"a.head", "b.head", "a.end", "b.end", "c.end"}));
}

TEST(Chain, ReportModeLetsViolationsThroughButNotPlainRefusals) {
  script s;
  factory_list f;
  f.push_back(std::make_unique<scripted_factory>(
      s, "check", verdict::violation(core::errc::query_denied, "query per_page")));
  f.push_back(std::make_unique<scripted_factory>(
      s, "guard", verdict::refuse(core::errc::placeholder_refused, "placeholder")));
  exchange ex;
  ex.report_mode = true;
  chain c(f, ex);
  auto v = c.request_head();
  // The violation was reported and the chain went on; the plain refusal holds.
  EXPECT_TRUE(v.refused());
  EXPECT_EQ(ex.record.reason, core::errc::placeholder_refused);
  EXPECT_EQ(s.calls, (std::vector<std::string>{"check.head", "guard.head"}));

  script s2;
  factory_list f2;
  f2.push_back(std::make_unique<scripted_factory>(
      s2, "check", verdict::violation(core::errc::query_denied, "query per_page")));
  exchange ex2;
  ex2.report_mode = true;
  chain c2(f2, ex2);
  EXPECT_TRUE(c2.request_head().passes());
  EXPECT_EQ(ex2.record.decision(), "report");
  EXPECT_EQ(ex2.record.reason, core::errc::query_denied);

  // Without report mode the same violation refuses, with its Retry-After carried over.
  script s3;
  factory_list f3;
  auto limited = verdict::violation(core::errc::rate_limited, "rule r requests_per_second=1");
  limited.retry_after = 3;
  f3.push_back(std::make_unique<scripted_factory>(s3, "rate", limited));
  exchange ex3;
  chain c3(f3, ex3);
  EXPECT_TRUE(c3.request_head().refused());
  EXPECT_EQ(ex3.record.decision(), "deny");
  EXPECT_EQ(ex3.record.retry_after, 3u);
}

TEST(Chain, AWaitStopsTheChainAndResumeCarriesOnAfterTheWaitingFilter) {
  script s;
  auto p = std::make_shared<manual_pending>();
  factory_list f;
  f.push_back(std::make_unique<scripted_factory>(s, "a", verdict::next()));
  f.push_back(std::make_unique<scripted_factory>(s, "shared_limit", verdict::wait(p)));
  f.push_back(std::make_unique<scripted_factory>(s, "c", verdict::next()));
  exchange ex;
  chain c(f, ex);
  auto v = c.request_head();
  ASSERT_TRUE(v.waits());
  EXPECT_EQ(v.waiting, p);
  EXPECT_EQ(s.calls, (std::vector<std::string>{"a.head", "shared_limit.head"}));
  // The outcome stands for the waiting filter's verdict; the next filter runs, not it again.
  EXPECT_TRUE(c.resume(verdict::next()).passes());
  EXPECT_EQ(s.calls.back(), "c.head");
  EXPECT_EQ(ex.record.reason, core::errc::ok);
}

TEST(Chain, AWaitThatEndsInARefusalIsRecordedAndAnotherWaitFailsClosed) {
  script s;
  auto p = std::make_shared<manual_pending>();
  factory_list f;
  f.push_back(std::make_unique<scripted_factory>(s, "approval", verdict::wait(p)));
  f.push_back(std::make_unique<scripted_factory>(s, "c", verdict::next()));
  exchange ex;
  chain c(f, ex);
  ASSERT_TRUE(c.request_head().waits());
  auto v = c.resume(verdict::refuse(core::errc::host_denied, "refused by an operator"));
  EXPECT_TRUE(v.refused());
  EXPECT_EQ(ex.record.detail, "refused by an operator");
  EXPECT_EQ(s.calls, (std::vector<std::string>{"approval.head"}));

  script s2;
  factory_list f2;
  f2.push_back(std::make_unique<scripted_factory>(s2, "w", verdict::wait(p)));
  exchange ex2;
  chain c2(f2, ex2);
  ASSERT_TRUE(c2.request_head().waits());
  EXPECT_TRUE(c2.resume(verdict::wait(p)).refused());
  EXPECT_EQ(ex2.record.reason, core::errc::internal_error);
}

TEST(Chain, ResponseHooksRunInReverseAndTransformsArePiped) {
  script s;
  factory_list f;
  f.push_back(std::make_unique<scripted_factory>(s, "outer", verdict::next(), body_use::transform,
                                                 "[outer]"));
  f.push_back(std::make_unique<scripted_factory>(s, "watch", verdict::next(), body_use::observe));
  f.push_back(std::make_unique<scripted_factory>(s, "inner", verdict::next(), body_use::transform,
                                                 "[inner]"));
  exchange ex;
  chain c(f, ex);
  ASSERT_TRUE(c.request_head().passes());
  ASSERT_TRUE(c.forward().passes());
  ASSERT_TRUE(c.response_head().passes());
  EXPECT_EQ(c.response_body_use(), body_use::transform);
  std::string out;
  bool enough = false;
  ASSERT_TRUE(c.response_body("piece", false, out, enough).passes());
  // The filter nearest the upstream (the last one) sees the body first.
  EXPECT_EQ(out, "piece[inner][outer]");
  EXPECT_FALSE(enough);
  const std::vector<std::string> tail(s.calls.end() - 6, s.calls.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"inner.response", "watch.response", "outer.response",
                                            "inner.body", "watch.body", "outer.body"}));
}

TEST(Chain, EndRunsOnceAndAFailureIsAnUpstreamError) {
  script s;
  factory_list f;
  f.push_back(std::make_unique<scripted_factory>(s, "a", verdict::next()));
  exchange ex;
  {
    chain c(f, ex);
    c.end();
    c.end();
  }
  EXPECT_EQ(std::count(s.calls.begin(), s.calls.end(), "a.end"), 1);
  exchange_record r;
  r.failed_upstream(core::errc::unredactable_response);
  EXPECT_EQ(r.decision(), "error");
}

// Logs on_answered and on_end, and refuses its head when told to.
class answer_watch final : public filter {
 public:
  answer_watch(script& s, bool refuse) : s_(s), refuse_(refuse) {}
  verdict on_request_head(exchange&) override {
    return refuse_ ? verdict::refuse(core::errc::host_denied, "no") : verdict::next();
  }
  void on_answered(exchange&) override { s_.calls.push_back("answered"); }
  void on_end(exchange&) override { s_.calls.push_back("end"); }

 private:
  script& s_;
  bool refuse_;
};

class answer_watch_factory final : public filter_factory {
 public:
  answer_watch_factory(script& s, bool refuse) : s_(s), refuse_(refuse) {}
  filter* create(const exchange&, std::pmr::memory_resource& arena) const override {
    return make<answer_watch>(arena, s_, refuse_);
  }

 private:
  script& s_;
  bool refuse_;
};

TEST(Chain, AnsweredRunsOnceBeforeTheEndAndAtTheEndWhenNobodyCalledIt) {
  for (const bool call_it : {true, false}) {
    script s;
    factory_list f;
    f.push_back(std::make_unique<answer_watch_factory>(s, false));
    exchange ex;
    {
      chain c(f, ex);
      ASSERT_TRUE(c.request_head().passes());
      if (call_it) {
        c.answered();
        c.answered();
        EXPECT_EQ(s.calls, (std::vector<std::string>{"answered"}));
      }
      EXPECT_EQ(s.calls.size(), call_it ? 1u : 0u);
    }
    EXPECT_EQ(s.calls, (std::vector<std::string>{"answered", "end"})) << call_it;
  }
}

TEST(Chain, ARefusalTheChainRecordsIsAnsweredAtOnceAReportedOneIsNot) {
  script s;
  factory_list f;
  f.push_back(std::make_unique<answer_watch_factory>(s, true));
  exchange ex;
  chain c(f, ex);
  EXPECT_TRUE(c.request_head().refused());
  EXPECT_EQ(s.calls, (std::vector<std::string>{"answered"}));

  script reported;
  factory_list g;
  g.push_back(std::make_unique<scripted_factory>(
      reported, "r", verdict::violation(core::errc::rate_limited, "over")));
  g.push_back(std::make_unique<answer_watch_factory>(reported, false));
  exchange rex;
  rex.report_mode = true;
  chain rc(g, rex);
  EXPECT_TRUE(rc.request_head().passes());
  EXPECT_EQ(reported.calls, (std::vector<std::string>{"r.head"}));
}

// Stands for DLP: rewrites what the record repeats, and logs when it is asked to.
class scrubbing final : public filter {
 public:
  explicit scrubbing(script& s) : s_(s) {}
  void scrub_record(exchange& ex) override {
    s_.calls.push_back("scrub:" + ex.record.detail);
    if (auto at = ex.record.detail.find("SECRET"); at != std::string::npos)
      ex.record.detail.replace(at, 6, "[cut]");
  }

 private:
  script& s_;
};

class scrubbing_factory final : public filter_factory {
 public:
  explicit scrubbing_factory(script& s) : s_(s) {}
  filter* create(const exchange&, std::pmr::memory_resource& arena) const override {
    return make<scrubbing>(arena, s_);
  }

 private:
  script& s_;
};

TEST(Chain, EveryFilterScrubsARefusalBeforeItIsAnsweredAndTheRecordAtTheEnd) {
  script s;
  factory_list f;
  // The refusal comes before the scrubbing filter, whose head hook therefore never runs.
  f.push_back(std::make_unique<scripted_factory>(
      s, "check", verdict::refuse(core::errc::query_denied, "parameter 'SECRET'")));
  f.push_back(std::make_unique<scrubbing_factory>(s));
  exchange ex;
  {
    chain c(f, ex);
    auto v = c.request_head();
    EXPECT_TRUE(v.refused());
    // The session answers from the record, and the verdict says the same.
    EXPECT_EQ(ex.record.detail, "parameter '[cut]'");
    EXPECT_EQ(v.detail, "parameter '[cut]'");
    // What the session writes itself afterwards is read at the end.
    ex.record.detail = "later SECRET";
  }
  EXPECT_EQ(ex.record.detail, "later [cut]");
  EXPECT_EQ(s.calls, (std::vector<std::string>{"check.head", "scrub:parameter 'SECRET'",
                                               "check.end", "scrub:later SECRET"}));
}

TEST(Chain, AReportedViolationIsScrubbedToo) {
  script s;
  factory_list f;
  f.push_back(std::make_unique<scripted_factory>(
      s, "check", verdict::violation(core::errc::query_denied, "parameter 'SECRET'")));
  f.push_back(std::make_unique<scrubbing_factory>(s));
  exchange ex;
  ex.report_mode = true;
  chain c(f, ex);
  EXPECT_TRUE(c.request_head().passes());
  EXPECT_EQ(ex.record.detail, "parameter '[cut]'");
  EXPECT_TRUE(ex.record.reported);
}

}  // namespace
}  // namespace airlock::filters
