#pragma once
/// \file torch_threads.hpp
/// The process's compute threads, declared without torch's headers (for the launcher).

namespace marlsched {

/// Sets libtorch's intra-op thread count and the BLAS's for this process (one per rank unless
/// told otherwise), and one inter-op thread.
void set_torch_threads(int n);

}  // namespace marlsched
