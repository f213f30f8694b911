// Precompiled header of the LibTorch targets (cmake/GosimTargets.cmake,
// gosim_torch_module). Only LibTorch and the standard library belong here.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>
