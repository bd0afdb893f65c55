#pragma once
/// \file world.hpp
/// The environment copies hosted by one rank, and the per-step collectives that join them into
/// worlds. A world is one copy of the whole multi-agent environment: agent a lives on rank
/// a / K (K = agents per rank). A rank hosts K agents in each of E copies (E = envs per rank).
///
/// Each step costs three collectives, independent of K and E:
///   * MPI_Alltoall + MPI_Alltoallv of forwarded work records (src/dist Comm::alltoallv), once
///     per exchange window of the env (EnvSpec::windows; 1 for most envs);
///   * MPI_Allgather of one packet per local shard: [observation | reward | components | done].
/// Several agents per rank therefore run through exactly the same code path as one. A world
/// asked for every shard (set_every_shard, for a planner over every site) adds one
/// MPI_Allgatherv of the shards' states (and one MPI_Allgather of their sizes) per step.

#include <cstdint>
#include <memory>
#include <vector>

#include "core/env.hpp"
#include "core/policy.hpp"
#include "dist/comm.hpp"

namespace marlsched {

/// Accumulated wall time (seconds) per phase of the step loop.
struct StepTimes {
  double env = 0, exchange = 0, gather = 0;
  std::uint64_t records = 0, bytes = 0;
};

/// The seeds that episode `episode` (0, 1, ...) of env copy `copy` in a world seeded `seed` hands
/// its shards: one world seed shared by every shard, and each agent's own. What World::reset uses,
/// so that evaluation tools (e.g. an env's hindsight bound) can rebuild the same episodes.
std::uint64_t episode_world_seed(std::uint64_t seed, int copy, std::uint64_t episode);
std::uint64_t episode_shard_seed(std::uint64_t seed, int copy, std::uint64_t episode, int agent);
/// episode_shard_seed of agents 0 .. agents-1: what EnvFactory::episode_bound takes.
std::vector<std::uint64_t> episode_shard_seeds(std::uint64_t seed, int copy, std::uint64_t episode,
                                               int agents);

class World {
 public:
  World(const EnvFactory& factory, const dist::Comm& comm, int agents_per_rank, int copies,
        std::uint64_t seed);

  const EnvSpec& spec() const { return spec_; }
  int copies() const { return copies_; }
  int local_agents() const { return k_; }
  int num_agents() const { return n_; }
  int first_agent() const { return first_; }
  const dist::Comm& comm() const { return comm_; }

  /// Copies c and c' run the same episodes (arrivals, traces: common random numbers) when
  /// c / group == c' / group; 1 (the default): each copy its own. Set before reset().
  void set_common_episodes(int group);
  /// Whether the per-step allgather also carries every shard's privileged fields
  /// (EnvSpec::privileged_fields), for a learner that trains a critic on them
  /// (Learner::wants_privileged); they then come with obs() and terminal_obs(). Set before reset().
  void set_privileged(bool on);
  /// Whether every rank also holds every other rank's shards, for a policy that plans the whole
  /// world from its state (Policy::needs_every_agent): read-only replicas (EnvFactory::make_shard)
  /// restored after every step from their ranks' save_state(), gathered with one MPI_Allgatherv
  /// of the states. They come with policy_input() (PolicyInput::every_shard); with every agent
  /// on this rank they are its own shards, and nothing is gathered. Set before reset().
  void set_every_shard(bool on);

  /// Resets every copy (new episodes) and gathers the first observations.
  void reset();
  /// Applies local actions, indexed [copy * K + local agent], advances one slot, exchanges work,
  /// gathers. Copies whose episode ended are reset after their terminal data is recorded.
  void step(const std::vector<int>& actions);

  /// Global observations of a copy: num_agents rows of obs_dim (after step: the next state, or
  /// the first state of the new episode if the copy was reset).
  GlobalObs obs(int copy) const { return view(obs_, priv_, copy); }
  /// What a policy needs to act now: every copy's global observations and episode step.
  PolicyInput policy_input() const;
  /// Terminal global observations of a copy whose episode ended in the last step.
  GlobalObs terminal_obs(int copy) const { return view(terminal_obs_, terminal_priv_, copy); }
  /// Last step's reward of (copy, agent), any agent of the world.
  float reward(int copy, int agent) const {
    return gathered_[static_cast<std::size_t>(copy * n_ + agent) * packet() +
                     static_cast<std::size_t>(d_)];
  }
  /// Last step's reward component `i` of (copy, agent).
  float component(int copy, int agent, int i) const {
    return gathered_[static_cast<std::size_t>(copy * n_ + agent) * packet() +
                     static_cast<std::size_t>(d_ + 1 + i)];
  }
  /// Whether the copy's episode ended in the last step, and whether it was a truncation.
  bool done(int copy) const { return done_[static_cast<std::size_t>(copy)] != 0; }
  bool truncated(int copy) const { return trunc_[static_cast<std::size_t>(copy)] != 0; }
  /// Number (from 0) of the current episode of a copy.
  std::uint64_t episode_index(int copy) const {
    return episode_[static_cast<std::size_t>(copy)] - 1;
  }
  /// Steps taken in the current episode of a copy.
  int episode_step(int copy) const { return ep_step_[static_cast<std::size_t>(copy)]; }

  Shard& shard(int copy, int local_agent) {
    return *shards_[static_cast<std::size_t>(copy * k_ + local_agent)];
  }
  const StepTimes& times() const { return times_; }
  /// This rank's part of the world state (episode counters and every local shard), for
  /// checkpoints. Only valid at a step boundary.
  std::vector<std::byte> save_state() const;
  /// Restores save_state() output and re-gathers the observations (a collective).
  void load_state(const std::vector<std::byte>& state);
  /// Sum over all ranks of every shard's counter (a collective).
  std::map<std::string, double> global_counters() const;

 private:
  void gather(std::vector<float>& into);
  /// Clears last-step outcomes and episode-end flags, then gathers (after reset or restore).
  void gather_fresh();
  void reset_copy(int c);
  /// Restores the replicas (set_every_shard) from every rank's shard states (a collective).
  void sync_replicas();
  /// Sends every shard's outbox to the destination ranks and delivers what arrives here;
  /// clears the outboxes.
  void exchange(std::vector<std::vector<WorkRecord>>& outboxes);
  /// One shard's part of the allgather: [observation | reward | components | done | truncated |
  /// privileged fields (set_privileged)].
  std::size_t packet() const { return static_cast<std::size_t>(d_ + c_ + 3 + pd_); }
  GlobalObs view(const std::vector<float>& obs, const std::vector<float>& priv, int copy) const {
    const auto c = static_cast<std::size_t>(copy);
    return GlobalObs{obs.data() + c * static_cast<std::size_t>(n_ * d_), n_, d_,
                     pd_ > 0 ? priv.data() + c * static_cast<std::size_t>(n_ * pd_) : nullptr, pd_};
  }

  const EnvFactory& factory_;
  const dist::Comm& comm_;
  dist::Exchange xchg_;                     // reused packed all-to-all buffers
  std::vector<std::size_t> xbytes_, xpos_;  // per destination rank
  EnvSpec spec_;
  int k_, copies_, n_, first_, d_, c_;
  int pd_ = 0;  // privileged fields per shard in the allgather (0: not gathered)
  std::uint64_t seed_;
  int group_ = 1;  // common episodes
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<std::uint64_t> episode_;
  std::vector<int> ep_step_;
  std::vector<StepOutcome> outcome_;
  std::vector<float> gathered_;                   // [copy][agent][packet]
  std::vector<float> gather_send_, gather_recv_;  // gather()'s reused buffers
  std::vector<float> obs_, terminal_obs_;         // [copy][agent][d]
  std::vector<float> priv_, terminal_priv_;       // [copy][agent][pd], with set_privileged
  std::vector<char> done_, trunc_;
  std::vector<std::vector<WorkRecord>> outboxes_;  // [copy * K + k]
  // set_every_shard: every agent's shard [copy][agent], this rank's or a replica (owned here)
  std::vector<Shard*> every_;
  std::vector<std::unique_ptr<Shard>> replicas_;
  std::vector<std::byte> state_send_, state_recv_;  // sync_replicas()'s reused buffers
  std::vector<int> state_displs_;
  StepTimes times_;
};

}  // namespace marlsched
