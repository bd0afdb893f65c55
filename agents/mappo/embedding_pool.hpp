#pragma once
/// \file embedding_pool.hpp
/// The pooled critic's collective (MAPPO `--critic pooled`): every rank sums the embeddings of
/// its own agents per (step, copy) group, and one allreduce turns those sums into the mean over
/// all agents, identical on every rank. What crosses the network per group is one fixed-size
/// embedding, whatever the agent count; the same call carries the gradients back (the adjoint of
/// a mean pool over ranks is the mean pool of the ranks' gradients). Its MPI test is
/// tests/agents/test_pooled_exchange.cpp.

#include <torch/torch.h>

#include "dist/comm.hpp"

namespace marlsched {

class EmbeddingPool {
 public:
  /// This rank holds `local_agents` of the `num_agents` agents; results go to `device`.
  EmbeddingPool(const dist::Comm& comm, int local_agents, int num_agents, torch::Device device)
      : comm_(comm), k_(local_agents), n_(num_agents), dev_(device) {}

  /// Collective: the mean over all agents, per group, of the ranks' sums S [groups, E] (one
  /// MPI_Allreduce of groups·E floats), on the device, outside any graph. The first call checks
  /// that the ranks together hold every agent once (Error otherwise). Adds its time to *t_comm
  /// when given.
  torch::Tensor mean(const torch::Tensor& S, double* t_comm = nullptr) const;

 private:
  const dist::Comm& comm_;
  int k_, n_;
  torch::Device dev_;
  mutable bool checked_ = false;
};

}  // namespace marlsched
