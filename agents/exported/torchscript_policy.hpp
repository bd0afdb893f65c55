#pragma once
/// \file torchscript_policy.hpp
/// A policy exported by `marlsched export` (a TorchScript module, see Mappo::export_torchscript)
/// acting inside the framework: `marlsched eval --policy FILE` compares it with the baselines.
/// The header is free of torch.

#include <cstdint>
#include <memory>
#include <string>

#include "core/policy.hpp"

namespace marlsched {

/// The JSON metadata stored in an exported policy (its `metadata` attribute). Throws InputError
/// naming the file when it is not a loadable TorchScript module.
std::string exported_policy_metadata(const std::string& path);

/// The value of a top-level string field of a flat JSON object (as the exporter writes it), or
/// "" when absent.
std::string json_string_field(const std::string& json, const std::string& key);
/// The value of a top-level integer field of such an object, or 0 when absent.
int json_int_field(const std::string& json, const std::string& key);

/// Loads an exported policy for `num_agents` agents of `spec`; throws InputError if the file is
/// not an exported marlsched policy or was trained on another env, agent count, observation
/// size or action count. It samples with PolicyInput::draw (the same actions at every rank
/// count); `deterministic` takes the most probable action.
std::unique_ptr<Policy> load_exported_policy(const std::string& path, const EnvSpec& spec,
                                             int num_agents, bool deterministic);

}  // namespace marlsched
