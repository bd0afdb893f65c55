#include "train/world.hpp"

#include <cstring>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/serialize.hpp"
#include "dist/watchdog.hpp"

namespace marlsched {

namespace {
struct RecordHeader {
  std::int32_t copy, dest;
  std::uint32_t size;
};
}  // namespace

World::World(const EnvFactory& factory, const dist::Comm& comm, int agents_per_rank, int copies,
             std::uint64_t seed)
    : factory_(factory),
      comm_(comm),
      spec_(factory.spec()),
      k_(agents_per_rank),
      copies_(copies),
      n_(agents_per_rank * comm.size()),
      first_(agents_per_rank * comm.rank()),
      d_(spec_.obs_dim()),
      c_(static_cast<int>(spec_.reward_components.size())),
      seed_(seed) {
  MARLSCHED_CHECK(k_ > 0 && copies_ > 0, "agents per rank and copies must be positive");
  for (int c = 0; c < copies_; ++c)
    for (int k = 0; k < k_; ++k) shards_.push_back(factory.make_shard(first_ + k));
  episode_.assign(static_cast<std::size_t>(copies_), 0);
  ep_step_.assign(static_cast<std::size_t>(copies_), 0);
  outcome_.resize(shards_.size());
  done_.assign(static_cast<std::size_t>(copies_), 0);
  trunc_.assign(static_cast<std::size_t>(copies_), 0);
  obs_.resize(static_cast<std::size_t>(copies_ * n_ * d_));
  terminal_obs_.resize(obs_.size());
}

std::uint64_t episode_world_seed(std::uint64_t seed, int copy, std::uint64_t episode) {
  return derive_seed(seed, {static_cast<std::uint64_t>(copy), episode});
}

std::uint64_t episode_shard_seed(std::uint64_t seed, int copy, std::uint64_t episode, int agent) {
  return derive_seed(
      seed, {static_cast<std::uint64_t>(copy), episode, static_cast<std::uint64_t>(agent) + 1});
}

std::vector<std::uint64_t> episode_shard_seeds(std::uint64_t seed, int copy, std::uint64_t episode,
                                               int agents) {
  std::vector<std::uint64_t> seeds(static_cast<std::size_t>(agents));
  for (int a = 0; a < agents; ++a)
    seeds[static_cast<std::size_t>(a)] = episode_shard_seed(seed, copy, episode, a);
  return seeds;
}

void World::set_common_episodes(int group) {
  MARLSCHED_CHECK(group >= 1, "common episodes in groups of " << group);
  group_ = group;
}

void World::set_privileged(bool on) {
  MARLSCHED_CHECK(!on || spec_.privileged_dim() > 0,
                  "env '" << spec_.name << "' has no privileged fields to gather");
  pd_ = on ? spec_.privileged_dim() : 0;
  priv_.assign(static_cast<std::size_t>(copies_ * n_ * pd_), 0.f);
  terminal_priv_ = priv_;
}

void World::set_every_shard(bool on) {
  every_.clear();
  replicas_.clear();
  if (!on) return;
  for (int c = 0; c < copies_; ++c)
    for (int a = 0; a < n_; ++a) {
      if (a >= first_ && a < first_ + k_) {
        every_.push_back(shards_[static_cast<std::size_t>(c * k_ + a - first_)].get());
      } else {
        replicas_.push_back(factory_.make_shard(a));
        every_.push_back(replicas_.back().get());
      }
    }
}

void World::sync_replicas() {
  if (replicas_.empty()) return;
  const double t0 = now();
  ByteWriter w;
  for (const auto& s : shards_) w.put_vector(s->save_state());
  state_send_ = std::move(w.bytes());
  const double t1 = now();
  comm_.allgatherv(state_send_, state_recv_, state_displs_);
  const double t2 = now();
  for (int r = 0; r < comm_.size(); ++r) {
    if (r == comm_.rank()) continue;
    const auto begin = static_cast<std::size_t>(state_displs_[static_cast<std::size_t>(r)]);
    const auto end = static_cast<std::size_t>(state_displs_[static_cast<std::size_t>(r) + 1]);
    ByteReader in(state_recv_.data() + begin, end - begin, "shard states of another rank");
    for (int c = 0; c < copies_; ++c)
      for (int k = 0; k < k_; ++k)
        every_[static_cast<std::size_t>(c * n_ + r * k_ + k)]->load_state(
            in.get_vector<std::byte>());
    MARLSCHED_CHECK(in.done(), "shard states of rank " << r << ": trailing bytes");
  }
  times_.env += (t1 - t0) + (now() - t2);
  times_.gather += t2 - t1;
}

void World::reset_copy(int c) {
  const auto cu = static_cast<std::uint64_t>(c);
  const int sc = c / group_;  // the copy whose episodes this one runs
  const std::uint64_t world_seed = episode_world_seed(seed_, sc, episode_[cu]);
  for (int k = 0; k < k_; ++k)
    shard(c, k).reset(world_seed, episode_shard_seed(seed_, sc, episode_[cu], first_ + k));
  episode_[cu] += 1;
  ep_step_[cu] = 0;
}

void World::reset() {
  for (int c = 0; c < copies_; ++c) reset_copy(c);
  gather_fresh();
}

void World::gather_fresh() {
  for (auto& o : outcome_) {
    o = StepOutcome{};
    o.components.assign(static_cast<std::size_t>(c_), 0.0);
  }
  std::fill(done_.begin(), done_.end(), 0);
  gather(gathered_);
  sync_replicas();
}

void World::gather(std::vector<float>& into) {
  const std::size_t p = packet();
  std::vector<float>& send = gather_send_;  // every float is written below
  send.resize(static_cast<std::size_t>(copies_ * k_) * p);
  const double t0 = now();
  for (int c = 0; c < copies_; ++c)
    for (int k = 0; k < k_; ++k) {
      const std::size_t i = static_cast<std::size_t>(c * k_ + k);
      float* row = send.data() + i * p;
      shards_[i]->observe(row);
      const auto& o = outcome_[i];
      row[d_] = static_cast<float>(o.reward);
      for (int j = 0; j < c_; ++j)
        row[d_ + 1 + j] = o.components.empty() ? 0.f : static_cast<float>(o.components[j]);
      row[d_ + 1 + c_] = o.terminated || o.truncated ? 1.f : 0.f;
      row[d_ + 2 + c_] = o.truncated ? 1.f : 0.f;
      if (pd_ > 0) shards_[i]->privileged(row + d_ + 3 + c_);
    }
  const double t1 = now();
  std::vector<float>& recv = gather_recv_;
  recv.resize(send.size() * static_cast<std::size_t>(comm_.size()));
  comm_.allgather(send.data(), static_cast<int>(send.size()), recv.data());
  const double t2 = now();
  times_.env += t1 - t0;
  times_.gather += t2 - t1;
  // [rank][copy][k] -> [copy][agent]
  into.resize(recv.size());
  for (int r = 0; r < comm_.size(); ++r)
    for (int c = 0; c < copies_; ++c)
      for (int k = 0; k < k_; ++k) {
        const float* src = recv.data() + (static_cast<std::size_t>((r * copies_ + c) * k_ + k)) * p;
        float* dst = into.data() + static_cast<std::size_t>(c * n_ + r * k_ + k) * p;
        std::memcpy(dst, src, p * sizeof(float));
      }
  for (int c = 0; c < copies_; ++c)
    for (int a = 0; a < n_; ++a)
      std::memcpy(obs_.data() + static_cast<std::size_t>((c * n_ + a) * d_),
                  into.data() + static_cast<std::size_t>(c * n_ + a) * p,
                  static_cast<std::size_t>(d_) * sizeof(float));
  if (pd_ > 0)
    for (int c = 0; c < copies_; ++c)
      for (int a = 0; a < n_; ++a)
        std::memcpy(priv_.data() + static_cast<std::size_t>((c * n_ + a) * pd_),
                    into.data() + static_cast<std::size_t>(c * n_ + a) * p + d_ + 3 + c_,
                    static_cast<std::size_t>(pd_) * sizeof(float));
}

void World::exchange(std::vector<std::vector<WorkRecord>>& outboxes) {
  const double t0 = now();
  // Two passes over the records: size each destination rank's section, then write the headers
  // and payloads straight into the packed send buffer.
  const auto ranks = static_cast<std::size_t>(comm_.size());
  xbytes_.assign(ranks, 0);
  for (const auto& box : outboxes)
    for (const auto& rec : box) {
      MARLSCHED_CHECK(rec.dest >= 0 && rec.dest < n_, "work record for agent " << rec.dest);
      xbytes_[static_cast<std::size_t>(rec.dest / k_)] += sizeof(RecordHeader) + rec.payload.size();
    }
  xchg_.layout(xbytes_);
  xpos_.resize(ranks);
  for (std::size_t r = 0; r < ranks; ++r) xpos_[r] = static_cast<std::size_t>(xchg_.sdispl[r]);
  for (std::size_t i = 0; i < outboxes.size(); ++i) {
    const int c = static_cast<int>(i) / k_;
    for (auto& rec : outboxes[i]) {
      std::size_t& pos = xpos_[static_cast<std::size_t>(rec.dest / k_)];
      const RecordHeader h{c, rec.dest, static_cast<std::uint32_t>(rec.payload.size())};
      std::memcpy(xchg_.send.data() + pos, &h, sizeof h);
      if (!rec.payload.empty())
        std::memcpy(xchg_.send.data() + pos + sizeof h, rec.payload.data(), rec.payload.size());
      pos += sizeof h + rec.payload.size();
      times_.records += 1;
      times_.bytes += sizeof h + rec.payload.size();
    }
    outboxes[i].clear();
  }
  const double t1 = now();
  comm_.alltoallv(xchg_);
  const double t2 = now();
  WorkRecord rec;
  for (std::size_t r = 0; r < ranks; ++r) {
    const std::byte* buf = xchg_.recv.data() + xchg_.rdispl[r];
    const auto size = static_cast<std::size_t>(xchg_.rcount[r]);
    std::size_t off = 0;
    while (off < size) {
      RecordHeader h;
      MARLSCHED_CHECK(off + sizeof h <= size, "truncated work record header");
      std::memcpy(&h, buf + off, sizeof h);
      off += sizeof h;
      MARLSCHED_CHECK(off + h.size <= size, "truncated work record");
      MARLSCHED_CHECK(h.dest >= first_ && h.dest < first_ + k_ && h.copy >= 0 && h.copy < copies_,
                      "work record for agent " << h.dest << " arrived at rank " << comm_.rank());
      rec.dest = h.dest;
      rec.payload.assign(buf + off, buf + off + h.size);
      shard(h.copy, h.dest - first_).receive(rec);
      off += h.size;
    }
  }
  const double t3 = now();
  times_.env += (t1 - t0) + (t3 - t2);
  times_.exchange += t2 - t1;
}

void World::step(const std::vector<int>& actions) {
  dist::heartbeat("env step");
  MARLSCHED_CHECK(static_cast<int>(actions.size()) == copies_ * k_,
                  "expected " << copies_ * k_ << " actions, got " << actions.size());
  double mark = now();  // env time is counted between exchanges
  outboxes_.resize(shards_.size());
  for (int c = 0; c < copies_; ++c) {
    const GlobalObs g = obs(c);
    for (int k = 0; k < k_; ++k) {
      const std::size_t i = static_cast<std::size_t>(c * k_ + k);
      shards_[i]->act(actions[i], g, outboxes_[i]);
    }
  }
  const int windows = spec_.windows;
  for (int w = 0; w < windows; ++w) {
    for (std::size_t i = 0; i < shards_.size(); ++i) shards_[i]->window(w, outboxes_[i]);
    if (w + 1 < windows) {
      times_.env += now() - mark;
      exchange(outboxes_);
      mark = now();
    }
  }
  for (std::size_t i = 0; i < shards_.size(); ++i) outcome_[i] = shards_[i]->advance();
  for (int c = 0; c < copies_; ++c) ep_step_[static_cast<std::size_t>(c)] += 1;
  times_.env += now() - mark;
  exchange(outboxes_);

  gather(gathered_);
  // Episode ends: every shard of a world must agree (shared clock).
  bool any_done = false;
  const std::size_t p = packet();
  for (int c = 0; c < copies_; ++c) {
    const float* first = gathered_.data() + static_cast<std::size_t>(c * n_) * p;
    const bool d = first[d_ + 1 + c_] != 0.f;
    for (int a = 1; a < n_; ++a)
      MARLSCHED_CHECK(
          (gathered_[static_cast<std::size_t>(c * n_ + a) * p + d_ + 1 + c_] != 0.f) == d,
          "env shards of copy " << c << " disagree on the episode end");
    done_[static_cast<std::size_t>(c)] = d ? 1 : 0;
    trunc_[static_cast<std::size_t>(c)] = first[d_ + 2 + c_] != 0.f ? 1 : 0;
    any_done = any_done || d;
  }
  if (any_done) {
    terminal_obs_ = obs_;
    terminal_priv_ = priv_;
    for (int c = 0; c < copies_; ++c)
      if (done_[static_cast<std::size_t>(c)]) reset_copy(c);
    // Re-gather observations (the new episodes' first states); keep last step's rewards.
    std::vector<float> fresh;
    gather(fresh);
    for (int c = 0; c < copies_; ++c)
      for (int a = 0; a < n_; ++a)
        std::memcpy(gathered_.data() + static_cast<std::size_t>(c * n_ + a) * p,
                    fresh.data() + static_cast<std::size_t>(c * n_ + a) * p,
                    static_cast<std::size_t>(d_) * sizeof(float));
  }
  sync_replicas();
}

PolicyInput World::policy_input() const {
  PolicyInput in;
  in.spec = &spec_;
  in.copies = copies_;
  in.num_agents = n_;
  in.first_agent = first_;
  in.local_agents = k_;
  for (int c = 0; c < copies_; ++c) {
    in.global.push_back(obs(c));
    in.episode_step.push_back(ep_step_[static_cast<std::size_t>(c)]);
    const std::uint64_t ep = episode_[static_cast<std::size_t>(c)];
    in.episode_seed.push_back(ep == 0 ? 0 : episode_world_seed(seed_, c / group_, ep - 1));
  }
  in.shards.reserve(shards_.size());
  for (const auto& s : shards_) in.shards.push_back(s.get());
  if (k_ == n_)
    in.every_shard = in.shards;
  else
    in.every_shard.assign(every_.begin(), every_.end());
  return in;
}

std::vector<std::byte> World::save_state() const {
  ByteWriter w;
  w.put<std::int32_t>(n_);
  w.put<std::int32_t>(first_);
  w.put<std::int32_t>(copies_);
  w.put_vector(episode_);
  w.put_vector(ep_step_);
  for (const auto& s : shards_) w.put_vector(s->save_state());
  return std::move(w.bytes());
}

void World::load_state(const std::vector<std::byte>& state) {
  ByteReader r(state.data(), state.size(), "world state");
  const auto n = r.get<std::int32_t>(), first = r.get<std::int32_t>(),
             copies = r.get<std::int32_t>();
  if (n != n_ || first != first_ || copies != copies_)
    MARLSCHED_THROW(InputError, "world state is for " << n << " agents (first " << first << ", "
                                                      << copies << " copies), this rank has " << n_
                                                      << " (first " << first_ << ", " << copies_
                                                      << ")");
  episode_ = r.get_vector<std::uint64_t>();
  ep_step_ = r.get_vector<int>();
  if (static_cast<int>(episode_.size()) != copies_ || static_cast<int>(ep_step_.size()) != copies_)
    MARLSCHED_THROW(InputError, "world state: bad episode counters");
  for (auto& s : shards_) s->load_state(r.get_vector<std::byte>());
  if (!r.done()) MARLSCHED_THROW(InputError, "world state: trailing bytes");
  gather_fresh();
}

std::map<std::string, double> World::global_counters() const {
  std::map<std::string, double> sum;
  for (const auto& s : shards_)
    for (const auto& [k, v] : s->counters()) sum[k] += v;
  std::vector<double> vals;
  for (const auto& [k, v] : sum) vals.push_back(v);
  // Every shard reports the same keys, so every rank packs the same layout.
  comm_.allreduce_sum(vals.data(), static_cast<int>(vals.size()));
  std::size_t i = 0;
  for (auto& [k, v] : sum) v = vals[i++];
  return sum;
}

}  // namespace marlsched
