/// \file export.cpp
/// `marlsched export`: a trained run's policy as one TorchScript file.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "commands.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/version.hpp"
#include "envs/baselines.hpp"
#include "train/run_dir.hpp"

namespace marlsched::cli {

namespace {

/// A JSON string literal.
std::string json(const std::string& v) {
  std::string o = "\"";
  for (unsigned char c : v) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c == '\n') {
      o += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}
std::string json(const std::vector<std::string>& v) {
  std::string o = "[";
  for (std::size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + json(v[i]);
  return o + "]";
}

/// `marlsched export RUN_DIR`: every rank's saved learner, loaded in this one process, exported
/// as one TorchScript module.
void export_policy(const std::string& run_dir, const std::string& out, bool with_critic) {
  CLI::App scratch;
  Command cmd;
  load_run_config(cmd, scratch, run_dir);
  auto& ec = cmd.env_config();
  const int k = cmd.run.agents_per_rank, ranks = model_ranks(run_dir, ec, k), n = ranks * k;
  ec.validate(n);
  const auto factory = find_env(cmd.run.env).make_factory(ec, n);
  const EnvSpec& spec = factory->spec();
  dist::Comm self(MPI_COMM_SELF, false);
  std::vector<std::unique_ptr<Learner>> learners;
  std::vector<const Learner*> view;
  for (int r = 0; r < ranks; ++r) {
    // The run's env copies per rank: a learner that keeps per-copy state (tsdqn) checks it.
    learners.push_back(make_learner(cmd.run.algo, cmd.learners, spec, self, n, r * k, k,
                                    cmd.run.envs_per_rank, cmd.run.seed, baseline_maker(spec)));
    learners.back()->load(model_path(run_dir, r));
    view.push_back(learners.back().get());
  }
  std::string config;
  {
    std::ifstream in(run_dir + "/config.toml");
    config.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::ostringstream meta;
  meta << "{\n  \"format\": \"marlsched-policy\",\n  \"format_version\": 1,\n"
       << "  \"marlsched_version\": " << json(MARLSCHED_VERSION) << ",\n"
       << "  \"git_revision\": " << json(MARLSCHED_GIT_REVISION) << ",\n"
       << "  \"env\": " << json(spec.name) << ",\n  \"algo\": " << json(cmd.run.algo) << ",\n"
       << "  \"num_agents\": " << n << ",\n  \"obs_dim\": " << spec.obs_dim() << ",\n"
       << "  \"obs_fields\": " << json(spec.obs_fields) << ",\n"
       << "  \"num_public_obs_fields\": " << spec.num_public << ",\n"
       << "  \"action_names\": " << json(spec.action_names) << ",\n"
       << "  \"shared_actor\": " << (cmd.learners.shared(cmd.run.algo) ? "true" : "false") << ",\n"
       << "  \"critic\": " << (with_critic ? "true" : "false") << ",\n"
       << "  \"input\": "
       << json(
              "obs: float32 [num_agents, obs_dim] or [batch, num_agents, obs_dim], the raw "
              "observations of every agent in obs_fields order (an agent needs its own and the "
              "first num_public_obs_fields of every site); agent: int, 0 <= agent < num_agents")
       << ",\n  \"output\": "
       << json(cmd.run.algo == "dqn"
                   ? "forward(obs, agent, deterministic=False) -> (probs [.., num_actions], "
                     "action), the greedy policy (probs one-hot); probs(obs, agent); "
                     "q(obs, agent) -> Q-values [.., num_actions]"
                   : "forward(obs, agent, deterministic=False) -> (probs [.., num_actions], "
                     "action); probs(obs, agent); value(obs, agent) when critic is true")
       << ",\n  \"trained_ranks\": " << ranks << ",\n  \"agents_per_rank\": " << k << ",\n"
       << "  \"config\": " << json(config) << "\n}\n";
  export_learners(cmd.run.algo, view, out + ".tmp", meta.str(), with_critic);
  std::filesystem::rename(out + ".tmp", out);
  std::cout << "exported "
            << (cmd.learners.shared(cmd.run.algo) ? "the shared network" : "every agent's network")
            << (with_critic ? " and the critic" : "") << " of " << n << " agents to " << out
            << std::endl;
}

class ExportCommand : public Subcommand {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* exp = app.add_subcommand(
        "export",
        "write a trained run's policy as TorchScript (loads in PyTorch and libtorch), with its "
        "metadata");
    exp->add_option("run_dir", run_, "the trained run directory")
        ->required()
        ->check(CLI::ExistingDirectory);
    exp->add_option("--out", out_, "output file (default RUN_DIR/policy.pt)");
    exp->add_flag("--critic", critic_, "include the centralized critic (method value)");
    return exp;
  }
  bool serial() const override { return true; }
  int run(const dist::Comm&) override {  // rank 0 alone reads every rank's model
    if (const auto holder = run_dir_holder(run_); !holder.empty())
      std::cerr << "marlsched: warning: '" << run_ << "' is in use by a running training ("
                << holder
                << "): export reads the models it has written so far (its last "
                   "completed run or segment), not the one it is training\n";
    export_policy(run_, out_.empty() ? run_ + "/policy.pt" : out_, critic_);
    return 0;
  }

 private:
  std::string run_, out_;
  bool critic_ = false;
};

}  // namespace

std::unique_ptr<Subcommand> make_export_command() {
  return std::make_unique<ExportCommand>();
}

}  // namespace marlsched::cli
