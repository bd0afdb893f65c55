# Writes the version header with the source tree's git revision: "abc1234", "abc1234-dirty" when
# tracked files differ from HEAD, "unknown" outside a git checkout. Run at configure time
# (included) and before every build (cmake -P, from the marlsched_version target), so that run
# manifests, trajectory files and --version name the revision the binary was built from, not
# the one CMake was first configured at. configure_file only rewrites the header when its text
# changes, so an unchanged revision recompiles nothing.
# In: MARLSCHED_SRC, MARLSCHED_VERSION_IN, MARLSCHED_VERSION_OUT, PROJECT_VERSION.
execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY ${MARLSCHED_SRC}
                OUTPUT_VARIABLE MARLSCHED_GIT_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE _rev_rc ERROR_QUIET)
if(NOT _rev_rc EQUAL 0 OR NOT MARLSCHED_GIT_REVISION)
  set(MARLSCHED_GIT_REVISION "unknown")
else()
  execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${MARLSCHED_SRC}
                  RESULT_VARIABLE _dirty ERROR_QUIET)
  if(NOT _dirty EQUAL 0)
    string(APPEND MARLSCHED_GIT_REVISION "-dirty")
  endif()
endif()
configure_file(${MARLSCHED_VERSION_IN} ${MARLSCHED_VERSION_OUT} @ONLY)
