// A file the layering check must refuse (tests/CMakeLists.txt runs it here
// expecting failure, so that the check is seen to fail).
#pragma once
#include "iov/internal/walk.hpp"
