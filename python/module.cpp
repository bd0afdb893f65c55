/// \file module.cpp
/// marlsched._core: the envs as batched multi-agent environments for Python (pybind11, NumPy).
/// One VecEnv is a World of K env copies on one process (MPI_COMM_SELF): the same shards, seeds,
/// exchange of work and auto-reset that `marlsched train` runs on one rank, so a Python loop and
/// the C++ runs see identical episodes. Configs are read by the CLI's own binder (the same TOML
/// keys, flags, validation and messages); python/marlsched/__init__.py builds the user-facing
/// API (make, the PettingZoo-style wrapper, spaces) on top.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "dist/comm.hpp"
#include "envs/baselines.hpp"
#include "envs/registry.hpp"
#include "train/world.hpp"

namespace py = pybind11;
using namespace marlsched;

namespace {

/// MPI for the process (one rank, MPI_COMM_SELF), initialised at import unless the host program
/// did it (mpi4py), finalised at exit.
dist::Session* session = nullptr;

/// A config as the CLI reads it: `--env`, `--config PATH` when given, then the overrides as
/// command-line flags (marlsched/__init__.py writes them), parsed by the run commands' binder.
struct Resolved {
  std::unique_ptr<CLI::App> app;
  cli::Command cmd;
};

std::unique_ptr<Resolved> resolve(const std::string& env, const std::string& config,
                                  const std::vector<std::string>& flags) {
  auto r = std::make_unique<Resolved>();
  r->app = std::make_unique<CLI::App>("marlsched", "marlsched");
  r->app->allow_config_extras(false);
  r->cmd.bind(r->app.get());
  std::vector<std::string> args;
  if (!env.empty()) args.insert(args.end(), {"--env", env});
  if (!config.empty()) args.insert(args.end(), {"--config", config});
  args.insert(args.end(), flags.begin(), flags.end());
  std::reverse(args.begin(), args.end());  // CLI11 reads a vector from its back
  try {
    r->app->parse(args);
  } catch (const CLI::ParseError& e) {
    throw ConfigError(cli::describe_parse_error(*r->app, e));
  }
  r->cmd.resolve(false);
  return r;
}

class VecEnv {
 public:
  /// `num_envs`, `seed` and `num_agents` below 0 (0 for the counts): the config's envs-per-rank
  /// and seed, and the agents the env config defines (else its agents-per-rank).
  VecEnv(const std::string& env, const std::string& config, int num_envs, std::int64_t seed,
         int num_agents, const std::vector<std::string>& flags)
      : cfg_(resolve(env, config, flags)), comm_(MPI_COMM_SELF, false) {
    auto& cmd = cfg_->cmd;
    if (num_envs <= 0) num_envs = cmd.run.envs_per_rank;
    seed_ = seed < 0 ? cmd.run.seed : static_cast<std::uint64_t>(seed);
    auto& ec = cmd.env_config();
    if (num_agents <= 0)
      num_agents = ec.defined_agents() > 0 ? ec.defined_agents() : cmd.run.agents_per_rank;
    ec.validate(num_agents);
    factory_ = find_env(cmd.run.env).make_factory(ec, num_agents);
    world_ = std::make_unique<World>(*factory_, comm_, num_agents, num_envs, seed_);
    n_ = num_agents;
    k_ = num_envs;
    d_ = world_->spec().obs_dim();
    c_ = static_cast<int>(world_->spec().reward_components.size());
  }

  const EnvSpec& spec() const { return world_->spec(); }
  int num_envs() const { return k_; }
  int num_agents() const { return n_; }
  std::uint64_t seed() const { return seed_; }
  std::string env_name() const { return cfg_->cmd.run.env; }
  std::vector<std::string> input_notes() const { return factory_->input_notes(); }
  std::vector<std::string> baseline_names() const {
    return find_env(cfg_->cmd.run.env).baseline_names();
  }

  /// New episodes in every copy (the next ones of each copy's sequence); the first observations.
  py::array_t<float> reset() {
    {
      py::gil_scoped_release nogil;
      world_->reset();
    }
    started_ = true;
    return observations(false);
  }

  /// One step of every copy with actions (K, N): observations (K, N, D), rewards (K, N),
  /// terminations and truncations (K, N), reward components (K, N, C), which copies ended (K),
  /// and their last observations (K, N, D; None when none ended). Copies whose episode ended
  /// have started the next one.
  py::tuple step(const py::array_t<int, py::array::c_style | py::array::forcecast>& actions) {
    MARLSCHED_REQUIRE(started_, "step() before reset()");
    MARLSCHED_REQUIRE(actions.ndim() == 2 && actions.shape(0) == k_ && actions.shape(1) == n_,
                      "actions must have shape (" << k_ << ", " << n_ << ") (num_envs, agents)");
    const int* a = actions.data();
    const int na = spec().num_actions();
    for (py::ssize_t i = 0; i < actions.size(); ++i)
      MARLSCHED_REQUIRE(a[i] >= 0 && a[i] < na, "action " << a[i] << " (copy " << i / n_
                                                          << ", agent " << i % n_
                                                          << ") is outside [0, " << na << ")");
    act_.assign(a, a + actions.size());
    {
      py::gil_scoped_release nogil;
      world_->step(act_);
    }
    py::array_t<float> rew({k_, n_}), comp({k_, n_, c_});
    py::array_t<bool> term({k_, n_}), trunc({k_, n_}), ended(k_);
    float* r = rew.mutable_data();
    float* cp = comp.mutable_data();
    bool* te = term.mutable_data();
    bool* tr = trunc.mutable_data();
    bool* en = ended.mutable_data();
    bool any = false;
    for (int e = 0; e < k_; ++e) {
      for (int i = 0; i < n_; ++i) {
        r[e * n_ + i] = world_->reward(e, i);
        for (int j = 0; j < c_; ++j) cp[(e * n_ + i) * c_ + j] = world_->component(e, i, j);
      }
      en[e] = world_->done(e);
      std::fill(tr + e * n_, tr + (e + 1) * n_, world_->done(e) && world_->truncated(e));
      std::fill(te + e * n_, te + (e + 1) * n_, world_->done(e) && !world_->truncated(e));
      any = any || en[e];
    }
    py::object final_obs = py::none();
    if (any) final_obs = observations(true);
    return py::make_tuple(observations(false), rew, term, trunc, comp, ended, final_obs);
  }

  /// The named baseline's actions (K, N) for the current observations (a stateful rule keeps its
  /// state across calls: one instance per name and env).
  py::array_t<int> baseline(const std::string& name) {
    MARLSCHED_REQUIRE(started_, "baseline() before reset()");
    auto it = baselines_.find(name);
    if (it == baselines_.end())  // as the CLI makes it: its seed, its message for a bad name
      it = baselines_.emplace(name, make_heuristic(name, spec(), seed_)).first;
    std::vector<int> out;
    {
      py::gil_scoped_release nogil;
      it->second->act(world_->policy_input(), out);
    }
    py::array_t<int> a({k_, n_});
    std::copy(out.begin(), out.end(), a.mutable_data());
    return a;
  }

  /// The env's hindsight upper bound on the utility of copy `copy`'s current episode (NaN where
  /// the env has none).
  double episode_bound(int copy) const {
    MARLSCHED_REQUIRE(started_ && copy >= 0 && copy < k_,
                      "episode_bound: copy " << copy << " of " << k_ << " (after reset())");
    const std::uint64_t ep = world_->episode_index(copy);
    py::gil_scoped_release nogil;
    return factory_->episode_bound(episode_world_seed(seed_, copy, ep),
                                   episode_shard_seeds(seed_, copy, ep, n_));
  }

  /// The C++ loop that the Python loop is measured against (bench/python_step.py): `steps` steps
  /// of every copy with uniformly random actions drawn in C++, without returning anything.
  void step_random(int steps, std::uint64_t seed) {
    MARLSCHED_REQUIRE(started_, "step_random() before reset()");
    py::gil_scoped_release nogil;
    Rng rng(seed);
    const int na = spec().num_actions();
    act_.resize(static_cast<std::size_t>(k_ * n_));
    for (int t = 0; t < steps; ++t) {
      for (auto& a : act_) a = static_cast<int>(rng.uniform() * na) % na;
      world_->step(act_);
    }
  }

  /// Steps taken in each copy's current episode.
  std::vector<int> episode_steps() const {
    std::vector<int> s;
    for (int e = 0; e < k_; ++e) s.push_back(world_->episode_step(e));
    return s;
  }

 private:
  py::array_t<float> observations(bool terminal) const {
    py::array_t<float> o({k_, n_, d_});
    float* out = o.mutable_data();
    for (int e = 0; e < k_; ++e) {
      const GlobalObs g = terminal ? world_->terminal_obs(e) : world_->obs(e);
      std::memcpy(out + static_cast<std::size_t>(e) * n_ * d_, g.data,
                  sizeof(float) * static_cast<std::size_t>(n_ * d_));
    }
    return o;
  }

  std::unique_ptr<Resolved> cfg_;
  dist::Comm comm_;
  std::unique_ptr<EnvFactory> factory_;
  std::unique_ptr<World> world_;
  std::map<std::string, std::unique_ptr<Policy>> baselines_;
  std::vector<int> act_;
  std::uint64_t seed_ = 1;
  int n_ = 0, k_ = 0, d_ = 0, c_ = 0;
  bool started_ = false;
};

py::dict spec_dict(const EnvSpec& s) {
  py::dict d;
  d["name"] = s.name;
  d["obs_fields"] = s.obs_fields;
  d["num_public"] = s.num_public;
  d["action_names"] = s.action_names;
  d["reward_components"] = s.reward_components;
  d["mean_components"] = s.mean_components;
  d["episode_length"] = s.episode_length;
  d["action_heads"] = s.action_heads;
  d["targets"] = s.targets;
  d["target_feature_names"] = s.target_feature_names;
  d["target_features"] = s.target_features;
  d["privileged_fields"] = s.privileged_fields;
  return d;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "marlsched's envs as batched multi-agent environments (see marlsched.make)";
  int init = 0;
  MPI_Initialized(&init);
  if (!init) {
    session = new dist::Session(nullptr, nullptr);
    m.add_object("_finalize", py::capsule([] {
                   delete session;
                   session = nullptr;
                 }));
  }
  // User errors (a bad config key or value, a bad input file) as ValueError with the CLI's text;
  // internal faults as RuntimeError.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ConfigError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.def("env_names", [] {
    std::vector<std::string> names;
    for (const auto& e : env_registry()) names.push_back(e.name);
    return names;
  });
  py::class_<VecEnv>(m, "VecEnv")
      .def(py::init<const std::string&, const std::string&, int, std::int64_t, int,
                    const std::vector<std::string>&>(),
           py::arg("env"), py::arg("config"), py::arg("num_envs"), py::arg("seed"),
           py::arg("num_agents"), py::arg("flags"))
      .def("reset", &VecEnv::reset)
      .def("step", &VecEnv::step, py::arg("actions"))
      .def("baseline", &VecEnv::baseline, py::arg("name"))
      .def("episode_bound", &VecEnv::episode_bound, py::arg("copy"))
      .def("episode_steps", &VecEnv::episode_steps)
      .def("step_random", &VecEnv::step_random, py::arg("steps"), py::arg("seed"))
      .def_property_readonly("num_envs", &VecEnv::num_envs)
      .def_property_readonly("num_agents", &VecEnv::num_agents)
      .def_property_readonly("seed", &VecEnv::seed)
      .def_property_readonly("env_name", &VecEnv::env_name)
      .def_property_readonly("input_notes", &VecEnv::input_notes)
      .def_property_readonly("baseline_names", &VecEnv::baseline_names)
      .def_property_readonly("spec", [](const VecEnv& v) { return spec_dict(v.spec()); });
}
