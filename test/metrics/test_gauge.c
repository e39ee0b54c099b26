/* SPDX-License-Identifier: MIT */
#include "pcpu_test.h"
Test(gauge, placeholder) {}
