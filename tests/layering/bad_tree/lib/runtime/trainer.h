// Fixture for the layering check: a higher-layer header (runtime) that may include core.
#pragma once
#include "lib/core/uses_runtime.h"
