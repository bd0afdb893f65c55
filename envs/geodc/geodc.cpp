#include "envs/geodc/geodc.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/serialize.hpp"

namespace marlsched::geodc {

Shard::Shard(std::shared_ptr<const Config> cfg, std::shared_ptr<const EnvSpec> spec,
             std::shared_ptr<const SiteData> site, int agent)
    : cfg_holder_(std::move(cfg)),
      cfg_(*cfg_holder_),
      spec_(std::move(spec)),
      site_(std::move(site)),
      agent_(agent),
      site_index_(cfg_.site_of(agent)),
      capacity_(cfg_.gpus[static_cast<std::size_t>(site_index_)]),
      classes_(cfg_.num_action_classes()),
      pue_(cfg_.pue[static_cast<std::size_t>(site_index_)]),
      trace_start_hour_(trace_start_hour(cfg_)) {}

std::string Shard::describe_inputs() const {
  // A step reads the hour's carbon intensity and price and looks 4 hours ahead; the message
  // names the largest magnitude of each series over those hours (and the hour before, the
  // step just completed) with its file and line.
  const auto h = epoch_hour();
  std::ostringstream o;
  o << "site " << cfg_.sites[static_cast<std::size_t>(site_index_)] << " near "
    << csv::format_datetime(h * 3600) << " UTC";
  const std::pair<const char*, const HourlySeries*> series[] = {
      {"carbon intensity", &site_->carbon}, {"price", &site_->price}};
  for (const auto& [name, s] : series) {
    std::int64_t worst = h - 1;
    for (std::int64_t k = h; k <= h + 4; ++k)
      if (!(std::abs(s->at(k)) <= std::abs(s->at(worst)))) worst = k;
    const std::string where = s->where(worst);
    o << "; largest " << name << " " << s->at(worst)
      << (where.empty() ? " (synthetic)" : " at " + where);
  }
  return o.str();
}

std::int64_t Shard::epoch_hour() const {
  return start_hour_ + static_cast<std::int64_t>(t_) * cfg_.slot_minutes / 60;
}

int Shard::transfer_slots(int dest, double data_gb) const {
  const int r0 = region_index(cfg_.regions[static_cast<std::size_t>(site_index_)]);
  const int r1 = region_index(cfg_.regions[static_cast<std::size_t>(cfg_.site_of(dest))]);
  const double seconds = data_gb * 8000.0 / region_mbps(r0, r1) + region_rtt_ms(r0, r1) / 1000.0;
  const double slot_s = cfg_.slot_minutes * 60.0;
  return std::max(1, static_cast<int>(std::ceil(seconds / slot_s)));
}

std::vector<Job> Shard::episode_arrivals(std::uint64_t world_seed, std::uint64_t shard_seed) {
  reset(world_seed, shard_seed);
  std::vector<Job> jobs;
  for (; t_ < cfg_.episode_slots; ++t_) {
    jobs.insert(jobs.end(), queue_.begin(), queue_.end());
    queue_.clear();
    if (t_ + 1 < cfg_.episode_slots) {
      t_ += 1;
      arrivals();
      t_ -= 1;
    }
  }
  t_ = 0;
  return jobs;
}

std::vector<Job> Shard::upcoming_arrivals(int slots) const {
  Shard ahead(*this);
  ahead.queue_.clear();
  std::vector<Job> jobs;
  for (int k = 0; k < slots && ahead.t_ + 1 < cfg_.episode_slots; ++k) {
    ahead.t_ += 1;
    ahead.arrivals();
    jobs.insert(jobs.end(), ahead.queue_.begin(), ahead.queue_.end());
    ahead.queue_.clear();
  }
  return jobs;
}

std::pair<double, double> Shard::energy_prices(int slot) const {
  return energy_prices_at_hour(slot_hour(slot));
}

std::pair<double, double> Shard::energy_prices_at_hour(std::int64_t epoch_hour) const {
  return {site_->price.at(epoch_hour), site_->carbon.at(epoch_hour)};
}

std::int64_t Shard::slot_hour(int slot) const {
  return start_hour_ + static_cast<std::int64_t>(slot) * cfg_.slot_minutes / 60;
}

void Shard::reset(std::uint64_t world_seed, std::uint64_t shard_seed) {
  rng_.seed(shard_seed);
  t_ = 0;
  discarded_ += static_cast<double>(queue_.size() + running_.size());
  queue_.clear();
  running_.clear();
  busy_ = 0;
  pending_transfer_kwh_ = 0.0;
  // All shards of one world share the start hour (same world_seed): one global clock.
  start_hour_ =
      trace_start_hour_ +
      static_cast<std::int64_t>(world_seed % static_cast<std::uint64_t>(cfg_.trace_days * 24));
  if (site_ && !site_->tasks.empty())
    trace_offset_ = static_cast<std::int64_t>(splitmix64(world_seed) %
                                              static_cast<std::uint64_t>(site_->trace_span));
  arrivals();
}

double Shard::arrival_rate_per_hour(int slot) const {
  const double utc_hour =
      static_cast<double>((start_hour_ % 24 + 24) % 24) + slot * cfg_.slot_hours();
  const double local = utc_hour + cfg_.utc_offsets[static_cast<std::size_t>(site_index_)];
  const double shape =
      1.0 + cfg_.diurnal_amplitude *
                std::cos(6.283185307179586 * (local - cfg_.diurnal_peak_hour) / 24.0);
  return cfg_.arrival_rates[static_cast<std::size_t>(site_index_)] * shape;
}

void Shard::enqueue(const Job& j) {
  if (static_cast<int>(queue_.size()) >= cfg_.max_queue) {
    dropped_ += 1;
    violations_ += 1;
    return;
  }
  queue_.push_back(j);
}

void Shard::arrivals() {
  if (t_ >= cfg_.episode_slots) return;
  const int max_gpus = capacity_;
  auto make_id = [&] { return (static_cast<std::uint64_t>(agent_) << 40) | serial_++; };
  if (cfg_.workload == "alibaba") {
    const auto& tasks = site_->tasks;
    const auto slot_s = static_cast<std::int64_t>(cfg_.slot_minutes) * 60;
    std::int64_t lo = (trace_offset_ + t_ * slot_s) % site_->trace_span;
    std::int64_t hi = lo + slot_s;
    auto take = [&](std::int64_t a, std::int64_t b) {
      auto it =
          std::lower_bound(tasks.begin(), tasks.end(), site_->trace_t0 + a,
                           [](const TraceTask& x, std::int64_t v) { return x.start_time < v; });
      for (; it != tasks.end() && it->start_time < site_->trace_t0 + b; ++it) {
        const int gpus = std::min(std::max(1, it->gpus), max_gpus);
        const int duration = std::max(1, static_cast<int>(std::ceil(it->duration_s / slot_s)));
        const double kappa =
            cfg_.slack_tiers[static_cast<std::size_t>(draw_weighted(rng_, cfg_.slack_probs))];
        Job j = make_job(job_type_for_gpus(gpus), gpus, duration, t_, kappa);
        j.id = make_id();
        j.origin = agent_;
        arrived_ += 1;
        enqueue(j);
      }
    };
    if (hi <= site_->trace_span) {
      take(lo, hi);
    } else {
      take(lo, site_->trace_span);
      take(0, hi - site_->trace_span);
    }
    return;
  }
  const auto n = rng_.poisson(arrival_rate_per_hour(t_) * cfg_.slot_hours());
  for (std::int64_t k = 0; k < n; ++k) {
    Job j = draw_job(rng_, cfg_.type_mix, cfg_.slack_tiers, cfg_.slack_probs, t_, cfg_.slot_hours(),
                     max_gpus);
    j.id = make_id();
    j.origin = agent_;
    arrived_ += 1;
    enqueue(j);
  }
}

void Shard::observe(float* out) const {
  const int busy = busy_gpus();
  double demand = 0, slack = 0;
  int urgent = 0, inbound = 0;
  for (const auto& j : queue_) {
    demand += j.gpus;
    slack += std::max(0, j.deadline - j.remaining + 1 - t_);
    if (t_ >= j.deadline - j.remaining + 1) ++urgent;
    if (j.available > t_) ++inbound;
  }
  const auto h = epoch_hour();
  HourFields& f = hour_fields_;
  if (f.hour != h) {
    const double ci = site_->carbon.at(h), pr = site_->price.at(h);
    const double ci_next = site_->carbon.mean(h + 1, 4), pr_next = site_->price.mean(h + 1, 4);
    const double local_hour = static_cast<double>((h % 24 + 24) % 24) +
                              cfg_.utc_offsets[static_cast<std::size_t>(site_index_)];
    f.hour = h;
    f.carbon = static_cast<float>(ci / 500.0);
    f.price = static_cast<float>(pr / 100.0);
    f.carbon_trend = static_cast<float>(std::clamp(ci > 0 ? ci_next / ci - 1.0 : 0.0, -1.0, 1.0));
    f.price_trend =
        static_cast<float>(std::clamp(std::abs(pr) > 1e-9 ? pr_next / pr - 1.0 : 0.0, -1.0, 1.0));
    f.sin = static_cast<float>(std::sin(6.283185307179586 * local_hour / 24.0));
    f.cos = static_cast<float>(std::cos(6.283185307179586 * local_hour / 24.0));
  }
  const double qn = static_cast<double>(queue_.size());
  const float v[] = {
      static_cast<float>(static_cast<double>(capacity_ - busy) / capacity_),
      f.carbon,
      f.price,
      static_cast<float>(std::min(4.0, demand / capacity_)),
      static_cast<float>(static_cast<double>(busy) / capacity_),
      static_cast<float>(qn / cfg_.max_queue),
      static_cast<float>(qn > 0 ? urgent / qn : 0.0),
      static_cast<float>(qn > 0 ? slack / qn / cfg_.episode_slots : 0.0),
      static_cast<float>(std::min(1.0, inbound / 16.0)),
      f.carbon_trend,
      f.price_trend,
      f.sin,
      f.cos,
      static_cast<float>(static_cast<double>(t_) / cfg_.episode_slots),
  };
  static_assert(sizeof(v) / sizeof(v[0]) == 14, "obs fields");
  std::memcpy(out, v, sizeof(v));
}

void Shard::privileged(float* out) const {
  const int per_hour = std::max(1, 60 / cfg_.slot_minutes);
  const int horizon[] = {per_hour, 4 * per_hour, 8 * per_hour};
  double load[] = {0, 0, 0};
  for (const Job& j : upcoming_arrivals(horizon[2]))
    for (int i = 0; i < 3; ++i)
      if (j.arrival - t_ <= horizon[i]) load[i] += static_cast<double>(j.gpus) * j.duration;
  for (int i = 0; i < 3; ++i)
    out[i] =
        static_cast<float>(std::min(4.0, load[i] / (static_cast<double>(capacity_) * horizon[i])));
  const auto h = epoch_hour();
  out[3] = static_cast<float>(site_->carbon.mean(h + 1, 12) / 500.0);
  out[4] = static_cast<float>(site_->price.mean(h + 1, 12) / 100.0);
}

void Shard::act(int action, const GlobalObs& /*global*/, std::vector<WorkRecord>& outbox) {
  const auto& targets = spec_->targets[static_cast<std::size_t>(agent_)];
  const int T = static_cast<int>(targets.size());
  MARLSCHED_CHECK(action >= 0 && action < spec_->num_actions(),
                  "geodc action " << action << " out of range [0, " << spec_->num_actions() << ")");
  // One (mode, target) decision per job class (one for the whole queue without classes).
  const int C = classes_;
  int decision[Config::kNumJobClasses];
  decode_action(action, C, T, decision);
  bool defer_of[Config::kNumJobClasses];
  int target_of[Config::kNumJobClasses];
  for (int c = 0; c < C; ++c) {
    defer_of[c] = decision[c] >= T;
    target_of[c] = targets[static_cast<std::size_t>(defer_of[c] ? decision[c] - T : decision[c])];
  }
  std::sort(queue_.begin(), queue_.end(), [](const Job& a, const Job& b) {
    return a.deadline != b.deadline ? a.deadline < b.deadline : a.id < b.id;
  });
  int free_gpus = capacity_ - busy_gpus();
  std::vector<Job>& keep = kept_;
  keep.clear();
  for (auto& j : queue_) {
    if (j.available > t_) {  // still in transfer
      keep.push_back(j);
      continue;
    }
    const int cls = C == 1 ? 0 : cfg_.action_class(j, t_);
    const bool defer = defer_of[cls];
    const int target = target_of[cls];
    const bool urgent = t_ >= j.deadline - j.remaining + 1;
    const bool may_start = !defer || urgent;
    if (may_start && j.gpus <= free_gpus) {
      free_gpus -= j.gpus;
      running_.push_back(j);
      busy_ += j.gpus;
      continue;
    }
    const bool forward = target != agent_ && j.hops < cfg_.max_hops && (defer ? !urgent : true);
    if (forward) {
      Job f = j;
      f.hops += 1;
      f.available = t_ + transfer_slots(target, f.data_gb);
      pending_transfer_kwh_ += cfg_.transfer_kwh_per_gb * f.data_gb;
      WorkRecord rec;
      rec.dest = target;
      rec.payload.resize(sizeof(Job));
      std::memcpy(rec.payload.data(), &f, sizeof(Job));
      outbox.push_back(std::move(rec));
      forwarded_ += 1;
      continue;
    }
    keep.push_back(j);
  }
  queue_.swap(keep);
}

StepOutcome Shard::advance() {
  const auto h = epoch_hour();
  const int busy = busy_gpus();
  double watts = (capacity_ - busy) * cfg_.idle_watts;
  double goodput = 0.0, viol_before = violations_;
  int busy_after = 0;
  std::size_t still = 0;  // the jobs still running move to the front, in order
  for (auto& j : running_) {
    watts += j.gpus * cfg_.busy_watts[static_cast<std::size_t>(j.type)];
    j.remaining -= 1;
    if (j.remaining == 0) {
      completed_ += 1;
      if (t_ <= j.deadline) {
        on_time_ += 1;
        goodput += j.gpus * j.duration * cfg_.slot_hours();
      } else if (!j.violated) {
        violations_ += 1;
      }
      continue;
    }
    if (!j.violated && t_ + j.remaining > j.deadline) {
      j.violated = 1;
      violations_ += 1;
    }
    running_[still++] = j;
    busy_after += j.gpus;
  }
  running_.resize(still);
  busy_ = busy_after;
  const double kwh = pue_ * watts / 1000.0 * cfg_.slot_hours() + pending_transfer_kwh_;
  pending_transfer_kwh_ = 0.0;
  const double cost = kwh * site_->price.at(h) / 1000.0;
  const double carbon = kwh * site_->carbon.at(h) / 1000.0;
  const double util = static_cast<double>(busy) / capacity_;
  for (auto& j : queue_) {
    // Earliest possible finish if it starts next slot (or when its transfer ends).
    const int start = std::max(t_ + 1, j.available);
    if (!j.violated && start + j.remaining - 1 > j.deadline) {
      j.violated = 1;
      violations_ += 1;
    }
  }
  t_ += 1;
  arrivals();
  const double viol = violations_ - viol_before;

  StepOutcome o;
  o.components = {goodput, util, kwh, cost, carbon, viol};
  o.reward = cfg_.w_work * goodput + cfg_.w_util * util - cfg_.w_cost * cost -
             cfg_.w_carbon * carbon - cfg_.w_sla * viol;
  o.truncated = t_ >= cfg_.episode_slots;
  return o;
}

void Shard::receive(const WorkRecord& record) {
  MARLSCHED_CHECK(record.payload.size() == sizeof(Job), "geodc received a record of "
                                                            << record.payload.size()
                                                            << " bytes, expected " << sizeof(Job));
  Job j;
  std::memcpy(&j, record.payload.data(), sizeof(Job));
  received_ += 1;
  enqueue(j);
}

std::map<std::string, double> Shard::counters() const {
  return {{"arrived", arrived_},
          {"completed", completed_},
          {"completed_on_time", on_time_},
          {"dropped", dropped_},
          {"sla_violations", violations_},
          {"forwarded", forwarded_},
          {"received", received_},
          {"discarded_at_reset", discarded_},
          {"queued", static_cast<double>(queue_.size())},
          {"running", static_cast<double>(running_.size())}};
}

namespace {
constexpr std::uint32_t kStateMagic = 0x67656F31;  // "geo1"
}

template <class Self, class IO>
void Shard::state_fields(Self& s, IO& io) {
  io(s.t_, s.start_hour_, s.trace_offset_, s.serial_, s.queue_, s.running_,
     s.pending_transfer_kwh_);
  io(s.arrived_, s.completed_, s.on_time_, s.dropped_, s.violations_, s.forwarded_, s.received_,
     s.discarded_);
}

std::vector<std::byte> Shard::save_state() const {
  auto w = shard_state_writer(kStateMagic, agent_, {&rng_});
  state_fields(*this, w);
  return std::move(w.bytes());
}

void Shard::load_state(const std::vector<std::byte>& state) {
  auto r = shard_state_reader(state, "geodc shard state", kStateMagic, agent_, {&rng_});
  state_fields(*this, r);
  r.finish();
  busy_ = 0;
  for (const auto& j : running_) busy_ += j.gpus;
}

}  // namespace marlsched::geodc
