#pragma once
/// \file archive_check.hpp
/// Integrity of model files. libtorch's model archives (`torch::save`, learners' model-rank-R.pt
/// and checkpoint files) and TorchScript modules (exported policy.pt) are zip files whose every
/// record carries a CRC-32, but libtorch's reader does not check them: a flipped bit loads as a
/// wrong weight. verify_archive reads every record through libzip, which checks each CRC-32 and
/// the archive's structure, before a learner or policy is loaded from the file.

#include <string>

namespace marlsched {

/// Throws InputError naming `what` (e.g. "model"), the file and the damaged record when `path`
/// is not a consistent zip archive or a record fails its CRC-32. Reads the whole file once.
void verify_archive(const std::string& path, const std::string& what);

}  // namespace marlsched
