// A network path as the cost model prices it: a bandwidth (fixed, or a measured curve of the
// message size), a latency, and how many transfers share it at once (see Note [Link sharing]).
//
//   Link fixed{25e9, 10e-6};                       // 25 GB/s, 10 us
//   Link fit{0, 0, {{-0.166, 2.79, 11.7}, 22.9e9}};  // GB/s = -0.166 x^2 + 2.79 x + 11.7, x = log2(MB)
//   fit.shared_by = 4;                             // a node's 4 tp ranks send at once
//   fit.transfer_s(33.5e6);                        // 4 x 33.5 MB at the curve's 33.5 MB bandwidth
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace hetu::plan {

// Bandwidth as a polynomial of the message size, the form of Sailor's network fits:
// GB/s = Σ gbs_poly[i] · x^(n-1-i) (highest power first), x = log2(bytes / 10^6).
struct BandwidthCurve {
  std::vector<double> gbs_poly;  // empty: no curve
  double max_bytes_per_s = 0;    // a cap (0: none)
  bool empty() const { return gbs_poly.empty(); }
  // Bytes/s for one message of `bytes`. x is held at 0 below a megabyte (a fit's small-size
  // end falls towards 0 and below) and, for a falling parabola, at its peak past it. Throws
  // hetu::UsageError when the curve gives no positive bandwidth there.
  double bytes_per_s(double bytes) const;
};

struct Link {
  Link() = default;
  Link(double bytes_per_s_, double latency_s_, BandwidthCurve curve_ = {})
      : bytes_per_s(bytes_per_s_), latency_s(latency_s_), curve(std::move(curve_)) {}

  double bytes_per_s = 0;   // 0: free (used when curve is empty)
  double latency_s = 0;
  BandwidthCurve curve;
  int64_t shared_by = 1;    // transfers of the same size crossing it at once
  // latency + shared_by x bytes / bandwidth(bytes).
  double transfer_s(double bytes) const;
};

}  // namespace hetu::plan
