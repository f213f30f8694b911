"""Cost rules and file helpers of gosim.torch's exporter (standard library only).

FLOPs and bytes of aten ops, the native-JSON graph layout (docs/FORMATS.md,
"Graph: native JSON"), writing, reading, checking and summarizing graph
files. Imported by gosim.torch and by its command line's --check
(python -m gosim.torch --check), which must run without PyTorch.
"""

import collections
import gzip
import json
import math
import os

FORMAT = "gosim.graph"
VERSION = 1
DTYPE_NAMES = {  # torch dtype name -> gosim DTypeName (graphs/graph.h)
    "float32": "float32", "float16": "float16", "bfloat16": "bfloat16",
    "float64": "float64", "int64": "int64", "int32": "int32", "int16": "int16",
    "int8": "int8", "uint8": "uint8", "bool": "bool"}
# gosim's dtype names (graphs/graph.h) with their sizes. "tfloat32" is a
# float32 tensor computed on TF32 tensor cores (gosim.torch.export(...,
# tf32=True)): stored as float32, priced at the device's TF32 peak.
DTYPE_SIZES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "int16": 2,
               "int8": 1, "uint8": 1, "bool": 1, "tfloat32": 4}
PHASES = ("forward", "backward", "update")

# ---------------------------------------------------------------------------
# Cost rules. FLOPs count a multiply-add as 2. Ops not listed anywhere below
# get 0 FLOPs and are listed in metadata.ops_without_flop_rule.

# Ops that only create a new view of their input: no kernel runs, so no FLOPs
# and no bytes read or written (the output still reports the logical size).
VIEW_OPS = {
    "view", "_reshape_alias", "_unsafe_view", "t", "transpose", "permute",
    "expand", "unsqueeze", "squeeze", "slice", "select", "as_strided", "alias",
    "split", "split_with_sizes", "unbind", "chunk", "unflatten", "narrow",
    "diagonal", "view_as_real", "conj", "_conj", "lift_fresh", "unsafe_split",
    "unsafe_split_with_sizes", "unsafe_chunk"}


def is_alias_op(op):
    """Whether the aten op's results are views of its input's memory: a view
    op, or an in-place op (`add_`, `copy_`: the result is `self`). Their
    outputs are written with "alias": true (docs/FORMATS.md): the simulator
    charges them no memory and keeps the input allocated while they live."""
    return op in VIEW_OPS or (op.endswith("_") and not op.startswith("__"))


# Ops that move or create data without arithmetic: 0 FLOPs.
DATA_OPS = {
    "clone", "copy_", "copy", "_to_copy", "cat", "stack", "zeros", "zeros_like",
    "ones", "ones_like", "empty", "empty_like", "new_zeros", "new_ones",
    "new_empty", "new_empty_strided", "empty_strided", "full", "full_like",
    "fill", "fill_", "zero_", "scalar_tensor", "index_select", "gather",
    "embedding", "lift_fresh_copy", "constant_pad_nd", "_unsafe_index",
    "masked_fill", "masked_fill_", "arange", "detach", "triu", "tril", "triu_", "tril_"}
# Element-wise ops: FLOPs per output element.
ELEMENTWISE = dict.fromkeys([
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "neg", "neg_",
    "relu", "relu_", "threshold_backward", "sqrt", "sqrt_", "rsqrt", "exp",
    "exp_", "log", "tanh", "tanh_backward", "sigmoid", "sigmoid_backward",
    "gelu", "gelu_backward", "pow", "pow_", "maximum", "minimum", "where",
    "clamp", "clamp_", "hardtanh", "hardtanh_", "hardtanh_backward", "eq",
    "ne", "lt", "gt", "le", "ge", "reciprocal", "abs", "sign", "silu",
    "silu_backward", "rsub", "bernoulli", "bernoulli_", "uniform_", "sigmoid_", "tanh_",
    "leaky_relu", "leaky_relu_", "leaky_relu_backward"], 1)
ELEMENTWISE.update(dict.fromkeys(["addcmul", "addcmul_", "addcdiv", "addcdiv_",
                                  "lerp", "lerp_"], 2))
# x * relu6(x + 3) / 6 and relu6(x + 3) / 6 (add, two compares, multiply / divide);
# their backward passes a compare-selected multiply-add.
ELEMENTWISE.update(dict.fromkeys(["hardswish", "hardswish_"], 4))
ELEMENTWISE.update(dict.fromkeys(["hardsigmoid", "hardsigmoid_"], 3))
ELEMENTWISE.update(dict.fromkeys(["hardswish_backward", "hardsigmoid_backward"], 2))
# Per input element.
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "var", "std",
              "_adaptive_avg_pool2d", "norm", "linalg_vector_norm"}
NORM_FORWARD = 5    # statistics 3 (sum; sum of squares, a multiply-add) + normalize 2
NORM_BACKWARD = 8   # reductions of dy and dy*xhat 4 + grad input 4
NORM_INFERENCE = 2  # one multiply-add with per-channel scale and shift
SOFTMAX_FORWARD = 5  # max, subtract, exp, sum, divide (or log)
SOFTMAX_BACKWARD = 4


# Batch norms by their names in PyTorch 1.13 and 2.x (CPU and cuDNN; 2.3+
# traces torch.batch_norm as _batch_norm_with_update / _batch_norm_no_update).
BATCH_NORMS = {"native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
               "_native_batch_norm_legit_functional", "cudnn_batch_norm", "_batch_norm_with_update",
               "_batch_norm_with_update_functional", "_batch_norm_no_update"}
INFERENCE_BATCH_NORMS = {"_native_batch_norm_legit_no_training", "_batch_norm_no_update"}
# Fused attention kernels (PyTorch 2.x scaled_dot_product_attention).
ATTENTION = {"_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
             "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu"}
ATTENTION_BACKWARD = {f"{a}_backward" for a in ATTENTION}


def numel(shape):
    return math.prod(shape) if shape is not None else 0


def op_flops(op, args, ins, outs):
    """FLOPs of one aten op, or None when no rule covers it.

    `args` maps schema argument names to values (tensor values are replaced
    by their (shape, bytes) tuples); `ins`/`outs` are lists of shapes.
    """
    shape = lambda name: args[name][0] if args.get(name) is not None else None  # noqa: E731
    out0 = numel(outs[0]) if outs and outs[0] is not None else 0
    if op in VIEW_OPS or op in DATA_OPS:
        return 0.0
    if op == "convolution":
        w = shape("weight")
        if args["transposed"]:
            macs = numel(shape("input")) * numel(w[1:])
        else:
            macs = out0 * numel(w[1:])
        return 2.0 * macs + (out0 if args.get("bias") is not None else 0)
    if op == "convolution_backward":
        w, go = shape("weight"), shape("grad_output")
        macs = (numel(shape("input")) if args["transposed"] else numel(go)) * numel(w[1:])
        mask = args["output_mask"]
        return 2.0 * macs * (int(mask[0]) + int(mask[1])) + (numel(go) if mask[2] else 0)
    if op in ("mm", "addmm"):
        a, b = (shape("self"), shape("mat2")) if op == "mm" else (shape("mat1"), shape("mat2"))
        m, k, n = a[0], a[1], b[1]
        return 2.0 * m * k * n + (m * n if op == "addmm" else 0)
    if op in ("bmm", "baddbmm"):
        a, b = (shape("self"), shape("mat2")) if op == "bmm" else (shape("batch1"), shape("batch2"))
        return 2.0 * a[0] * a[1] * a[2] * b[2] + (a[0] * a[1] * b[2] if op == "baddbmm" else 0)
    if op in BATCH_NORMS:
        training = args.get("training", op not in INFERENCE_BATCH_NORMS)
        return float((NORM_FORWARD if training else NORM_INFERENCE) * numel(shape("input")))
    if op == "native_layer_norm":
        return float(NORM_FORWARD * numel(shape("input")))
    if op in ("native_batch_norm_backward", "native_layer_norm_backward", "batch_norm_backward"):
        n = numel(shape("input"))
        return float(n * (NORM_BACKWARD if args["output_mask"][0] else NORM_BACKWARD - 4))
    if op == "cudnn_batch_norm_backward":
        return float(NORM_BACKWARD * numel(shape("input")))
    if op in ATTENTION or op in ATTENTION_BACKWARD:
        q, k, v = shape("query"), shape("key"), shape("value")
        # Q K^T and P V: 2 * L * S * (E + Ev) per batch and head; the backward
        # recomputes Q K^T and forms dV, dP, dQ and dK (2.5x the forward).
        batch = numel(q[:-2])
        forward = 2.0 * batch * q[-2] * k[-2] * (q[-1] + v[-1])
        causal = 0.5 if args.get("is_causal") else 1.0  # the kernel skips the masked half
        return forward * causal * (2.5 if op in ATTENTION_BACKWARD else 1.0)
    if op in ("_cudnn_rnn", "_cudnn_rnn_backward"):
        # The gate products of every step and layer (weight matrices of
        # 4H rows), 2 FLOPs per multiply-add, plus ~10 element-wise FLOPs
        # per gate element; the backward twice the products (input and
        # weight gradients).
        steps_batch = numel(shape("input")[:-1])
        products = sum(2.0 * steps_batch * numel(w[0]) for w in args["weight"] if w and len(w[0]) == 2)
        pointwise = 10.0 * steps_batch * 4 * args["hidden_size"] * args["num_layers"]
        return (products + pointwise) * (2.0 if op.endswith("_backward") else 1.0)
    if op in ("_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward"):
        return 40.0 * numel(shape("cx"))  # ~10 element-wise FLOPs per element of the 4 gates
    if op in ("_softmax", "_log_softmax"):
        return float(SOFTMAX_FORWARD * out0)
    if op in ("_softmax_backward_data", "_log_softmax_backward_data"):
        return float(SOFTMAX_BACKWARD * out0)
    if op in ("nll_loss_forward", "nll_loss_backward"):
        return float(numel(shape("target")))
    if op in ("native_dropout", "native_dropout_backward"):
        return 2.0 * numel(ins[0])  # draw/compare and scale; mask times scale
    if op in ("add", "add_", "sub", "sub_") and args.get("alpha", 1) != 1:
        return 2.0 * out0  # a multiply-add
    if op in ELEMENTWISE:
        return float(ELEMENTWISE[op] * out0)
    if op in REDUCTIONS:
        return float(numel(ins[0]))
    if op in ("max_pool2d_with_indices", "avg_pool2d"):
        return float(out0 * numel(args["kernel_size"]))
    if op == "max_pool2d_with_indices_backward":
        return float(numel(shape("grad_output")))
    if op == "avg_pool2d_backward":
        return float(numel(shape("grad_output")) * numel(args["kernel_size"]))
    if op in ("_adaptive_avg_pool2d_backward", "embedding_dense_backward"):
        return float(numel(shape("grad_output")))
    return None




def compact(node):
    """The node as written: default-valued fields left out."""
    out = {"name": node["name"], "op": node["op"]}
    for key in ("flops", "bytes_read", "bytes_written", "outputs", "persistent_bytes",
                "colocation", "scope", "phase", "inputs"):
        v = node.get(key)
        if v in (None, 0, 0.0, "", [], "forward"):
            continue
        if key == "outputs":
            v = [output_json(t, node.get("alias", False)) for t in v]
        out[key] = v
    return out


def output_json(info, alias=False):
    if info is None:  # an op result that is not a tensor (e.g. an undefined gradient)
        return {"bytes": 0}
    result = {"bytes": info[0], "shape": info[1]}
    if info[2]:
        result["dtype"] = info[2]
    if alias and info[0] > 0:
        result["alias"] = True
    return result


# ---------------------------------------------------------------------------
# Writing, summarizing and checking files.

def write_graph(graph, path):
    lines = [json.dumps(n, separators=(",", ":")) for n in graph["nodes"]]
    head = {k: v for k, v in graph.items() if k != "nodes"}
    text = json.dumps(head, separators=(",", ":"))[:-1] + ',"nodes":[\n' + ",\n".join(lines) + "\n]}\n"
    data = text.encode()
    tmp = path + ".tmp"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if path.endswith(".gz"):
        with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                    compresslevel=9, mtime=0) as f:
            f.write(data)
    else:
        with open(tmp, "wb") as f:
            f.write(data)
    os.replace(tmp, path)


def read_graph(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def summarize(graph):
    nodes = graph["nodes"]
    by_phase = collections.Counter(n.get("phase", "forward") for n in nodes)
    flops = collections.defaultdict(float)
    matmul = 0.0
    for n in nodes:
        flops[n.get("phase", "forward")] += n.get("flops", 0.0)
        if n.get("phase", "forward") == "forward" and n["op"] in (
                "aten::convolution", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"):
            matmul += n.get("flops", 0.0)
    param_bytes = sum(n.get("persistent_bytes", 0) for n in nodes if n["op"] == "Parameter")
    return {"nodes": len(nodes), "edges": sum(len(n.get("inputs", [])) for n in nodes),
            "nodes_by_phase": dict(by_phase), "flops_by_phase": dict(flops),
            "forward_conv_matmul_flops": matmul, "parameter_bytes": param_bytes,
            "parameters": param_bytes // 4,
            "persistent_bytes": sum(n.get("persistent_bytes", 0) for n in nodes),
            "op_types": len({n["op"] for n in nodes})}


NODE_KEYS = {"name": str, "op": str, "flops": (int, float), "bytes_read": int,
             "bytes_written": int, "outputs": list, "persistent_bytes": int,
             "colocation": str, "scope": str, "phase": str, "measured": dict, "inputs": list}


def check_graph(graph):
    """Problems with a native-JSON graph per docs/FORMATS.md; [] when valid."""
    errors = []
    if not isinstance(graph, dict):
        return ["top level is not an object"]
    for key in ("format", "version", "name", "nodes"):
        if key not in graph:
            errors.append(f"missing required key '{key}'")
    extra = set(graph) - {"format", "version", "name", "metadata", "nodes"}
    if extra:
        errors.append(f"unknown top-level keys {sorted(extra)}")
    if graph.get("format") != FORMAT or graph.get("version") != VERSION:
        errors.append(f"format/version must be {FORMAT!r}/{VERSION}")
    nodes = graph.get("nodes", [])
    index, n_outputs = {}, {}
    for i, n in enumerate(nodes):
        where = f"nodes[{i}]"
        if not isinstance(n, dict) or not isinstance(n.get("name"), str) or not isinstance(n.get("op"), str):
            errors.append(f"{where}: needs string 'name' and 'op'")
            continue
        where = f"nodes[{i}] '{n['name']}'"
        for key, value in n.items():
            if key not in NODE_KEYS:
                errors.append(f"{where}: unknown key '{key}'")
            elif not isinstance(value, NODE_KEYS[key]) or isinstance(value, bool):
                errors.append(f"{where}: '{key}' has the wrong type")
        for key in ("flops", "bytes_read", "bytes_written", "persistent_bytes"):
            v = n.get(key, 0)
            if isinstance(v, (int, float)) and not (v >= 0 and math.isfinite(v)):
                errors.append(f"{where}: '{key}' must be finite and >= 0")
        if n.get("phase", "forward") not in PHASES:
            errors.append(f"{where}: phase must be one of {PHASES}")
        for k, out in enumerate(n.get("outputs", [])):
            if not isinstance(out, dict) or set(out) - {"bytes", "shape", "dtype", "alias"}:
                errors.append(f"{where}: outputs[{k}] must have only bytes/shape/dtype/alias")
            elif not isinstance(out.get("alias", False), bool):
                errors.append(f"{where}: outputs[{k}].alias must be true or false")
            elif not isinstance(out.get("bytes", 0), int) or out.get("bytes", 0) < 0:
                errors.append(f"{where}: outputs[{k}].bytes must be an integer >= 0")
            elif out.get("dtype", "float32") not in DTYPE_SIZES:
                errors.append(f"{where}: outputs[{k}].dtype unknown")
            elif "shape" in out and out.get("dtype") and out["bytes"] != numel(out["shape"]) * dtype_size(out["dtype"]):
                errors.append(f"{where}: outputs[{k}].bytes disagrees with shape and dtype")
        if n["name"] in index:
            errors.append(f"{where}: duplicate name (also nodes[{index[n['name']]}])")
        index[n["name"]] = i
        n_outputs[n["name"]] = len(n.get("outputs", []))
    order = {}
    edges = collections.defaultdict(list)
    for i, n in enumerate(nodes):
        if not isinstance(n, dict) or "name" not in n:
            continue
        for ref in n.get("inputs", []):
            control = isinstance(ref, str) and ref.startswith("^")
            name, _, idx = (ref[1:] if control else ref).partition(":") if isinstance(ref, str) else ("", "", "")
            if name not in index:
                errors.append(f"nodes[{i}] '{n['name']}': input '{ref}' names no node")
                continue
            if not control and (not (idx or "0").isdigit() or int(idx or "0") >= n_outputs[name]):
                errors.append(f"nodes[{i}] '{n['name']}': input '{ref}' names no output of '{name}'")
            edges[name].append(n["name"])
    # Acyclic: Kahn's algorithm over the name graph.
    indeg = collections.Counter(d for dsts in edges.values() for d in dsts)
    ready = [name for name in index if indeg[name] == 0]
    seen = 0
    while ready:
        name = ready.pop()
        seen += 1
        for d in edges.get(name, []):
            indeg[d] -= 1
            if indeg[d] == 0:
                ready.append(d)
        order[name] = seen
    if seen != len(index):
        stuck = next(name for name in index if name not in order)
        errors.append(f"graph has a cycle through '{stuck}'")
    return errors


def dtype_size(name):
    return DTYPE_SIZES[name]

