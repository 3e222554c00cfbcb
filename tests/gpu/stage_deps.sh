#!/usr/bin/env bash
# Copies the header-only libraries Ember builds against (Eigen, nlohmann-json, doctest, CLI11)
# from this machine's system include folders into one folder (default: .deps/ at the repository
# root, ignored by git), with a small CMake package config for each, so that a machine without
# them (a GPU machine without them) builds with -DCMAKE_PREFIX_PATH=<that folder>. About 12 MiB.
#
# Usage: tests/gpu/stage_deps.sh [dest]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEST="${1:-$ROOT/.deps}"

# The first of the candidate folders that holds `file`.
find_include() {
  local file="$1"
  shift
  for d in "$@"; do
    if [ -e "$d/$file" ]; then
      echo "$d"
      return 0
    fi
  done
  echo "stage_deps: cannot find $file (looked in $*); install it first (scripts/setup.sh)" >&2
  return 1
}

# A header's `#define NAME value` value (first match), or the fallback.
header_define() {
  local file="$1" name="$2" fallback="$3" v
  v="$(grep -rhoE "#define $name +[\"0-9.]+" "$file" 2>/dev/null | head -1 | awk '{print $3}' | tr -d '"')"
  echo "${v:-$fallback}"
}

# <pkg>Config.cmake: an INTERFACE IMPORTED target over the staged headers; plus a version file
# that accepts requests of the same major version up to this one.
write_config() {
  local pkg="$1" target="$2" version="$3" subdir="$4" dir="$DEST/share/cmake/$1"
  mkdir -p "$dir"
  cat >"$dir/${pkg}Config.cmake" <<EOF
# Staged by tests/gpu/stage_deps.sh: the headers in ../../../include${subdir:+/$subdir}.
get_filename_component(_staged_inc "\${CMAKE_CURRENT_LIST_DIR}/../../../include${subdir:+/$subdir}" ABSOLUTE)
if(NOT TARGET $target)
  add_library($target INTERFACE IMPORTED)
  set_target_properties($target PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "\${_staged_inc}")
endif()
set(${pkg}_INCLUDE_DIR "\${_staged_inc}")
set(${pkg}_INCLUDE_DIRS "\${_staged_inc}")
EOF
  cat >"$dir/${pkg}ConfigVersion.cmake" <<EOF
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION_MAJOR AND NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL "${version%%.*}")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
EOF
}

eigen="$(find_include Eigen/Core /usr/include/eigen3 /usr/local/include/eigen3)"
json="$(find_include nlohmann/json.hpp /usr/include /usr/local/include)"
doctest="$(find_include doctest/doctest.h /usr/include /usr/local/include)"
cli11="$(find_include CLI/CLI.hpp /usr/include /usr/local/include)"

rm -rf "$DEST"
mkdir -p "$DEST/include/eigen3"
# Eigen's unsupported/ modules are not used: Eigen/ alone is enough.
cp -r "$eigen/Eigen" "$DEST/include/eigen3/"
cp -r "$json/nlohmann" "$doctest/doctest" "$cli11/CLI" "$DEST/include/"

macros="$eigen/Eigen/src/Core/util/Macros.h"
eigen_v="$(header_define "$macros" EIGEN_WORLD_VERSION 3).$(header_define "$macros" EIGEN_MAJOR_VERSION 4).$(header_define "$macros" EIGEN_MINOR_VERSION 0)"
json_h="$json/nlohmann"
json_v="$(header_define "$json_h" NLOHMANN_JSON_VERSION_MAJOR 3).$(header_define "$json_h" NLOHMANN_JSON_VERSION_MINOR 11).$(header_define "$json_h" NLOHMANN_JSON_VERSION_PATCH 0)"
doctest_h="$doctest/doctest/doctest.h"
doctest_v="$(header_define "$doctest_h" DOCTEST_VERSION_MAJOR 2).$(header_define "$doctest_h" DOCTEST_VERSION_MINOR 4).$(header_define "$doctest_h" DOCTEST_VERSION_PATCH 0)"
cli11_v="$(header_define "$cli11/CLI" CLI11_VERSION 2.1.0)"

write_config Eigen3 Eigen3::Eigen "$eigen_v" eigen3
write_config nlohmann_json nlohmann_json::nlohmann_json "$json_v" ""
write_config doctest doctest::doctest "$doctest_v" ""
write_config CLI11 CLI11::CLI11 "$cli11_v" ""

echo "stage_deps: Eigen $eigen_v, nlohmann-json $json_v, doctest $doctest_v, CLI11 $cli11_v" \
  "-> $DEST ($(du -sh "$DEST" | cut -f1))"
