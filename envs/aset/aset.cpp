#include "envs/aset/aset.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>

#include "core/error.hpp"
#include "core/serialize.hpp"

namespace marlsched::aset {

namespace {
constexpr std::uint32_t kArrive = 0, kDone = 1, kResult = 2;
constexpr std::uint8_t kPending = 0, kServed = 1, kDropped = 2;
struct Later {  // min-heap on (time, sequence)
  bool operator()(const Event& a, const Event& b) const {
    return a.t > b.t || (a.t == b.t && a.seq > b.seq);
  }
};
}  // namespace

Shard::Shard(std::shared_ptr<const Config> cfg, std::shared_ptr<const EnvSpec> spec,
             std::shared_ptr<const Topology> topo, int agent)
    : cfg_holder_(std::move(cfg)),
      cfg_(*cfg_holder_),
      spec_(std::move(spec)),
      topo_(std::move(topo)),
      agent_(agent),
      n_(topo_->n),
      c_(static_cast<int>(cfg_.classes.size())),
      k_(static_cast<int>(topo_->nbrs[static_cast<std::size_t>(agent)].size())) {
  const auto site = static_cast<std::size_t>(agent) % cfg_.gpus.size();
  gpus_ = cfg_.gpus[site];
  rate_per_ms_ = cfg_.rates[site] / 1000.0;
  nominal_per_step_ = std::max(1e-9, rate_per_ms_ * cfg_.decision_ms);
  const double total = std::accumulate(cfg_.mix.begin(), cfg_.mix.end(), 0.0);
  double acc = 0;
  for (double m : cfg_.mix) {
    mix_cdf_.push_back(acc += m / total);
    cls_nominal_.push_back(std::max(1e-9, nominal_per_step_ * m / total));
  }
  mix_cdf_.back() = 1.0;
  // Which classes each target can serve in time (round trip plus processing within the
  // deadline): the K neighbours, then the cloud.
  for (int t = 0; t <= k_; ++t)
    for (int c = 0; c < c_; ++c) {
      const auto cu = static_cast<std::size_t>(c);
      double need;
      if (t < k_) {
        const int j = topo_->nbrs[static_cast<std::size_t>(agent)][static_cast<std::size_t>(t)];
        need = topo_->at(agent, j) + topo_->at(j, agent) + cfg_.proc_ms[cu];
      } else {
        need = 2 * topo_->cloud[static_cast<std::size_t>(agent)] + cfg_.cloud_proc_ms[cu];
      }
      feasible_.push_back(need <= cfg_.deadline_ms[cu] ? 1 : 0);
    }
  out_.resize(n_);
  cls_arrived_.assign(static_cast<std::size_t>(c_), 0.0);
  cls_success_ = cls_late_ = cls_dropped_ = cls_arrived_;
  hist_.assign(static_cast<std::size_t>(c_ * latency::kBins), 0.0);
  cls_latency_.assign(static_cast<std::size_t>(c_), 0.0);
  reset(0, 0);
}

void Shard::clear_acc() {
  acc_ = Acc{};
  acc_.arrived.assign(static_cast<std::size_t>(c_), 0.0);
  acc_.success = acc_.late = acc_.dropped = acc_.arrived;
}

void Shard::reset(std::uint64_t /*world_seed*/, std::uint64_t shard_seed) {
  abandoned_ += static_cast<double>(heap_.size());
  heap_.clear();
  out_.clear();
  rng_.seed(shard_seed);
  exo_.seed(derive_seed(shard_seed, {0xE40}));
  clock_ = step_start_ = 0;
  step_ = 0;
  target_ = -1;
  share_ = 0;
  cloud_ = false;
  // The burst chain starts in its stationary distribution.
  const double p_burst = cfg_.burst_start + cfg_.burst_end > 0
                             ? cfg_.burst_start / (cfg_.burst_start + cfg_.burst_end)
                             : 0.0;
  burst_ = exo_.uniform() < p_burst;
  serial_ = 0;
  seq_ = 0;
  free_at_.assign(static_cast<std::size_t>(gpus_), 0.0);
  clear_acc();
  last_ = acc_;
  ewma_success_.assign(static_cast<std::size_t>(c_), 1.0);
  ewma_fwd_ = ewma_cloud_ = 1.0;
  nbr_load_.assign(static_cast<std::size_t>(k_), 0.f);
  nbr_wait_.assign(static_cast<std::size_t>(k_), 0.f);
  next_arrival_ = 0;
  next_arrival();
}

double Shard::jitter(double sigma) {
  return sigma > 0 ? std::exp(sigma * rng_.normal() - 0.5 * sigma * sigma) : 1.0;
}

void Shard::next_arrival() {
  const double rate = rate_per_ms_ * (burst_ ? cfg_.burst_factor : 1.0);
  if (rate <= 0) {
    next_arrival_ = std::numeric_limits<double>::infinity();
    return;
  }
  double u = exo_.uniform();
  while (u <= 0) u = exo_.uniform();
  next_arrival_ += -std::log(u) / rate;
}

void Shard::push(double t, std::uint32_t type, const Query& q) {
  heap_.push_back(Event{t, seq_++, q, type, 0});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

void Shard::observe(float* out) const {
  const double cap = gpus_ * cfg_.decision_ms;
  const double min_free = free_at_.front();
  double fin = 0, ok = 0;
  for (int c = 0; c < c_; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    fin += last_.success[cu] + last_.late[cu] + last_.dropped[cu];
    ok += last_.success[cu];
  }
  int i = 0;
  out[i++] = static_cast<float>(last_.work_ms / cap);
  out[i++] = static_cast<float>(std::max(0.0, min_free - clock_) / cfg_.decision_ms);
  out[i++] = static_cast<float>(fin > 0 ? ok / fin : 1.0);
  for (int c = 0; c < c_; ++c)
    out[i++] = static_cast<float>(last_.arrived[static_cast<std::size_t>(c)] /
                                  cls_nominal_[static_cast<std::size_t>(c)]);
  for (int c = 0; c < c_; ++c)
    out[i++] = static_cast<float>(ewma_success_[static_cast<std::size_t>(c)]);
  for (int j = 0; j < k_; ++j) out[i++] = nbr_load_[static_cast<std::size_t>(j)];
  for (int j = 0; j < k_; ++j) out[i++] = nbr_wait_[static_cast<std::size_t>(j)];
  out[i++] = static_cast<float>(ewma_fwd_);
  out[i++] = static_cast<float>(ewma_cloud_);
  double arrived = 0;
  for (double a : last_.arrived) arrived += a;
  out[i++] = static_cast<float>(arrived / nominal_per_step_);
}

void Shard::act(int action, const GlobalObs& global, std::vector<WorkRecord>& /*outbox*/) {
  const int na = spec_->num_actions();
  MARLSCHED_REQUIRE(action >= 0 && action < na,
                    "aset action " << action << " out of range [0, " << na << ")");
  const int half = na / 2, s = static_cast<int>(cfg_.shares.size());
  cloud_ = action >= half;
  const int b = action % half;
  target_ = b == 0 ? -1 : (b - 1) / s;
  share_ = b == 0 ? 0.0 : cfg_.shares[static_cast<std::size_t>((b - 1) % s)];
  // Neighbour load as exchanged (the allgathered public fields of this step).
  if (global.data != nullptr)
    for (int j = 0; j < k_; ++j) {
      const float* row =
          global.row(topo_->nbrs[static_cast<std::size_t>(agent_)][static_cast<std::size_t>(j)]);
      nbr_load_[static_cast<std::size_t>(j)] = row[0];
      nbr_wait_[static_cast<std::size_t>(j)] = row[1];
    }
}

void Shard::send(int dest, double t_at, const Query& q) {
  out_.append(dest, Wire{t_at, q});
}

void Shard::local_arrival(double t) {
  const double u = exo_.uniform();
  int c = 0;
  while (c + 1 < c_ && u >= mix_cdf_[static_cast<std::size_t>(c)]) ++c;
  Query q;
  q.t0 = t;
  q.id = (static_cast<std::uint64_t>(agent_) << 40) | serial_++;
  q.ingress = agent_;
  q.cls = static_cast<std::uint8_t>(c);
  arrived_ += 1;
  cls_arrived_[static_cast<std::size_t>(c)] += 1;
  acc_.arrived[static_cast<std::size_t>(c)] += 1;
  if (cloud_ && feasible_[static_cast<std::size_t>(k_ * c_ + c)]) {
    // The cloud: elastic, answers after its round trip and processing.
    q.via = 2;
    to_cloud_ += 1;
    acc_.to_cloud += 1;
    const double resp =
        (2 * topo_->cloud[static_cast<std::size_t>(agent_)] + cfg_.cloud_proc_ms[q.cls]) *
        jitter(cfg_.cloud_jitter);
    q.status = kServed;
    push(t + resp, kResult, q);
    return;
  }
  if (target_ >= 0 && feasible_[static_cast<std::size_t>(target_ * c_ + c)] &&
      (share_ >= 1.0 || rng_.uniform() < share_)) {
    const int j = topo_->nbrs[static_cast<std::size_t>(agent_)][static_cast<std::size_t>(target_)];
    q.via = 1;
    forwarded_ += 1;
    acc_.forwarded += 1;
    send(j, t + topo_->at(agent_, j), q);
    return;
  }
  admit(q, t);
}

void Shard::admit(Query q, double t) {
  // free_at_ is a min-heap of the GPUs' free times: FCFS takes the earliest free GPU.
  const double start = std::max(t, free_at_.front());
  const double back = q.ingress == agent_ ? 0.0 : topo_->at(agent_, q.ingress);
  const auto cu = static_cast<std::size_t>(q.cls);
  if (start + cfg_.proc_ms[cu] + back - q.t0 > cfg_.deadline_ms[cu]) {
    q.status = kDropped;  // cannot make its deadline: rejected now, the ingress is told
    if (q.ingress == agent_)
      finish(q, t);
    else
      send(q.ingress, t + back, q);
    return;
  }
  const double service = cfg_.proc_ms[cu] * jitter(cfg_.proc_jitter);
  std::pop_heap(free_at_.begin(), free_at_.end(), std::greater<>{});
  free_at_.back() = start + service;
  std::push_heap(free_at_.begin(), free_at_.end(), std::greater<>{});
  acc_.work_ms += service;
  push(start + service, kDone, q);
}

void Shard::finish(const Query& q, double t) {
  const auto cu = static_cast<std::size_t>(q.cls);
  bool ok = false;
  if (q.status == kDropped) {
    dropped_ += 1;
    cls_dropped_[cu] += 1;
    acc_.dropped[cu] += 1;
  } else {
    const double lat = t - q.t0;
    latency_sum_ += lat;
    acc_.latency += lat;
    cls_latency_[cu] += lat;
    hist_[cu * latency::kBins + static_cast<std::size_t>(latency::bin(lat))] += 1;
    ok = lat <= cfg_.deadline_ms[cu] + 1e-9;
    if (ok) {
      success_ += 1;
      cls_success_[cu] += 1;
      acc_.success[cu] += 1;
    } else {
      late_ += 1;
      cls_late_[cu] += 1;
      acc_.late[cu] += 1;
    }
  }
  if (q.via == 1) {
    acc_.fwd_n += 1;
    acc_.fwd_ok += ok ? 1 : 0;
  } else if (q.via == 2) {
    acc_.cloud_n += 1;
    acc_.cloud_ok += ok ? 1 : 0;
  }
}

void Shard::window(int w, std::vector<WorkRecord>& outbox) {
  const int W = spec_->windows;
  const double t_end =
      w + 1 == W ? step_start_ + cfg_.decision_ms : step_start_ + cfg_.decision_ms * (w + 1) / W;
  for (;;) {
    const double te = heap_.empty() ? std::numeric_limits<double>::infinity() : heap_.front().t;
    const double ta = next_arrival_;
    if (std::min(te, ta) >= t_end) break;
    ++events_;
    if (ta < te) {
      local_arrival(ta);
      next_arrival();
      continue;
    }
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Event ev = heap_.back();
    heap_.pop_back();
    if (ev.type == kArrive) {
      admit(ev.q, ev.t);
    } else if (ev.type == kDone) {
      if (ev.q.ingress == agent_) {
        finish(ev.q, ev.t);
      } else {
        Query q = ev.q;
        q.status = kServed;
        send(q.ingress, ev.t + topo_->at(agent_, q.ingress), q);
      }
    } else {
      finish(ev.q, ev.t);
    }
  }
  clock_ = t_end;
  out_.flush(outbox);
}

void Shard::receive(const WorkRecord& record) {
  for (Wire w : WorkBatches::items<Wire>(record, "aset")) {
    if (w.t_at < clock_) {  // only with fewer windows than exactness needs
      late_deliveries_ += 1;
      late_delivery_ms_ += clock_ - w.t_at;
      w.t_at = clock_;
    }
    if (w.q.status == kPending) {
      received_ += 1;
      push(w.t_at, kArrive, w.q);
    } else {
      push(w.t_at, kResult, w.q);
    }
  }
}

StepOutcome Shard::advance() {
  StepOutcome o;
  double ok = 0, fail = 0;
  for (int c = 0; c < c_; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    ok += acc_.success[cu];
    fail += acc_.late[cu] + acc_.dropped[cu];
    const double fin = acc_.success[cu] + acc_.late[cu] + acc_.dropped[cu];
    if (fin > 0) ewma_success_[cu] = 0.7 * ewma_success_[cu] + 0.3 * acc_.success[cu] / fin;
  }
  if (acc_.fwd_n > 0) ewma_fwd_ = 0.7 * ewma_fwd_ + 0.3 * acc_.fwd_ok / acc_.fwd_n;
  if (acc_.cloud_n > 0) ewma_cloud_ = 0.7 * ewma_cloud_ + 0.3 * acc_.cloud_ok / acc_.cloud_n;
  o.reward = (ok - cfg_.w_fail * fail) / nominal_per_step_;
  double late = 0, dropped = 0;
  for (int c = 0; c < c_; ++c) {
    late += acc_.late[static_cast<std::size_t>(c)];
    dropped += acc_.dropped[static_cast<std::size_t>(c)];
  }
  o.components = {ok, late, dropped, acc_.forwarded, acc_.to_cloud, acc_.latency};
  last_ = acc_;
  clear_acc();
  // The burst chain moves once per interval; arrivals already drawn past the interval keep
  // their time (memorylessness makes the switch exact at the next draw).
  const bool was = burst_;
  burst_ = burst_ ? !(exo_.uniform() < cfg_.burst_end) : exo_.uniform() < cfg_.burst_start;
  step_ += 1;
  step_start_ = step_ * cfg_.decision_ms;
  clock_ = step_start_;
  if (burst_ != was) {  // redraw the next arrival at the new rate from the interval start
    next_arrival_ = step_start_;
    next_arrival();
  }
  o.truncated = step_ >= cfg_.episode_steps;
  return o;
}

std::map<std::string, double> Shard::counters() const {
  std::map<std::string, double> m = {{"arrived", arrived_},
                                     {"success", success_},
                                     {"late", late_},
                                     {"dropped", dropped_},
                                     {"abandoned", abandoned_},
                                     {"in_system", static_cast<double>(heap_.size())},
                                     {"forwarded", forwarded_},
                                     {"received", received_},
                                     {"to_cloud", to_cloud_},
                                     {"latency_ms_sum", latency_sum_},
                                     {"late_deliveries", late_deliveries_},
                                     {"late_delivery_ms", late_delivery_ms_},
                                     {"events", static_cast<double>(events_)}};
  for (int c = 0; c < c_; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    const std::string& name = cfg_.classes[cu];
    m["arrived/" + name] = cls_arrived_[cu];
    m["success/" + name] = cls_success_[cu];
    m["late/" + name] = cls_late_[cu];
    m["dropped/" + name] = cls_dropped_[cu];
    m["latency_ms_sum/" + name] = cls_latency_[cu];
    for (int b = 0; b < latency::kBins; ++b)
      m[latency_bin_key(name, b)] = hist_[cu * latency::kBins + static_cast<std::size_t>(b)];
  }
  return m;
}

namespace {
constexpr std::uint32_t kStateMagic = 0xA5E7'0001;
}  // namespace

template <class Self, class IO>
void Shard::state_fields(Self& s, IO& io) {
  io(s.clock_, s.step_start_, s.step_, s.target_, s.share_, s.cloud_, s.burst_, s.next_arrival_,
     s.serial_, s.seq_, s.free_at_, s.heap_);
  for (auto* a : {&s.acc_, &s.last_})
    io(a->arrived, a->success, a->late, a->dropped)
        .packed(a->latency, a->forwarded, a->to_cloud, a->work_ms, a->fwd_ok, a->fwd_n, a->cloud_ok,
                a->cloud_n);
  io(s.ewma_success_, s.ewma_fwd_, s.ewma_cloud_, s.nbr_load_, s.nbr_wait_);
  io.packed(s.arrived_, s.success_, s.late_, s.dropped_, s.abandoned_, s.forwarded_, s.received_,
            s.to_cloud_, s.latency_sum_, s.late_deliveries_, s.late_delivery_ms_);
  io(s.cls_arrived_, s.cls_success_, s.cls_late_, s.cls_dropped_, s.hist_, s.cls_latency_,
     s.events_);
}

std::vector<std::byte> Shard::save_state() const {
  auto w = shard_state_writer(kStateMagic, agent_, {&rng_, &exo_});
  state_fields(*this, w);
  return w.bytes();
}

void Shard::load_state(const std::vector<std::byte>& state) {
  auto r = shard_state_reader(state, "aset shard state", kStateMagic, agent_, {&rng_, &exo_});
  state_fields(*this, r);
  const auto cs = static_cast<std::size_t>(c_);
  bool fits = free_at_.size() == static_cast<std::size_t>(gpus_) && ewma_success_.size() == cs &&
              nbr_load_.size() == static_cast<std::size_t>(k_) &&
              nbr_wait_.size() == static_cast<std::size_t>(k_) && cls_arrived_.size() == cs &&
              cls_success_.size() == cs && cls_late_.size() == cs && cls_dropped_.size() == cs &&
              hist_.size() == cs * latency::kBins && cls_latency_.size() == cs;
  for (const Acc* a : {&acc_, &last_})
    fits = fits && a->arrived.size() == cs && a->success.size() == cs && a->late.size() == cs &&
           a->dropped.size() == cs;
  if (!fits) MARLSCHED_THROW(InputError, "aset shard state: does not match this configuration");
  std::make_heap(heap_.begin(), heap_.end(), Later{});
  std::make_heap(free_at_.begin(), free_at_.end(), std::greater<>{});
  out_.clear();
}

std::vector<std::pair<std::string, double>> summarize(const Config& cfg,
                                                      const std::map<std::string, double>& c) {
  auto get = [&](const std::string& k) {
    const auto it = c.find(k);
    return it == c.end() ? 0.0 : it->second;
  };
  std::vector<std::pair<std::string, double>> out;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // p99 from the summed histograms of some classes.
  auto p99 = [&](const std::vector<std::string>& classes) {
    std::vector<double> h(latency::kBins, 0.0);
    for (const auto& name : classes)
      for (int b = 0; b < latency::kBins; ++b)
        h[static_cast<std::size_t>(b)] += get(latency_bin_key(name, b));
    return latency::quantile_upper(h, 0.99);
  };
  // Success, drop and late rates of finished queries, mean and p99 latency of answered ones.
  auto rates = [&](const std::string& suffix, double ok, double late, double drop, double lat,
                   double tail) {
    const double fin = ok + late + drop;
    out.emplace_back("success_rate" + suffix, fin > 0 ? ok / fin : nan);
    out.emplace_back("drop_rate" + suffix, fin > 0 ? drop / fin : nan);
    out.emplace_back("late_rate" + suffix, fin > 0 ? late / fin : nan);
    out.emplace_back("mean_latency_ms" + suffix, ok + late > 0 ? lat / (ok + late) : nan);
    out.emplace_back("p99_latency_ms" + suffix, tail);
  };
  rates("", get("success"), get("late"), get("dropped"), get("latency_ms_sum"), p99(cfg.classes));
  for (const auto& name : cfg.classes)
    rates("/" + name, get("success/" + name), get("late/" + name), get("dropped/" + name),
          get("latency_ms_sum/" + name), p99({name}));
  return out;
}

}  // namespace marlsched::aset
