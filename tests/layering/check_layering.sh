#!/usr/bin/env bash
# Checks the dependency direction of hetu's sources under ROOT (default: the repository)
# against the layer order that ROOT/docs/architecture.md records (its ```layers block, one
# lib/ folder a line, bottom to top): a lib/ folder includes only itself and folders below it;
# app/ includes lib/ and never the reverse; every lib/ folder is in the order and every folder
# the order names exists; lib/CMakeLists.txt adds the folders in that order. Quoted and
# angle-bracket project includes ("lib/core/tensor.h", <lib/core/tensor.h>) both count. Then
# the CMake target graph: the hetu_* targets a layer's CMakeLists.txt links (target_link_libraries
# of hetu_<folder>) must be exactly layers its files include (no link without an include), and
# every layer it includes must be reachable through those links. Prints every violation
# ("FILE includes HEADER (...)", "TARGET links TARGET but ...") and exits 1 if any.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"

doc=docs/architecture.md
[ -f "$doc" ] || { echo "$doc is missing: it records the layer order"; exit 1; }
# The order: the lines of the ```layers block, first word of each (the rest is its note).
order=$(awk '/^```layers/ { inside = 1; next } inside && /^```/ { exit } inside && NF { print $1 }' "$doc")
[ -n "$order" ] || { echo "$doc has no \`\`\`layers block"; exit 1; }

status=0
# The order names existing folders, each once; every lib/ folder is in it.
for layer in $order; do
  [ -d "$layer" ] || { echo "$doc names $layer, which does not exist"; status=1; }
done
dups=$(echo "$order" | sort | uniq -d)
[ -z "$dups" ] || { echo "$doc names $(echo $dups) more than once"; status=1; }
for d in lib/*/; do
  d=${d%/}
  grep -qx "$d" <<< "$order" || { echo "$d is not in the layer order of $doc"; status=1; }
done
# lib/CMakeLists.txt adds the folders bottom to top, as the order lists them.
if [ -f lib/CMakeLists.txt ]; then
  added=$(grep -oE '^add_subdirectory\([a-z_]+\)' lib/CMakeLists.txt | sed -E 's/add_subdirectory\(([a-z_]+)\)/lib\/\1/')
  if [ "$added" != "$order" ]; then
    echo "lib/CMakeLists.txt adds the folders in another order than $doc:"
    diff <(echo "$order") <(echo "$added") | sed 's/^/  /' || true
    status=1
  fi
fi

dirs=()
for d in lib app; do [ -d "$d" ] && dirs+=("$d"); done
files=$(find "${dirs[@]}" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' \
          -o -name '*.cu' -o -name '*.cuh' -o -name '*.in' \) | sort)
[ -n "$files" ] || { echo "no sources under $root"; exit 1; }
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

# One awk pass over every file: rank each file's layer and each project include's layer,
# and record "FROM TO" for every include between layers (for the link check).
# app and tests sit above lib.
# shellcheck disable=SC2086
awk -v edges="$edges" -v order="$(echo $order)" '
  function layer(path,   parts) {
    split(path, parts, "/")
    if (parts[1] == "lib") return "lib/" parts[2]
    if (parts[1] == "app" || parts[1] == "tests") return parts[1]
    return ""
  }
  BEGIN {
    n = split(order, layers, " ")
    for (i = 1; i <= n; i++) rank[layers[i]] = i
    rank["app"] = n + 1; rank["tests"] = n + 2
  }
  FNR == 1 {
    from = layer(FILENAME); checked++
    if (!(from in rank)) { print FILENAME ": in unknown layer \"" from "\" (add it to the layers of docs/architecture.md)"; bad = 1 }
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
links=$(for cmake in lib/*/CMakeLists.txt lib/models/CMakeLists.txt app/CMakeLists.txt; do
  [ -f "$cmake" ] || continue
  layer=$(dirname "$cmake")
  target="hetu_$(basename "$layer")"
  tr '\n' ' ' < "$cmake" | grep -oE "target_link_libraries\($target[ )][^)]*\)" \
    | grep -oE 'hetu_[a-z_]+' | grep -vx "$target" | sed -E "s#^hetu_app\$#app#; s#^hetu_#lib/#; s#^#$layer #" || true
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
