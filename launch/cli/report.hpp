#pragma once
/// \file report.hpp
/// `marlsched report RUN_DIR`: training curves and the evaluation comparison as SVG images in the
/// run directory, drawn by this small writer (no plotting dependency): `training.svg` (system
/// reward, episode return, every reward component and the PPO diagnostics against env steps,
/// from metrics.csv) and `eval.svg` (one bar chart per column of eval.csv, the learned policy
/// highlighted, utility with ± one standard deviation).

#include <string>
#include <vector>

namespace marlsched::cli {

/// Writes the images; returns their paths. `baselines` are the heuristic names (every other
/// policy in eval.csv is drawn as learned). Throws InputError on unreadable or malformed CSVs.
std::vector<std::string> write_report(const std::string& run_dir,
                                      const std::vector<std::string>& baselines);

/// `marlsched compare RUN_DIR...`: several training runs (seeds) of one config, evaluated on the
/// same held-out episodes (each RUN_DIR/eval-episodes.csv), aggregated as a paper would: per
/// policy the mean and the interquartile mean with 95 % stratified-bootstrap intervals, the paired
/// difference to the best heuristic (bootstrap and Student-t over seeds), the probability of
/// improvement over it, and the gap to an oracle bound where the runs hold one. With `versus`
/// (a policy's name, e.g. "bc (greedy)" of other runs given too) the differences are to that
/// policy instead, seed i paired with its seed i. Writes comparison.{csv,md,svg} into
/// `out_dir`, prints the Markdown table; returns the paths.
std::vector<std::string> write_comparison(const std::vector<std::string>& run_dirs,
                                          const std::vector<std::string>& baselines,
                                          const std::string& out_dir, int resamples,
                                          const std::string& versus = "");

}  // namespace marlsched::cli
