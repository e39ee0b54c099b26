// SPDX-License-Identifier: MIT
// <percpu/shared.h> as C++: the C test compiled by the C++ compiler.
#include "headers_shared.c"
