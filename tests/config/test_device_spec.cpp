// Device lists ("gpu-a:0-3,5", "a:0-1; b:0") and layer ranges ("0-6") against hand-written
// expectations, including every malformed form and the format/parse round trip.
#include <catch2/catch.hpp>

#include "lib/config/device_spec.h"
#include "lib/util/error.h"

using namespace hetu;
using namespace hetu::config;

namespace {
std::vector<DeviceId> ids(const std::string& host, std::vector<int64_t> indices) {
  std::vector<DeviceId> out;
  for (int64_t i : indices) out.push_back({host, i});
  return out;
}
}  // namespace

TEST_CASE("device lists parse ranges, singles and several hosts", "[device_spec]") {
  CHECK(parse_device_list("gpu-a:0-3,5") == ids("gpu-a", {0, 1, 2, 3, 5}));
  CHECK(parse_device_list("n1:7") == ids("n1", {7}));
  CHECK(parse_device_list(" gpu-a : 2 - 3 ") == ids("gpu-a", {2, 3}));
  std::vector<DeviceId> two_hosts = ids("a", {0, 1});
  two_hosts.push_back({"b", 4});
  CHECK(parse_device_list("a:0-1; b:4") == two_hosts);
}

TEST_CASE("malformed device lists are rejected with the input quoted", "[device_spec]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(parse_device_list(""), Contains("expected host:indices"));
  CHECK_THROWS_WITH(parse_device_list("gpu-a"), Contains("\"gpu-a\" lacks ':indices'"));
  CHECK_THROWS_WITH(parse_device_list(":0-3"), Contains("missing host name"));
  CHECK_THROWS_WITH(parse_device_list("gpu-a:3-1"), Contains("range 3-1 is reversed"));
  CHECK_THROWS_WITH(parse_device_list("gpu-a:x"), Contains("\"x\" is not an index or a range"));
  CHECK_THROWS_WITH(parse_device_list("gpu-a:0-1,1"), Contains("gpu-a:1 is listed twice"));
  CHECK_THROWS_WITH(parse_device_list("gpu-a:0,,2"), Contains("empty entry"));
  CHECK_THROWS_WITH(parse_device_list("gpu-a:-1"), Contains("negative index -1"));
  CHECK_THROWS_AS(parse_device_list("gpu-a:1.5"), UsageError);
}

TEST_CASE("layer ranges", "[device_spec]") {
  CHECK(parse_layer_range("0-6") == LayerRange{0, 6});
  CHECK(parse_layer_range("7") == LayerRange{7, 7});
  CHECK(parse_layer_range("0-6").count() == 7);
  CHECK_THROWS_WITH(parse_layer_range("6-0"), Catch::Contains("range 6-0 is reversed"));
  CHECK_THROWS_WITH(parse_layer_range("0-3,5"), Catch::Contains("one contiguous range"));
  CHECK_THROWS_WITH(parse_layer_range("a-b"), Catch::Contains("is not an index or a range"));
  CHECK_THROWS_WITH(parse_layer_range(""), Catch::Contains("empty entry"));
}

TEST_CASE("formatting compresses runs and parses back to the same devices", "[device_spec]") {
  std::vector<DeviceId> devices = ids("a", {0, 1, 2, 5, 7, 8});
  devices.push_back({"b", 0});
  devices.push_back({"b", 1});
  CHECK(format_device_list(devices) == "a:0-2,5,7-8; b:0-1");
  CHECK(parse_device_list(format_device_list(devices)) == devices);
  CHECK(format_layer_range({3, 3}) == "3");
  CHECK(format_layer_range({0, 11}) == "0-11");
}
