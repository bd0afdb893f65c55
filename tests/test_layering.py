#!/usr/bin/env python3
"""Keeps the README's layering table and the one include namespace true.

Every project include names a path under the installed include/marlsched/: `core/`, `dist/`,
`io/`, `rollout/`, `train/` (the framework, src/ in the tree) or `agents/`, `envs/` (the
plug-ins, at the tree's root); launch/, tests/ and bench/ may also include files beside them,
and tests/, python/ and launch/cli/commands/ the CLI's headers in launch/cli/.
No header is reachable under two names, and each folder includes only what the table allows.

Usage: test_layering.py SOURCE_DIR. Prints every violation, exits 1 if there is any.
"""
import os
import re
import sys

FRAMEWORK = ("core", "dist", "io", "rollout", "train")
PLUGINS = ("agents", "envs")
# What each folder may include (README, "Which folder may include which").
ALLOWED = {
    "src/core": {"core"},
    "src/dist": {"core", "dist"},
    "src/rollout": {"core", "rollout"},
    "src/io": {"core", "dist", "io"},
    "src/train": {"core", "dist", "io", "train"},
    "envs": {"core", "envs"},
    "agents": {"core", "dist", "io", "rollout", "agents"},
    "launch": set(FRAMEWORK) | set(PLUGINS),
    "python": set(FRAMEWORK) | set(PLUGINS),
    "bench": set(FRAMEWORK) | set(PLUGINS),
    "tests": set(FRAMEWORK) | set(PLUGINS),
}
# Headers CMake writes into the build tree (configure_file / generated sources).
GENERATED = {"core/version.hpp", "slurm_templates.hpp"}
# Third-party headers only some folders may use: torch stays out of the framework but for the
# gradient bucket, MPI stays in dist (and io's HDF5 handle, whose parallel API takes MPI types).
RESTRICTED = {
    "torch": ("torch/", "ATen/", "c10/"),
    "MPI": ("mpi.h",),
}
MAY_USE = {
    "torch": ("src/dist/grad.hpp", "src/dist/grad.cpp", "agents/", "tests/", "bench/", "launch/"),
    "MPI": ("src/dist/", "src/io/h5.hpp", "tests/", "bench/"),
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def folder_of(rel):
    for key in sorted(ALLOWED, key=len, reverse=True):
        if rel == key or rel.startswith(key + "/"):
            return key
    return None


def resolve(root, rel, name):
    """The file `#include "name"` in `rel` names, or None."""
    here = os.path.join(root, os.path.dirname(rel), name)
    if os.path.isfile(here):
        return "beside"
    top = name.split("/")[0]
    if top in FRAMEWORK:
        return "src" if os.path.isfile(os.path.join(root, "src", name)) or name in GENERATED else None
    if top in PLUGINS:
        return "root" if os.path.isfile(os.path.join(root, name)) else None
    if name in GENERATED:
        return "generated"
    # The tests' own helpers (tests/test_util.hpp) and the CLI's headers that the tests and the
    # Python module use.
    if rel.startswith(("tests/", "python/")):
        for extra in ("tests", "launch/cli"):
            if os.path.isfile(os.path.join(root, extra, name)):
                return extra
    # The subcommands (launch/cli/commands/) use the pieces they share, beside their folder.
    if rel.startswith("launch/cli/commands/") and os.path.isfile(
        os.path.join(root, "launch/cli", name)
    ):
        return "launch/cli"
    return None


def main(root):
    problems = []
    for top in FRAMEWORK:
        if os.path.exists(os.path.join(root, top)):
            problems.append(f"{top}/ exists at the root and in src/: two headers could share a name")
    for top in PLUGINS:
        if os.path.exists(os.path.join(root, "src", top)):
            problems.append(f"src/{top}/ would shadow the plug-in folder {top}/")
    files = 0
    for start in ALLOWED:
        for dirpath, _, names in os.walk(os.path.join(root, start)):
            for n in sorted(names):
                if not n.endswith((".hpp", ".cpp", ".h", ".cc")):
                    continue
                path = os.path.join(dirpath, n)
                rel = os.path.relpath(path, root)
                folder = folder_of(rel)
                files += 1
                with open(path, encoding="utf-8") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        kind, name = m.groups()
                        where = f"{rel}:{lineno}"
                        if kind == "<":
                            for lib, prefixes in RESTRICTED.items():
                                if name.startswith(prefixes) and not rel.startswith(MAY_USE[lib]):
                                    problems.append(f"{where}: includes <{name}>; {lib} is not allowed here")
                            continue
                        found = resolve(root, rel, name)
                        if found is None:
                            problems.append(f'{where}: "{name}" is not a path under the include namespace '
                                            f"({', '.join(FRAMEWORK + PLUGINS)}) nor a file beside it")
                            continue
                        top = name.split("/")[0]
                        if found in ("src", "root") and top not in ALLOWED[folder]:
                            problems.append(f'{where}: "{name}": {folder}/ may not include {top}/ '
                                            f"(it may include {', '.join(sorted(ALLOWED[folder]))})")
    for p in problems:
        print(p)
    print(f"{files} files checked, {len(problems)} problem(s)")
    return 1 if problems or files == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
