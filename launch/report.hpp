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

}  // namespace marlsched::cli
