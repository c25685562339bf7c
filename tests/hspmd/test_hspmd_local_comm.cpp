// The communicator of a world of one (make_local_communicator): collectives over {0} leave
// the data as a one-member collective must (a sum of one, a gather of one), any other group
// or a peer is an error naming it.
#include <catch2/catch.hpp>

#include "lib/hspmd/communicator.h"
#include "lib/util/error.h"

namespace hetu {
namespace {

TEST_CASE("a world of one: collectives over its one device", "[hspmd]") {
  std::unique_ptr<Communicator> comm = make_local_communicator();
  CHECK(comm->rank() == 0);
  CHECK(comm->world_size() == 1);
  CHECK(comm->backend() == "local");
  const DeviceGroup me({0});
  Tensor x = tensor_from<float>({1.5f, -2.0f, 3.0f}, {3});
  comm->all_reduce(x, me);
  CHECK(to_vector(x) == std::vector<double>{1.5, -2.0, 3.0});
  Tensor out = zeros({3}, DType::f32);
  comm->all_gather(x, out, me);
  CHECK(to_vector(out) == std::vector<double>{1.5, -2.0, 3.0});
  Tensor scattered = zeros({3}, DType::f32);
  comm->reduce_scatter(x, scattered, me);
  CHECK(to_vector(scattered) == std::vector<double>{1.5, -2.0, 3.0});
  comm->broadcast(x, 0, comm->world());
  CHECK(to_vector(x) == std::vector<double>{1.5, -2.0, 3.0});
  CHECK_THROWS_WITH(comm->all_reduce(x, DeviceGroup({0, 1})), Catch::Contains("group {0,1} in a world of one"));
  CHECK_THROWS_WITH(comm->send(x, 1), Catch::Contains("peer 1 does not exist"));
  CHECK_THROWS_WITH(comm->all_gather(x, zeros({2}, DType::f32), me), Catch::Contains("out has 2 elements, in 3"));
}

}  // namespace
}  // namespace hetu
