// Fixture for the layering check: a core header.
#pragma once
