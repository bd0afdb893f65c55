#pragma once
/// \file stats.hpp
/// Statistics for comparing policies over several training seeds evaluated on the same episodes,
/// as RL papers report them (Agarwal et al., "Deep Reinforcement Learning at the Edge of the
/// Statistical Precipice", NeurIPS 2021; its library rliable): means and interquartile means with
/// 95 % intervals from a stratified bootstrap, Student-t intervals over seeds, paired differences
/// and the probability of improvement. std only.

#include <cstdint>
#include <vector>

namespace marlsched::stats {

double mean(const std::vector<double>& x);
/// Sample standard deviation (n - 1); 0 for fewer than two values.
double sd(const std::vector<double>& x);
/// Interquartile mean: the mean of the middle half, the values in the lowest and highest quarter
/// weighted by the fraction of them inside it (rliable's definition, exact for any n).
double iqm(std::vector<double> x);

/// The p-quantile of Student's t distribution with `df` degrees of freedom (0 < p < 1, df >= 1),
/// by bisection on its CDF (the regularized incomplete beta function).
double student_t_quantile(double p, int df);
/// Student's t CDF.
double student_t_cdf(double t, int df);

struct Interval {
  double lo = 0, hi = 0;
};
/// Two-sided `level` interval of the mean of x from Student's t (n - 1 degrees of freedom);
/// the point itself for n < 2.
Interval t_interval(const std::vector<double>& x, double level = 0.95);

/// Scores of one policy: scores[s][e] = run s (training seed), episode e. Every policy compared
/// must hold the same episodes in the same order; a policy without seeds (a heuristic) has one row.
using Scores = std::vector<std::vector<double>>;

/// Statistic of a resampled score matrix (seed indices into the rows, episode indices into the
/// columns).
enum class Statistic { kMean, kIqm };

/// Percentile interval of `stat` from a stratified bootstrap: each resample draws the seeds with
/// replacement and, independently, the episodes with replacement (the same episodes for every
/// policy). `b` = a second policy for a paired difference (stat(a) − stat(b) on the same
/// resample), or nullptr.
Interval bootstrap_interval(const Scores& a, const Scores* b, Statistic stat, int resamples,
                            std::uint64_t seed, double level = 0.95);

/// The statistic on the full matrix (every seed and episode once).
double statistic(const Scores& a, Statistic stat);

/// Probability of improvement P(X > Y) (rliable): for each episode, the Mann-Whitney statistic of
/// a's seeds against b's seeds (ties count one half), averaged over episodes.
double probability_of_improvement(const Scores& a, const Scores& b);

}  // namespace marlsched::stats
