#pragma once
/// \file trajectory_layout.hpp
/// The trajectory file's layout, shared by its writer (trajectory.cpp) and the resume checks
/// (trajectory_resume.cpp): the format name and version, and one row per dataset saying where it
/// lives, its shape class and type, and where its data is in a TrajStep. Internal to src/io.

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/h5.hpp"
#include "io/trajectory.hpp"

namespace marlsched::traj_layout {

inline constexpr const char* kFormat = "marlsched-trajectories";
inline constexpr std::int64_t kFormatVersion = 1;

enum class Scope { Agent, World, Row };
enum class Type { F32, I32, I64, U8 };
/// The trailing dimension of per-agent data: none, the observation size, the component count.
enum class Inner { None, ObsDim, Components };
using Bytes = std::pair<const void*, std::size_t>;

template <class T>
inline Bytes bytes_of(const std::vector<T>& v) {
  return {v.data(), v.size() * sizeof(T)};
}

/// One dataset of the layout, and where its data is in a TrajStep.
struct FieldDef {
  const char* name;  ///< as named in TrajConfig::fields
  const char* path;  ///< inside the file
  Scope scope;
  Type type;
  Inner inner;
  bool optional;
  Bytes (*step)(const TrajStep&);
  const char* description;
};

inline const std::vector<FieldDef>& field_defs() {
  using S = Scope;
  using T = Type;
  using I = Inner;
  static const std::vector<FieldDef> defs = {
      {"observations", "observations", S::Agent, T::F32, I::ObsDim, true,
       [](const TrajStep& s) { return bytes_of(s.observations); },
       "o_t of each agent before it acts; [step, world, agent, obs_dim]"},
      {"next_observations", "next_observations", S::Agent, T::F32, I::ObsDim, true,
       [](const TrajStep& s) { return bytes_of(s.next_observations); },
       "o_{t+1}; at an episode end the terminal observation, not the next episode's first"},
      {"actions", "actions", S::Agent, T::I32, I::None, true,
       [](const TrajStep& s) { return bytes_of(s.actions); },
       "a_t, index into the attribute action_names"},
      {"rewards", "rewards", S::Agent, T::F32, I::None, true,
       [](const TrajStep& s) { return bytes_of(s.rewards); },
       "r_t: the env's reward of each agent (training mixes in the team reward, see config)"},
      {"log_probs", "log_probs", S::Agent, T::F32, I::None, true,
       [](const TrajStep& s) { return bytes_of(s.log_probs); },
       "log pi(a_t | o_t) of the behaviour policy"},
      {"values", "values", S::Agent, T::F32, I::None, true,
       [](const TrajStep& s) { return bytes_of(s.values); },
       "V(s_t, agent) of the critic, denormalised"},
      {"reward_components", "infos/reward_components", S::Agent, T::F32, I::Components, true,
       [](const TrajStep& s) { return bytes_of(s.reward_components); },
       "r_t's components, names in the attribute 'names'; [step, world, agent, component]"},
      {"terminations", "terminations", S::World, T::U8, I::None, false,
       [](const TrajStep& s) { return bytes_of(s.terminations); },
       "1 where the MDP reached a terminal state at this step"},
      {"truncations", "truncations", S::World, T::U8, I::None, false,
       [](const TrajStep& s) { return bytes_of(s.truncations); },
       "1 where the episode was cut by its time limit at this step (not a terminal state)"},
      {"episode_ids", "infos/episode_ids", S::World, T::I64, I::None, false,
       [](const TrajStep& s) { return bytes_of(s.episode_ids); },
       "run-wide episode id: episode number of the world * worlds + world"},
      {"episode_steps", "infos/episode_steps", S::World, T::I32, I::None, false,
       [](const TrajStep& s) { return bytes_of(s.episode_steps); },
       "step index t within the episode"},
      {"iterations", "infos/iterations", S::Row, T::I32, I::None, false,
       [](const TrajStep& s) {
         return Bytes{&s.iteration, sizeof s.iteration};
       },
       "training iteration of the row"},
  };
  return defs;
}

/// Opens a trajectory file (serially) and checks that it is a marlsched trajectory file of this
/// format version; throws InputError otherwise (trajectory_resume.cpp).
h5::Id open_trajectory_file(const std::string& path, bool writable);

/// Reads rows [first, first + rows) of a dataset, a slab of at most 64 MiB at a time, so that
/// HDF5 checks every chunk's Fletcher32 checksum (and that each inflates); throws InputError
/// naming the file, the dataset and the first bad slab.
void verify_rows(hid_t ds, const std::string& path, const char* name, std::int64_t first,
                 std::int64_t rows);

inline hid_t mem_type(Type t) {
  switch (t) {
    case Type::I32:
      return H5T_NATIVE_INT32;
    case Type::I64:
      return H5T_NATIVE_INT64;
    case Type::U8:
      return H5T_NATIVE_UINT8;
    default:
      return H5T_NATIVE_FLOAT;
  }
}
inline hid_t file_type(Type t) {
  switch (t) {
    case Type::I32:
      return H5T_STD_I32LE;
    case Type::I64:
      return H5T_STD_I64LE;
    case Type::U8:
      return H5T_STD_U8LE;
    default:
      return H5T_IEEE_F32LE;
  }
}

}  // namespace marlsched::traj_layout
