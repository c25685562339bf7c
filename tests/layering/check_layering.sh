#!/usr/bin/env bash
# Checks the dependency direction of hetu's sources under ROOT (default: the repository):
# inside lib/ a folder includes only itself and folders earlier in the layer order below;
# lib/ never includes models/ or app/; models/ never includes app/. Quoted and angle-bracket
# project includes ("lib/core/tensor.h", <lib/core/tensor.h>) both count. Then the CMake
# target graph: the hetu_* targets a layer's CMakeLists.txt links (target_link_libraries of
# hetu_<folder>) must be exactly layers its files include (no link without an include), and
# every layer it includes must be reachable through those links. Prints every violation
# ("FILE includes HEADER (...)", "TARGET links TARGET but ...") and exits 1 if any.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"

dirs=()
for d in lib models app; do [ -d "$d" ] && dirs+=("$d"); done
files=$(find "${dirs[@]}" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' \
          -o -name '*.cu' -o -name '*.cuh' -o -name '*.in' \) | sort)
[ -n "$files" ] || { echo "no sources under $root"; exit 1; }
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

# One awk pass over every file: rank each file's layer and each project include's layer,
# and record "FROM TO" for every include between layers (for the link check).
# nn and optim are peers (rank 6); models, app and tests sit above lib.
status=0
# shellcheck disable=SC2086
awk -v edges="$edges" '
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
  /^[ \t]*#[ \t]*include[ \t]*["<]/ {
    header = $0
    sub(/^[^"<]*["<]/, "", header); sub(/[">].*$/, "", header)
    to = layer(header)
    if (to == "" || !(from in rank)) next
    if (!(to in rank)) { print FILENAME " includes " header " (unknown layer \"" to "\")"; bad = 1; next }
    if (rank[to] > rank[from]) {
      print FILENAME " includes " header " (layer " from " may not depend on layer " to ")"; bad = 1
    }
    if (to != from) print from, to > edges
  }
  END {
    if (!bad) print "layering OK: " checked " files checked"
    exit bad
  }
' $files || status=1

# The link graph: "LAYER LINKED_LAYER" for every hetu_* target in target_link_libraries(hetu_X ...)
# of the layer whose folder is X (lib/X, models, app).
links=$(for cmake in lib/*/CMakeLists.txt models/CMakeLists.txt app/CMakeLists.txt; do
  [ -f "$cmake" ] || continue
  layer=$(dirname "$cmake")
  target="hetu_$(basename "$layer")"
  tr '\n' ' ' < "$cmake" | grep -oE "target_link_libraries\($target[ )][^)]*\)" \
    | grep -oE 'hetu_[a-z_]+' | grep -vx "$target" | sed -E "s#^hetu_(models|app)\$#\1#; s#^hetu_#lib/#; s#^#$layer #" || true
done)

awk -v links="$links" '
  { includes[$1 " " $2] = 1; from_layers[$1] = 1 }
  END {
    n = split(links, rows, "\n"); count = 0
    for (i = 1; i <= n; i++) {
      if (split(rows[i], f, " ") != 2) continue
      linked[f[1] " " f[2]] = 1; count++
      if (!((f[1] " " f[2]) in includes)) {
        print target(f[1]) " links " target(f[2]) " but no file in " f[1] " includes " f[2]; bad = 1
      }
    }
    # Reachability over the links (a few dozen layers: a fixed point is enough).
    for (pair in linked) reach[pair] = 1
    do {
      changed = 0
      for (ab in reach) {
        split(ab, x, " ")
        for (bc in linked) {
          split(bc, y, " ")
          if (y[1] == x[2] && !((x[1] " " y[2]) in reach)) { reach[x[1] " " y[2]] = 1; changed = 1 }
        }
      }
    } while (changed)
    for (pair in includes) {
      split(pair, x, " ")
      if (!(pair in reach)) { print target(x[1]) " does not link " target(x[2]) " (directly or through its links), but " x[1] " includes " x[2]; bad = 1 }
    }
    if (!bad) print "link graph OK: " count " link(s) follow the includes"
    exit bad
  }
  function target(layer) { sub(/^lib\//, "", layer); return "hetu_" layer }
' <(sort -u "$edges") || status=1
exit $status
