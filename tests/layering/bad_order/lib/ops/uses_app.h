// Fixture for the layering check: a lib/ header that includes the command line, which the
// check must reject (tests/CMakeLists.txt, layering_check_catches_lib_includes_app).
#pragma once
#include "app/commands.h"
