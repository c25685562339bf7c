// checkpoint.h5 itself, below the folder protocol: creating the file (root attributes,
// /tensors, /metadata), writing whole tensors or boxes of them (HDF5 hyperslabs), and reading
// the catalogue, whole tensors and stored boxes. Layout: Note [Checkpoint layout]
// (checkpoint.h) and Note [Sharded checkpoint file] (sharded_checkpoint.h). Every reading
// problem is a hetu::UsageError naming the file. Internal to lib/checkpoint: CheckpointManager,
// save_sharded, read_boxes and read_info are the public entry points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/hspmd/geometry.h"

namespace hetu::checkpoint {

inline constexpr const char* kCheckpointFileName = "checkpoint.h5";
inline constexpr int64_t kWholeFormatVersion = 1;    // every tensor written whole by one process
inline constexpr int64_t kShardedFormatVersion = 2;  // written by save_sharded
// One rank's state snapshot (lib/checkpoint/state_snapshot.h): the boxes that rank holds, which
// need not tile their tensors; read only box by box (snapshot_exchange.h), never whole.
inline constexpr int64_t kPartialFormatVersion = 3;

// See Note [Checkpoint layout]: %XX for every byte outside [A-Za-z0-9_.-] and a leading '.'.
std::string escape_name(const std::string& name);
// The inverse; nullopt for a string escape_name cannot produce.
std::optional<std::string> unescape_name(const std::string& stored);
// A step folder's checkpoint.h5, or the argument itself when it is not a folder.
std::filesystem::path checkpoint_file(const std::string& step_folder_or_file);

// Copies the elements of `region` from `src` (the row-major contents of src_box) into `dst`
// (the row-major contents of dst_box); region lies inside both boxes.
void copy_region(const void* src, const Box& src_box, void* dst, const Box& dst_box, const Box& region,
                 size_t element_size);

// Problem lines as one message: the first 20, then "... and N more".
std::string join_problems(std::vector<std::string> problems);

// One box of a dataset written in boxes, and the CRC-32C of its row-major bytes.
struct StoredBox {
  Box box;
  uint32_t crc32c = 0;
};

struct StoredTensor {
  std::string name;  // original, unescaped
  std::string link;  // the escaped dataset name under /tensors
  DType dtype = DType::f32;
  Shape shape;
  // Written whole: the checksum of all of it. Written in boxes: the boxes (which tile the
  // shape, checked when the catalogue is read, except in a partial file) and no whole checksum.
  std::optional<uint32_t> crc32c;
  std::vector<StoredBox> boxes;
};

class CheckpointFileWriter {
 public:
  // Creates `path` (which must not exist) with the root attributes, /tensors and /metadata.
  static CheckpointFileWriter create(const std::string& path, int64_t format_version, int64_t step,
                                     const std::map<std::string, std::string>& metadata);
  // Opens a file made by create() to add tensors or boxes.
  static CheckpointFileWriter open(const std::string& path);
  CheckpointFileWriter(CheckpointFileWriter&&) noexcept;
  CheckpointFileWriter& operator=(CheckpointFileWriter&&) noexcept;
  ~CheckpointFileWriter();

  // A whole CPU tensor (any layout; its logical row-major contents) and its crc32c.
  void write_tensor(const std::string& name, const Tensor& tensor);
  // One box of the tensor `name` of `shape` and `dtype`; `values` holds box.size elements.
  // Creates the dataset when missing. The full box is recorded as a whole write (crc32c),
  // any other non-empty box is appended to the box attributes; an empty box writes nothing.
  void write_box(const std::string& name, const Shape& shape, DType dtype, const Box& box, const Tensor& values);
  // Flushes and closes; errors name the file.
  void close();

 private:
  struct Impl;
  explicit CheckpointFileWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class CheckpointFileReader {
 public:
  // UsageError when missing, not HDF5, not a hetu checkpoint or of an unknown format_version.
  explicit CheckpointFileReader(const std::string& path);
  ~CheckpointFileReader();
  CheckpointFileReader(const CheckpointFileReader&) = delete;
  CheckpointFileReader& operator=(const CheckpointFileReader&) = delete;

  const std::string& path() const;
  int64_t format_version() const;
  int64_t step() const;
  // Tensor names (original strings) in dataset order, without describing them.
  std::vector<std::string> tensor_names() const;
  // Every tensor's catalogue entry (dtype, shape, checksums), in dataset order; no data read.
  std::vector<StoredTensor> tensors() const;
  // Every metadata value, each checksum verified.
  std::map<std::string, std::string> metadata() const;
  // All of a tensor, every checksum (whole or per box) verified.
  Tensor read_tensor(const StoredTensor& tensor) const;
  // The stored elements of `box` (contiguous, box.size), not verified: read whole stored
  // pieces with it and check them against their checksum.
  Tensor read_region(const StoredTensor& tensor, const Box& box) const;
  // read_region of a stored piece (box), checked against `crc`.
  Tensor read_verified(const StoredTensor& tensor, const Box& box, uint32_t crc) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hetu::checkpoint
