// resume = "auto" over damaged checkpoints: the stores' load_latest() tries the checkpoints
// of a folder newest first (the one `latest` names, then the step folders by falling step)
// and resumes from the first that loads, verifies (checksums, expected tensors) and holds
// the Trainer's metadata; each one it skips gets a warning naming it and the problem. In a
// parallel job every rank must load the same step, so a checkpoint counts as intact only
// when it is intact on every rank (`everywhere`, collective). When checkpoints exist but
// none is intact the run stops (exit 2) instead of silently starting over.
//
//   std::optional<runtime::Snapshot> s = load_newest_intact(manager, [&](auto& p) { return load(p); },
//                                                           [](bool ok) { return ok; });
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "lib/checkpoint/checkpoint.h"
#include "lib/runtime/training_io.h"

namespace hetu::checkpoint {

std::optional<runtime::Snapshot> load_newest_intact(
    const checkpoint::CheckpointManager& manager, const std::function<runtime::Snapshot(const std::string&)>& load,
    const std::function<bool(bool)>& everywhere);

}  // namespace hetu::checkpoint
