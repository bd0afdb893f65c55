#pragma once
/// \file nn.hpp
/// Pieces every torch learner shares: the MLP, the per-agent input (own observation, every
/// site's public fields, one-hot agent id), and the TorchScript source that rebuilds both in an
/// exported module. Internal to agents/ (includes torch).

#include <torch/script.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/policy.hpp"
#include "dist/comm.hpp"

namespace marlsched::nn {

/// Fully connected network with tanh hidden layers and a linear head; hidden layers get
/// orthogonal √2 initialisation, the head `head_gain`.
struct MlpImpl : torch::nn::Module {
  MlpImpl(int in, const std::vector<int>& hidden, int out, double head_gain);
  torch::Tensor forward(torch::Tensor x);
  std::vector<torch::nn::Linear> layers;
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Mlp);

std::vector<torch::Tensor> params_of(const std::vector<Mlp>& ms);

/// Saves the state of torch's default CPU generator and puts it back when it goes: for code that
/// builds a network only to look at its shapes, so that the run's draws stay the same.
class KeepTorchRng {
 public:
  KeepTorchRng() : gen_(at::detail::getDefaultCPUGenerator()) {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    state_ = gen_.get_state();
  }
  ~KeepTorchRng() {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    gen_.set_state(state_);
  }
  KeepTorchRng(const KeepTorchRng&) = delete;
  KeepTorchRng& operator=(const KeepTorchRng&) = delete;

 private:
  at::Generator gen_;
  at::Tensor state_;
};

/// Refuses to write a model or checkpoint whose parameters are not all finite (issue 22):
/// throws an Error naming `what` (the file) instead of saving weights nobody can use.
void require_finite(const std::vector<torch::Tensor>& params, const std::string& what);

/// Width of the per-agent input for `num_agents` agents.
inline int agent_input_dim(const EnvSpec& spec, int num_agents) {
  return spec.obs_dim() + spec.num_public * num_agents + num_agents;
}
/// Writes the per-agent input of `agent` for one world's global observations into `x`.
void agent_input(const GlobalObs& g, int num_public, int agent, float* x);

/// TorchScript of `actor_input(self, obs, agent)` (obs [batch, num_agents, obs_dim]), matching
/// agent_input(); the module needs int attributes num_agents and num_public.
const char* script_agent_input();

/// The per-target actor (MAPPO --actor targets; needs EnvSpec::targets). Its input is the
/// agent's own observation followed by one row per target: the target's public fields, their
/// difference from the agent's own, an is-self flag and the env's static pair features
/// (EnvSpec::target_features). One shared network scores every (own observation, target row)
/// pair with one logit per mode; the logits are laid out as the env's actions (m·T + t). Nothing
/// in it depends on the agent count: a policy trained at 8 agents runs at 128.
inline int target_row_dim(const EnvSpec& spec) {
  return 2 * spec.num_public + 1 + static_cast<int>(spec.target_feature_names.size());
}
/// Width of the per-target actor's input (own observation + T target rows).
inline int target_input_dim(const EnvSpec& spec) {
  return spec.obs_dim() + spec.num_targets() * target_row_dim(spec);
}
/// Writes the per-target input of `agent` for one world's global observations into `x`.
void target_input(const EnvSpec& spec, const GlobalObs& g, int agent, float* x);
/// Logits [rows, modes·T] of the scoring network `net` (input obs_dim + target_row_dim, output
/// modes) for per-target inputs X [rows, target_input_dim].
torch::Tensor target_logits(const Mlp& net, const torch::Tensor& X, const EnvSpec& spec);
/// TorchScript of `actor_input(self, obs, agent)` matching target_input(); registers the
/// targets table and the static pair features on `mod` (buffers) and the int num_targets.
std::string script_target_input(torch::jit::Module& mod, const EnvSpec& spec);

/// TorchScript lines computing the actor's logits `out` from its input `x`: the MLP, or with
/// `per_target` the scoring network applied to every (own observation, target row) pair.
std::string script_actor(torch::jit::Module& mod, const std::string& prefix, const Mlp& net,
                         const std::string& indent, bool per_target);

/// TorchScript of the first lines of `logits(self, obs, agent)` (obs [batch, num_agents,
/// obs_dim]): the agent's input in `x`; the caller appends the network's lines and a return.
const char* script_logits_head();
/// TorchScript of `probs(self, obs, agent)` (the softmax of `logits`, for one observation
/// [num_agents, obs_dim] or a batch) and `forward(self, obs, agent, deterministic)` -> (probs,
/// action): the calling convention of every exported stochastic policy.
const char* script_softmax_policy();

/// TorchScript of `probs(self, obs, agent)` (the one-hot argmax of the batch method
/// `scores(self, obs [batch, num_agents, obs_dim], agent)`, for one observation or a batch) and
/// `forward(self, obs, agent, deterministic)` -> (probs, action): a deterministic policy (DQN's
/// Q-values, ES's logits) in the calling convention of every exported policy.
std::string script_greedy_policy(const std::string& scores);

/// Defines `source` on `mod`, puts it in evaluation mode and writes it to `path` atomically.
void save_module(torch::jit::Module& mod, const std::string& source, const std::string& path);

/// Registers an MLP's weights on `mod` as `prefix_fcI_weight` ... and returns TorchScript lines
/// that compute it from the variable `x` into `out` (indented by `indent`).
std::string script_mlp(torch::jit::Module& mod, const std::string& prefix, const Mlp& net,
                       const std::string& indent);

/// An exported policy module with the attributes every exporter sets (num_agents, obs_dim,
/// num_public, num_actions, and the JSON `metadata`).
torch::jit::Module policy_module(int num_agents, int obs_dim, int num_public, int num_actions,
                                 const std::string& metadata);

/// TorchScript lines (indented for a method body) returning network i's output for `agent` == i,
/// one branch per agent in agent order (`nets` holds num_agents networks, gathered from every
/// training rank); weights are registered as `prefix<i>_...`.
std::string script_per_agent(torch::jit::Module& mod, const std::string& prefix,
                             const std::vector<const Mlp*>& nets, bool per_target = false);

/// --device names: "cpu"; "cuda" (this rank's GPU: its rank on the node modulo the GPUs it
/// sees, so ranks spread over a node's GPUs); "cuda:N". Throws ConfigError for another name, or
/// for a CUDA device where libtorch was built without CUDA or sees no GPU.
void check_device(const std::string& name);
/// The device a learner of this rank puts its networks and batches on (after check_device).
torch::Device device_for(const std::string& name, const dist::Comm& comm);

/// Where a learner sits, as every learner's state keeps it: the device of its networks, the
/// agents (n over all ranks, this rank's first and its k), the env copies per rank (e), the
/// observation width (d), its public fields (pub) and the actions (na).
struct LearnerDims {
  LearnerDims(const EnvSpec& spec, const dist::Comm& comm, const std::string& device,
              int num_agents, int first_agent, int local_agents, int copies)
      : dev(device_for(device, comm)),
        n(num_agents),
        first(first_agent),
        k(local_agents),
        e(copies),
        d(spec.obs_dim()),
        pub(spec.num_public),
        na(spec.num_actions()) {}
  torch::Device dev;
  int n, first, k, e, d, pub, na;
};
/// `t` on the host and contiguous, for reading through data_ptr (no copy on the CPU).
inline torch::Tensor host(const torch::Tensor& t) {
  return t.to(torch::kCPU).contiguous();
}

/// Host rows `v` ([rows, cols] floats) as a tensor on `dev` (no copy on the CPU: it views `v`).
inline torch::Tensor blob(std::vector<float>& v, std::int64_t rows, std::int64_t cols,
                          const torch::Device& dev) {
  return torch::from_blob(v.data(), {rows, cols}, torch::kFloat32).to(dev);
}

}  // namespace marlsched::nn
