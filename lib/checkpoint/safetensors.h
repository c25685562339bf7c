// Safetensors files (Hugging Face's weight format), read as untrusted input and written
// atomically. A file is an 8-byte little-endian header length N, N bytes of JSON, then the
// data buffer. The JSON maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]}
// (byte offsets into the buffer) plus an optional "__metadata__" object of strings.
// Invariants checked on every read (each violation a hetu::UsageError naming the file and
// the tensor, never a crash): N <= 100 MB and inside the file; valid UTF-8 JSON, an object
// with no duplicate keys; shapes of non-negative integers whose byte size equals the range;
// the ranges, sorted, tile the buffer exactly (no overlap, no hole, nothing after the last).
//
//   write_safetensors("model.safetensors", {{"wte.weight", wte}}, {{"format", "pt"}});
//   SafetensorsReader file("model.safetensors");
//   Tensor wte = file.read(*file.header().find("wte.weight"));   // bitwise equal to wte
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/core/tensor.h"

namespace hetu::checkpoint {

inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;  // as the reference reader
inline constexpr size_t kSafetensorsMaxRank = 16;

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t begin = 0;  // byte range [begin, end) in the data buffer
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::map<std::string, std::string> metadata;  // "__metadata__"
  std::vector<SafetensorsEntry> entries;        // sorted by byte range
  uint64_t data_start = 0;                      // file offset of the buffer: 8 + N

  const SafetensorsEntry* find(const std::string& name) const;  // nullptr when absent
};

// "F32", "BF16", ...: the safetensors spelling of a dtype, and back (nullopt: not one hetu holds).
std::string_view safetensors_dtype_name(DType dtype);
std::optional<DType> parse_safetensors_dtype(std::string_view name);

// The JSON header length from the first 8 bytes of a file of `file_size` bytes, checked
// against the file size and the 100 MB bound. `file` names the file in errors.
uint64_t parse_safetensors_header_length(std::string_view first8, uint64_t file_size, const std::string& file);

// Parses and validates the JSON header of a file of `file_size` bytes (whose length field
// said json.size()).
SafetensorsHeader parse_safetensors_header(std::string_view json, uint64_t file_size, const std::string& file);

// A whole file in memory: validated header, and each tensor's bytes copied out (tests, fuzzing).
SafetensorsHeader parse_safetensors(std::string_view bytes, const std::string& file);
Tensor safetensors_tensor(std::string_view bytes, const SafetensorsHeader& header, const SafetensorsEntry& entry);

// Reads tensors from a file on demand (pread), after validating its header on open.
class SafetensorsReader {
 public:
  explicit SafetensorsReader(std::string path);  // UsageError when missing or invalid
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  Tensor read(const SafetensorsEntry& entry) const;
  std::map<std::string, Tensor> read_all() const;

 private:
  void read_at(uint64_t offset, void* out, uint64_t nbytes, const std::string& what) const;

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  SafetensorsHeader header_;
};

// A file's bytes: tensors (CPU, any layout; f32/f64/bf16/f16/i32/i64/u8) in the given order,
// the header padded with spaces so the buffer starts 8-byte aligned.
std::string safetensors_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata);
// safetensors_bytes() written with write_file_atomic.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace hetu::checkpoint
