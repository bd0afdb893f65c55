/// \file baselines.cpp
/// Batching baselines for the lstcb action layout (envs/lstcb): a long-timescale choice
/// "B<max batch>,f<clock>,steer<share>" and a short-timescale mode "wait" | "timeout" |
/// "dispatch" | "slack" | "single" | "dispatch+overflow>nbrK" | "slack+overflow>nbrK", read from
/// the action names. All run the GPU at its highest clock and steer nothing, as inference servers
/// do by default.
///   no-batching       one request at a time ("single"), whenever the GPU is free
///   fixed-batch       batches of 16 (the option closest to 16), dispatched only when full
///   timeout-batching  dynamic batching as in Triton/TF-Serving: up to the largest batch,
///                     dispatched when full or when the oldest request waited --timeout-ms
///   aimd              adaptive maximum batch size (AIMD per window, in the style of Clipper):
///                     whatever is queued is dispatched as soon as the GPU is free, up to the
///                     cap; the cap is halved after a window with more than 1 % SLO violations,
///                     else raised to the next option; it starts at the largest
///   slack-batching    SLO-aware lazy batching (Nexus style): up to the largest batch,
///                     dispatched when full or at the last moment at which the most urgent
///                     queued request still meets its SLO (the env's "slack" mode)

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "envs/baselines.hpp"

namespace marlsched {

namespace {

enum class BatchKind { kNone, kFixed, kTimeout, kAimd, kSlack };

struct LongOption {
  int batch = 1;
  double freq = 1, steer = 0;
};

class BatchHeuristic final : public Policy {
 public:
  BatchHeuristic(std::string name, BatchKind kind, const EnvSpec& spec)
      : name_(std::move(name)), kind_(kind) {
    MARLSCHED_CHECK(spec.action_heads.size() == 2, "batching baselines expect the lstcb layout");
    L_ = spec.action_heads[0];
    S_ = spec.action_heads[1];
    for (int l = 0; l < L_; ++l) {
      const std::string& a = spec.action_names[static_cast<std::size_t>(l * S_)];
      LongOption o;
      o.batch = std::atoi(a.c_str() + 1);
      o.freq = std::atof(a.c_str() + a.find(",f") + 2);
      o.steer = std::atof(a.c_str() + a.find("steer") + 5) / 100.0;
      longs_.push_back(o);
    }
    for (int s = 0; s < S_; ++s) {
      const std::string& a = spec.action_names[static_cast<std::size_t>(s)];
      shorts_.push_back(a.substr(a.find('|') + 1));
    }
    for (const auto& o : longs_) {
      max_freq_ = std::max(max_freq_, o.freq);
      if (std::find(batches_.begin(), batches_.end(), o.batch) == batches_.end())
        batches_.push_back(o.batch);
    }
    std::sort(batches_.begin(), batches_.end());
    window_start_ = spec.obs_index("window_start");
    window_viol_ = spec.obs_index("window_viol");
  }

  std::string name() const override { return name_; }
  ActionLaw action_law() const override { return ActionLaw::kDeterministic; }

  void act(const PolicyInput& in, std::vector<int>& actions) override {
    const auto rows = static_cast<std::size_t>(in.copies * in.local_agents);
    actions.resize(rows);
    if (aimd_.size() != rows) aimd_.assign(rows, static_cast<int>(batches_.size()) - 1);
    for (int c = 0; c < in.copies; ++c)
      for (int k = 0; k < in.local_agents; ++k) {
        const auto r = static_cast<std::size_t>(c * in.local_agents + k);
        const float* o = in.global[static_cast<std::size_t>(c)].row(in.first_agent + k);
        int batch = batches_.back();
        std::string mode = "timeout";
        switch (kind_) {
          case BatchKind::kNone:
            batch = batches_.front();
            mode = "single";
            break;
          case BatchKind::kFixed: {
            batch = batches_.front();
            for (int b : batches_)
              if (std::abs(b - 16) < std::abs(batch - 16)) batch = b;
            mode = "wait";
            break;
          }
          case BatchKind::kTimeout:
            break;
          case BatchKind::kSlack:
            mode = "slack";
            break;
          case BatchKind::kAimd: {
            int& i = aimd_[r];
            if (o[window_start_] > 0.5 && in.episode_step[static_cast<std::size_t>(c)] > 0) {
              if (o[window_viol_] > 0.01) {
                const int half = batches_[static_cast<std::size_t>(i)] / 2;
                while (i > 0 && batches_[static_cast<std::size_t>(i)] > half) --i;
              } else if (i + 1 < static_cast<int>(batches_.size())) {
                ++i;
              }
            }
            batch = batches_[static_cast<std::size_t>(i)];
            mode = "dispatch";
            break;
          }
        }
        int l = 0;
        for (int j = 0; j < L_; ++j) {
          const auto& opt = longs_[static_cast<std::size_t>(j)];
          if (opt.batch == batch && opt.freq == max_freq_ && opt.steer == 0.0) l = j;
        }
        int s = 0;
        for (int j = 0; j < S_; ++j)
          if (shorts_[static_cast<std::size_t>(j)] == mode) s = j;
        actions[r] = l * S_ + s;
      }
  }

 private:
  std::string name_;
  BatchKind kind_;
  int L_ = 1, S_ = 1, window_start_ = 0, window_viol_ = 0;
  double max_freq_ = 0;
  std::vector<LongOption> longs_;
  std::vector<std::string> shorts_;
  std::vector<int> batches_, aimd_;
};

}  // namespace

const std::vector<std::string>& batch_heuristic_names() {
  static const std::vector<std::string> names = {"no-batching", "fixed-batch", "timeout-batching",
                                                 "aimd", "slack-batching"};
  return names;
}

std::unique_ptr<Policy> make_batch_heuristic(const std::string& name, const EnvSpec& spec,
                                             std::uint64_t /*seed*/) {
  static const BatchKind kinds[] = {BatchKind::kNone, BatchKind::kFixed, BatchKind::kTimeout,
                                    BatchKind::kAimd, BatchKind::kSlack};
  const auto& names = batch_heuristic_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return std::make_unique<BatchHeuristic>(name, kinds[i], spec);
  return nullptr;
}

}  // namespace marlsched
