#include "envs/geodc/workload.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/file.hpp"

namespace marlsched::geodc {

namespace {
// GPU demands and durations follow the public descriptions of the workloads the paper cites:
// GAN fine-tuning (small, short), MLM fine-tuning (BERT-class, a few GPUs for hours), and
// Stable Diffusion fine-tuning (Lambda's text-to-pokemon: several GPUs for several hours).
const JobTypeSpec kTypes[kNumJobTypes] = {
    {"gan-ft", 1, 2, 0.5, 3.0, 5.0},
    {"mlm-ft", 2, 4, 1.0, 6.0, 20.0},
    {"sd-ft", 4, 8, 2.0, 8.0, 50.0},
};

}  // namespace

int draw_weighted(Rng& rng, const std::vector<double>& weights) {
  double total = 0;
  for (double p : weights) total += p;
  double u = rng.uniform() * total;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (u < weights[i]) return static_cast<int>(i);
    u -= weights[i];
  }
  return static_cast<int>(weights.size()) - 1;
}

Job make_job(int type, int gpus, int duration, int slot, double kappa) {
  Job j;
  j.type = type;
  j.gpus = gpus;
  j.duration = j.remaining = duration;
  j.arrival = j.available = slot;
  j.deadline = slot + static_cast<int>(std::ceil(kappa * duration)) - 1;
  j.data_gb = static_cast<float>(job_type_spec(type).data_gb);
  return j;
}

const JobTypeSpec& job_type_spec(int type) {
  MARLSCHED_CHECK(type >= 0 && type < kNumJobTypes, "bad job type " << type);
  return kTypes[type];
}

Job draw_job(Rng& rng, const std::vector<double>& type_mix, const std::vector<double>& slack_tiers,
             const std::vector<double>& slack_probs, int slot, double slot_hours, int max_gpus) {
  const int type = draw_weighted(rng, type_mix);
  const auto& ts = kTypes[type];
  int choices = 0;
  for (int g = ts.gpus_lo; g <= ts.gpus_hi; g *= 2) ++choices;
  const int gpus = std::min(
      ts.gpus_lo << static_cast<int>(rng.below(static_cast<std::uint64_t>(choices))), max_gpus);
  const double hours = rng.uniform(ts.hours_lo, ts.hours_hi);
  const int duration = std::max(1, static_cast<int>(std::lround(hours / slot_hours)));
  const double kappa = slack_tiers[static_cast<std::size_t>(draw_weighted(rng, slack_probs))];
  return make_job(type, gpus, duration, slot, kappa);
}

int job_type_for_gpus(int gpus) {
  return gpus <= 1 ? kGanFt : (gpus <= 4 ? kMlmFt : kSdFt);
}

std::vector<TraceTask> load_pai_task_table(const std::string& path) {
  const auto t = csv::read(path, false);
  std::vector<TraceTask> out;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    if (row.size() != 10)
      MARLSCHED_THROW(InputError, path << ":" << t.line_numbers[r]
                                       << ": pai_task_table rows have 10 columns (job_name, "
                                          "task_name, inst_num, status, start_time, end_time, "
                                          "plan_cpu, plan_mem, plan_gpu, gpu_type), found "
                                       << row.size());
    if (row[3] != "Terminated") continue;
    if (row[4].empty() || row[5].empty() || row[8].empty()) continue;  // never started / no GPU
    const double inst = csv::parse_double(t, r, 2);
    const std::int64_t start = csv::parse_int(t, r, 4);
    const std::int64_t end = csv::parse_int(t, r, 5);
    const double plan_gpu = csv::parse_double(t, r, 8);
    if (plan_gpu <= 0 || inst <= 0 || end <= start) continue;
    // Bounds that keep the arithmetic below defined (fuzz_traces found both overflows).
    constexpr std::int64_t kMaxTime = 1'000'000'000'000;  // seconds: ±31 700 years
    if (start < -kMaxTime || end > kMaxTime)
      MARLSCHED_THROW(InputError, path << ":" << t.line_numbers[r]
                                       << ": start/end time out of range: " << start << ", "
                                       << end);
    const double gpus = std::ceil(inst * plan_gpu / 100.0 - 1e-9);
    if (!(gpus <= 1e6))
      MARLSCHED_THROW(InputError, path << ":" << t.line_numbers[r]
                                       << ": implausible GPU demand (inst_num x plan_gpu / 100 = "
                                       << gpus << ")");
    TraceTask task;
    task.job_name = row[0];
    task.start_time = start;
    task.duration_s = static_cast<double>(end - start);
    task.gpus = static_cast<int>(gpus);
    out.push_back(std::move(task));
  }
  std::stable_sort(out.begin(), out.end(), [](const TraceTask& a, const TraceTask& b) {
    return a.start_time < b.start_time;
  });
  return out;
}

void write_pai_task_table(const std::string& path, int n, std::uint64_t seed) {
  std::ostringstream out;  // written at once (write_file_atomic: checked, never through a link)
  Rng rng(seed);
  std::int64_t t = 1593600000;  // an arbitrary origin: the public trace's clock is shifted too
  static const char* status[] = {"Terminated", "Terminated", "Terminated", "Failed", "Running"};
  static const char* gpu_type[] = {"V100", "T4", "P100", "MISC", "V100M32"};
  for (int i = 0; i < n; ++i) {
    t += static_cast<std::int64_t>(rng.uniform(0, 600));
    const char* st = status[rng.below(5)];
    const int inst = 1 + static_cast<int>(rng.below(4));
    const int plan_gpu = rng.uniform() < 0.15 ? 0 : (rng.uniform() < 0.3 ? 50 : 100);
    const std::int64_t dur = 300 + static_cast<std::int64_t>(rng.uniform(0, 6 * 3600));
    out << "job" << std::hex << (0x1000 + i) << std::dec << ",worker," << inst << ',' << st << ','
        << t << ',';
    if (std::string(st) != "Running") out << t + dur;
    out << ',' << 600 << ',' << 29.3 << ',';
    if (plan_gpu > 0) out << plan_gpu;
    out << ',' << gpu_type[rng.below(5)] << '\n';
  }
  write_file_atomic(path, out.str());
}

}  // namespace marlsched::geodc
