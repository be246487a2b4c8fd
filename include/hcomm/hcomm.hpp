// hcomm — a communication runtime for distributed training and inference.
// The one header a C++ application includes (C: hcomm/hcomm.h).
#pragma once

#include "hcomm/communicator.hpp"
#include "hcomm/config.hpp"
#include "hcomm/memory.hpp"
#include "hcomm/protocol.hpp"
#include "hcomm/qos.hpp"
#include "hcomm/shared_memory_channel.hpp"
#include "hcomm/status.hpp"
#include "hcomm/types.hpp"
#include "hcomm/version.h"
#include "hcomm/work.hpp"
