// Whether ops record the tape. NoGradGuard turns recording off in its scope (optimizer
// steps, evaluation, backward itself); GradGuard turns it back on (a recomputed forward run
// inside backward, lib/autograd/recompute.h). Both nest and are per thread.
#pragma once

namespace hetu::autograd {

bool grad_enabled();

class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

class GradGuard {
 public:
  GradGuard();
  ~GradGuard();
  GradGuard(const GradGuard&) = delete;
  GradGuard& operator=(const GradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace hetu::autograd
