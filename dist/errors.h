// The error of the distributed layer: a collective that timed out, a rank that stopped
// answering, a rendezvous that failed, a launch that is not distributed. Its message names the
// ranks involved and what to do.
#pragma once

#include "runtime/error.h"

namespace ember {

// In namespace ember (not ember::dist) so that EMBER_THROW(DistError, ...) works as for every
// other error type. Python sees ember.distributed.DistError, a RuntimeError.
class DistError : public Error {
  using Error::Error;
};

}  // namespace ember
