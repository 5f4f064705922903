// The stream-ordered calls of tern_cuda.h for tests (the header needs no CUDA headers).
#pragma once

#include "tern/tern_cuda.h"
