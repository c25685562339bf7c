// Profile files (lib/profile/profile_file.h): the optional measurements of a GPU profile (tp group,
// optimizer step, activation and reserved bytes, the windows' spread) survive a write and a
// read; a CPU profile without them is written as before (no new keys); [[link]] curves are
// read, and bad ones are usage errors naming the file and the key.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>
#include <sstream>

#include "lib/profile/profile_file.h"
#include "lib/util/error.h"
#include "tests/temp_dir.h"

using namespace hetu;
using namespace hetu::profile;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("profile file: a tp group's measurements survive a write and a read", "[profile_file]") {
  hetu::test::TempDir dir("profile_file");
  auto entry = [](std::string type, int64_t micro_batch, int64_t seq_len, std::string precision,
                  std::vector<double> times) {
    DeviceTypeProfile p;
    p.device_type = std::move(type);
    p.micro_batch = micro_batch;
    p.seq_len = seq_len;
    p.precision = std::move(precision);
    p.layer_forward_s = times[0], p.layer_backward_s = times[1], p.embed_forward_s = times[2];
    p.embed_backward_s = times[3], p.head_forward_s = times[4], p.head_backward_s = times[5];
    return p;
  };
  DeviceTypeProfile gpu = entry("GH-96", 8, 2048, "bf16", {0.0027, 0.0065, 0.0009, 1e-6, 0.004, 0.0059});
  gpu.tp = 4;
  gpu.optimizer_s = 4.79e-4;
  gpu.layer_activation_bytes = 876740608;
  gpu.embed_activation_bytes = 67256320;
  gpu.head_activation_bytes = 1745051648;
  gpu.head_workspace_bytes = 823525376;
  gpu.reserved_bytes = 5.06e9;
  gpu.spread = 0.013;
  const DeviceTypeProfile cpu = entry("cpu", 4, 128, "fp32", {0.004, 0.008, 0.001, 0.002, 0.003, 0.006});
  dir.write("p.toml", to_toml(Profile({gpu, cpu}), "# test\n"));
  const std::vector<DeviceTypeProfile> back = read_profile_file(dir.file("p.toml")).devices;
  REQUIRE(back.size() == 2);
  CHECK(back[0].tp == 4);
  CHECK(back[0].micro_batch == 8);
  CHECK(back[0].optimizer_s == Approx(4.79e-4));
  CHECK(back[0].layer_activation_bytes == Approx(876740608));
  CHECK(back[0].embed_activation_bytes == Approx(67256320));
  CHECK(back[0].head_activation_bytes == Approx(1745051648));
  CHECK(back[0].head_workspace_bytes == Approx(823525376));
  CHECK(back[0].reserved_bytes == Approx(5.06e9));
  CHECK(back[0].head_backward_s == Approx(0.0059));
  CHECK(back[0].spread == Approx(0.013));
  CHECK(back[1].tp == 1);
  CHECK(back[1].optimizer_s == 0);
  // The CPU entry has none of the optional keys.
  const std::string text = read_text(dir.file("p.toml"));
  const std::string cpu_part = text.substr(text.rfind("[[profile]]"));
  for (const char* key : {"optimizer_s", "activation_bytes", "workspace_bytes", "reserved_bytes", "spread"})
    CHECK(cpu_part.find(key) == std::string::npos);
  CHECK(read_profile_file(dir.file("p.toml")).links.empty());
}

TEST_CASE("profile file: a curve per pair of types and GPUs taking part survives a write and a read", "[profile_file]") {
  hetu::test::TempDir dir("profile_pair_links");
  dir.write("l.toml", "[[profile]]\ndevice_type = \"RTX-2080\"\n[[link]]\nscope = \"between\"\ndevice_type = \"RTX-2080\"\n"
                      "gpus = 4\npeer_type = \"Titan-RTX\"\npeer_gpus = 8\nbandwidth_gbs_poly = [2.8]\n"
                      "[[link]]\nscope = \"within\"\ndevice_type = \"RTX-2080\"\ngpus = 8\nbandwidth_gbs_poly = [17]\n");
  dir.write("l2.toml", to_toml(read_profile_file(dir.file("l.toml")), "# again\n"));
  const std::vector<LinkProfile> links = read_profile_file(dir.file("l2.toml")).links;
  REQUIRE(links.size() == 2);
  CHECK(links[0].gpus == 4);
  CHECK(links[0].peer_type == "Titan-RTX");
  CHECK(links[0].peer_gpus == 8);
  CHECK(links[1].scope == "within");
  CHECK(links[1].gpus == 8);
  CHECK(links[1].peer_type.empty());
  CHECK(links[1].peer_gpus == 0);
}

TEST_CASE("profile file: link curves, and bad ones named", "[profile_file]") {
  hetu::test::TempDir dir("profile_links");
  const std::string entry = "[[profile]]\ndevice_type = \"GH-96\"\n";
  dir.write("l.toml", entry + "[[link]]\nscope = \"between\"\ndevice_type = \"GH-96\"\n"
                              "bandwidth_gbs_poly = [-0.17, 2.8, 11.7]\nmax_bytes_per_s = 2.29e10\nlatency_us = 10\n");
  const std::vector<LinkProfile> links = read_profile_file(dir.file("l.toml")).links;
  REQUIRE(links.size() == 1);
  CHECK(links[0].scope == "between");
  CHECK(links[0].hosts.empty());
  CHECK(links[0].bandwidth_gbs_poly == std::vector<double>{-0.17, 2.8, 11.7});
  CHECK(links[0].max_bytes_per_s == Approx(2.29e10));
  CHECK(links[0].latency_us == Approx(10));
  // Written back as read.
  dir.write("l2.toml", to_toml(read_profile_file(dir.file("l.toml")), "# again\n"));
  const LinkProfile again = read_profile_file(dir.file("l2.toml")).links.at(0);
  CHECK(again.device_type == "GH-96");
  CHECK(again.bandwidth_gbs_poly == links[0].bandwidth_gbs_poly);
  CHECK(again.max_bytes_per_s == Approx(2.29e10));
  auto error_of = [&](const std::string& link) {
    dir.write("bad.toml", entry + "[[link]]\n" + link);
    try {
      read_profile_file(dir.file("bad.toml"));
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error_of("scope = \"rack\"\ndevice_type = \"x\"\nbandwidth_gbs_poly = [1]\n"),
             Catch::Matchers::Contains("bad.toml: link[0].scope: expected \"within\" or \"between\""));
  CHECK_THAT(error_of("scope = \"between\"\n"), Catch::Matchers::Contains("link[0]: give hosts"));
  CHECK_THAT(error_of("scope = \"between\"\nhosts = [\"a\", \"b\"]\nbandwidth_gbs_poly = [1]\n"),
             Catch::Matchers::Contains("link[0]: bandwidth_gbs_poly is for a device_type's links"));
  CHECK_THAT(error_of("scope = \"between\"\ndevice_type = \"x\"\nbandwidth_gbs_poly = [1]\nmax_bytes_per_s = -1\n"),
             Catch::Matchers::Contains("link[0].max_bytes_per_s: expected a number >= 0"));
  CHECK_THAT(error_of("scope = \"between\"\ndevice_type = \"x\"\nbandwidth_gbs_poly = [1]\nspeed = 3\n"),
             Catch::Matchers::Contains("link[0].speed: unknown key"));
  CHECK_THAT(error_of("scope = \"between\"\nhosts = [\"a\", \"b\"]\ngbps = 1\ngpus = 4\n"),
             Catch::Matchers::Contains("link[0]: gpus, peer_type and peer_gpus are for a device_type's curves"));
  CHECK_THAT(error_of("scope = \"within\"\ndevice_type = \"x\"\nbandwidth_gbs_poly = [1]\npeer_type = \"y\"\n"),
             Catch::Matchers::Contains("link[0]: peer_type and peer_gpus are for links between nodes"));
  CHECK_THAT(error_of("scope = \"between\"\ndevice_type = \"x\"\nbandwidth_gbs_poly = [1]\ngpus = 0\n"),
             Catch::Matchers::Contains("link[0].gpus: expected an integer >= 1"));
  dir.write("neg.toml", entry + "reserved_bytes = -5\n");
  CHECK_THROWS_WITH(read_profile_file(dir.file("neg.toml")), Catch::Matchers::Contains("profile[0].reserved_bytes: expected a number >= 0"));
}
