#include "envs/lstcb/lstcb.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/latency_histogram.hpp"
#include "core/serialize.hpp"

namespace marlsched::lstcb {

namespace {
const char* kModes[] = {"wait", "timeout", "dispatch", "slack", "single"};
constexpr int kNumModes = 5;
/// The short actions: the modes, then "dispatch+overflow>nbrK" and "slack+overflow>nbrK" for
/// each of the k neighbours.
int num_short(int k) {
  return kNumModes + 2 * k;
}
int nbr_count(const Config& cfg, int n) {
  return std::min(cfg.neighbours, n - 1);
}
/// Neighbours in ring order: i+1, i-1, i+2, i-2, ... (distinct, not i).
std::vector<int> ring_neighbours(int i, int n, int k) {
  std::vector<int> out;
  for (int d = 1; static_cast<int>(out.size()) < k && d < n; ++d)
    for (int j : {(i + d) % n, ((i - d) % n + n) % n})
      if (j != i && std::find(out.begin(), out.end(), j) == out.end() &&
          static_cast<int>(out.size()) < k)
        out.push_back(j);
  return out;
}
std::string pct(double v) {
  return std::to_string(static_cast<int>(std::lround(v * 100))) + "%";
}
std::string fstr(double f) {
  std::ostringstream os;
  os << f;
  return os.str();
}
/// Min-heap order of deliveries: time, then request id (unique), so ties resolve the same way at
/// every rank count.
struct Later {
  bool operator()(const Wire& a, const Wire& b) const {
    return a.t_at > b.t_at || (a.t_at == b.t_at && a.r.id > b.r.id);
  }
};
/// Counter name of a latency histogram bin (core/latency_histogram.hpp).
std::string bin_key(int b) {
  char key[32];
  std::snprintf(key, sizeof key, "latency_bin/%02d", b);
  return key;
}
}  // namespace

EnvSpec make_spec(const Config& cfg, int num_agents) {
  EnvSpec s;
  s.name = "lstcb";
  const int k = nbr_count(cfg, num_agents);
  s.obs_fields = {"load",        "util",      "rate",         "oldest_wait",  "busy_left",
                  "batch_cap",   "gpu_clock", "steer",        "window_phase", "window_start",
                  "window_viol", "energy",    "rate_forecast"};
  for (int j = 0; j < k; ++j) s.obs_fields.push_back("nbr" + std::to_string(j + 1) + "_load");
  s.num_public = 3;
  std::vector<std::string> longs, shorts;
  for (int b : cfg.max_batches)
    for (double f : cfg.freqs)
      for (double st : cfg.steer)
        longs.push_back("B" + std::to_string(b) + ",f" + fstr(f) + ",steer" + pct(st));
  for (const char* m : kModes) shorts.emplace_back(m);
  for (const char* mode : {"dispatch", "slack"})
    for (int j = 0; j < k; ++j)
      shorts.push_back(std::string(mode) + "+overflow>nbr" + std::to_string(j + 1));
  for (const auto& l : longs)
    for (const auto& sh : shorts) s.action_names.push_back(l + "|" + sh);
  s.action_heads = {static_cast<int>(longs.size()), static_cast<int>(shorts.size())};
  s.long_every = cfg.window_slots;
  s.reward_components = {"energy_j", "served",         "violations",
                         "steered",  "latency_ms_sum", "busy_ms"};
  s.episode_length = cfg.episode_slots();
  s.windows = std::max(1, static_cast<int>(std::ceil(cfg.slot_ms / cfg.link_ms - 1e-9)));
  return s;
}

Shard::Shard(std::shared_ptr<const Config> cfg, std::shared_ptr<const EnvSpec> spec,
             Profile profile, int agent, int num_agents)
    : cfg_holder_(std::move(cfg)),
      cfg_(*cfg_holder_),
      spec_(std::move(spec)),
      prof_(std::move(profile)),
      agent_(agent),
      n_(num_agents),
      k_(nbr_count(cfg_, num_agents)),
      nbrs_(ring_neighbours(agent, num_agents, k_)),
      peak_per_ms_(cfg_.rates[static_cast<std::size_t>(agent) % cfg_.rates.size()] / 1000.0),
      clocks_(cfg_.freqs) {
  std::sort(clocks_.begin(), clocks_.end());
  out_.resize(n_);
  hist_.assign(latency::kBins, 0.0);
  reset(0, 0);
}

void Shard::reset(std::uint64_t /*world_seed*/, std::uint64_t shard_seed) {
  // Whatever is still here is abandoned (its time so far counts as its stay, for Little's law).
  integrate(clock_);
  for (std::size_t i = head_; i < queue_.size(); ++i) left_ms_ += clock_ - queue_[i].enter;
  for (const auto& r : batch_) left_ms_ += clock_ - r.enter;
  abandoned_ += static_cast<double>(queue_.size() - head_ + batch_.size() + inbox_.size());
  queue_.clear();
  head_ = 0;
  batch_.clear();
  inbox_.clear();
  out_.clear();
  rng_.seed(shard_seed);
  exo_.seed(derive_seed(shard_seed, {0xE40}));
  clock_ = slot_start_ = last_t_ = 0;
  slot_ = 0;
  busy_until_ = 0;
  batch_cap_ = cfg_.max_batches.back();
  freq_ = batch_freq_ = 1.0;
  mode_ = 1;
  overflow_to_ = -1;
  steer_ = 0;
  steer_to_ = -1;
  nbr_load_.assign(static_cast<std::size_t>(k_), 0.f);
  level_ = static_cast<int>(exo_.below(cfg_.levels.size()));
  const double pb = cfg_.burst_start + cfg_.burst_end > 0
                        ? cfg_.burst_start / (cfg_.burst_start + cfg_.burst_end)
                        : 0.0;
  burst_ = cfg_.bursty && exo_.uniform() < pb;
  serial_ = 0;
  s_energy_ = s_served_ = s_viol_ = s_steered_ = s_latency_ = s_busy_ = s_arrived_ = 0;
  last_util_ = last_arrived_ = last_energy_ = 0;
  w_served_ = w_viol_ = last_window_viol_ = 0;
  next_arrival_ = 0;
  next_arrival();
}

void Shard::next_arrival() {
  const double rate = peak_per_ms_ * cfg_.levels[static_cast<std::size_t>(level_)] *
                      (burst_ ? cfg_.burst_factor : 1.0);
  if (rate <= 0) {
    next_arrival_ = std::numeric_limits<double>::infinity();
    return;
  }
  double u = exo_.uniform();
  while (u <= 0) u = exo_.uniform();
  next_arrival_ += -std::log(u) / rate;
}

void Shard::integrate(double t) {
  const double dt = t - last_t_;
  if (dt <= 0) return;
  const double n = static_cast<double>(queue_.size() - head_ + batch_.size());
  area_ms_ += n * dt;
  const bool busy = !batch_.empty();
  const double watts = busy ? prof_.busy_watts(batch_freq_) : prof_.p_idle;
  energy_j_ += watts * dt / 1000.0;
  s_energy_ += watts * dt / 1000.0;
  if (busy) {
    busy_ms_ += dt;
    s_busy_ += dt;
  }
  sim_ms_ += dt;
  last_t_ = t;
}

void Shard::send(int dest, double t, Request r) {
  r.hops += 1;
  out_.append(dest, Wire{t + cfg_.link_ms, r});
}

void Shard::enqueue(const Request& r, double t) {
  Request q = r;
  q.enter = t;
  queue_.push_back(q);
  entered_ += 1;
}

void Shard::arrival(double t) {
  Request r;
  r.t0 = r.enter = t;
  r.id = (static_cast<std::uint64_t>(agent_) << 40) | serial_++;
  r.origin = agent_;
  arrived_ += 1;
  s_arrived_ += 1;
  if (steer_to_ >= 0 && steer_ > 0 && (steer_ >= 1.0 || rng_.uniform() < steer_)) {
    steered_ += 1;
    s_steered_ += 1;
    send(steer_to_, t, r);
    return;
  }
  enqueue(r, t);
}

void Shard::try_dispatch(double t) {
  if (!batch_.empty()) return;
  const std::size_t q = queue_.size() - head_;
  if (q == 0) return;
  const std::size_t cap = mode_ == 4 ? 1 : static_cast<std::size_t>(batch_cap_);
  const bool full = q >= cap;
  bool go = false;
  if (mode_ == 0)
    go = full;
  else if (mode_ == 1)
    go = full || t - queue_[head_].enter >= cfg_.timeout_ms - 1e-9;
  else if (mode_ == 3)
    go = full || t >= slack_start() - 1e-9;
  else
    go = true;
  if (!go) return;
  const auto [b, f] =
      mode_ == 3 ? slack_plan(t, std::min(q, cap)) : std::make_pair(std::min(q, cap), freq_);
  batch_.assign(queue_.begin() + static_cast<std::ptrdiff_t>(head_),
                queue_.begin() + static_cast<std::ptrdiff_t>(head_ + b));
  head_ += b;
  if (head_ == queue_.size()) {
    queue_.clear();
    head_ = 0;
  } else if (head_ > 1024 && head_ * 2 > queue_.size()) {
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  batch_freq_ = f;
  busy_until_ = t + prof_.batch_ms(static_cast<int>(b), batch_freq_);
  batches_ += 1;
  // A batch's SLO misses are certain once it starts: the reward charges them now, in the slot
  // whose decision caused them (the metrics count them at completion).
  for (const auto& r : batch_)
    if (busy_until_ + (r.origin == agent_ ? 0.0 : cfg_.link_ms) - r.t0 > cfg_.slo_ms + 1e-9)
      s_viol_ += 1;
}

void Shard::complete(double t) {
  for (const auto& r : batch_) {
    const double lat = t + (r.origin == agent_ ? 0.0 : cfg_.link_ms) - r.t0;
    served_ += 1;
    s_served_ += 1;
    latency_sum_ += lat;
    s_latency_ += lat;
    left_ms_ += t - r.enter;
    hist_[static_cast<std::size_t>(latency::bin(lat))] += 1;
    if (lat > cfg_.slo_ms + 1e-9) violations_ += 1;
  }
  batch_.clear();
}

double Shard::slack_start() const {
  const std::size_t b =
      std::min(queue_.size() - head_, static_cast<std::size_t>(std::max(1, batch_cap_)));
  double due = std::numeric_limits<double>::infinity();
  for (std::size_t i = head_; i < head_ + b; ++i) {
    const Request& r = queue_[i];
    due = std::min(
        due, r.t0 + cfg_.slo_ms - cfg_.slo_guard_ms - (r.origin == agent_ ? 0.0 : cfg_.link_ms));
  }
  return due - prof_.batch_ms(static_cast<int>(b), freq_);
}

std::size_t Shard::slack_prefix(double t, std::size_t bmax, double f) const {
  double due = std::numeric_limits<double>::infinity();
  std::size_t best = 0;
  for (std::size_t b = 1; b <= bmax; ++b) {
    const Request& r = queue_[head_ + b - 1];
    due = std::min(
        due, r.t0 + cfg_.slo_ms - cfg_.slo_guard_ms - (r.origin == agent_ ? 0.0 : cfg_.link_ms));
    if (t + prof_.batch_ms(static_cast<int>(b), f) > due + 1e-9) break;  // and all larger
    best = b;
  }
  return best;
}

std::pair<std::size_t, double> Shard::slack_plan(double t, std::size_t bmax) const {
  // The window's clock when the whole batch meets every member's SLO there; else the lowest
  // higher clock of --freqs at which it does (a short-timescale boost); else, at the highest
  // clock, the largest prefix that does; and when even one request alone would miss, the head
  // is late whatever happens: the whole batch at the highest clock works the backlog off fastest.
  if (slack_prefix(t, bmax, freq_) == bmax) return {bmax, freq_};
  double top = freq_;
  for (double f : clocks_)  // ascending
    if (f > freq_) {
      if (slack_prefix(t, bmax, f) == bmax) return {bmax, f};
      top = f;
    }
  const std::size_t b = slack_prefix(t, bmax, top);
  return {b == 0 ? bmax : b, top};
}

double Shard::next_timeout() const {
  if ((mode_ != 1 && mode_ != 3) || !batch_.empty() || head_ == queue_.size())
    return std::numeric_limits<double>::infinity();
  if (mode_ == 3) return slack_start();
  return queue_[head_].enter + cfg_.timeout_ms;
}

void Shard::act(int action, const GlobalObs& global, std::vector<WorkRecord>& /*outbox*/) {
  const int ns = num_short(k_), na = spec_->num_actions();
  MARLSCHED_REQUIRE(action >= 0 && action < na,
                    "lstcb action " << action << " out of range [0, " << na << ")");
  if (global.data != nullptr)
    for (int j = 0; j < k_; ++j)
      nbr_load_[static_cast<std::size_t>(j)] = global.row(nbrs_[static_cast<std::size_t>(j)])[0];
  if (slot_ % cfg_.window_slots == 0) {  // long timescale: batch cap, clock, steering
    const int l = action / ns, S = static_cast<int>(cfg_.steer.size()),
              F = static_cast<int>(cfg_.freqs.size());
    batch_cap_ = cfg_.max_batches[static_cast<std::size_t>(l / (F * S))];
    freq_ = cfg_.freqs[static_cast<std::size_t>((l / S) % F)];
    steer_ = cfg_.steer[static_cast<std::size_t>(l % S)];
    steer_to_ = -1;
    float least = std::numeric_limits<float>::infinity();
    for (int j = 0; j < k_; ++j)
      if (nbr_load_[static_cast<std::size_t>(j)] < least) {
        least = nbr_load_[static_cast<std::size_t>(j)];
        steer_to_ = nbrs_[static_cast<std::size_t>(j)];
      }
  }
  const int sh = action % ns;
  const int over = sh - kNumModes;  // >= 0: an overflow action, to neighbour over % k_
  mode_ = over < 0 ? sh : over < k_ ? 2 : 3;
  overflow_to_ = over >= 0 ? nbrs_[static_cast<std::size_t>(over % k_)] : -1;
  if (overflow_to_ >= 0) {  // hand the queue beyond one batch to the neighbour, newest first
    integrate(slot_start_);
    while (queue_.size() - head_ > static_cast<std::size_t>(batch_cap_)) {
      const Request r = queue_.back();
      queue_.pop_back();
      left_ms_ += slot_start_ - r.enter;
      steered_ += 1;
      s_steered_ += 1;
      send(overflow_to_, slot_start_, r);
    }
  }
}

void Shard::window(int w, std::vector<WorkRecord>& outbox) {
  const int W = spec_->windows;
  const double t_end =
      w + 1 == W ? slot_start_ + cfg_.slot_ms : slot_start_ + cfg_.slot_ms * (w + 1) / W;
  if (w == 0) try_dispatch(slot_start_);  // the slot's mode may dispatch at once
  const double inf = std::numeric_limits<double>::infinity();
  for (;;) {
    const double tc = batch_.empty() ? inf : busy_until_;
    const double ti = inbox_.empty() ? inf : inbox_.front().t_at;
    const double ta = next_arrival_, tt = next_timeout();
    const double t = std::min({tc, ti, ta, tt});
    if (t >= t_end) break;
    ++events_;
    integrate(t);
    if (t == tc) {
      complete(t);
    } else if (t == ti) {
      std::pop_heap(inbox_.begin(), inbox_.end(), Later{});
      const Request r = inbox_.back().r;
      inbox_.pop_back();
      enqueue(r, t);
    } else if (t == ta) {
      arrival(t);
      next_arrival();
    }
    try_dispatch(t);
  }
  integrate(t_end);
  clock_ = t_end;
  out_.flush(outbox);
}

void Shard::receive(const WorkRecord& record) {
  for (Wire w : WorkBatches::items<Wire>(record, "lstcb")) {
    if (w.t_at < clock_) {
      late_deliveries_ += 1;
      w.t_at = clock_;
    }
    received_ += 1;
    inbox_.push_back(w);
    std::push_heap(inbox_.begin(), inbox_.end(), Later{});
  }
}

StepOutcome Shard::advance() {
  StepOutcome o;
  const double nominal = std::max(1e-9, peak_per_ms_ * cfg_.slot_ms);
  o.reward = -(cfg_.w_energy * s_energy_ + cfg_.w_slo * s_viol_) / nominal;
  o.components = {s_energy_, s_served_, s_viol_, s_steered_, s_latency_, s_busy_};
  last_util_ = s_busy_ / cfg_.slot_ms;
  last_arrived_ = s_arrived_;
  last_energy_ = s_energy_;
  w_served_ += s_served_;
  w_viol_ += s_viol_;
  s_energy_ = s_served_ = s_viol_ = s_steered_ = s_latency_ = s_busy_ = s_arrived_ = 0;
  slot_ += 1;
  slot_start_ = slot_ * cfg_.slot_ms;
  clock_ = slot_start_;
  bool redraw = false;
  if (slot_ % cfg_.window_slots == 0) {
    last_window_viol_ = w_served_ > 0 ? w_viol_ / w_served_ : 0.0;
    w_served_ = w_viol_ = 0;
    if (cfg_.levels.size() > 1 && exo_.uniform() < cfg_.level_switch) {
      const int other = static_cast<int>(exo_.below(cfg_.levels.size() - 1));
      level_ = other >= level_ ? other + 1 : other;
      redraw = true;
    }
  }
  if (cfg_.bursty) {
    const bool was = burst_;
    burst_ = burst_ ? !(exo_.uniform() < cfg_.burst_end) : exo_.uniform() < cfg_.burst_start;
    redraw = redraw || burst_ != was;
  }
  if (redraw) {  // memoryless: the next arrival is redrawn at the new rate from the slot start
    next_arrival_ = slot_start_;
    next_arrival();
  }
  o.truncated = slot_ >= cfg_.episode_slots();
  return o;
}

void Shard::observe(float* out) const {
  const double nominal = std::max(1e-9, peak_per_ms_ * cfg_.slot_ms);
  const double bmax = static_cast<double>(cfg_.max_batches.back());
  const std::size_t q = queue_.size() - head_;
  int i = 0;
  out[i++] = static_cast<float>(static_cast<double>(q) / bmax);
  out[i++] = static_cast<float>(last_util_);
  out[i++] = static_cast<float>(last_arrived_ / nominal);
  out[i++] = static_cast<float>(q > 0 ? (clock_ - queue_[head_].enter) / cfg_.slo_ms : 0.0);
  out[i++] = static_cast<float>(batch_.empty() ? 0.0 : (busy_until_ - clock_) / cfg_.slo_ms);
  out[i++] = static_cast<float>(batch_cap_ / bmax);
  out[i++] = static_cast<float>(freq_);
  out[i++] = static_cast<float>(steer_);
  out[i++] =
      static_cast<float>((slot_ % cfg_.window_slots) / static_cast<double>(cfg_.window_slots));
  out[i++] = slot_ % cfg_.window_slots == 0 ? 1.f : 0.f;
  out[i++] = static_cast<float>(last_window_viol_);
  out[i++] = static_cast<float>(last_energy_ / nominal);
  // The rate level of the current window, as a long-timescale load predictor would give it
  // (a perfect forecast of the level; bursts stay unpredictable).
  out[i++] = static_cast<float>(cfg_.levels[static_cast<std::size_t>(level_)]);
  for (int j = 0; j < k_; ++j) out[i++] = nbr_load_[static_cast<std::size_t>(j)];
}

Shard::Little Shard::little() const {
  double here = 0;
  for (std::size_t i = head_; i < queue_.size(); ++i) here += last_t_ - queue_[i].enter;
  for (const auto& r : batch_) here += last_t_ - r.enter;
  return {area_ms_, left_ms_, here};
}

std::map<std::string, double> Shard::counters() const {
  const auto l = little();
  std::map<std::string, double> m = {
      {"arrived", arrived_},
      {"entered", entered_},
      {"served", served_},
      {"violations", violations_},
      {"steered", steered_},
      {"received", received_},
      {"abandoned", abandoned_},
      {"in_system", static_cast<double>(queue_.size() - head_ + batch_.size())},
      {"in_inbox", static_cast<double>(inbox_.size())},
      {"energy_j", energy_j_},
      {"busy_ms", busy_ms_},
      {"sim_ms", sim_ms_},
      {"latency_ms_sum", latency_sum_},
      {"area_ms", l.area_ms},
      {"left_ms", l.left_ms},
      {"here_ms", l.here_ms},
      {"batches", batches_},
      {"late_deliveries", late_deliveries_},
      {"events", static_cast<double>(events_)}};
  for (int b = 0; b < latency::kBins; ++b) m[bin_key(b)] = hist_[static_cast<std::size_t>(b)];
  return m;
}

namespace {
constexpr std::uint32_t kMagic = 0x15CB'0001;
}

template <class Self, class IO>
void Shard::state_fields(Self& s, IO& io) {
  io.packed(s.batch_cap_, s.mode_, s.overflow_to_, s.steer_to_, s.level_, s.burst_, s.slot_);
  io.packed(s.freq_, s.steer_, s.next_arrival_, s.clock_, s.slot_start_, s.last_t_, s.busy_until_,
            s.batch_freq_, s.s_energy_, s.s_served_, s.s_viol_, s.s_steered_, s.s_latency_,
            s.s_busy_, s.s_arrived_, s.last_util_, s.last_arrived_, s.last_energy_, s.w_served_,
            s.w_viol_, s.last_window_viol_, s.arrived_, s.entered_, s.served_, s.violations_,
            s.steered_, s.received_, s.abandoned_, s.energy_j_, s.busy_ms_, s.sim_ms_,
            s.latency_sum_, s.area_ms_, s.left_ms_, s.batches_, s.late_deliveries_);
  io(s.nbr_load_, s.serial_);
  if constexpr (IO::kWriting) {  // the queue from its head: the reader's head is 0
    io(std::vector<Request>(s.queue_.begin() + static_cast<std::ptrdiff_t>(s.head_),
                            s.queue_.end()));
  } else {
    io(s.queue_);
    s.head_ = 0;
  }
  io(s.batch_, s.inbox_, s.hist_, s.events_);
}

std::vector<std::byte> Shard::save_state() const {
  auto w = shard_state_writer(kMagic, agent_, {&rng_, &exo_});
  state_fields(*this, w);
  return w.bytes();
}

void Shard::load_state(const std::vector<std::byte>& state) {
  auto r = shard_state_reader(state, "lstcb shard state", kMagic, agent_, {&rng_, &exo_});
  state_fields(*this, r);
  if (nbr_load_.size() != static_cast<std::size_t>(k_) || hist_.size() != latency::kBins)
    MARLSCHED_THROW(InputError, "lstcb shard state: does not match this configuration");
  std::make_heap(inbox_.begin(), inbox_.end(), Later{});
  out_.clear();
}

std::vector<std::pair<std::string, double>> summarize(const std::map<std::string, double>& c) {
  auto get = [&](const std::string& k) {
    const auto it = c.find(k);
    return it == c.end() ? 0.0 : it->second;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double served = get("served"), sim = get("sim_ms");
  std::vector<std::pair<std::string, double>> out;
  out.emplace_back("energy_per_inference_j", served > 0 ? get("energy_j") / served : nan);
  out.emplace_back("slo_violation_rate", served > 0 ? get("violations") / served : nan);
  out.emplace_back("mean_latency_ms", served > 0 ? get("latency_ms_sum") / served : nan);
  std::vector<double> h(latency::kBins);
  for (int b = 0; b < latency::kBins; ++b) h[static_cast<std::size_t>(b)] = get(bin_key(b));
  out.emplace_back("p99_latency_ms", latency::quantile_upper(h, 0.99));
  out.emplace_back("gpu_util", sim > 0 ? get("busy_ms") / sim : nan);
  // sim_ms sums every server's simulated time: requests per second per server.
  out.emplace_back("throughput_rps", sim > 0 ? served / sim * 1000.0 : nan);
  out.emplace_back("mean_batch", get("batches") > 0 ? served / get("batches") : nan);
  return out;
}

}  // namespace marlsched::lstcb
