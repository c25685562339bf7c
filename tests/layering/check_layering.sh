#!/usr/bin/env bash
# Checks the dependency direction of hetu's sources under ROOT (default: the repository):
# inside lib/ a folder includes only itself and folders earlier in the layer order below;
# lib/ never includes models/ or app/; models/ never includes app/. Prints every violation
# as "FILE includes HEADER (layer X may not depend on layer Y)" and exits 1 if any.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"

dirs=()
for d in lib models app; do [ -d "$d" ] && dirs+=("$d"); done
files=$(find "${dirs[@]}" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' \
          -o -name '*.cu' -o -name '*.cuh' -o -name '*.in' \) | sort)
[ -n "$files" ] || { echo "no sources under $root"; exit 1; }

# One awk pass over every file: rank each file's layer and each quoted include's layer.
# nn and optim are peers (rank 6); models, app and tests sit above lib.
# shellcheck disable=SC2086
awk '
  function layer(path,   parts) {
    split(path, parts, "/")
    if (parts[1] == "lib") return "lib/" parts[2]
    if (parts[1] == "models" || parts[1] == "app" || parts[1] == "tests") return parts[1]
    return ""
  }
  BEGIN {
    n = split("lib/util lib/core lib/ops lib/autograd lib/hspmd lib/nn lib/pipeline lib/runtime lib/io lib/plan lib/report", order, " ")
    for (i = 1; i <= n; i++) rank[order[i]] = i
    rank["lib/optim"] = rank["lib/nn"]
    rank["models"] = 20; rank["app"] = 30; rank["tests"] = 40
  }
  FNR == 1 {
    from = layer(FILENAME); checked++
    if (!(from in rank)) { print FILENAME ": in unknown layer \"" from "\" (add it to check_layering.sh)"; bad = 1 }
  }
  /^[ \t]*#[ \t]*include[ \t]*"/ {
    header = $0
    sub(/^[^"]*"/, "", header); sub(/".*$/, "", header)
    to = layer(header)
    if (to == "" || !(from in rank)) next
    if (!(to in rank)) { print FILENAME " includes " header " (unknown layer \"" to "\")"; bad = 1; next }
    if (rank[to] > rank[from]) {
      print FILENAME " includes " header " (layer " from " may not depend on layer " to ")"; bad = 1
    }
  }
  END {
    if (!bad) print "layering OK: " checked " files checked"
    exit bad
  }
' $files
