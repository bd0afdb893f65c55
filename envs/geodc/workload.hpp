#pragma once
/// \file workload.hpp
/// AIGC training jobs: three fine-tuning job types (GAN, masked language model, Stable
/// Diffusion), a synthetic diurnal arrival process, and a loader for the Alibaba PAI GPU trace
/// (cluster-trace-gpu-v2020, `pai_task_table`).

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.hpp"

namespace marlsched::geodc {

/// Job type table (index = JobType value). Ranges are inclusive; power is per busy GPU.
enum JobType : std::int32_t { kGanFt = 0, kMlmFt = 1, kSdFt = 2, kNumJobTypes = 3 };

struct JobTypeSpec {
  const char* name;
  int gpus_lo, gpus_hi;       ///< GPU demand drawn from {lo, 2·lo, ..., hi} (powers of two)
  double hours_lo, hours_hi;  ///< duration, uniform
  double data_gb;             ///< dataset + checkpoint moved when the job is forwarded
};
const JobTypeSpec& job_type_spec(int type);

/// A job as the simulator sees it. Trivially copyable: forwarded as raw bytes.
struct Job {
  std::uint64_t id = 0;     ///< unique in a world: (origin << 40) | serial
  std::int32_t origin = 0;  ///< agent where it arrived
  std::int32_t type = 0;    ///< JobType
  std::int32_t gpus = 1;
  std::int32_t duration = 1;   ///< slots of execution
  std::int32_t remaining = 1;  ///< slots still to run
  std::int32_t arrival = 0;    ///< slot of arrival
  std::int32_t deadline = 0;   ///< slot by whose end it must complete
  std::int32_t available = 0;  ///< first slot at which it may start here (after a transfer)
  std::int32_t hops = 0;       ///< times forwarded
  std::int32_t violated = 0;   ///< SLA violation already counted
  float data_gb = 0.f;
  std::int32_t reserved = 0;  ///< fills what would be padding: every byte saved or sent is set
};
static_assert(sizeof(Job) == sizeof(std::uint64_t) + 11 * sizeof(std::int32_t) + sizeof(float),
              "Job has padding, whose bytes would differ in saved states");

/// Index in [0, weights.size()) drawn with probability proportional to `weights` (one uniform).
int draw_weighted(Rng& rng, const std::vector<double>& weights);

/// A job of `type` that needs `gpus` for `duration` slots and arrives at `slot`, with slack
/// multiplier κ: it must complete by the end of slot arrival + ceil(κ · duration) − 1, i.e.
/// within ceil(κ · duration) slots of arriving (Green-DCC's slack-proportional deadlines, after
/// the GLOBECOM'23 paper). id and origin are left to the caller.
Job make_job(int type, int gpus, int duration, int slot, double kappa);

/// Draws one synthetic job of a random type (mix probabilities) arriving at `slot`, with κ
/// drawn from the slack tiers; see make_job for the deadline.
Job draw_job(Rng& rng, const std::vector<double>& type_mix, const std::vector<double>& slack_tiers,
             const std::vector<double>& slack_probs, int slot, double slot_hours, int max_gpus);

/// One row of `pai_task_table` reduced to what scheduling needs.
struct TraceTask {
  std::string job_name;
  std::int64_t start_time = 0;  ///< seconds (trace clock)
  double duration_s = 0;
  int gpus = 0;  ///< ceil(inst_num · plan_gpu / 100)
};

/// Reads a `pai_task_table` CSV (no header; columns job_name, task_name, inst_num, status,
/// start_time, end_time, plan_cpu, plan_mem, plan_gpu, gpu_type). Keeps rows with status
/// "Terminated", a GPU request (plan_gpu > 0) and end_time > start_time; sorted by start_time.
/// Malformed rows raise InputError naming file and line.
std::vector<TraceTask> load_pai_task_table(const std::string& path);

/// Maps a trace task to a job type by GPU demand (≤1 GPU: GAN-FT, ≤4: MLM-FT, else SD-FT).
int job_type_for_gpus(int gpus);

/// Writes `n` synthetic tasks in the `pai_task_table` format (for tests and data/).
void write_pai_task_table(const std::string& path, int n, std::uint64_t seed);

}  // namespace marlsched::geodc
