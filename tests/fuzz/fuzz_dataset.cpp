/// \file fuzz_dataset.cpp
/// libFuzzer target: the offline-learning dataset reader's checks (io/dataset.hpp,
/// inspect_dataset), fed files that a user could make with h5py. Each input is a short script of
/// edits applied to a copy of a real dataset (tests/fuzz/data/dataset.h5, two episodes of
/// least-loaded on the default geodc config, 4 agents): set one element of a dataset to any
/// bit pattern, set a row-count, world, agent or completion attribute, resize or delete a
/// dataset. HDF5's own parser is not the target (its file format is not fuzzed byte by byte).
/// Invariant beyond "only marlsched's own errors": an accepted file holds, in the rows it
/// declares, only what an env could have written (actions within the action count, finite
/// observations and rewards, flags 0 or 1).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <vector>

#include "envs/geodc/geodc.hpp"
#include "fuzz_util.hpp"
#include "io/dataset.hpp"
#include "io/h5.hpp"

namespace {

using namespace marlsched;

const char* const kFields[] = {"observations", "next_observations", "actions",
                               "rewards",      "terminations",      "truncations"};
const char* const kAttrs[] = {"rows", "worlds", "num_agents", "complete"};

/// One 12-byte edit: op, target, index (4 bytes), value (4 bytes), 2 spare bytes.
void apply(hid_t f, const std::uint8_t* e) {
  std::uint32_t index = 0, bits = 0;
  std::memcpy(&index, e + 2, 4);
  std::memcpy(&bits, e + 6, 4);
  const char* field = kFields[e[1] % 6];
  switch (e[0] % 4) {
    case 0: {  // one element, any bit pattern of its type
      if (!h5::exists(f, field)) return;
      h5::Id ds = h5::open_dataset(f, field, true);
      const auto d = h5::dims(ds.get());
      hsize_t n = 1;
      for (auto x : d) n *= x;
      if (n == 0) return;
      std::vector<hsize_t> at(d.size());
      hsize_t i = index % n;
      for (std::size_t k = d.size(); k-- > 0;) {
        at[k] = i % d[k];
        i /= d[k];
      }
      h5::Id fs = h5::dataset_space(ds.get());
      const hsize_t one = 1;
      H5Sselect_elements(fs.get(), H5S_SELECT_SET, 1, at.data());
      h5::Id ms = h5::space({one});
      h5::Id type(H5Dget_type(ds.get()), H5Tclose);
      const auto size = H5Tget_size(type.get());
      h5::Id native(H5Tget_native_type(type.get(), H5T_DIR_DEFAULT), H5Tclose);
      unsigned char buf[8] = {0};
      std::memcpy(buf, &bits, size < 4 ? size : 4);
      H5Dwrite(ds.get(), native.get(), ms.get(), fs.get(), H5P_DEFAULT, buf);
      return;
    }
    case 1:  // an attribute the reader trusts
      h5::write_attr(f, kAttrs[e[1] % 4],
                     static_cast<std::int64_t>(static_cast<std::int32_t>(bits)));
      return;
    case 2: {  // rows added or cut (allocated, never written: zeros)
      if (!h5::exists(f, field)) return;
      h5::Id ds = h5::open_dataset(f, field, true);
      auto d = h5::dims(ds.get());
      d[0] = bits % 512;
      H5Dset_extent(ds.get(), d.data());
      return;
    }
    default:
      H5Ldelete(f, field, H5P_DEFAULT);
  }
}

/// Reads `rows` rows of `name` as T.
template <class T>
std::vector<T> read_rows(hid_t f, const char* name, std::int64_t rows) {
  h5::Id ds = h5::open_dataset(f, name, true);
  auto d = h5::dims(ds.get());
  d[0] = static_cast<hsize_t>(rows);
  hsize_t n = 1;
  for (auto x : d) n *= x;
  std::vector<T> out(n);
  h5::Id fs = h5::dataset_space(ds.get());
  const std::vector<hsize_t> start(d.size(), 0);
  H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, start.data(), nullptr, d.data(), nullptr);
  h5::Id ms = h5::space(d);
  if (H5Dread(ds.get(), h5::native<T>(), ms.get(), fs.get(), H5P_DEFAULT, out.data()) < 0)
    __builtin_trap();  // accepted, yet its declared rows do not read back
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const geodc::Config cfg;
  static const EnvSpec spec = geodc::make_spec(cfg, 4);
  const std::string path = fuzz::scratch(nullptr, 0, ".h5");
  std::filesystem::copy_file(MARLSCHED_FUZZ_DATASET, path,
                             std::filesystem::copy_options::overwrite_existing);
  {
    h5::Id f = h5::open_serial(path, true);
    for (std::size_t k = 0; k + 12 <= size && k < 8 * 12; k += 12) apply(f.get(), data + k);
  }
  fuzz::expect_clean([&] {
    const DatasetInfo info = inspect_dataset(path, spec, 4, 0, 1);
    h5::Id f = h5::open_serial(path, false);
    for (std::int32_t a : read_rows<std::int32_t>(f.get(), "actions", info.rows))
      if (a < 0 || a >= spec.num_actions()) __builtin_trap();
    for (const char* obs : {"observations", "next_observations", "rewards"})
      for (float v : read_rows<float>(f.get(), obs, info.rows))
        if (!std::isfinite(v)) __builtin_trap();
    for (const char* flag : {"terminations", "truncations"})
      for (std::uint8_t v : read_rows<std::uint8_t>(f.get(), flag, info.rows))
        if (v > 1) __builtin_trap();
  });
  return 0;
}
