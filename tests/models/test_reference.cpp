// "Our GPT-2 and LLaMA": forward logits, loss, every gradient and K AdamW steps match the
// PyTorch-made fixtures within the stated tolerances (written at test time by
// tests/make_reference_fixtures.sh into HETU_REFERENCE_DIR; tests/data/README.md).
#include <catch2/catch.hpp>

#include "lib/models/reference_check.h"

using namespace hetu;

namespace {

void check_fixture(const std::string& name) {
  const ReferenceReport report = check_against_reference(std::string(HETU_REFERENCE_DIR) + "/" + name);
  REQUIRE(report.rows.size() > 4);
  CHECK(report.train_steps > 0);
  for (const ReferenceRow& row : report.rows) {
    INFO(name << ": " << row.quantity << " max diff " << row.max_diff << " tolerance " << row.tolerance);
    CHECK(row.ok());
  }
}

}  // namespace

TEST_CASE("gpt2 tiny matches PyTorch", "[reference]") { check_fixture("gpt2_tiny.h5"); }

TEST_CASE("llama tiny matches PyTorch", "[reference]") { check_fixture("llama_tiny.h5"); }
