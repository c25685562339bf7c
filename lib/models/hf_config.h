// Reading and writing a Hugging Face config.json for a model family's registry entry
// (lib/models/model_family.h, HfNames::to_config / from_config): a typed reader whose errors name
// the file and key and that remembers which keys were read, so that a key no reader looked at is
// refused by name instead of ignored; LLaMA-style rope settings both ways.
//
//   HfConfigReader c(json::parse(text), "hf/config.json");
//   c.integer("n_layer");                      // error naming hf/config.json and n_layer if bad
//   c.refuse_unread({"architectures"});        // error naming any other key nothing read
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lib/models/model_config.h"
#include "lib/util/error.h"

namespace hetu {

// Typed reads of config.json with errors naming the file and key; null counts as absent.
class HfConfigReader {
 public:
  HfConfigReader(nlohmann::json j, std::string file) : j_(std::move(j)), file_(std::move(file)) {}
  // Every read starts here, so a key asked about counts as read (refuse_unread).
  bool has(const char* key) const {
    read_.insert(key);
    return j_.contains(key) && !j_[key].is_null();
  }
  int64_t integer(const char* key, std::optional<int64_t> fallback = std::nullopt) const {
    if (!has(key)) return require(key, fallback);
    const nlohmann::json& v = j_[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (int64_t{1} << 40)) {
      HT_USAGE_ERROR("{}: {}: expected a positive integer, got {}", file_, prefix_ + key, v.dump());
    }
    return v.get<int64_t>();
  }
  double number(const char* key, std::optional<double> fallback = std::nullopt) const {
    if (!has(key)) return require(key, fallback);
    const nlohmann::json& v = j_[key];
    if (!v.is_number() || !(v.get<double>() > 0))
      HT_USAGE_ERROR("{}: {}: expected a positive number, got {}", file_, prefix_ + key, v.dump());
    return v.get<double>();
  }
  bool flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean()) {
      HT_USAGE_ERROR("{}: {}: expected true or false, got {}", file_, prefix_ + key, j_[key].dump());
    }
    return j_[key].get<bool>();
  }
  std::string text(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_string()) {
      HT_USAGE_ERROR("{}: {}: expected a string, got {}", file_, prefix_ + key, j_[key].dump());
    }
    return j_[key].get<std::string>();
  }
  // A setting hetu's model does not implement: an error unless it has the harmless value.
  template <typename T>
  void expect(const char* key, T harmless, const char* why) const {
    if (has(key) && j_[key] != nlohmann::json(harmless)) {
      HT_USAGE_ERROR("{}: {} = {}: {}", file_, prefix_ + key, j_[key].dump(), why);
    }
  }
  // The object under `key`, read with the same checks (errors name "key.field").
  std::optional<HfConfigReader> object(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (!j_[key].is_object()) {
      HT_USAGE_ERROR("{}: {}: expected an object, got {}", file_, prefix_ + key, j_[key].dump());
    }
    return HfConfigReader(j_[key], file_, prefix_ + key + ".");
  }
  // Refuses the first key (in file order) that no read asked about and that is not in
  // `harmless` (metadata that does not change what the model computes) or null.
  void refuse_unread(const std::vector<std::string_view>& harmless) const;
  const std::string& file() const { return file_; }

 private:
  HfConfigReader(nlohmann::json j, std::string file, std::string prefix)
      : j_(std::move(j)), file_(std::move(file)), prefix_(std::move(prefix)) {}
  template <typename T>
  T require(const char* key, std::optional<T> fallback) const {
    if (!fallback) HT_USAGE_ERROR("{}: the required key \"{}\" is missing", file_, prefix_ + key);
    return *fallback;
  }
  nlohmann::json j_;
  std::string file_;
  std::string prefix_;  // "rope_scaling." inside that object, for messages
  mutable std::set<std::string, std::less<>> read_;  // keys asked about
};

// config.json keys every family accepts unread: what transformers writes about the file, the
// tokenizer and generation, none of which changes the logits.
extern const std::vector<std::string_view> kHfMetadataKeys;

// HF's rope_scaling object (transformers' LlamaConfig, rope_type "llama3"), or null.
nlohmann::json rope_scaling_json(const RopeScaling& s);

struct RopeSettings {
  double theta = 0;
  RopeScaling scaling;
};
// config.json's rotary settings in either spelling (Note [HF rope keys] in hf_config.cpp):
// transformers 5's rope_parameters {rope_type, rope_theta, ...}, or rope_theta and rope_scaling
// {rope_type (older files: type), ...} of transformers 4; rope_type "default" or "llama3" (its
// four numbers); any other type is refused by name, and so are both spellings in one file.
RopeSettings rope_settings_from(const HfConfigReader& c, double default_theta);

}  // namespace hetu
