// LossScaler (loss_scaler.h): the scale's state machine, its metadata form, and the unscale
// over the gradients through ops::unscale_and_check_.
#include "lib/optim/loss_scaler.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "lib/ops/ops.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::optim {
namespace {

constexpr const char* kScaleKey = "loss_scale";
constexpr const char* kCleanKey = "loss_scale_clean_steps";
constexpr const char* kSkippedKey = "loss_scale_skipped_steps";

}  // namespace

LossScaler::LossScaler(LossScaleConfig config) : config_(config), scale_(config.init) {
  HT_CHECK(std::isfinite(config_.init) && config_.init >= config_.min && config_.min > 0,
           "loss scale: init {} must be finite and >= min {} > 0", config_.init, config_.min);
  HT_CHECK(config_.window >= 1, "loss scale: window must be >= 1, got {}", config_.window);
}

bool LossScaler::unscale(const std::vector<nn::NamedParameter>& params) const {
  std::vector<Tensor> grads;
  for (const nn::NamedParameter& p : params) {
    if (p.tensor.grad().defined()) grads.push_back(p.tensor.grad());
  }
  return !grads.empty() && ops::unscale_and_check_(grads, 1.0 / scale_);
}

void LossScaler::update(bool overflow) {
  if (overflow) {
    scale_ = std::max(scale_ / 2, config_.min);
    clean_steps_ = 0;
    ++skipped_steps_;
    return;
  }
  if (++clean_steps_ >= config_.window) {
    scale_ *= 2;
    clean_steps_ = 0;
  }
}

void LossScaler::save(std::map<std::string, std::string>& metadata) const {
  metadata[kScaleKey] = fmt::format("{}", scale_);
  metadata[kCleanKey] = std::to_string(clean_steps_);
  metadata[kSkippedKey] = std::to_string(skipped_steps_);
}

void LossScaler::restore(const std::map<std::string, std::string>& metadata) {
  auto scale = metadata.find(kScaleKey);
  if (scale == metadata.end()) return;
  char* end = nullptr;
  const double value = std::strtod(scale->second.c_str(), &end);
  HT_CHECK(end != scale->second.c_str() && *end == '\0' && std::isfinite(value) && value > 0,
           "resume: the checkpoint's {} \"{}\" is not a positive number", kScaleKey, scale->second);
  scale_ = value;
  auto counter = [&](const char* key) -> int64_t {
    auto it = metadata.find(key);
    HT_CHECK(it != metadata.end(), "resume: the checkpoint has {} but no {}", kScaleKey, key);
    const std::optional<int64_t> n = parse_int64(it->second);
    HT_CHECK(n && *n >= 0, "resume: the checkpoint's {} \"{}\" is not a count", key, it->second);
    return *n;
  };
  clean_steps_ = counter(kCleanKey);
  skipped_steps_ = counter(kSkippedKey);
}

int64_t test_overflow_step() {
  const char* value = std::getenv("HETU_TEST_FP16_OVERFLOW_STEP");
  if (value == nullptr || *value == '\0') return 0;
  const std::optional<int64_t> step = parse_int64(value);
  HT_USAGE_CHECK(step && *step >= 1, "HETU_TEST_FP16_OVERFLOW_STEP must be a step number >= 1, got \"{}\"", value);
  return *step;
}

}  // namespace hetu::optim
