#include "train/trajectory_recorder.hpp"

#include <cstring>

#include "core/clock.hpp"

namespace marlsched {

TrajectoryRecorder::TrajectoryRecorder(const dist::Comm& comm, const World& world,
                                       const TrajConfig& cfg, const std::string& run_dir,
                                       const TrajMeta& meta, int last_iteration,
                                       int compute_threads, Resume from)
    : every_(cfg.every), segment_(from.segment), rows_(from.rows) {
  if (comm.is_root())
    cut_segments_for_resume(run_dir, from.segment, from.rows, meta.first_iteration - 1);
  comm.barrier();
  if (cfg.every <= 0 || meta.first_iteration > last_iteration) return;
  TrajMeta m = meta;
  m.segment = from.segment + 1;
  writer_ = std::make_unique<TrajectoryWriter>(comm, cfg, traj_segment_path(run_dir, m.segment), m,
                                               compute_threads);
  segment_ = m.segment;
  rows_ = 0;
  const auto e = static_cast<std::size_t>(world.copies());
  const auto ek = e * static_cast<std::size_t>(world.local_agents());
  const auto d = static_cast<std::size_t>(world.spec().obs_dim());
  step_.observations.resize(ek * d);
  step_.next_observations.resize(step_.observations.size());
  step_.rewards.resize(ek);
  step_.reward_components.resize(ek * world.spec().reward_components.size());
  step_.terminations.resize(e);
  step_.truncations.resize(e);
  step_.episode_ids.resize(e);
  step_.episode_steps.resize(e);
}

void TrajectoryRecorder::local_obs(const World& world, const GlobalObs& g, int copy,
                                   std::vector<float>& out) const {
  const int k = world.local_agents(), d = world.spec().obs_dim();
  std::memcpy(out.data() + static_cast<std::size_t>(copy * k * d), g.row(world.first_agent()),
              static_cast<std::size_t>(k * d) * sizeof(float));
}

void TrajectoryRecorder::before_step(const World& world, int iteration, const Decisions& d) {
  if (!writer_) return;
  const double t0 = now();
  const int e = world.copies();
  step_.iteration = iteration;
  for (int c = 0; c < e; ++c) {
    local_obs(world, world.obs(c), c, step_.observations);
    step_.episode_ids[static_cast<std::size_t>(c)] =
        static_cast<std::int64_t>(world.episode_index(c)) * e + c;
    step_.episode_steps[static_cast<std::size_t>(c)] = world.episode_step(c);
  }
  step_.actions.assign(d.actions.begin(), d.actions.end());
  step_.log_probs = d.log_probs;
  step_.values = d.values;
  seconds_ += now() - t0;
}

void TrajectoryRecorder::after_step(const World& world) {
  if (!writer_) return;
  const double t0 = now();
  const int k = world.local_agents();
  const int nc = static_cast<int>(world.spec().reward_components.size());
  for (int c = 0; c < world.copies(); ++c) {
    for (int kk = 0; kk < k; ++kk) {
      const auto i = static_cast<std::size_t>(c * k + kk);
      const int a = world.first_agent() + kk;
      step_.rewards[i] = world.reward(c, a);
      for (int j = 0; j < nc; ++j)
        step_.reward_components[i * static_cast<std::size_t>(nc) + static_cast<std::size_t>(j)] =
            world.component(c, a, j);
    }
    const bool done = world.done(c), trunc = world.truncated(c);
    step_.terminations[static_cast<std::size_t>(c)] = done && !trunc ? 1 : 0;
    step_.truncations[static_cast<std::size_t>(c)] = trunc ? 1 : 0;
    local_obs(world, done ? world.terminal_obs(c) : world.obs(c), c, step_.next_observations);
  }
  writer_->append(step_);
  seconds_ += now() - t0;
}

void TrajectoryRecorder::end_iteration(int iteration, bool checkpoint, bool last) {
  if (!writer_ || !(iteration % every_ == 0 || checkpoint || last)) return;
  const double t0 = now();
  if (last)
    writer_->close(iteration);
  else
    writer_->flush(iteration, checkpoint);
  rows_ = writer_->rows_written();
  writer_seconds_ = writer_->writer_seconds();
  seconds_ += now() - t0;
}

}  // namespace marlsched
