#include "agents/tsdqn/tsdqn.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/file.hpp"
#include "core/rng.hpp"
#include "core/serialize.hpp"

namespace marlsched {

void TsdqnConfig::bind(OptionBinder& b) {
  b.group("Agent: two-timescale DQN (tsdqn; the short head takes the DQN options)");
  b.add("ts-long-lr", long_lr, "learning rate of the long-timescale head").learning_rate();
  b.add("ts-long-batch", long_batch, "minibatch of the long-timescale head").at_least(1);
  b.add("ts-long-warmup", long_warmup, "window transitions before the long head learns");
  b.add("ts-long-updates", long_updates, "gradient steps of the long head per iteration")
      .at_least(0);
  b.add("ts-long-target-every", long_target_every, "long head: steps between target copies")
      .at_least(1);
  b.add("ts-long-eps-decay", long_eps_decay, "windows of linear ε decay of the long head")
      .at_least(1);
  b.add("ts-long-gamma", long_gamma,
        "long head: discount per window over plain window sums (0: dqn-gamma^window over "
        "discounted sums, the exact semi-MDP)")
      .in(0, 1);
  b.add("ts-short-actions", short_actions,
        "short-timescale actions the short head chooses from, by name (empty: all the env's)");
}

void TsdqnConfig::validate() const {
  check_declared(*this);
  MARLSCHED_REQUIRE(long_warmup >= long_batch, "--ts-long-warmup must be >= --ts-long-batch");
}

std::vector<int> TsdqnConfig::short_subset(const EnvSpec& spec) const {
  const int S = spec.action_heads.at(1);
  std::vector<std::string> names;
  for (int i = 0; i < S; ++i) {
    const std::string& full = spec.action_names[static_cast<std::size_t>(i)];
    names.push_back(full.substr(full.find('|') + 1));
  }
  std::vector<int> out;
  if (short_actions.empty()) {
    for (int i = 0; i < S; ++i) out.push_back(i);
    return out;
  }
  for (const auto& want : short_actions) {
    const auto it = std::find(names.begin(), names.end(), want);
    if (it == names.end()) {
      std::ostringstream os;
      for (std::size_t i = 0; i < names.size(); ++i) os << (i ? ", " : "") << names[i];
      MARLSCHED_THROW(ConfigError, "--ts-short-actions: env '" << spec.name
                                                               << "' has no short action '" << want
                                                               << "' (it has " << os.str() << ")");
    }
    const int idx = static_cast<int>(it - names.begin());
    MARLSCHED_REQUIRE(std::find(out.begin(), out.end(), idx) == out.end(),
                      "--ts-short-actions names '" << want << "' twice");
    out.push_back(idx);
  }
  return out;
}

DqnConfig TsdqnConfig::long_head(const DqnConfig& s, int window) const {
  DqnConfig l = s;
  l.lr = long_lr;
  l.batch = long_batch;
  l.warmup = long_warmup;
  l.buffer = std::max(s.buffer / std::max(1, window), long_warmup);
  l.updates = long_updates;
  l.target_every = long_target_every;
  l.eps_decay = long_eps_decay;
  l.gamma = long_gamma > 0 ? long_gamma : std::pow(s.gamma, window);
  l.draw_stream = 1;
  return l;
}

namespace {
constexpr std::uint32_t kMagicV1 = 0x75D0'0001;  ///< before the trailing checksum
constexpr std::uint32_t kMagic = 0x75D0'0002;    ///< payload, then FNV-1a 64 of the payload

/// The spec one head sees: the long choices, or the short choices in `subset` (env indices).
EnvSpec head_spec(const EnvSpec& env, int head, const std::vector<int>& subset = {}) {
  EnvSpec s = env;
  const int L = env.action_heads[0], S = env.action_heads[1];
  s.action_names.clear();
  const int n = head == 0 ? L : static_cast<int>(subset.size());
  for (int j = 0; j < n; ++j) {
    const int i = head == 0 ? j : subset[static_cast<std::size_t>(j)];
    const std::string& full = env.action_names[static_cast<std::size_t>(head == 0 ? i * S : i)];
    const auto bar = full.find('|');
    s.action_names.push_back(bar == std::string::npos ? full
                             : head == 0              ? full.substr(0, bar)
                                                      : full.substr(bar + 1));
  }
  s.action_heads.clear();
  s.long_every = 1;
  return s;
}
}  // namespace

struct TwoTimescaleDqn::Impl {
  EnvSpec long_spec, short_spec;
  std::unique_ptr<Dqn> lo, sh;
  int S, W, rows;
  std::vector<int> short_of;  // env short index of each short-head action
  double gamma;               // in-window discount of the long head's reward
  bool training = true;
  bool long_open = false;     // the long head acted; its window is not recorded yet
  std::vector<int> long_act;  // the long decision in force, per row
  std::vector<float> acc;     // discounted reward since the window start, per row
  double disc = 1;
  std::vector<int> la, sa;
  std::vector<StatName> names;
};

void check_tsdqn_env(const EnvSpec& spec) {
  const auto heads = spec.action_heads.size();
  MARLSCHED_REQUIRE(heads == 2 && spec.long_every >= 1,
                    "tsdqn needs an env with a long and a short action head (e.g. lstcb); env '"
                        << spec.name << "' has " << std::max<std::size_t>(1, heads)
                        << " action head" << (heads > 1 ? "s" : ""));
  MARLSCHED_REQUIRE(spec.episode_length % spec.long_every == 0,
                    "tsdqn: episodes (" << spec.episode_length
                                        << " steps) must hold whole windows of " << spec.long_every
                                        << " steps");
}

TwoTimescaleDqn::TwoTimescaleDqn(const TsdqnConfig& ts, const DqnConfig& dqn,
                                 const LearnerLayout& layout)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  const EnvSpec& spec = *layout.spec;
  check_tsdqn_env(spec);
  m.S = spec.action_heads[1];
  m.W = spec.long_every;
  m.rows = layout.copies * layout.local_agents;
  m.gamma = ts.long_gamma > 0 ? 1.0 : dqn.gamma;
  m.long_spec = head_spec(spec, 0);
  m.short_of = ts.short_subset(spec);
  m.short_spec = head_spec(spec, 1, m.short_of);
  // Each head is a DQN of the same layout over its own head's spec and seed.
  auto head = [&](const EnvSpec& head_spec, std::uint64_t stream) {
    LearnerLayout l = layout;
    l.spec = &head_spec;
    l.seed = derive_seed(layout.seed, {stream});
    return l;
  };
  m.lo = std::make_unique<Dqn>(ts.long_head(dqn, m.W), head(m.long_spec, 0x1046));
  m.sh = std::make_unique<Dqn>(dqn, head(m.short_spec, 0x5407));
  m.long_act.assign(static_cast<std::size_t>(m.rows), 0);
  m.acc.assign(static_cast<std::size_t>(m.rows), 0.f);
  for (const char* head : {"long_", "short_"})
    for (const auto& n : m.sh->stat_names())
      m.names.push_back({head + n.column, std::string(head, std::strlen(head) - 1) + "/" + n.tag});
}

TwoTimescaleDqn::~TwoTimescaleDqn() = default;

void TwoTimescaleDqn::set_training(bool t) {
  impl_->training = t;
  impl_->lo->set_training(t);
  impl_->sh->set_training(t);
}
void TwoTimescaleDqn::set_deterministic(bool d) {
  impl_->lo->set_deterministic(d);
  impl_->sh->set_deterministic(d);
}
const Dqn& TwoTimescaleDqn::long_head() const {
  return *impl_->lo;
}
const Dqn& TwoTimescaleDqn::short_head() const {
  return *impl_->sh;
}

Decisions TwoTimescaleDqn::act(const PolicyInput& in) {
  auto& m = *impl_;
  const int phase = in.episode_step.at(0) % m.W;
  for (int step : in.episode_step)
    MARLSCHED_CHECK(step % m.W == phase, "tsdqn: env copies are at different window phases");
  const bool window_start = phase == 0;
  std::vector<float> long_logp;
  if (window_start) {
    if (m.training && m.long_open) {  // the window that just ended: its summed reward
      StepFeedback fb;
      fb.reward = m.acc;
      fb.done.assign(static_cast<std::size_t>(in.copies), 0);
      fb.truncated = fb.done;
      fb.terminal.assign(static_cast<std::size_t>(in.copies), GlobalObs{});
      m.lo->record(fb);
    }
    Decisions long_d = m.lo->act(in);
    m.la = long_d.actions;
    long_logp = std::move(long_d.log_probs);
    m.long_act = m.la;
    m.long_open = m.training;
    std::fill(m.acc.begin(), m.acc.end(), 0.f);
    m.disc = 1;
  }
  // The joint action's log-probability: the short head's, plus the long head's where it chose.
  Decisions out = m.sh->act(in);
  m.sa = out.actions;
  for (std::size_t r = 0; r < out.actions.size(); ++r) {
    out.actions[r] = m.long_act[r] * m.S + m.short_of[static_cast<std::size_t>(m.sa[r])];
    if (window_start) out.log_probs[r] += long_logp[r];
  }
  return out;
}

void TwoTimescaleDqn::record(const StepFeedback& fb) {
  auto& m = *impl_;
  m.sh->record(fb);
  for (std::size_t r = 0; r < m.acc.size(); ++r)
    m.acc[r] += static_cast<float>(m.disc) * fb.reward[r];
  m.disc *= m.gamma;
  bool any = false, all = true;
  for (char d : fb.done) {
    any = any || d;
    all = all && d;
  }
  MARLSCHED_CHECK(any == all, "tsdqn: env copies ended their episodes at different steps");
  if (any && m.long_open) {  // episodes end with a window: the long transition ends here
    StepFeedback lf = fb;
    lf.reward = m.acc;
    m.lo->record(lf);
    m.long_open = false;
    std::fill(m.acc.begin(), m.acc.end(), 0.f);
    m.disc = 1;
  }
}

UpdateStats TwoTimescaleDqn::update(const PolicyInput& last) {
  auto& m = *impl_;
  // The long head has no transition waiting for its next state here (it only records right
  // before it acts, or at an episode end), so its update does not complete one early.
  const UpdateStats l = m.lo->update(last);
  const UpdateStats s = m.sh->update(last);
  UpdateStats st;
  st.values = l.values;
  st.values.insert(st.values.end(), s.values.begin(), s.values.end());
  st.time_forward_backward = l.time_forward_backward + s.time_forward_backward;
  st.time_allreduce = l.time_allreduce + s.time_allreduce;
  st.stepped = l.stepped && s.stepped;  // each head's NaNs are its own warm-up's
  return st;
}

const std::vector<StatName>& TwoTimescaleDqn::stat_names() const {
  return impl_->names;
}

void TwoTimescaleDqn::save(const std::string& path) const {
  const auto& m = *impl_;
  ByteWriter w;
  w.put(kMagic);
  w.put<std::uint8_t>(m.long_open ? 1 : 0);
  w.put(m.disc);
  w.put_vector(m.long_act);
  w.put_vector(m.acc);
  std::ostringstream lo, sh;
  m.lo->save(lo);
  m.sh->save(sh);
  w.put_string(lo.str());
  w.put_string(sh.str());
  w.put(fnv1a64(w.bytes().data(), w.bytes().size()));  // checked on load
  write_file(path,
             std::string_view(reinterpret_cast<const char*>(w.bytes().data()), w.bytes().size()));
}

void TwoTimescaleDqn::load(const std::string& path) {
  auto& m = *impl_;
  std::ifstream in(path, std::ios::binary);
  MARLSCHED_REQUIRE_INPUT(static_cast<bool>(in), "cannot read model '" << path << "'");
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(raw.size());
  if (!raw.empty()) std::memcpy(bytes.data(), raw.data(), raw.size());
  ByteReader r(bytes.data(), bytes.size(), path);
  const auto magic = r.get<std::uint32_t>();
  MARLSCHED_REQUIRE_INPUT(magic != kMagicV1, "model '" << path
                                                       << "' was written by an older marlsched "
                                                          "(tsdqn format 1, no checksum): retrain");
  MARLSCHED_REQUIRE_INPUT(magic == kMagic,
                          "model '" << path << "' is not a two-timescale DQN model (tsdqn)");
  std::uint64_t stored = 0;
  MARLSCHED_REQUIRE_INPUT(bytes.size() >= 4 + sizeof stored, "model '" << path << "' is truncated");
  std::memcpy(&stored, bytes.data() + bytes.size() - sizeof stored, sizeof stored);
  MARLSCHED_REQUIRE_INPUT(stored == fnv1a64(bytes.data(), bytes.size() - sizeof stored),
                          "model '" << path
                                    << "' is damaged (its checksum differs): restore it from a "
                                       "copy, or use an older checkpoint of its run");
  m.long_open = r.get<std::uint8_t>() != 0;
  m.disc = r.get<double>();
  m.long_act = r.get_vector<int>();
  m.acc = r.get_vector<float>();
  MARLSCHED_REQUIRE(
      static_cast<int>(m.long_act.size()) == m.rows && static_cast<int>(m.acc.size()) == m.rows,
      "model '" << path << "' was trained with a different layout");
  std::istringstream lo(r.get_string()), sh(r.get_string());
  m.lo->load(lo, path + " (long head)");
  m.sh->load(sh, path + " (short head)");
}

bool TwoTimescaleDqn::shared_parameters_identical() const {
  const bool a = impl_->lo->shared_parameters_identical();
  const bool b = impl_->sh->shared_parameters_identical();
  return a && b;
}

std::uint64_t TwoTimescaleDqn::shared_parameter_digest() const {
  return impl_->lo->shared_parameter_digest() * 1099511628211ULL ^
         impl_->sh->shared_parameter_digest();
}

}  // namespace marlsched
