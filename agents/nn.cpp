#include "agents/nn.hpp"
#include "agents/torch_threads.hpp"

#include <cmath>
#include <sstream>

#include "core/blas.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/file.hpp"

namespace marlsched {

void set_torch_threads(int n) {
  set_blas_threads(n);  // libtorch's matrix products run on the BLAS's own threads
  torch::set_num_threads(n);
  torch::set_num_interop_threads(1);
}

}  // namespace marlsched

namespace marlsched::nn {

MlpImpl::MlpImpl(int in, const std::vector<int>& hidden, int out, double head_gain) {
  int prev = in;
  for (std::size_t i = 0; i < hidden.size(); ++i) {
    layers.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(prev, hidden[i])));
    prev = hidden[i];
  }
  head = register_module("head", torch::nn::Linear(prev, out));
  torch::NoGradGuard g;
  for (auto& l : layers) {
    torch::nn::init::orthogonal_(l->weight, std::sqrt(2.0));
    l->bias.zero_();
  }
  torch::nn::init::orthogonal_(head->weight, head_gain);
  head->bias.zero_();
}

torch::Tensor MlpImpl::forward(torch::Tensor x) {
  for (auto& l : layers) x = torch::tanh(l->forward(x));
  return head->forward(x);
}

void require_finite(const std::vector<torch::Tensor>& params, const std::string& what) {
  for (const auto& p : params)
    MARLSCHED_REQUIRE(torch::isfinite(p.detach()).all().item<bool>(),
                      "refusing to save " << what
                                          << ": its parameters hold NaN or infinite values (the "
                                             "updates diverged: a learning rate too large?)");
}

std::vector<torch::Tensor> params_of(const std::vector<Mlp>& ms) {
  std::vector<torch::Tensor> p;
  for (const auto& m : ms)
    for (auto& t : m->parameters()) p.push_back(t);
  return p;
}

void agent_input(const GlobalObs& g, int num_public, int agent, float* x) {
  const int d = g.obs_dim, n = g.num_agents;
  const float* own = g.row(agent);
  std::copy(own, own + d, x);
  for (int j = 0; j < n; ++j) std::copy(g.row(j), g.row(j) + num_public, x + d + j * num_public);
  float* onehot = x + d + num_public * n;
  std::fill(onehot, onehot + n, 0.f);
  onehot[agent] = 1.f;
}

const char* script_agent_input() {
  return R"(
def actor_input(self, obs: Tensor, agent: int) -> Tensor:
    b = obs.size(0)
    own = obs[:, agent, :]
    pub = obs[:, :, 0:self.num_public].reshape(b, self.num_agents * self.num_public)
    onehot = torch.zeros(b, self.num_agents, dtype=obs.dtype, device=obs.device)
    onehot[:, agent] = 1.0
    return torch.cat([own, pub, onehot], 1)
)";
}

void target_input(const EnvSpec& spec, const GlobalObs& g, int agent, float* x) {
  const int d = g.obs_dim, pub = spec.num_public, T = spec.num_targets();
  const int F = static_cast<int>(spec.target_feature_names.size());
  const float* own = g.row(agent);
  std::copy(own, own + d, x);
  float* r = x + d;
  const auto& tg = spec.targets[static_cast<std::size_t>(agent)];
  const float* st = spec.target_features[static_cast<std::size_t>(agent)].data();
  for (int t = 0; t < T; ++t) {
    const int j = tg[static_cast<std::size_t>(t)];
    const float* o = g.row(j);
    for (int f = 0; f < pub; ++f) {
      r[f] = o[f];
      r[pub + f] = o[f] - own[f];
    }
    r[2 * pub] = j == agent ? 1.f : 0.f;
    std::copy(st + t * F, st + (t + 1) * F, r + 2 * pub + 1);
    r += 2 * pub + 1 + F;
  }
}

torch::Tensor target_logits(const Mlp& net, const torch::Tensor& X, const EnvSpec& spec) {
  const std::int64_t rows = X.size(0), d = spec.obs_dim(), T = spec.num_targets();
  auto own = X.narrow(1, 0, d).unsqueeze(1).expand({rows, T, d});
  auto tr = X.narrow(1, d, X.size(1) - d).reshape({rows, T, -1});
  auto out = net.ptr()->forward(torch::cat({own, tr}, 2).reshape({rows * T, -1}));
  return out.reshape({rows, T, -1}).transpose(1, 2).reshape({rows, -1});  // [rows, modes·T]
}

std::string script_target_input(torch::jit::Module& mod, const EnvSpec& spec) {
  const auto n = static_cast<std::int64_t>(spec.targets.size());
  const std::int64_t T = spec.num_targets();
  const auto F = static_cast<std::int64_t>(spec.target_feature_names.size());
  auto tg = torch::empty({n, T}, torch::kInt64);
  auto st = torch::empty({n, T, F}, torch::kFloat32);
  auto* tp = tg.data_ptr<std::int64_t>();
  auto* sp = st.data_ptr<float>();
  for (std::size_t i = 0; i < spec.targets.size(); ++i) {
    tp = std::copy(spec.targets[i].begin(), spec.targets[i].end(), tp);
    sp = std::copy(spec.target_features[i].begin(), spec.target_features[i].end(), sp);
  }
  mod.register_buffer("targets", tg);
  mod.register_buffer("target_static", st);
  mod.register_attribute("num_targets", c10::IntType::get(), T);
  return R"(
def actor_input(self, obs: Tensor, agent: int) -> Tensor:
    b = obs.size(0)
    own = obs[:, agent, :]
    tg = self.targets[agent]
    pub = obs.index_select(1, tg)[:, :, 0:self.num_public]
    mine = own[:, 0:self.num_public].unsqueeze(1)
    is_self = (tg == agent).to(obs.dtype).reshape(1, -1, 1).expand(b, -1, 1)
    st = self.target_static[agent].to(obs.dtype).unsqueeze(0).expand(b, -1, -1)
    rows = torch.cat([pub, pub - mine, is_self, st], 2)
    return torch.cat([own, rows.reshape(b, -1)], 1)
)";
}

std::string script_actor(torch::jit::Module& mod, const std::string& prefix, const Mlp& net,
                         const std::string& indent, bool per_target) {
  if (!per_target) return script_mlp(mod, prefix, net, indent);
  std::ostringstream code;
  const std::string& i = indent;
  code << i << "b = x.size(0)\n"
       << i << "nt = self.num_targets\n"
       << i << "own = x[:, 0:self.obs_dim].unsqueeze(1).expand(b, nt, self.obs_dim)\n"
       << i << "x = torch.cat([own, x[:, self.obs_dim:].reshape(b, nt, -1)], 2)\n"
       << i << "x = x.reshape(b * nt, -1)\n"
       << script_mlp(mod, prefix, net, indent) << i
       << "out = out.reshape(b, nt, -1).transpose(1, 2).reshape(b, -1)\n";
  return code.str();
}

const char* script_logits_head() {
  return R"(
def logits(self, obs: Tensor, agent: int) -> Tensor:
    assert agent >= 0 and agent < self.num_agents, "agent index out of range"
    x = self.actor_input(obs, agent)
)";
}

namespace {
// TorchScript shared by both calling conventions: a clear error for input the policy cannot
// score (wrong shape, an agent it does not hold, NaN or infinite values) instead of an
// internal torch message or NaN probabilities.
const char* kScriptCheckInput = R"py(
def check_input(self, obs: Tensor, agent: int):
    assert obs.dim() == 2 or obs.dim() == 3, "marlsched policy: obs must be [num_agents, obs_dim] or [batch, num_agents, obs_dim], got " + str(obs.dim()) + " dimensions"
    assert obs.shape[-2] == self.num_agents and obs.shape[-1] == self.obs_dim, "marlsched policy: obs must end in [" + str(self.num_agents) + ", " + str(self.obs_dim) + "] (agents, observation size), got [" + str(obs.shape[-2]) + ", " + str(obs.shape[-1]) + "]"
    assert agent >= 0 and agent < self.num_agents, "marlsched policy: agent " + str(agent) + " is not in [0, " + str(self.num_agents) + ")"
    assert bool(torch.isfinite(obs).all()), "marlsched policy: obs holds NaN or infinite values"
)py";
}  // namespace

const char* script_softmax_policy() {
  static const std::string src = std::string(kScriptCheckInput) + R"(
def probs(self, obs: Tensor, agent: int) -> Tensor:
    self.check_input(obs, agent)
    single = obs.dim() == 2
    x = obs.unsqueeze(0) if single else obs
    p = torch.softmax(self.logits(x, agent), -1)
    return p[0] if single else p

def forward(self, obs: Tensor, agent: int, deterministic: bool = False) -> Tuple[Tensor, Tensor]:
    p = self.probs(obs, agent)
    if deterministic:
        action = torch.argmax(p, -1)
    else:
        action = torch.multinomial(p.reshape(-1, self.num_actions), 1).reshape(p.shape[:-1])
    return p, action
)";
  return src.c_str();
}

std::string script_greedy_policy(const std::string& scores) {
  return std::string(kScriptCheckInput) + R"(
def probs(self, obs: Tensor, agent: int) -> Tensor:
    self.check_input(obs, agent)
    single = obs.dim() == 2
    x = obs.unsqueeze(0) if single else obs
    v = self.)" +
         scores + R"((x, agent)
    p = torch.zeros_like(v).scatter(-1, torch.argmax(v, -1, keepdim=True), 1.0)
    return p[0] if single else p

def forward(self, obs: Tensor, agent: int, deterministic: bool = False) -> Tuple[Tensor, Tensor]:
    p = self.probs(obs, agent)
    return p, torch.argmax(p, -1)
)";
}

void save_module(torch::jit::Module& mod, const std::string& source, const std::string& path) {
  mod.define(source);
  mod.eval();
  std::ostringstream bytes;
  mod.save(bytes);
  write_file_atomic(path, bytes.str());
}

std::string script_mlp(torch::jit::Module& mod, const std::string& prefix, const Mlp& net,
                       const std::string& indent) {
  std::ostringstream code;
  auto param = [&](const std::string& name, const torch::Tensor& t) {
    mod.register_parameter(prefix + name, t.detach().to(torch::kCPU).clone(), false);
    return "self." + prefix + name;
  };
  code << indent << "h = x\n";
  for (std::size_t i = 0; i < net->layers.size(); ++i) {
    const std::string l = "_fc" + std::to_string(i);
    const auto w = param(l + "_weight", net->layers[i]->weight);
    const auto b = param(l + "_bias", net->layers[i]->bias);
    code << indent << "h = torch.tanh(torch.addmm(" << b << ", h, " << w << ".t()))\n";
  }
  const auto w = param("_head_weight", net->head->weight);
  const auto b = param("_head_bias", net->head->bias);
  code << indent << "out = torch.addmm(" << b << ", h, " << w << ".t())\n";
  return code.str();
}

torch::jit::Module policy_module(int num_agents, int obs_dim, int num_public, int num_actions,
                                 const std::string& metadata) {
  torch::jit::Module mod("marlsched_policy");
  mod.register_attribute("num_agents", c10::IntType::get(), num_agents);
  mod.register_attribute("obs_dim", c10::IntType::get(), obs_dim);
  mod.register_attribute("num_public", c10::IntType::get(), num_public);
  mod.register_attribute("num_actions", c10::IntType::get(), num_actions);
  mod.register_attribute("metadata", c10::StringType::get(), metadata);
  return mod;
}

std::string script_per_agent(torch::jit::Module& mod, const std::string& prefix,
                             const std::vector<const Mlp*>& nets, bool per_target) {
  std::ostringstream src;
  const auto n = nets.size();
  for (std::size_t a = 0; a < n; ++a)
    src << "    " << (a + 1 < n ? "if agent == " + std::to_string(a) + ":" : "if True:") << "\n"
        << script_actor(mod, prefix + std::to_string(a), *nets[a], "        ", per_target)
        << "        return out\n";
  src << "    return torch.zeros(0)\n";  // not reached: the last branch always returns
  return src.str();
}

void check_device(const std::string& name) {
  MARLSCHED_REQUIRE(name == "cpu" || name == "cuda" || name.rfind("cuda:", 0) == 0,
                    "--device must be cpu, cuda or cuda:N, got '" << name << "'");
  if (name == "cpu") return;
  MARLSCHED_REQUIRE(torch::cuda::is_available(),
                    "--device " << name
                                << ": this libtorch has no CUDA support or sees no GPU "
                                   "(torch::cuda::is_available() is false); build marlsched "
                                   "against a CUDA libtorch (cmake -DCMAKE_PREFIX_PATH=<libtorch>) "
                                   "and run on a GPU node, or use --device cpu");
  if (name != "cuda") {
    int idx = -1;
    try {
      idx = std::stoi(name.substr(5));
    } catch (const std::exception&) {
    }
    const int count = static_cast<int>(torch::cuda::device_count());
    MARLSCHED_REQUIRE(idx >= 0 && idx < count,
                      "--device " << name << ": no such GPU (" << count << " visible)");
  }
}

torch::Device device_for(const std::string& name, const dist::Comm& comm) {
  if (name == "cpu") return torch::kCPU;
  check_device(name);
  if (name != "cuda") return torch::Device(name);
  // The GPU of the rank's index among the ranks of its node.
  return torch::Device(
      torch::kCUDA, static_cast<c10::DeviceIndex>(comm.node_rank() % torch::cuda::device_count()));
}

}  // namespace marlsched::nn
