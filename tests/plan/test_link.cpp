// Links (lib/plan/link.h) against transfer times worked out by hand: a fixed bandwidth, a
// measured curve (held at 1 MB below a megabyte and at its peak past it, capped), and a
// link shared by a node's concurrent transfers (Note [Link sharing]).
#include <catch2/catch.hpp>

#include "lib/plan/link.h"
#include "lib/util/error.h"

using namespace hetu;
using namespace hetu::plan;

TEST_CASE("link: a fixed bandwidth and latency, and a shared one", "[link]") {
  Link link{2e9, 1e-3};
  CHECK(link.transfer_s(4e6) == Approx(1e-3 + 2e-3));
  link.shared_by = 4;  // four transfers of 4 MB at once: 16 MB through it
  CHECK(link.transfer_s(4e6) == Approx(1e-3 + 8e-3));
  CHECK(Link{}.transfer_s(1e9) == 0);  // free
}

TEST_CASE("link: a bandwidth curve of the message size, by hand", "[link]") {
  // GB/s = -x^2 + 8x + 4, x = log2(bytes / 1e6): peak 20 GB/s at x = 4 (16 MB), capped at 18 GB/s.
  const BandwidthCurve curve{{-1, 8, 4}, 18e9};
  CHECK(curve.bytes_per_s(4e6) == Approx(16e9));    // x = 2: -4 + 16 + 4
  CHECK(curve.bytes_per_s(1e6) == Approx(4e9));     // x = 0
  CHECK(curve.bytes_per_s(0.25e6) == Approx(4e9));  // x = -2, held at 0
  CHECK(curve.bytes_per_s(64e6) == Approx(18e9));   // x = 6: 16 on the curve, held at the peak 20, capped 18
  CHECK(BandwidthCurve{{-1, 8, 4}, 0}.bytes_per_s(64e6) == Approx(20e9));
  Link link{0, 0, curve};
  link.shared_by = 2;
  CHECK(link.transfer_s(4e6) == Approx(2 * 4e6 / 16e9));
  const BandwidthCurve falling{{-1, 0}, 0};  // GB/s = -x: -2 at 4 MB
  CHECK_THROWS_AS(falling.bytes_per_s(4e6), UsageError);
}
