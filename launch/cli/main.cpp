/// marlsched: multi-agent reinforcement-learning schedulers trained across MPI ranks.
#include <cstdio>
#include <exception>

#include "cli.hpp"
#include "dist/comm.hpp"

int main(int argc, char** argv) {
  try {
    marlsched::dist::Session session(&argc, &argv);
    int code = 0;
    {
      auto comm = marlsched::dist::Comm::world();
      code = marlsched::cli::run(argc, argv, comm);
    }
    return code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "marlsched: fatal: %s\n", e.what());
    return 1;
  }
}
