// Whether ops record the tape. NoGradGuard turns recording off in its scope (optimizer
// steps, evaluation, backward itself); it nests and is per thread.
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

}  // namespace hetu::autograd
