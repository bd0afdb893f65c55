#include "agents/mappo/embedding_pool.hpp"

#include "agents/nn.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"

namespace marlsched {

torch::Tensor EmbeddingPool::mean(const torch::Tensor& S, double* t_comm) const {
  const double t0 = now();
  if (!checked_) {  // the ranks of `comm` must together hold every agent once
    int held = k_;
    comm_.allreduce_sum(&held, 1);
    MARLSCHED_CHECK(held == n_, "the pooled critic's ranks hold " << held << " agents, not " << n_);
    checked_ = true;
  }
  auto h = nn::host(S.detach()).clone();  // own storage: the allreduce writes into it
  comm_.allreduce_sum(h.data_ptr<float>(), static_cast<int>(h.numel()));
  if (t_comm != nullptr) *t_comm += now() - t0;
  return (h / static_cast<double>(n_)).to(dev_);
}

}  // namespace marlsched
