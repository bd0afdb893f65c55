// Options declared once: each declaration's rule makes the validation message, the help text
// and (for run options) the list of keys a resumed run may change.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/options.hpp"

namespace marlsched {
namespace {

struct Sample {
  double rate = 0.5, share = 0.25;
  int steps = 4;
  std::string mode = "fast";
  std::vector<std::string> names = {"a", "b"};
  std::vector<int> sizes = {8, 16};
  bool verbose = false;
  void bind(OptionBinder& b) {
    b.group("Sample");
    b.add("rate", rate, "a step size").learning_rate();
    b.add("share", share, "a share").at_least(0).less_than(1);
    b.add("steps", steps, "steps").at_least(1).may_change_on_resume();
    b.add("mode", mode, "mode").one_of({"fast", "slow"});
    b.add("names", names, "names");
    b.add("sizes", sizes, "one per name").positive().elements_of(names, "name");
    b.add("verbose", verbose, "talk").may_change_on_resume();
  }
};

std::string message(const Sample& s) {
  try {
    check_declared(s);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Options, EachRuleMakesItsOwnMessage) {
  Sample s;
  EXPECT_EQ(message(s), "");
  s.rate = 2;
  EXPECT_EQ(message(s), "--rate must be in (0, 1], got 2");
  s.rate = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(message(s), "--rate must be in (0, 1], got nan");
  s = Sample{};
  s.share = 1;
  EXPECT_EQ(message(s), "--share must be in [0, 1), got 1");
  s = Sample{};
  s.steps = 0;
  EXPECT_EQ(message(s), "--steps must be >= 1, got 0");
  s = Sample{};
  s.mode = "warp";
  EXPECT_EQ(message(s), "--mode must be one of fast, slow, got 'warp'");
  s = Sample{};
  s.sizes = {8, 0};
  EXPECT_EQ(message(s), "--sizes: name b must be positive, got 0");
  s.sizes = {8, 16, -1};  // past the names: the element's index
  EXPECT_EQ(message(s), "--sizes[2] must be positive, got -1");
}

TEST(Options, TheDeclarationsSayWhatMayChangeOnResumeAndWhatEachMayHold) {
  Sample s;
  OptionBinder b;
  s.bind(b);
  EXPECT_EQ(b.resumable(), (std::vector<std::string>{"steps", "verbose"}));
  ASSERT_EQ(b.declared().size(), 7u);
  EXPECT_EQ(b.declared()[0].rule(), "in (0, 1]");
  EXPECT_EQ(b.declared()[0].group(), "Sample");
  EXPECT_EQ(b.declared()[3].rule(), "one of fast, slow");
  EXPECT_EQ(b.declared()[4].rule(), "");  // anything of its type
  EXPECT_EQ(b.declared()[5].rule(), "positive");
}

enum class Speed { kFast = 3, kSlow = 7 };

TEST(Options, AChoiceHoldsAnEnumAndReadsAndWritesItsNames) {
  Speed speed = Speed::kFast;
  OptionBinder b;
  b.choice("speed", speed, {{"fast", Speed::kFast}, {"slow", Speed::kSlow}}, "how fast");
  ASSERT_EQ(b.declared().size(), 1u);
  const Option& o = b.declared()[0];
  EXPECT_EQ(o.rule(), "one of fast, slow");
  auto* c = std::get<Choice*>(o.value());
  EXPECT_EQ(c->name(), "fast");
  EXPECT_TRUE(c->set("slow"));
  EXPECT_EQ(speed, Speed::kSlow);
  EXPECT_EQ(c->name(), "slow");
  EXPECT_FALSE(c->set("warp"));  // not a name: the value stays
  EXPECT_EQ(speed, Speed::kSlow);
  speed = static_cast<Speed>(5);  // a value no name declares (a learner's internal setting)
  EXPECT_EQ(c->name(), "");
  EXPECT_EQ(o.violation(), "");
}

}  // namespace
}  // namespace marlsched
