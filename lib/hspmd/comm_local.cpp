// The Communicator of a world of one (make_local_communicator): a single device is a
// one-device strategy, and every collective over its only group {0} is the identity.
#include "lib/hspmd/communicator.h"
#include "lib/util/error.h"

namespace hetu {
namespace {

class LocalCommunicator final : public Communicator {
 public:
  explicit LocalCommunicator(Device device) : device_(device) {}

  DeviceId rank() const override { return 0; }
  int64_t world_size() const override { return 1; }
  std::string backend() const override { return "local"; }
  Device device() const override { return device_; }

  void all_reduce(const Tensor& buffer, const DeviceGroup& group) override { check_group("all_reduce", group, buffer); }
  void all_gather(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                  std::span<const int64_t> counts) override {
    check_group("all_gather", group, in);
    copy_flat("all_gather", in, out, counts);
  }
  void reduce_scatter(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                      std::span<const int64_t> counts) override {
    check_group("reduce_scatter", group, in);
    copy_flat("reduce_scatter", in, out, counts);
  }
  void all_to_all(const Tensor& in, const Tensor& out, const DeviceGroup& group, std::span<const int64_t> send_counts,
                  std::span<const int64_t> /*recv_counts*/) override {
    check_group("all_to_all", group, in);
    copy_flat("all_to_all", in, out, send_counts);
  }
  void broadcast(const Tensor& buffer, DeviceId root, const DeviceGroup& group) override {
    check_group("broadcast", group, buffer);
    HT_CHECK(root == 0, "broadcast: root {} is not in a world of one", root);
  }
  void send(const Tensor& /*tensor*/, DeviceId peer) override { no_peer("send", peer); }
  void recv(const Tensor& /*tensor*/, DeviceId peer) override { no_peer("recv", peer); }
  void batch_send_recv(std::span<const P2POp> ops) override {
    if (!ops.empty()) no_peer("batch_send_recv", ops.front().peer);
  }
  void barrier(const DeviceGroup& group) override { check_group("barrier", group, Tensor()); }

 private:
  static void check_group(const char* op, const DeviceGroup& group, const Tensor& t) {
    HT_CHECK(group.size() == 1 && group.at(0) == 0, "{}: group {} in a world of one", op, group.to_string());
    HT_CHECK(!t.defined() || t.is_contiguous(), "{}: the tensor must be contiguous", op);
  }
  // The one member's piece is all of `in`: out (flat) = in (flat).
  static void copy_flat(const char* op, const Tensor& in, const Tensor& out, std::span<const int64_t> counts) {
    HT_CHECK(counts.empty() || (counts.size() == 1 && counts[0] == in.numel()), "{}: counts for one member must be {}",
             op, in.numel());
    HT_CHECK(out.numel() == in.numel(), "{}: out has {} elements, in {}", op, out.numel(), in.numel());
    out.view({out.numel()}).copy_from(in.reshape({in.numel()}));
  }
  [[noreturn]] static void no_peer(const char* op, DeviceId peer) {
    HT_THROW("{}: peer {} does not exist in a world of one", op, peer);
  }

  Device device_;
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator(Device device) {
  return std::make_unique<LocalCommunicator>(device);
}

}  // namespace hetu
