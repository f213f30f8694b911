// Small hand-written traces shared by the calibration tests.
#ifndef GOSIM_TESTS_CALIBRATION_TRACE_TEST_DATA_H_
#define GOSIM_TESTS_CALIBRATION_TRACE_TEST_DATA_H_

#include <string>

namespace gosim::calibration::testing {

// clang-format off

// Current Kineto schema. Times in microseconds from 1000 (the origin):
//   ProfilerStep#7 [0, 100) and ProfilerStep#8 [100, 150) on thread 10;
//   aten::linear [5, 35) > aten::addmm [10, 30) launches gemm [20, 30) on
//   stream 7 (runtime External id 3 = addmm);
//   aten::relu_ [40, 50) launches relu [46, 48) through a runtime call whose
//   External id (101) names no op: joined by enclosure;
//   aten::to [55, 75) launches a pageable DtoH memcpy [60, 68) of 1024 B;
//   record_param_comms on thread 11 launches an NCCL all-reduce [75, 95) on
//   stream 20 of 1000 floats;
//   a memset of 64 B [110, 111) inside aten::zero_ [105, 115) in step 8.
inline const std::string kKinetoTrace = R"json({
 "schemaVersion": 1,
 "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42297524224,
                       "computeMajor": 8, "computeMinor": 0, "numSms": 108}],
 "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 10, "tid": 10, "ts": 1000, "dur": 100, "args": {"External id": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 10, "tid": 10, "ts": 1005, "dur": 30,
   "args": {"External id": 2, "Input Dims": [[8, 16], [32, 16], [32]], "Input type": ["float", "float", "float"], "Sequence number": 3}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 10, "tid": 10, "ts": 1010, "dur": 20,
   "args": {"External id": 3, "Input Dims": [[32], [8, 16], [16, 32], [], []], "Input type": ["float", "float", "float", "Scalar", "Scalar"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1015, "dur": 5, "args": {"External id": 3, "correlation": 100, "cbid": 211}},
  {"ph": "f", "id": 100, "pid": 0, "tid": 7, "ts": 1020, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 1020, "dur": 10,
   "args": {"External id": 3, "device": 0, "stream": 7, "correlation": 100, "grid": [4, 1, 1]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu_", "pid": 10, "tid": 10, "ts": 1040, "dur": 10,
   "args": {"External id": 4, "Input Dims": [[8, 32]], "Input type": ["float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1042, "dur": 4, "args": {"External id": 101, "correlation": 101}},
  {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 1046, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 101}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::to", "pid": 10, "tid": 10, "ts": 1055, "dur": 20,
   "args": {"External id": 5, "Input Dims": [[8, 32], [], []], "Input type": ["float", "", ""]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 10, "tid": 10, "ts": 1056, "dur": 15, "args": {"External id": 5, "correlation": 102}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0, "tid": 7, "ts": 1060, "dur": 8,
   "args": {"device": 0, "stream": 7, "correlation": 102, "bytes": 1024, "memory bandwidth (GB/s)": 0.128}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 10, "tid": 11, "ts": 1070, "dur": 10,
   "args": {"External id": 6, "Collective name": "allreduce", "In msg nelems": 1000, "Out msg nelems": 1000, "dtype": "Float", "Group size": 2}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 1072, "dur": 3, "args": {"External id": 6, "correlation": 103}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 20, "ts": 1075, "dur": 20,
   "args": {"External id": 6, "device": 0, "stream": 20, "correlation": 103}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "pid": 10, "tid": 10, "ts": 1100, "dur": 50, "args": {"External id": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::zero_", "pid": 10, "tid": 10, "ts": 1105, "dur": 10,
   "args": {"External id": 8, "Input Dims": [[16]], "Input type": ["float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 10, "tid": 10, "ts": 1106, "dur": 3, "args": {"External id": 8, "correlation": 104}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 1110, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 104, "bytes": 64}},
  {"name": "thread_name", "ph": "M", "ts": 1000, "pid": 10, "tid": 11, "args": {"name": "backward"}},
  {"ph": "i", "s": "t", "name": "[memory]", "pid": 10, "tid": 10, "ts": 1001, "args": {"Bytes": 4}}
 ]
})json";

// Legacy Kineto schema (PyTorch 1.8): Operator / Runtime / Kernel, "external
// id", string tids, the step as an Operator.
inline const std::string kLegacyTrace = R"json({
 "schemaVersion": 1,
 "deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-16GB", "totalGlobalMem": 16945512448, "computeMajor": 7, "computeMinor": 0, "numSms": 80}],
 "traceEvents": [
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#3", "pid": 5, "tid": "5", "ts": 200, "dur": 40, "args": {"Device": 5, "External id": 1}},
  {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 5, "tid": "5", "ts": 205, "dur": 20,
   "args": {"Device": 5, "External id": 2, "Input Dims": [[4, 8], [8, 2]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": "5", "ts": 210, "dur": 4,
   "args": {"cbid": 211, "correlation": 9, "external id": 2, "external ts": 205}},
  {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_32x32", "pid": 0, "tid": "stream 7", "ts": 215, "dur": 6,
   "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 9, "external id": 2}},
  {"ph": "s", "id": 9, "pid": 5, "tid": 5, "ts": 210, "cat": "async", "name": "launch"}
 ]
})json";

// clang-format on

}  // namespace gosim::calibration::testing

#endif  // GOSIM_TESTS_CALIBRATION_TRACE_TEST_DATA_H_
