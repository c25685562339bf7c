// LossScaler (lib/optim/loss_scaler.h): the scale halves on an overflow (never below min) and
// doubles after `window` clean steps in a row, the counters follow, the metadata form round
// trips and restores a run's state, and unscale divides the gradients and reports inf/nan.
#include <catch2/catch.hpp>

#include <cmath>

#include "lib/optim/loss_scaler.h"

using namespace hetu;
using hetu::optim::LossScaler;

TEST_CASE("the loss scale halves on overflow, doubles after a window of clean steps, stays >= min", "[loss_scale]") {
  LossScaler s({.init = 8, .window = 3, .min = 2});
  CHECK(s.scale() == 8);
  // A sequence of steps (true: overflow) and the scale each step leaves, worked out by hand.
  const bool steps[] = {false, false, false, false, true, true, true, true, false, false, false};
  const double after[] = {8, 8, 16, 16, 8, 4, 2, 2, 2, 2, 4};  // the fourth overflow in a row: at min already
  const int64_t clean[] = {1, 2, 0, 1, 0, 0, 0, 0, 1, 2, 0};
  for (size_t i = 0; i < std::size(steps); ++i) {
    CAPTURE(i);
    s.update(steps[i]);
    CHECK(s.scale() == after[i]);
    CHECK(s.clean_steps() == clean[i]);
  }
  CHECK(s.skipped_steps() == 4);
  // An overflow resets the window: two clean, an overflow, two clean do not double.
  LossScaler t({.init = 4, .window = 3});
  for (bool o : {false, false, true, false, false}) t.update(o);
  CHECK(t.scale() == 2);
}

TEST_CASE("the loss scale and its counters round trip through snapshot metadata", "[loss_scale]") {
  LossScaler a({.init = 65536, .window = 2});
  for (bool o : {false, false, true, false}) a.update(o);
  std::map<std::string, std::string> meta{{"other", "kept"}};
  a.save(meta);
  CHECK(meta.at("loss_scale") == "65536");
  CHECK(meta.at("loss_scale_clean_steps") == "1");
  CHECK(meta.at("loss_scale_skipped_steps") == "1");
  LossScaler b({.init = 65536, .window = 2});
  b.restore(meta);
  CHECK(b.scale() == a.scale());
  CHECK(b.clean_steps() == 1);
  CHECK(b.skipped_steps() == 1);
  b.update(false);  // the window completes as it would have in `a`
  a.update(false);
  CHECK(b.scale() == a.scale());
  CHECK(b.scale() == 131072);
  // A checkpoint without a scale (an fp32 run's) leaves the state alone.
  LossScaler c({.init = 1024, .window = 2});
  c.restore({{"data_position", "x"}});
  CHECK(c.scale() == 1024);
  // A damaged one is named.
  std::map<std::string, std::string> bad = meta;
  bad["loss_scale"] = "-3";
  CHECK_THROWS_WITH(c.restore(bad), Catch::Contains("loss_scale") && Catch::Contains("not a positive number"));
  bad = meta;
  bad.erase("loss_scale_clean_steps");
  CHECK_THROWS_WITH(c.restore(bad), Catch::Contains("no loss_scale_clean_steps"));
}

TEST_CASE("unscale divides every gradient by the scale and reports inf/nan", "[loss_scale]") {
  LossScaler s({.init = 1024});
  Tensor w = zeros({3}), b = zeros({2}), frozen = zeros({2});
  w.set_grad(tensor_from<float>({1024, -2048, 512}, {3}));
  b.set_grad(tensor_from<float>({3072, 0}, {2}));
  const std::vector<nn::NamedParameter> params = {{"w", w}, {"b", b}, {"frozen", frozen}};  // frozen: no gradient
  CHECK_FALSE(s.unscale(params));
  CHECK(to_vector(w.grad()) == std::vector<double>{1, -2, 0.5});
  CHECK(to_vector(b.grad()) == std::vector<double>{3, 0});
  b.set_grad(tensor_from<float>({NAN, 0}, {2}));
  CHECK(s.unscale(params));
}

TEST_CASE("the loss scale's configuration is checked", "[loss_scale]") {
  CHECK_THROWS_WITH(LossScaler({.init = 0.5, .window = 10, .min = 1}), Catch::Contains("init 0.5 must be finite and >= min"));
  CHECK_THROWS_WITH(LossScaler({.init = 8, .window = 0}), Catch::Contains("window must be >= 1"));
}
