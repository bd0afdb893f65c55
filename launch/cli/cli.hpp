#pragma once
/// \file cli.hpp
/// The `marlsched` command line: CLI11 subcommands, options bound from the typed config structs,
/// a TOML config file (`--config`) whose keys are the long option names, and error reporting
/// that prints one message from one rank and never leaves a rank hanging.

#include "dist/comm.hpp"

namespace marlsched::cli {

/// Runs the command line on every rank; returns the process exit code.
int run(int argc, char** argv, const dist::Comm& comm);

}  // namespace marlsched::cli
