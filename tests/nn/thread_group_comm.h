// A Communicator for single-process tests of code that runs collectives: `size` ranks are
// threads of this process (ThreadGroup::run), world rank i = thread i. It implements
// all_gather (equal counts) and all_reduce (sum in double, rank order) over the whole world,
// on CPU or CUDA tensors (values travel through the host); every other operation throws.
// Catch2's assertions are not thread-safe: rank functions record results, the test thread
// checks them after run() returns.
//
//   ThreadGroup group(2);
//   group.run([&](int64_t rank, Communicator& comm) { results[rank] = f(rank, comm); });
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "lib/hspmd/communicator.h"
#include "lib/util/error.h"

namespace hetu::test {

class ThreadGroup {
 public:
  explicit ThreadGroup(int64_t size) : size_(size), slots_(static_cast<size_t>(size)) {}

  // Runs fn(rank, comm) on `size` threads and joins them; rethrows the first exception.
  void run(const std::function<void(int64_t rank, Communicator& comm)>& fn);

  // Every rank's `mine`, in rank order, once all ranks have called it (a rendezvous).
  std::vector<std::vector<double>> exchange(int64_t rank, std::vector<double> mine) {
    std::unique_lock<std::mutex> lock(mutex_);
    slots_[static_cast<size_t>(rank)] = std::move(mine);
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      result_ = slots_;
      arrived_ = 0;
      ++generation_;
      ready_.notify_all();
    } else {
      ready_.wait(lock, [&] { return generation_ != generation; });
    }
    return result_;
  }

  int64_t size() const { return size_; }

 private:
  int64_t size_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<std::vector<double>> slots_, result_;
  int64_t arrived_ = 0;
  uint64_t generation_ = 0;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(ThreadGroup& group, int64_t rank) : group_(group), rank_(rank) {}

  DeviceId rank() const override { return rank_; }
  int64_t world_size() const override { return group_.size(); }
  std::string backend() const override { return "threads"; }

  void all_reduce(const Tensor& buffer, const DeviceGroup& group) override {
    check_world(group);
    const std::vector<std::vector<double>> all = group_.exchange(rank_, to_vector(buffer));
    std::vector<double> sum(all[0].size(), 0.0);
    for (const std::vector<double>& v : all) {
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += v[i];
    }
    buffer.copy_from(tensor_from(sum, buffer.shape()));
  }
  void all_gather(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                  std::span<const int64_t> counts) override {
    check_world(group);
    HT_CHECK(counts.empty() && out.numel() == in.numel() * group_.size(), "ThreadCommunicator: equal all_gather only");
    std::vector<double> flat;
    for (const std::vector<double>& v : group_.exchange(rank_, to_vector(in))) flat.insert(flat.end(), v.begin(), v.end());
    out.copy_from(tensor_from(flat, out.shape()));
  }
  void reduce_scatter(const Tensor&, const Tensor&, const DeviceGroup&, std::span<const int64_t>) override {
    unsupported("reduce_scatter");
  }
  void all_to_all(const Tensor&, const Tensor&, const DeviceGroup&, std::span<const int64_t>,
                  std::span<const int64_t>) override {
    unsupported("all_to_all");
  }
  void broadcast(const Tensor&, DeviceId, const DeviceGroup&) override { unsupported("broadcast"); }
  void send(const Tensor&, DeviceId) override { unsupported("send"); }
  void recv(const Tensor&, DeviceId) override { unsupported("recv"); }
  void batch_send_recv(std::span<const P2POp>) override { unsupported("batch_send_recv"); }
  void barrier(const DeviceGroup& group) override {
    check_world(group);
    group_.exchange(rank_, {});
  }

 private:
  void check_world(const DeviceGroup& group) const {
    HT_CHECK(group == world(), "ThreadCommunicator: collectives over the whole world only, got {}", group.to_string());
  }
  [[noreturn]] static void unsupported(const char* op) { HT_THROW("ThreadCommunicator: {} is not implemented", op); }

  ThreadGroup& group_;
  int64_t rank_;
};

inline void ThreadGroup::run(const std::function<void(int64_t rank, Communicator& comm)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(size_));
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < size_; ++r) {
    threads.emplace_back([&, r] {
      ThreadCommunicator comm(*this, r);
      try {
        fn(r, comm);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace hetu::test
