// Internal steps of load_job_config(), one file each: read the tables (config_parse.cpp),
// expand the dp/tp/pp shorthand (parallel_expand.cpp), check cross-field rules
// (config_validate.cpp). Not for use outside lib/config.
#pragma once

#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/config/toml_reader.h"

namespace hetu::config {

// Reads every table of the root into `out` (flavor expanded, defaults filled, shorthand
// expanded). Type errors, unknown keys and missing keys throw here.
void read_job_config(TableReader& root, JobConfig& out, DeviceCatalog& catalog);

// Builds the replica groups for dp x pp x tp over the cluster's devices in node order;
// errors name the keys under `table` ("parallel", "parallel.strategy[1]").
std::vector<ReplicaSection> expand_shorthand(const ParallelShorthand& shorthand, const JobConfig& config,
                                             const SourceMap& sources, const std::string& table);

// Cross-field rules; throws on the first violation, returns warnings.
std::vector<std::string> validate_job_config(const JobConfig& config, const DeviceCatalog& catalog,
                                             const SourceMap& sources);

// Reads a device catalogue file ([[device]] tables) into `catalog`; the same from text, `where`
// naming it in errors (the builtin table: builtin_devices_toml()).
void read_device_catalog_file(const std::string& path, DeviceCatalog& catalog);
void read_device_catalog_text(std::string_view text, const std::string& where, DeviceCatalog& catalog);
// lib/config/builtin_devices.toml's text (generated from builtin_devices.cpp.in).
std::string_view builtin_devices_toml();

// Parses TOML text; syntax errors become UsageError "<source>:<line>:<col>: TOML syntax error: ...".
toml::table parse_toml_text(std::string_view text, const std::string& source_name);

}  // namespace hetu::config
