// Fixture for the layering check: a core header that includes a runtime header, which the
// check must reject (see tests/CMakeLists.txt, layering_check_catches_violation).
#pragma once
#include "lib/runtime/trainer.h"
