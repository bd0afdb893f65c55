#include "agents/mappo/ppo_loss.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace marlsched::ppo {

void log_softmax_rows(float* z, std::int64_t rows, int cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = z + r * cols;
    float mx = row[0];
    for (int j = 1; j < cols; ++j) mx = std::max(mx, row[j]);
    float sum = 0;
    for (int j = 0; j < cols; ++j) sum += std::exp(row[j] - mx);
    const float lse = mx + std::log(sum);
    for (int j = 0; j < cols; ++j) row[j] -= lse;
  }
}

PolicyTerms policy_loss_grad(const float* z, int rows, int na, const std::int64_t* idx,
                             const std::int64_t* action, const float* old_logp, const float* adv,
                             const std::int64_t* teacher, double clip, double entropy_coef,
                             double imitation, float seed, float* dz) {
  PolicyTerms t;
  const float lo = static_cast<float>(1 - clip), hi = static_cast<float>(1 + clip);
  const float scale = seed / static_cast<float>(rows);
  const float ent = static_cast<float>(entropy_coef);
  const float imit = teacher != nullptr ? static_cast<float>(imitation) : 0.f;
  std::vector<float> logp(static_cast<std::size_t>(na)), p(logp);
  for (int r = 0; r < rows; ++r) {
    const float* zr = z + static_cast<std::ptrdiff_t>(r) * na;
    float* gr = dz + static_cast<std::ptrdiff_t>(r) * na;
    const std::int64_t i = idx[r];
    std::copy(zr, zr + na, logp.begin());
    log_softmax_rows(logp.data(), 1, na);
    float h = 0;
    for (int j = 0; j < na; ++j) {
      p[static_cast<std::size_t>(j)] = std::exp(logp[static_cast<std::size_t>(j)]);
      h -= p[static_cast<std::size_t>(j)] * logp[static_cast<std::size_t>(j)];
    }
    const int a = static_cast<int>(action[i]);
    const float lp = logp[static_cast<std::size_t>(a)];
    const float ratio = std::exp(lp - old_logp[i]), A = adv[i];
    const float clipped = std::min(std::max(ratio, lo), hi);
    const float s1 = ratio * A, s2 = clipped * A;
    // d(-min(s1, s2))/d(log π(a)): min() passes its gradient to s1 where s1 <= s2; clamp()
    // passes it inside [lo, hi], bounds included.
    const bool through = s1 <= s2 || (ratio >= lo && ratio <= hi);
    const float g_lp = through ? -A * ratio : 0.f;
    t.policy_loss -= std::min(s1, s2);
    t.entropy += h;
    t.approx_kl += old_logp[i] - lp;
    t.clip_frac += std::abs(ratio - 1.f) > static_cast<float>(clip) ? 1 : 0;
    // dlog π(k)/dz_j = [j = k] - p_j;  d(-H)/dz_j = p_j (log p_j + H)
    for (int j = 0; j < na; ++j) {
      const float pj = p[static_cast<std::size_t>(j)];
      gr[j] = scale * (g_lp * ((j == a ? 1.f : 0.f) - pj) +
                       ent * pj * (logp[static_cast<std::size_t>(j)] + h));
    }
    if (imit > 0) {
      const int k = static_cast<int>(teacher[i]);
      for (int j = 0; j < na; ++j)
        gr[j] -= scale * imit * ((j == k ? 1.f : 0.f) - p[static_cast<std::size_t>(j)]);
    }
  }
  t.policy_loss /= rows;
  t.entropy /= rows;
  t.approx_kl /= rows;
  t.clip_frac /= rows;
  return t;
}

double value_loss_grad(const float* v, int rows, const std::int64_t* idx, const float* target,
                       double delta, double value_coef, float seed, float* dv) {
  const float d = static_cast<float>(delta);
  const float scale = seed * static_cast<float>(value_coef) / static_cast<float>(rows);
  double loss = 0;
  for (int r = 0; r < rows; ++r) {
    const float e = v[r] - target[idx[r]];
    const float ae = std::abs(e);
    loss += ae < d ? 0.5 * static_cast<double>(e) * e : d * (ae - 0.5 * d);
    dv[r] = scale * std::min(std::max(e, -d), d);
  }
  return loss / rows;
}

}  // namespace marlsched::ppo
