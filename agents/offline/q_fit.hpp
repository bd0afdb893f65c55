#pragma once
/// \file q_fit.hpp
/// cql: DQN's Q-networks (Dqn::parts()) fitted to a dataset by passes over replay buffers that
/// hold it, with DQN's TD step and discrete CQL's penalty (DqnConfig::cql_alpha), so the result
/// saves, evaluates and exports as a DQN model.

#include "agents/dqn/dqn.hpp"
#include "io/dataset.hpp"

namespace marlsched {

class QFit {
 public:
  /// Fits `nets`' parts (they must outlive this); `nets` must be an offline DQN
  /// (DqnConfig::offline: its buffers start empty and are not saved).
  explicit QFit(Dqn& nets);

  /// Replaces the replay buffers' contents with every transition of this rank's agents in
  /// `data` (reward (1-β)·own + β·team, the team being all agents or, with `team_targets`, each
  /// agent's targets; terminations cut the target, truncations and cut blocks bootstrap from the
  /// next observation).
  void use_dataset(const LocalDataset& data, bool team_targets = false);
  /// Collective: `epochs` passes over the buffers in minibatches of `minibatch` transitions
  /// (shuffled with the learner's seeded RNG). Statistics: td_loss, cql_gap, q_mean, grad_norm.
  UpdateStats update(int epochs, int minibatch);

 private:
  Dqn::Impl& m_;
};

}  // namespace marlsched
