#include "agents/model_archive.hpp"

#include <zip.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/file.hpp"

namespace marlsched {

void verify_archive(const std::string& path, const std::string& what) {
  int code = 0;
  // ZIP_CHECKCONS: the central directory must agree with the local headers.
  std::unique_ptr<zip_t, int (*)(zip_t*)> z(
      zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code), zip_close);
  if (!z) {
    zip_error_t err;
    zip_error_init_with_code(&err, code);
    const std::string text = zip_error_strerror(&err);
    zip_error_fini(&err);
    MARLSCHED_THROW(InputError, "cannot read " << what << " '" << path << "': " << text
                                               << " (the file is damaged, truncated or not a "
                                                  "model archive)");
  }
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  std::vector<char> buf(1 << 16);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(z.get(), static_cast<zip_uint64_t>(i), 0);
    const std::string record = name ? name : "#" + std::to_string(i);
    // libtorch's archive writer (PyTorchStreamWriter: torch::save and TorchScript's save, in
    // C++ and Python) stores tensor records as they are and deflates only its small code and
    // metadata records. A compressed record that inflates past kMaxInflated is a zip bomb or a
    // file of another making: refused from the zip directory, before anything is inflated.
    constexpr zip_uint64_t kMaxInflated = 16u << 20;
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z.get(), static_cast<zip_uint64_t>(i), 0, &st) == 0 &&
        (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method != ZIP_CM_STORE &&
        (st.valid & ZIP_STAT_SIZE) && st.size > kMaxInflated)
      MARLSCHED_THROW(InputError,
                      "cannot read "
                          << what << " '" << path << "': its record '" << record << "' inflates to "
                          << st.size << " bytes from "
                          << ((st.valid & ZIP_STAT_COMP_SIZE) ? std::to_string(st.comp_size)
                                                              : std::string("?"))
                          << "; libtorch stores tensors as they are and compresses "
                             "only small code records (at most "
                          << kMaxInflated
                          << " bytes here): a zip bomb, or a file not written by "
                             "marlsched or libtorch");
    std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> f(
        zip_fopen_index(z.get(), static_cast<zip_uint64_t>(i), 0), zip_fclose);
    if (!f)
      MARLSCHED_THROW(InputError, what << " '" << path << "' is damaged: record '" << record
                                       << "' cannot be read ("
                                       << zip_error_strerror(zip_get_error(z.get())) << ")");
    zip_int64_t got = 0;
    // libzip compares the record's CRC-32 when the last byte has been read.
    while ((got = zip_fread(f.get(), buf.data(), buf.size())) > 0) {
    }
    if (got < 0)
      MARLSCHED_THROW(InputError, what << " '" << path << "' is damaged: record '" << record
                                       << "' fails its check ("
                                       << zip_error_strerror(zip_file_get_error(f.get()))
                                       << "); restore it from a copy, or use an older "
                                          "checkpoint of its run");
  }
}

namespace {

torch::Tensor host(const torch::Tensor& t) {
  return t.to(torch::kCPU).contiguous();
}

std::string shape_text(const torch::Tensor& t) {
  std::string s;
  for (auto d : t.sizes()) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

template <typename T>
constexpr torch::ScalarType scalar_type_of() {
  if constexpr (std::is_same_v<T, float>) return torch::kFloat32;
  if constexpr (std::is_same_v<T, double>) return torch::kFloat64;
  if constexpr (std::is_same_v<T, std::int32_t>) return torch::kInt32;
  return torch::kInt64;
}

/// Network `name`'s parameters in `ar` against `want`'s, recursively.
void require_shapes_rec(const torch::nn::Module& want, torch::serialize::InputArchive& ar,
                        const std::string& path, const std::string& name,
                        const std::string& sizes) {
  for (const auto& p : want.named_parameters(/*recurse=*/false)) {
    torch::Tensor got;
    MARLSCHED_REQUIRE(ar.try_read(p.key(), got),
                      "model '" << path << "' has no " << name << "." << p.key()
                                << ": it holds another network (" << sizes
                                << " must be those of the run it came from)");
    MARLSCHED_REQUIRE(got.sizes() == p.value().sizes(),
                      "model '" << path << "' holds " << name << "." << p.key() << " of shape "
                                << shape_text(got) << ", but this run builds "
                                << shape_text(p.value()) << ": " << sizes
                                << " must be those of the run it came from");
  }
  // And nothing more: a stored network with a layer more would load into this one silently.
  for (const auto& key : ar.keys()) {
    const bool known = key == "training" ||  // every TorchScript module's own attribute
                       want.named_parameters(false).contains(key) ||
                       want.named_buffers(false).contains(key) ||
                       want.named_children().contains(key);
    MARLSCHED_REQUIRE(known, "model '" << path << "' holds " << name << "." << key
                                       << ", which this run's network does not have: " << sizes
                                       << " must be those of the run it came from");
  }
  for (const auto& c : want.named_children()) {
    torch::serialize::InputArchive sub;
    MARLSCHED_REQUIRE(ar.try_read(c.key(), sub),
                      "model '" << path << "' has no " << name << "." << c.key()
                                << ": it holds another network (" << sizes
                                << " must be those of the run it came from)");
    require_shapes_rec(*c.value(), sub, path, name + "." + c.key(), sizes);
  }
}

}  // namespace

template <typename T>
void ModelWriter::values(const std::string& name, const std::vector<T>& v) {
  ar_.write(name, torch::from_blob(const_cast<T*>(v.data()), {static_cast<std::int64_t>(v.size())},
                                   scalar_type_of<T>())
                      .clone());
}
template void ModelWriter::values(const std::string&, const std::vector<float>&);
template void ModelWriter::values(const std::string&, const std::vector<double>&);
template void ModelWriter::values(const std::string&, const std::vector<std::int32_t>&);
template void ModelWriter::values(const std::string&, const std::vector<std::int64_t>&);

void ModelWriter::text(const std::string& name, const std::string& s) {
  ar_.write(name, torch::from_blob(const_cast<char*>(s.data()),
                                   {static_cast<std::int64_t>(s.size())}, torch::kUInt8)
                      .clone());
}

void ModelWriter::rngs(const std::string& name, std::initializer_list<const Rng*> rngs) {
  text(name, write_states(rngs));
}

namespace {
/// A network or an optimiser as a sub-archive of `ar`.
template <class T>
void write_sub(torch::serialize::OutputArchive& ar, const std::string& name, const T& source) {
  torch::serialize::OutputArchive sub;
  source.save(sub);
  ar.write(name, sub);
}
}  // namespace

void ModelWriter::module(const std::string& name, const torch::nn::Module& net) {
  write_sub(ar_, name, net);
}

void ModelWriter::optimizer(const std::string& name, const torch::optim::Optimizer& opt) {
  write_sub(ar_, name, opt);
}

void ModelWriter::base(const std::string& policy, double margin) {
  if (policy.empty()) return;
  text("base_policy", policy);
  ar_.write("base_margin", torch::tensor({margin}, torch::kFloat64));
}

void ModelWriter::save(const std::string& path) {
  std::ostringstream bytes;
  ar_.save_to(bytes);  // in memory: a full disk then fails in write_file, with errno
  write_file(path, bytes.str());
}

void ModelWriter::save(std::ostream& out) {
  ar_.save_to(out);
}

template <class Load>
void ModelReader::open(Load&& load) {
  try {
    load();
  } catch (const c10::Error&) {
    MARLSCHED_THROW(InputError, "cannot read model '" << path_ << "': not a marlsched " << kind_
                                                      << " model file");
  }
}

ModelReader::ModelReader(const std::string& path, std::string kind, torch::Device device)
    : path_(path), kind_(std::move(kind)) {
  verify_archive(path, "model");
  open([&] { ar_.load_from(path, device); });
}

ModelReader::ModelReader(std::istream& in, const std::string& path, std::string kind,
                         torch::Device device)
    : path_(path), kind_(std::move(kind)) {
  open([&] { ar_.load_from(in, device); });
}

void ModelReader::unreadable(const std::string& record) const {
  MARLSCHED_THROW(InputError, "cannot read model '"
                                  << path_ << "': its record '" << record
                                  << "' is missing or unreadable (not a marlsched " << kind_
                                  << " model, or one written by another version)");
}

void ModelReader::require_layout(const std::string& name, const std::vector<std::int64_t>& want,
                                 const std::string& mismatch) {
  torch::Tensor got;
  try {
    ar_.read(name, got);
  } catch (const c10::Error&) {
    // No layout record of this name: a model of another learner.
    MARLSCHED_THROW(InputError, "cannot read model '"
                                    << path_ << "': not a marlsched " << kind_
                                    << " model (no record '" << name
                                    << "': trained by another algorithm, or not a model)");
  }
  got = host(got);
  MARLSCHED_REQUIRE(got.scalar_type() == torch::kInt64 &&
                        got.numel() == static_cast<std::int64_t>(want.size()) &&
                        std::equal(want.begin(), want.end(), got.data_ptr<std::int64_t>()),
                    "model '" << path_ << "' " << mismatch);
}

torch::Tensor ModelReader::checked(const std::string& name, const torch::Tensor& t,
                                   std::int64_t numel) const {
  MARLSCHED_REQUIRE_INPUT(numel < 0 || t.numel() == numel,
                          "model '" << path_ << "': its record '" << name << "' holds " << t.numel()
                                    << " values where a " << kind_ << " model has " << numel);
  return host(t);
}

torch::Tensor ModelReader::tensor(const std::string& name, std::int64_t numel) {
  torch::Tensor t;
  try {
    ar_.read(name, t);
  } catch (const c10::Error&) {
    unreadable(name);
  }
  return checked(name, t, numel);
}

bool ModelReader::try_tensor(const std::string& name, torch::Tensor& out, std::int64_t numel) {
  torch::Tensor t;
  try {
    if (!ar_.try_read(name, t)) return false;
  } catch (const c10::Error&) {
    unreadable(name);
  }
  out = checked(name, t, numel);
  return true;
}

template <typename T>
void ModelReader::values(const std::string& name, std::vector<T>& v, const std::string& what) {
  const auto t = tensor(name);
  MARLSCHED_REQUIRE(
      t.scalar_type() == scalar_type_of<T>() && t.numel() == static_cast<std::int64_t>(v.size()),
      "model '" << path_ << "': " << what << " does not fit this run's layout");
  std::copy(t.data_ptr<T>(), t.data_ptr<T>() + t.numel(), v.begin());
}
template void ModelReader::values(const std::string&, std::vector<float>&, const std::string&);
template void ModelReader::values(const std::string&, std::vector<double>&, const std::string&);
template void ModelReader::values(const std::string&, std::vector<std::int32_t>&,
                                  const std::string&);
template void ModelReader::values(const std::string&, std::vector<std::int64_t>&,
                                  const std::string&);

std::string ModelReader::text(const std::string& name) {
  const auto t = tensor(name);
  return std::string(static_cast<const char*>(t.data_ptr()), static_cast<std::size_t>(t.numel()));
}

void ModelReader::rngs(const std::string& name, std::initializer_list<Rng*> rngs) {
  MARLSCHED_REQUIRE_INPUT(
      read_states(text(name), rngs),
      "model '" << path_ << "': its record '" << name << "' is not a random generators' state");
}

template <class T>
void ModelReader::load_into(const std::string& name, T& target) {
  try {
    torch::serialize::InputArchive sub;
    ar_.read(name, sub);
    target.load(sub);
  } catch (const c10::Error&) {
    unreadable(name);
  }
}

void ModelReader::module(const std::string& name, torch::nn::Module& net) {
  load_into(name, net);
}

void ModelReader::optimizer(const std::string& name, torch::optim::Optimizer& opt) {
  load_into(name, opt);
}

void ModelReader::require_base(const std::string& option, const std::string& margin_option,
                               const std::string& policy, double margin) {
  torch::Tensor bm;
  std::string file_policy;
  double file_margin = 0;
  if (try_tensor("base_margin", bm, 1)) {
    file_policy = text("base_policy");
    file_margin = bm.item<double>();
  }
  MARLSCHED_REQUIRE(file_policy == policy && (file_policy.empty() || file_margin == margin),
                    "model '" << path_ << "' was trained with " << option << " '" << file_policy
                              << "' " << margin_option << " " << file_margin << ", this run has '"
                              << policy << "' " << margin);
}

void ModelReader::require_shapes(const std::string& name, const torch::nn::Module& want,
                                 const std::string& sizes) {
  torch::serialize::InputArchive sub;
  try {
    ar_.read(name, sub);
  } catch (const c10::Error&) {
    unreadable(name);
  }
  require_shapes_rec(want, sub, path_, name, sizes);
}

}  // namespace marlsched
