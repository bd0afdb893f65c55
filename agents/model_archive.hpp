#pragma once
/// \file model_archive.hpp
/// Model files: what every learner writes (model-rank-R.pt, the copies in checkpoints) and reads
/// back (resume, evaluation, export, warm starts), as one type.
///
/// A model file is a libtorch archive (`torch::save`'s zip format) of named records: tensors,
/// networks and optimiser states. libtorch's reader does not check the CRC-32 that every zip
/// record carries, so a flipped bit would load as a wrong weight: ModelReader reads every record
/// through libzip first (verify_archive), which checks each CRC-32 and the archive's structure.
/// It then maps what libtorch throws on a missing or unreadable record to one InputError naming
/// the file, the record and the model kind, and checks the layout a learner records in its file
/// (agents, observation and action space, network shapes) with one ConfigError naming what
/// differs. ModelWriter builds the archive in memory and writes it with one call
/// (core/file.hpp's write_file: a full disk fails with the path and its errno).

#include <torch/torch.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/rng.hpp"

namespace marlsched {

/// Throws InputError naming `what` (e.g. "model"), the file and the damaged record when `path`
/// is not a consistent zip archive or a record fails its CRC-32. Reads the whole file once.
void verify_archive(const std::string& path, const std::string& what);

/// The records of a model file, in the order written (the order is part of the file's bytes).
class ModelWriter {
 public:
  void tensor(const std::string& name, const torch::Tensor& t) { ar_.write(name, t); }
  /// A 1-D tensor of the values (float, double, int32 or int64).
  template <typename T>
  void values(const std::string& name, const std::vector<T>& v);
  void text(const std::string& name, const std::string& s);
  /// The generators' states (core/rng.hpp's write_states), as text.
  void rngs(const std::string& name, std::initializer_list<const Rng*> rngs);
  void module(const std::string& name, const torch::nn::Module& net);
  void optimizer(const std::string& name, const torch::optim::Optimizer& opt);
  /// A residual policy's baseline (ES --es-base, MAPPO --base-policy): its name and margin;
  /// nothing without one.
  void base(const std::string& policy, double margin);

  /// Writes the file whole (write_file).
  void save(const std::string& path);
  /// Writes the archive to `out` (a learner whose file holds several, tsdqn).
  void save(std::ostream& out);

 private:
  torch::serialize::OutputArchive ar_;
};

/// A model file opened for reading. `kind` names the learner whose file it should be ("MAPPO",
/// "DQN", "ES", ...) in the messages. Every read throws InputError when the record is missing or
/// unreadable; checks of what a record holds throw ConfigError (a model of another run's layout
/// is a configuration mistake, not a damaged file).
class ModelReader {
 public:
  /// Opens `path`: every record's CRC-32 checked, the archive read onto `device`.
  ModelReader(const std::string& path, std::string kind, torch::Device device = torch::kCPU);
  /// Reads an archive from `in` (one of several in a file whose integrity its reader checked);
  /// `path` names it in messages.
  ModelReader(std::istream& in, const std::string& path, std::string kind,
              torch::Device device = torch::kCPU);

  const std::string& path() const { return path_; }

  /// ConfigError "model 'P' <mismatch>" unless record `name` is an int64 tensor holding `want`.
  void require_layout(const std::string& name, const std::vector<std::int64_t>& want,
                      const std::string& mismatch);

  /// Record `name` on the host, contiguous; with `numel` >= 0 it must hold that many values
  /// (InputError otherwise, so that reading them cannot fail later).
  torch::Tensor tensor(const std::string& name, std::int64_t numel = -1);
  /// Record `name` into `out`, as tensor() does, if the file has it (records added in later
  /// versions).
  bool try_tensor(const std::string& name, torch::Tensor& out, std::int64_t numel = -1);
  /// Record `name` (a 1-D tensor of T) into `v`, which must have its size already; `what` names
  /// it in the ConfigError otherwise.
  template <typename T>
  void values(const std::string& name, std::vector<T>& v, const std::string& what);
  std::string text(const std::string& name);
  /// Restores generators written by ModelWriter::rngs (same generators, same order).
  void rngs(const std::string& name, std::initializer_list<Rng*> rngs);
  void module(const std::string& name, torch::nn::Module& net);
  void optimizer(const std::string& name, torch::optim::Optimizer& opt);
  /// ConfigError unless the file's baseline (none where absent) is `policy` with `margin`;
  /// `option` and `margin_option` name the flags in the message.
  void require_base(const std::string& option, const std::string& margin_option,
                    const std::string& policy, double margin);
  /// ConfigError unless network record `name` has exactly the parameters of `want` (name by
  /// name, shape by shape, recursively, and nothing more): libtorch's Module::load would take
  /// other shapes silently and the first forward would fail deep inside. `sizes` names the
  /// options that shape it.
  void require_shapes(const std::string& name, const torch::nn::Module& want,
                      const std::string& sizes);

 private:
  /// Reads the archive with `load` (from a file or a stream), mapping libtorch's refusal.
  template <class Load>
  void open(Load&& load);
  /// Loads record `name` into a network or an optimiser.
  template <class T>
  void load_into(const std::string& name, T& target);
  [[noreturn]] void unreadable(const std::string& record) const;
  torch::Tensor checked(const std::string& name, const torch::Tensor& t, std::int64_t numel) const;
  torch::serialize::InputArchive ar_;
  std::string path_, kind_;
};

}  // namespace marlsched
