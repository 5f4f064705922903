// The CUDA runtime API for the codec kernels: the real one, or its CPU emulation (emulation.hpp) when
// TERN_CUDA_EMULATION is defined.
#pragma once

#if defined(TERN_CUDA_EMULATION)
#include "compress/cuda/emulation.hpp"
#else
#include <cuda_runtime.h>
#endif
