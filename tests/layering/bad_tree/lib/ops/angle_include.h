// Fixture for the layering check: an ops header that includes a runtime header in angle
// brackets, which the check must reject as it rejects a quoted include
// (tests/CMakeLists.txt, layering_check_catches_angle_include).
#pragma once
#include <lib/runtime/trainer.h>
