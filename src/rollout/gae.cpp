#include "rollout/gae.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace marlsched {

void compute_gae(const std::vector<float>& reward, const std::vector<float>& value,
                 const std::vector<float>& next_value, const std::vector<std::uint8_t>& episode_end,
                 float gamma, float lambda, std::vector<float>& advantage,
                 std::vector<float>& returns) {
  const std::size_t n = reward.size();
  MARLSCHED_CHECK(value.size() == n && next_value.size() == n && episode_end.size() == n,
                  "GAE inputs differ in length");
  advantage.assign(n, 0.f);
  returns.assign(n, 0.f);
  float running = 0.f;
  for (std::size_t i = n; i-- > 0;) {
    const float delta = reward[i] + gamma * next_value[i] - value[i];
    running = delta + (episode_end[i] ? 0.f : gamma * lambda * running);
    advantage[i] = running;
    returns[i] = running + value[i];
  }
}

void compute_rollout_gae(const RolloutSequences& r, const std::vector<float>& bootstrap,
                         float gamma, float lambda, std::vector<float>& advantage,
                         std::vector<float>& returns) {
  const int T = r.steps, rows = r.rows;
  const auto M = static_cast<std::size_t>(T * rows);
  MARLSCHED_CHECK(r.reward->size() == M && r.value->size() == M && r.trunc_value->size() == M &&
                      bootstrap.size() == static_cast<std::size_t>(rows),
                  "rollout GAE inputs differ in length");
  advantage.resize(M);
  returns.resize(M);
  const int copies = rows / r.agents_per_copy;
  std::vector<float> rw(static_cast<std::size_t>(T)), v(rw), nv(rw), a, rt;
  std::vector<std::uint8_t> end(static_cast<std::size_t>(T));
  for (int row = 0; row < rows; ++row) {
    const int c = row / r.agents_per_copy;
    for (int t = 0; t < T; ++t) {
      const std::size_t i = static_cast<std::size_t>(t * rows + row);
      rw[static_cast<std::size_t>(t)] = (*r.reward)[i];
      v[static_cast<std::size_t>(t)] = (*r.value)[i];
      const bool dn = (*r.done)[static_cast<std::size_t>(t * copies + c)] != 0;
      end[static_cast<std::size_t>(t)] = dn ? 1 : 0;
      if (dn)
        nv[static_cast<std::size_t>(t)] = (*r.trunc_value)[i];  // 0 at a termination
      else
        nv[static_cast<std::size_t>(t)] =
            t + 1 < T ? (*r.value)[static_cast<std::size_t>((t + 1) * rows + row)]
                      : bootstrap[static_cast<std::size_t>(row)];
    }
    compute_gae(rw, v, nv, end, gamma, lambda, a, rt);
    for (int t = 0; t < T; ++t) {
      advantage[static_cast<std::size_t>(t * rows + row)] = a[static_cast<std::size_t>(t)];
      returns[static_cast<std::size_t>(t * rows + row)] = rt[static_cast<std::size_t>(t)];
    }
  }
}

void RunningMoments::update(double n, double sum, double sumsq) {
  if (n <= 0) return;
  const double bmean = sum / n;
  const double bm2 = std::max(0.0, sumsq - n * bmean * bmean);
  const double tot = count + n;
  const double delta = bmean - mean;
  mean += delta * n / tot;
  m2 += bm2 + delta * delta * count * n / tot;
  count = tot;
}

double RunningMoments::std() const {
  return std::max(1e-4, std::sqrt(var()));
}

}  // namespace marlsched
