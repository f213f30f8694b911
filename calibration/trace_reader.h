// Reading profiler traces into the Trace model.
//
// Supported inputs (plain or gzipped JSON; the schema is detected from the
// event categories):
//   - PyTorch profiler / Kineto Chrome traces, current schema: categories
//     cpu_op, user_annotation, cuda_runtime, cuda_driver, kernel, gpu_memcpy,
//     gpu_memset, cuda_sync; args "External id", "correlation",
//     "Input Dims", "Input type", "device", "stream", "bytes"; top-level
//     deviceProperties and distributedInfo; record_param_comms ops and NCCL
//     kernels with "Collective name", "In msg nelems", "dtype", "Group size".
//   - The legacy Kineto schema: categories Operator, Runtime, Kernel, Memcpy,
//     Memset; arg "external id".
//   - TensorFlow timelines (tensorflow.python.client.timeline): cat "Op" with
//     args.name (node) and args.op (op type); processes named after devices
//     ("/device:GPU:0/stream:7 Compute", "... memcpy ...", CPU).
//
// GPU activities are joined to the op that launched them: activity
// correlation -> runtime call -> its External id -> the op, when that op
// encloses the call on the same thread; otherwise the innermost op enclosing
// the call on its thread. Profiler steps are the annotations whose name
// matches ReadOptions::step_pattern (innermost ones when they nest).
//
// Every problem is one TraceError naming the file and a byte offset (JSON
// syntax) or the event index and field, what is wrong and how to fix it. A
// missing file is an IoError.
#ifndef GOSIM_CALIBRATION_TRACE_READER_H_
#define GOSIM_CALIBRATION_TRACE_READER_H_

#include <string>
#include <string_view>

#include "calibration/trace.h"

namespace gosim::calibration {

struct ReadOptions {
  // ECMAScript regex searched in annotation names; the matches delimit the
  // profiler steps. A capture group of digits, when present, is the step
  // number, else the trailing digits of the name, else the ordinal.
  std::string step_pattern = "^ProfilerStep#(\\d+)$";
};

// Reads and parses `path` (gzip is detected from the content).
Trace ReadTrace(const std::string& path, const ReadOptions& options = {});
// Parses trace text; `source` names it in errors.
Trace ParseTrace(std::string_view text, const std::string& source, const ReadOptions& options = {});

}  // namespace gosim::calibration

#endif  // GOSIM_CALIBRATION_TRACE_READER_H_
