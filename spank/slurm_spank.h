// slurm/spank.h has no C++ guards: include it with C linkage, once, here.
#pragma once

extern "C" {
#include <slurm/spank.h>
}
