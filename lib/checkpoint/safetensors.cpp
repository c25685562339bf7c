// Safetensors reading (validated, see the invariants in safetensors.h) and writing. The JSON
// header is parsed by nlohmann::json with a callback that bounds nesting and rejects
// duplicate keys (which the library would otherwise silently resolve to the last value).
#include "lib/checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "lib/util/atomic_file.h"
#include "lib/util/error.h"

namespace hetu::checkpoint {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian, as stored in memory");

namespace {

using nlohmann::json;

constexpr int kMaxJsonDepth = 4;  // {"t": {"shape": [1]}} reaches depth 3 for the numbers

constexpr std::pair<DType, std::string_view> kDTypeNames[] = {
    {DType::f32, "F32"}, {DType::f64, "F64"}, {DType::bf16, "BF16"}, {DType::f16, "F16"},
    {DType::i32, "I32"}, {DType::i64, "I64"}, {DType::u8, "U8"},
};

// Parses with bounded nesting and no duplicate keys in any object.
json parse_json(std::string_view text, const std::string& file) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxJsonDepth)
      HT_USAGE_ERROR("{}: safetensors header: JSON nested deeper than {} levels", file, kMaxJsonDepth);
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second) {
          HT_USAGE_ERROR("{}: safetensors header: duplicate key \"{}\"", file, parsed.get<std::string>());
        }
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    HT_USAGE_ERROR("{}: safetensors header is not valid JSON: {}", file, e.what());
  }
}

// A JSON number that is a non-negative integer (not a float), as uint64.
std::optional<uint64_t> as_count(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

SafetensorsEntry parse_entry(const std::string& name, const json& info, const std::string& file) {
  auto fail = [&](const std::string& what) { HT_USAGE_ERROR("{}: tensor \"{}\": {}", file, name, what); };
  if (name.empty()) HT_USAGE_ERROR("{}: a tensor has an empty name", file);
  if (!info.is_object()) fail("expected an object with dtype, shape and data_offsets");
  SafetensorsEntry e;
  e.name = name;

  auto dtype = info.find("dtype");
  if (dtype == info.end() || !dtype->is_string()) fail("dtype missing or not a string");
  std::optional<DType> parsed = parse_safetensors_dtype(dtype->get<std::string>());
  if (!parsed)
    fail(fmt::format("dtype \"{}\" is not one hetu reads (F32, F64, BF16, F16, I32, I64, U8)",
                     dtype->get<std::string>()));
  e.dtype = *parsed;

  auto shape = info.find("shape");
  if (shape == info.end() || !shape->is_array()) fail("shape missing or not an array");
  if (shape->size() > kSafetensorsMaxRank)
    fail(fmt::format("shape has {} dimensions (at most {})", shape->size(), kSafetensorsMaxRank));
  // numel, and the product of the non-zero dims (bounded so strides never overflow).
  uint64_t numel = 1, span = 1;
  constexpr uint64_t kLimit = uint64_t{1} << 60;
  for (const json& dim : *shape) {
    std::optional<uint64_t> d = as_count(dim);
    if (!d) fail(fmt::format("shape {} holds something other than a non-negative integer", shape->dump()));
    if (*d > kLimit || (*d > 0 && span > kLimit / *d)) fail(fmt::format("shape {} is too large", shape->dump()));
    span *= std::max<uint64_t>(*d, 1);
    numel *= *d;
    e.shape.push_back(static_cast<int64_t>(*d));
  }

  auto offsets = info.find("data_offsets");
  if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2)
    fail("data_offsets missing or not [begin, end]");
  std::optional<uint64_t> begin = as_count((*offsets)[0]), end = as_count((*offsets)[1]);
  if (!begin || !end) fail(fmt::format("data_offsets {} are not non-negative integers", offsets->dump()));
  if (*begin > *end) fail(fmt::format("data_offsets {}: begin after end", offsets->dump()));
  e.begin = *begin;
  e.end = *end;
  const uint64_t nbytes = numel * dtype_size(e.dtype);  // numel <= 2^60, so no overflow
  if (*end - *begin != nbytes) {
    fail(fmt::format("data_offsets {} hold {} bytes, but dtype {} and shape {} need {}", offsets->dump(), *end - *begin,
                     dtype->get<std::string>(), shape_str(e.shape), nbytes));
  }
  return e;
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  for (const auto& [d, name] : kDTypeNames) {
    if (d == dtype) return name;
  }
  HT_THROW("safetensors: unhandled dtype");
}

std::optional<DType> parse_safetensors_dtype(std::string_view name) {
  for (const auto& [d, n] : kDTypeNames) {
    if (n == name) return d;
  }
  return std::nullopt;
}

const SafetensorsEntry* SafetensorsHeader::find(const std::string& name) const {
  for (const SafetensorsEntry& e : entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

uint64_t parse_safetensors_header_length(std::string_view first8, uint64_t file_size, const std::string& file) {
  if (file_size < 8 || first8.size() < 8) {
    HT_USAGE_ERROR("{}: {} bytes, too short for a safetensors file (8-byte header length first)", file, file_size);
  }
  uint64_t length = 0;
  std::memcpy(&length, first8.data(), 8);
  if (length > kSafetensorsMaxHeaderBytes) {
    HT_USAGE_ERROR("{}: safetensors header length {} exceeds the {}-byte limit (not a safetensors file?)", file, length,
                   kSafetensorsMaxHeaderBytes);
  }
  if (length > file_size - 8) {
    HT_USAGE_ERROR("{}: safetensors header length {} runs past the end of the file ({} bytes; truncated?)", file,
                   length, file_size);
  }
  if (length < 2) HT_USAGE_ERROR("{}: safetensors header length {} is too short for a JSON object", file, length);
  return length;
}

SafetensorsHeader parse_safetensors_header(std::string_view text, uint64_t file_size, const std::string& file) {
  SafetensorsHeader header;
  header.data_start = 8 + text.size();
  HT_USAGE_CHECK(header.data_start <= file_size, "{}: safetensors header runs past the end of the file", file);
  const json root = parse_json(text, file);
  if (!root.is_object()) HT_USAGE_ERROR("{}: safetensors header is JSON but not an object", file);
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) HT_USAGE_ERROR("{}: __metadata__ is not an object", file);
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) HT_USAGE_ERROR("{}: __metadata__ \"{}\" is not a string", file, mk);
        header.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    header.entries.push_back(parse_entry(key, value, file));
  }
  // The ranges, in order, must tile [0, buffer size) exactly.
  std::sort(header.entries.begin(), header.entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const uint64_t buffer = file_size - header.data_start;
  uint64_t expected = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const SafetensorsEntry& e : header.entries) {
    if (e.begin < expected) {
      HT_USAGE_ERROR("{}: tensor \"{}\" (bytes {}..{}) overlaps tensor \"{}\" (bytes {}..{})", file, e.name, e.begin,
                     e.end, previous->name, previous->begin, previous->end);
    }
    if (e.begin > expected) {
      HT_USAGE_ERROR("{}: tensor \"{}\" starts at byte {} of the data, leaving a hole after byte {}{}", file, e.name,
                     e.begin, expected, previous ? fmt::format(" (the end of tensor \"{}\")", previous->name) : "");
    }
    if (e.end > buffer) {
      HT_USAGE_ERROR("{}: tensor \"{}\" (bytes {}..{}) runs past the end of the data ({} bytes; truncated?)", file,
                     e.name, e.begin, e.end, buffer);
    }
    expected = e.end;
    previous = &e;
  }
  if (expected != buffer) {
    HT_USAGE_ERROR("{}: {} bytes after the last tensor's data (the tensors cover {} of {} data bytes)", file,
                   buffer - expected, expected, buffer);
  }
  return header;
}

SafetensorsHeader parse_safetensors(std::string_view bytes, const std::string& file) {
  const uint64_t length = parse_safetensors_header_length(bytes.substr(0, 8), bytes.size(), file);
  return parse_safetensors_header(bytes.substr(8, length), bytes.size(), file);
}

Tensor safetensors_tensor(std::string_view bytes, const SafetensorsHeader& header, const SafetensorsEntry& entry) {
  HT_CHECK(header.data_start + entry.end <= bytes.size(), "safetensors: tensor {} outside the bytes given", entry.name);
  Tensor out = empty(entry.shape, entry.dtype);
  if (entry.end > entry.begin)
    std::memcpy(out.raw_data(), bytes.data() + header.data_start + entry.begin, entry.end - entry.begin);
  return out;
}

// ---- SafetensorsReader ----

SafetensorsReader::SafetensorsReader(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) HT_USAGE_ERROR("{}: cannot open: {}", path_, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    HT_USAGE_ERROR("{}: not a regular file", path_);
  }
  size_ = static_cast<uint64_t>(st.st_size);
  try {
    char first8[8] = {};
    if (size_ >= 8) read_at(0, first8, 8, "the header length");
    const uint64_t length = parse_safetensors_header_length(std::string_view(first8, size_ >= 8 ? 8 : 0), size_, path_);
    std::string text(length, '\0');
    read_at(8, text.data(), length, "the header");
    header_ = parse_safetensors_header(text, size_, path_);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

SafetensorsReader::~SafetensorsReader() {
  if (fd_ >= 0) ::close(fd_);
}

void SafetensorsReader::read_at(uint64_t offset, void* out, uint64_t nbytes, const std::string& what) const {
  auto* dst = static_cast<char*>(out);
  while (nbytes > 0) {
    const ssize_t n = ::pread(fd_, dst, std::min<uint64_t>(nbytes, uint64_t{1} << 30), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      HT_USAGE_ERROR("{}: cannot read {} (file changed or unreadable: {})", path_, what,
                     n < 0 ? std::strerror(errno) : "end of file");
    dst += n;
    offset += static_cast<uint64_t>(n);
    nbytes -= static_cast<uint64_t>(n);
  }
}

Tensor SafetensorsReader::read(const SafetensorsEntry& entry) const {
  Tensor out = empty(entry.shape, entry.dtype);
  read_at(header_.data_start + entry.begin, out.raw_data(), entry.end - entry.begin, "tensor \"" + entry.name + "\"");
  return out;
}

std::map<std::string, Tensor> SafetensorsReader::read_all() const {
  std::map<std::string, Tensor> out;
  for (const SafetensorsEntry& e : header_.entries) out[e.name] = read(e);
  return out;
}

// ---- writing ----

std::string safetensors_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    HT_CHECK(!name.empty() && name != "__metadata__", "safetensors: invalid tensor name '{}'", name);
    HT_CHECK(!header.contains(name), "safetensors: tensor {} given twice", name);
    HT_CHECK(tensor.defined() && tensor.device().is_cpu(), "safetensors: tensor {} is not a CPU tensor", name);
    data.push_back(tensor.contiguous());
    const uint64_t nbytes = static_cast<uint64_t>(tensor.numel()) * dtype_size(tensor.dtype());
    header[name] = {{"dtype", safetensors_dtype_name(tensor.dtype())},
                    {"shape", tensor.shape()},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the buffer starts 8-byte aligned
  std::string out;
  out.reserve(8 + text.size() + offset);
  const uint64_t length = text.size();
  out.append(reinterpret_cast<const char*>(&length), 8);
  out += text;
  for (const Tensor& t : data) {
    if (t.numel() > 0)
      out.append(static_cast<const char*>(t.raw_data()), static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  }
  return out;
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, safetensors_bytes(tensors, metadata));
}

}  // namespace hetu::checkpoint
