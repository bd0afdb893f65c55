/// \file fuzz_manifest.cpp
/// libFuzzer target: the checkpoint MANIFEST reader (train/manifest.hpp). A manifest it accepts
/// must survive a write/read round trip unchanged.

#include <cstddef>
#include <cstdint>

#include "fuzz_util.hpp"
#include "train/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace marlsched;
  const std::string path = fuzz::scratch(data, size, ".MANIFEST");
  fuzz::expect_clean([&] {
    const Manifest m = read_manifest(path);
    write_manifest(path + ".out", m);
    const Manifest r = read_manifest(path + ".out");
    bool same = r.iteration == m.iteration && r.ranks == m.ranks &&
                r.agents_per_rank == m.agents_per_rank && r.envs_per_rank == m.envs_per_rank &&
                r.version == m.version && r.config_fingerprint == m.config_fingerprint &&
                r.traj_segment == m.traj_segment && r.traj_rows == m.traj_rows &&
                r.files.size() == m.files.size();
    for (std::size_t i = 0; same && i < m.files.size(); ++i)
      same = r.files[i].name == m.files[i].name && r.files[i].size == m.files[i].size &&
             r.files[i].hash == m.files[i].hash;
    if (!same) __builtin_trap();
  });
  return 0;
}
