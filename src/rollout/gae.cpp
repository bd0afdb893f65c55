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
