// Fixture for the layering check: a folder the layer order does not name.
#pragma once
