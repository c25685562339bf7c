// Fixture for the layering check: an ops header that may include core.
#pragma once
#include "lib/core/a.h"
