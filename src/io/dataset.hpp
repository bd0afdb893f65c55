#pragma once
/// \file dataset.hpp
/// Trajectory files read back for offline learning: the layout of docs/hdf5-layout.md, as
/// `marlsched train` and `marlsched collect` write it (or a scheduler's own logs converted to
/// it). Every rank reads, with collective hyperslab reads of its own, its agents' columns of the
/// per-agent datasets (actions, log-probabilities), the world-level episode flags, and what
/// online training shares between ranks too: the observations of every agent (the global state
/// that actor and critic inputs read) and every agent's reward (for the team reward). Nothing
/// is gathered to rank 0 or sent between ranks.
///
/// In memory the rows are *world-steps* in episode order: file by file, world by world, step by
/// step, so that each world's episodes are contiguous (a file's rows are [step, world]).

#include <cstdint>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/team_reward.hpp"
#include "dist/comm.hpp"

namespace marlsched {

/// A dataset file's header, as every rank reads it before training (no collectives).
struct DatasetInfo {
  std::string path, env, behaviour_policy;
  double behaviour_epsilon = 0.0;  ///< NaN for files that do not record it
  std::int64_t rows = 0;           ///< steps (the first dimension)
  int worlds = 0, num_agents = 0;
};

/// The files a `--dataset` names: each entry a trajectory file or a run directory (its segments
/// RUN_DIR/trajectories/segment-NNN.h5, in order). Throws InputError for a path that is neither.
std::vector<std::string> dataset_files(const std::vector<std::string>& entries);

/// Opens `path` (serially, on the calling rank alone, no collectives) and checks that offline
/// learning on env `spec` with `num_agents` agents can read it: a marlsched trajectory file of
/// this format version, of that env (name, observation fields, actions), with that many agents
/// and at least one row, holding observations, next_observations, actions, rewards and the
/// episode flags in the layout's shapes. With `shares` > 0 it also reads share `share` of
/// `shares` of the rows back, so that every chunk's checksum is checked: the ranks of a job,
/// each its own share, read every row once. Throws InputError with one clear message otherwise.
DatasetInfo inspect_dataset(const std::string& path, const EnvSpec& spec, int num_agents,
                            int share = 0, int shares = 1);

/// One rank's share of one or more dataset files.
struct LocalDataset {
  std::int64_t rows = 0;  ///< world-steps
  int num_agents = 0, first_agent = 0, local_agents = 0, obs_dim = 0;
  std::vector<float> observations;       ///< [rows, num_agents, obs_dim]: every agent's
  std::vector<float> next_observations;  ///< [rows, num_agents, obs_dim]: every agent's
  std::vector<std::int32_t> actions;     ///< [rows, local_agents]: this rank's agents
  std::vector<float> rewards;            ///< [rows, num_agents]: every agent's
  std::vector<float> log_probs;          ///< [rows, local_agents]
  std::vector<float> mean_rewards;       ///< [rows]: the mean reward over all agents
  std::vector<std::uint8_t> terminations, truncations;  ///< [rows]
  /// Where each file's world-steps start in `rows` (and the total at the end).
  std::vector<std::int64_t> file_offsets;
  /// Where each (file, world) block of consecutive steps starts (and the total at the end): a
  /// block's last row ends its last episode, or cuts it where the file did.
  std::vector<std::int64_t> block_offsets;

  /// Transitions of this rank's agents: rows × local_agents.
  std::int64_t transitions() const { return rows * local_agents; }
  /// The global observation of world-step `r` (every agent's row).
  GlobalObs global(std::int64_t r, bool next = false) const;
  /// The reward a learner trains on at world-step `r` for local agent `local_agent`, as the
  /// online learners get it (core/team_reward.hpp): (1-β)·own + β·team, the team being all
  /// agents or, given `targets_of` (--team-scope targets), the agent's targets in that spec.
  double reward(std::int64_t r, int local_agent, double beta,
                const EnvSpec* targets_of = nullptr) const {
    const float* row =
        rewards.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(num_agents);
    const int a = first_agent + local_agent;
    if (targets_of == nullptr)
      return (1.0 - beta) * row[a] + beta * mean_rewards[static_cast<std::size_t>(r)];
    return learner_reward(*targets_of, num_agents, a, beta, true, 0.0,
                          [row](int j) { return row[j]; });
  }
};

/// Collective over `comm`: reads agents [first_agent, first_agent + local_agents) of `files`
/// (each checked first with inspect_dataset) as above. `log_probs` of files that lack them
/// are NaN.
LocalDataset read_dataset(const dist::Comm& comm, const std::vector<std::string>& files,
                          const EnvSpec& spec, int first_agent, int local_agents);

}  // namespace marlsched
