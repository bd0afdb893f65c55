#include "core/stats.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace marlsched::stats {

double mean(const std::vector<double>& x) {
  if (x.empty()) return 0.0;
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}

double sd(const std::vector<double>& x) {
  if (x.size() < 2) return 0.0;
  const double m = mean(x);
  double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return std::sqrt(s / static_cast<double>(x.size() - 1));
}

double iqm(std::vector<double> x) {
  if (x.empty()) return 0.0;
  std::sort(x.begin(), x.end());
  // Value i covers [i, i + 1) of [0, n); keep the part of it inside [n/4, 3n/4).
  const double n = static_cast<double>(x.size()), lo = n / 4, hi = 3 * n / 4;
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double a = std::max(lo, static_cast<double>(i)), b = std::min(hi, i + 1.0);
    if (b > a) s += (b - a) * x[i];
  }
  return s / (hi - lo);
}

namespace {
// Continued fraction of the regularized incomplete beta function (modified Lentz).
double beta_cf(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::abs(d) < tiny ? tiny : d);
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + num * d;
    d = 1 / (std::abs(d) < tiny ? tiny : d);
    c = 1 + num / c;
    c = std::abs(c) < tiny ? tiny : c;
    h *= d * c;
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + num * d;
    d = 1 / (std::abs(d) < tiny ? tiny : d);
    c = 1 + num / c;
    c = std::abs(c) < tiny ? tiny : c;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-15) break;
  }
  return h;
}

double inc_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double lbeta = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b);
  const double front = std::exp(lbeta + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
  return 1 - front * beta_cf(b, a, 1 - x) / b;
}
}  // namespace

double student_t_cdf(double t, int df) {
  const double v = df;
  const double tail = 0.5 * inc_beta(v / 2, 0.5, v / (v + t * t));
  return t >= 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, int df) {
  MARLSCHED_REQUIRE(p > 0 && p < 1 && df >= 1,
                    "t quantile needs 0 < p < 1 and df >= 1, got " << p << ", " << df);
  double lo = -1e4, hi = 1e4;
  for (int i = 0; i < 200 && hi - lo > 1e-12; ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

Interval t_interval(const std::vector<double>& x, double level) {
  const double m = mean(x);
  if (x.size() < 2) return {m, m};
  const int df = static_cast<int>(x.size()) - 1;
  const double h =
      student_t_quantile(0.5 + level / 2, df) * sd(x) / std::sqrt(static_cast<double>(x.size()));
  return {m - h, m + h};
}

namespace {
double resampled(const Scores& a, const std::vector<std::size_t>& seeds,
                 const std::vector<std::size_t>& episodes, Statistic stat) {
  std::vector<double> v;
  v.reserve(seeds.size() * episodes.size());
  for (std::size_t s : seeds)
    for (std::size_t e : episodes) v.push_back(a[s][e]);
  return stat == Statistic::kMean ? mean(v) : iqm(v);
}

std::vector<std::size_t> all_of(std::size_t n) {
  std::vector<std::size_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

void check(const Scores& a) {
  MARLSCHED_REQUIRE(!a.empty() && !a.front().empty(), "no scores to compare");
  for (const auto& r : a)
    MARLSCHED_REQUIRE(r.size() == a.front().size(), "every seed needs the same episodes");
}
}  // namespace

double statistic(const Scores& a, Statistic stat) {
  check(a);
  return resampled(a, all_of(a.size()), all_of(a.front().size()), stat);
}

Interval bootstrap_interval(const Scores& a, const Scores* b, Statistic stat, int resamples,
                            std::uint64_t seed, double level) {
  check(a);
  if (b) {
    check(*b);
    MARLSCHED_REQUIRE(b->front().size() == a.front().size(),
                      "a paired difference needs the same episodes for both policies");
  }
  const std::size_t ne = a.front().size();
  Rng rng(seed);
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(resamples));
  std::vector<std::size_t> ep(ne), sa(a.size()), sb(b ? b->size() : 0);
  for (int r = 0; r < resamples; ++r) {
    for (auto& e : ep) e = static_cast<std::size_t>(rng.below(ne));
    for (auto& s : sa) s = static_cast<std::size_t>(rng.below(a.size()));
    double v = resampled(a, sa, ep, stat);
    if (b) {
      for (auto& s : sb) s = static_cast<std::size_t>(rng.below(b->size()));
      v -= resampled(*b, sb, ep, stat);
    }
    values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    const double pos = q * static_cast<double>(values.size() - 1);
    const auto i = static_cast<std::size_t>(pos);
    const double f = pos - static_cast<double>(i);
    return i + 1 < values.size() ? values[i] * (1 - f) + values[i + 1] * f : values[i];
  };
  return {at((1 - level) / 2), at((1 + level) / 2)};
}

double probability_of_improvement(const Scores& a, const Scores& b) {
  check(a);
  check(b);
  MARLSCHED_REQUIRE(b.front().size() == a.front().size(),
                    "the probability of improvement needs the same episodes for both policies");
  const std::size_t ne = a.front().size();
  double total = 0;
  for (std::size_t e = 0; e < ne; ++e) {
    double u = 0;
    for (const auto& x : a)
      for (const auto& y : b) u += x[e] > y[e] ? 1.0 : x[e] == y[e] ? 0.5 : 0.0;
    total += u / static_cast<double>(a.size() * b.size());
  }
  return total / static_cast<double>(ne);
}

}  // namespace marlsched::stats
