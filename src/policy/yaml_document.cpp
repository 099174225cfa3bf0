#include "policy/yaml_document.hpp"

#include <yaml-cpp/eventhandler.h>

#include <sstream>
#include <vector>

namespace airlock::policy {
namespace {

// Only the document boundaries matter here; the nodes are built by YAML::Load afterwards.
class document_starts final : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;  // where each document starts
  std::vector<YAML::Mark> roots;   // where its root node is (what an error points at)
  void OnDocumentStart(const YAML::Mark& mark) override {
    starts.push_back(mark);
    roots.push_back(mark);
    root_pending_ = true;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    node(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node(mark);
  }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& mark) {
    if (root_pending_ && !roots.empty()) roots.back() = mark;
    root_pending_ = false;
  }
  bool root_pending_ = false;
};

}  // namespace

yaml_document read_yaml_document(std::string_view yaml) {
  const std::string text(yaml);
  yaml_document out;
  {
    std::istringstream in(text);
    YAML::Parser parser(in);
    document_starts handler;
    // Two documents are all there is to know (one is right, two is an error): never ask for a
    // third, so a parser that makes no progress cannot loop.
    for (int i = 0; i < 2 && parser.HandleNextDocument(handler); ++i) {
    }
    if (handler.starts.empty()) return out;
    if (handler.starts.size() > 1) {
      out.second = handler.roots[1];
      out.what = handler.starts[1].pos == handler.starts[0].pos ? yaml_document::status::stuck
                                                                : yaml_document::status::several;
      return out;
    }
  }
  out.root = YAML::Load(text);
  out.what = yaml_document::status::one;
  return out;
}

}  // namespace airlock::policy
