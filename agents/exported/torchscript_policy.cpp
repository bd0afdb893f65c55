#include "agents/exported/torchscript_policy.hpp"
#include "agents/model_archive.hpp"

#include <torch/script.h>

#include <cstdlib>
#include <filesystem>

#include "core/error.hpp"

namespace marlsched {

namespace {

torch::jit::Module load_module(const std::string& path) {
  if (!std::filesystem::exists(path))
    MARLSCHED_THROW(InputError, "exported policy '" << path << "' does not exist");
  verify_archive(path, "exported policy");
  try {
    return torch::jit::load(path);
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    MARLSCHED_THROW(InputError, "cannot load exported policy '"
                                    << path << "' (damaged or not TorchScript): "
                                    << what.substr(0, what.find('\n')));
  }
}

class ExportedPolicy final : public Policy {
 public:
  ExportedPolicy(torch::jit::Module m, std::string name, bool deterministic)
      : m_(std::move(m)), name_(std::move(name)), deterministic_(deterministic) {}
  std::string name() const override { return name_; }
  ActionLaw action_law() const override {
    return deterministic_ ? ActionLaw::kDeterministic : ActionLaw::kUnknown;
  }
  void act(const PolicyInput& in, std::vector<int>& actions) override {
    torch::NoGradGuard g;
    actions.resize(static_cast<std::size_t>(in.copies * in.local_agents));
    auto method = m_.get_method("probs");
    for (int c = 0; c < in.copies; ++c) {
      const GlobalObs& o = in.global[static_cast<std::size_t>(c)];
      auto obs =
          torch::from_blob(const_cast<float*>(o.data), {o.num_agents, o.obs_dim}, torch::kFloat32);
      for (int k = 0; k < in.local_agents; ++k) {
        const int agent = in.first_agent + k;
        const auto p = method({obs, agent}).toTensor().contiguous();
        actions[static_cast<std::size_t>(c * in.local_agents + k)] =
            deterministic_ ? static_cast<int>(p.argmax(-1).item<std::int64_t>())
                           : sample_index(p.data_ptr<float>(), static_cast<int>(p.numel()),
                                          in.draw(c, agent, kActionStream), false);
      }
    }
  }

 private:
  torch::jit::Module m_;
  std::string name_;
  bool deterministic_;
};

}  // namespace

std::string json_string_field(const std::string& json, const std::string& key) {
  const std::string pat = "\"" + key + "\": \"";
  auto pos = json.find(pat);
  if (pos == std::string::npos) return {};
  std::string out;
  for (pos += pat.size(); pos < json.size() && json[pos] != '"'; ++pos) {
    if (json[pos] != '\\' || pos + 1 >= json.size()) {
      out += json[pos];
      continue;
    }
    const char c = json[++pos];
    if (c == 'n') {
      out += '\n';
    } else if (c == 'u' && pos + 4 < json.size()) {
      out += static_cast<char>(std::stoi(json.substr(pos + 1, 4), nullptr, 16));
      pos += 4;
    } else {
      out += c;
    }
  }
  return out;
}

int json_int_field(const std::string& json, const std::string& key) {
  const std::string pat = "\"" + key + "\": ";
  const auto pos = json.find(pat);
  return pos == std::string::npos ? 0 : std::atoi(json.c_str() + pos + pat.size());
}

std::string exported_policy_metadata(const std::string& path) {
  auto m = load_module(path);
  if (!m.hasattr("metadata") || !m.attr("metadata").isString())
    MARLSCHED_THROW(InputError, "'" << path << "' is TorchScript but not a marlsched policy "
                                    << "(no metadata attribute)");
  return m.attr("metadata").toStringRef();
}

std::unique_ptr<Policy> load_exported_policy(const std::string& path, const EnvSpec& spec,
                                             int num_agents, bool deterministic) {
  auto m = load_module(path);
  if (!m.hasattr("metadata") || !m.hasattr("num_agents") || !m.hasattr("obs_dim") ||
      !m.hasattr("num_actions") || !m.find_method("probs") || !m.attr("metadata").isString())
    MARLSCHED_THROW(InputError, "'" << path << "' is TorchScript but not a marlsched policy");
  // The metadata says what the policy was trained on: refuse another env or layout here, with
  // what to change, rather than inside the module's forward pass.
  const std::string env = json_string_field(m.attr("metadata").toStringRef(), "env");
  if (!env.empty() && env != spec.name)
    MARLSCHED_THROW(InputError, "exported policy '"
                                    << path << "' was trained on the " << env
                                    << " env; this run's env is " << spec.name << " (give --env "
                                    << env << ", or leave out --env and --config to use the "
                                    << "training config stored in the policy)");
  const auto n = m.attr("num_agents").toInt();
  if (n != num_agents)
    MARLSCHED_THROW(InputError, "exported policy '" << path << "' was trained for " << n
                                                    << " agents; this run has " << num_agents);
  const auto d = m.attr("obs_dim").toInt(), a = m.attr("num_actions").toInt();
  if (d != spec.obs_dim() || a != spec.num_actions())
    MARLSCHED_THROW(InputError, "exported policy '"
                                    << path << "' was trained with observation size " << d
                                    << " and " << a << " actions; this run's " << spec.name
                                    << " config gives " << spec.obs_dim() << " and "
                                    << spec.num_actions()
                                    << " (its options differ from the training config stored in "
                                       "the policy: leave out --config to use that one)");
  m.eval();
  const std::string file = std::filesystem::path(path).filename().string();
  return std::make_unique<ExportedPolicy>(std::move(m), file + (deterministic ? " (greedy)" : ""),
                                          deterministic);
}

}  // namespace marlsched
