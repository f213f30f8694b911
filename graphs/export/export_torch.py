#!/usr/bin/env python3
"""Exports one PyTorch training step as a gosim native-JSON graph.

A training step (forward, loss, backward with torch.autograd.grad, optimizer
update) is traced with functorch's make_fx in real mode, which records every
aten op that runs; torch.fx's ShapeProp then gives each output's shape and
dtype. Each recorded aten op becomes one node (see docs/FORMATS.md, "Graph:
native JSON"); parameters, buffers, optimizer state and the input batch become
source nodes. Module forward hooks and autograd-node hooks attribute every op
to the module it belongs to (its scope) and to forward, backward or update.

  python3 graphs/export/export_torch.py --model resnet50 --batch 32 \
      --out graphs/data/resnet50_train_b32.json.gz
  python3 graphs/export/export_torch.py --check graphs/data/resnet50_train_b32.json.gz

Needs Debian's python3-torch (1.13) and python3-torchvision for export; --check
needs only the standard library. See graphs/export/README.md.
"""

import argparse
import collections
import gzip
import json
import math
import os
import sys
import time

FORMAT = "gosim.graph"
VERSION = 1
DTYPE_NAMES = {  # torch dtype name -> gosim DTypeName (graphs/graph.h)
    "float32": "float32", "float16": "float16", "bfloat16": "bfloat16",
    "float64": "float64", "int64": "int64", "int32": "int32", "int16": "int16",
    "int8": "int8", "uint8": "uint8", "bool": "bool"}
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
    "diagonal", "view_as_real", "conj", "_conj", "lift_fresh"}
# Ops that move or create data without arithmetic: 0 FLOPs.
DATA_OPS = {
    "clone", "copy_", "copy", "_to_copy", "cat", "stack", "zeros", "zeros_like",
    "ones", "ones_like", "empty", "empty_like", "new_zeros", "new_ones",
    "new_empty", "new_empty_strided", "empty_strided", "full", "full_like",
    "fill", "fill_", "zero_", "scalar_tensor", "index_select", "gather",
    "embedding", "lift_fresh_copy", "constant_pad_nd", "_unsafe_index",
    "masked_fill", "masked_fill_", "arange", "detach"}
# Element-wise ops: FLOPs per output element.
ELEMENTWISE = dict.fromkeys([
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "neg", "neg_",
    "relu", "relu_", "threshold_backward", "sqrt", "sqrt_", "rsqrt", "exp",
    "exp_", "log", "tanh", "tanh_backward", "sigmoid", "sigmoid_backward",
    "gelu", "gelu_backward", "pow", "pow_", "maximum", "minimum", "where",
    "clamp", "clamp_", "hardtanh", "hardtanh_", "hardtanh_backward", "eq",
    "ne", "lt", "gt", "le", "ge", "reciprocal", "abs", "sign", "silu",
    "silu_backward", "rsub", "bernoulli", "bernoulli_", "uniform_"], 1)
ELEMENTWISE.update(dict.fromkeys(["addcmul", "addcmul_", "addcdiv", "addcdiv_",
                                  "lerp", "lerp_"], 2))
# Per input element.
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "var", "std",
              "_adaptive_avg_pool2d", "norm", "linalg_vector_norm"}
NORM_FORWARD = 5    # statistics 3 (sum; sum of squares, a multiply-add) + normalize 2
NORM_BACKWARD = 8   # reductions of dy and dy*xhat 4 + grad input 4
NORM_INFERENCE = 2  # one multiply-add with per-channel scale and shift
SOFTMAX_FORWARD = 5  # max, subtract, exp, sum, divide (or log)
SOFTMAX_BACKWARD = 4


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
    if op == "native_batch_norm":
        return float((NORM_FORWARD if args["training"] else NORM_INFERENCE) * numel(shape("input")))
    if op == "native_layer_norm":
        return float(NORM_FORWARD * numel(shape("input")))
    if op in ("native_batch_norm_backward", "native_layer_norm_backward"):
        n = numel(shape("input"))
        return float(n * (NORM_BACKWARD if args["output_mask"][0] else NORM_BACKWARD - 4))
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


# ---------------------------------------------------------------------------
# Models: (module, input batch, targets, loss function, metadata).

def build_model(opts, torch, torchvision):
    name, batch = opts.model, opts.batch
    if name in ("inception_v3", "resnet50", "vgg16", "mobilenet_v2"):
        kwargs = {"weights": None}
        if name == "inception_v3":
            kwargs.update(aux_logits=opts.aux_logits, init_weights=True)
        model = getattr(torchvision.models, name)(**kwargs)
        size = 299 if name == "inception_v3" else 224
        x = torch.randn(batch, 3, size, size)
        y = torch.randint(0, 1000, (batch,))

        def loss_fn(out, target):
            if isinstance(out, tuple):  # InceptionOutputs(logits, aux_logits)
                return (torch.nn.functional.cross_entropy(out[0], target)
                        + 0.4 * torch.nn.functional.cross_entropy(out[1], target))
            return torch.nn.functional.cross_entropy(out, target)
        desc = {"source": f"torchvision {name}", "input_shape": list(x.shape),
                "num_classes": 1000}
        if name == "inception_v3":
            desc["aux_logits"] = opts.aux_logits
        return model, x, y, loss_fn, desc
    if name == "transformer_encoder":
        model = transformer_lm(torch, opts)
        x = torch.randint(0, opts.vocab, (batch, opts.seq))
        y = torch.randint(0, opts.vocab, (batch, opts.seq))

        def loss_fn(out, target):
            return torch.nn.functional.cross_entropy(out.reshape(-1, opts.vocab), target.reshape(-1))
        desc = {"source": "torch.nn.TransformerEncoder with token and position embeddings "
                          "and a vocabulary projection (token-level cross entropy)",
                "layers": opts.layers, "d_model": opts.d_model, "heads": opts.heads,
                "ffn": 4 * opts.d_model, "seq": opts.seq, "vocab": opts.vocab,
                "dropout": 0.1, "input_shape": list(x.shape)}
        return model, x, y, loss_fn, desc
    raise SystemExit(f"unknown model '{name}'; choose one of {', '.join(MODELS)}")


MODELS = ("inception_v3", "resnet50", "transformer_encoder", "vgg16", "mobilenet_v2")


def transformer_lm(torch, opts):
    nn = torch.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(opts.vocab, opts.d_model)
            self.pos = nn.Embedding(opts.seq, opts.d_model)
            layer = nn.TransformerEncoderLayer(opts.d_model, opts.heads, 4 * opts.d_model,
                                               dropout=0.1, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, opts.layers, enable_nested_tensor=False)
            self.head = nn.Linear(opts.d_model, opts.vocab)

        def forward(self, tokens):
            positions = torch.arange(tokens.shape[1], device=tokens.device)
            return self.head(self.encoder(self.embed(tokens) + self.pos(positions)))

    return Model()


# ---------------------------------------------------------------------------
# Tracing.

class ScopeTracker:
    """Attributes each fx node to (phase, scope, colocation) as it is traced.

    Nodes are labelled in batches: whenever a module is entered or left, an
    autograd node finishes, or a phase or parameter update ends, every node
    traced since the last label gets the label that was current.
    """

    def __init__(self, torch):
        from torch.fx.experimental.proxy_tensor import ProxyTorchDispatchMode
        self.torch = torch
        self.mode_type = ProxyTorchDispatchMode
        self.graph = None
        self.cursor = None
        self.labels = {}      # fx node name -> (phase, scope, colocation)
        self.stack = [""]     # module scope stack
        self.phase = "forward"
        self.fn_scope = {}    # autograd node -> scope of the module that made it
        self.stops = []

    def attach(self):
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
        modes = [m for m in _get_current_dispatch_mode_stack() if isinstance(m, self.mode_type)]
        if not modes:
            raise RuntimeError("make_fx's proxy mode is not active; cannot label nodes")
        self.graph = modes[-1].tracer.graph
        self.cursor = self.graph._root

    def flush(self, scope, colocation=""):
        node = self.cursor.next
        while node is not self.graph._root:
            self.labels[node.name] = (self.phase, scope, colocation)
            self.cursor = node
            node = node.next

    def hook(self, model):
        torch = self.torch

        def grad_fns(tree):
            leaves, _ = torch.utils._pytree.tree_flatten(tree)
            return [t.grad_fn for t in leaves if isinstance(t, torch.Tensor) and t.grad_fn is not None]

        def pre(path):
            def fn(module, inputs):
                self.flush(self.stack[-1])
                self.stack.append(path)
                self.stops.append(set(grad_fns(inputs)))
            return fn

        def post(path):
            def fn(module, inputs, output):
                self.flush(path)
                self.stack.pop()
                self.claim(grad_fns(output), self.stops.pop(), path)
            return fn

        for name, module in model.named_modules():
            path = name.replace(".", "/")
            module.register_forward_pre_hook(pre(path))
            module.register_forward_hook(post(path))

    def claim(self, roots, stops, scope):
        """Gives unclaimed autograd nodes between `roots` and `stops` `scope`.

        Inner modules finish first, so they claim their own nodes; their
        backward ops are then labelled with their scope when they run.
        """
        todo, seen = list(roots), set()
        while todo:
            fn = todo.pop()
            if fn is None or fn in seen or fn in stops:
                continue
            seen.add(fn)
            if fn not in self.fn_scope:
                self.fn_scope[fn] = scope
                fn.register_hook(lambda grads_in, grads_out, s=scope: self.flush(s))
            todo.extend(next_fn for next_fn, _ in fn.next_functions)


def trace_training_step(opts):
    import torch
    import torchvision
    from functorch import make_fx
    from torch.fx.passes.shape_prop import ShapeProp
    from torch.nn.utils import stateless

    torch.manual_seed(opts.seed)
    torch.use_deterministic_algorithms(True)
    model, x, y, loss_fn, desc = build_model(opts, torch, torchvision)
    model.train()
    if opts.device != "cpu":
        model.to(opts.device)
        x, y = x.to(opts.device), y.to(opts.device)
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    state_names = (["momentum_buffer"] if opts.optimizer == "sgd"
                   else ["exp_avg", "exp_avg_sq", "step"])
    state = {f"{p}.{s}": torch.zeros(()) if s == "step" else torch.zeros_like(t)
             for p, t in params.items() for s in state_names}
    tracker = ScopeTracker(torch)
    tracker.hook(model)
    n_p, n_b = len(params), len(buffers)

    def step(*flat):
        tracker.attach()
        ps = flat[2:2 + n_p]
        bs = flat[2 + n_p:2 + n_p + n_b]
        st = dict(zip(state, flat[2 + n_p + n_b:]))
        out = stateless.functional_call(model, {**dict(zip(params, ps)), **dict(zip(buffers, bs))},
                                        (flat[0],))
        tracker.flush("")
        loss = loss_fn(out, flat[1])
        tracker.flush("loss")
        tracker.claim([loss.grad_fn], set(), "loss")
        tracker.phase = "backward"
        grads = torch.autograd.grad(loss, ps)
        tracker.flush("loss")
        tracker.phase = "update"
        with torch.no_grad():
            for name, p, g in zip(params, ps, grads):
                update_parameter(torch, opts, p, g, [st[f"{name}.{s}"] for s in state_names])
                tracker.flush(module_scope(name), name)
        return loss

    inputs = [x, y] + [p.detach().clone().requires_grad_() for p in params.values()] + \
        [b.clone() for b in buffers.values()] + [s.clone() for s in state.values()]
    t0 = time.time()
    gm = make_fx(step)(*inputs)
    t1 = time.time()
    torch.manual_seed(opts.seed)
    ShapeProp(gm).propagate(*([x, y] + [p.detach().clone() for p in params.values()] +
                              [b.clone() for b in buffers.values()] +
                              [s.clone() for s in state.values()]))
    t2 = time.time()
    log(f"traced {len(gm.graph.nodes)} fx nodes in {t1 - t0:.1f} s, shapes in {t2 - t1:.1f} s")
    sources = ([("input", "Input", ""), ("target", "Input", "")] +
               [(n, "Parameter", n) for n in params] + [(n, "Buffer", n) for n in buffers] +
               [(n, "OptimizerState", n.rsplit(".", 1)[0]) for n in state])
    desc.update(torch_version=torch.__version__, torchvision_version=torchvision.__version__)
    return gm, tracker.labels, sources, desc


def update_parameter(torch, opts, p, g, state):
    """One parameter's optimizer update, as torch.optim's single-tensor code."""
    if opts.optimizer == "sgd":
        torch.optim._functional.sgd([p], [g], state, weight_decay=opts.weight_decay,
                                    momentum=0.9, lr=opts.lr, dampening=0.0, nesterov=False,
                                    maximize=False, has_sparse_grad=False, foreach=False)
        return
    # torch.optim.Adam (_single_tensor_adam, capturable=False) reads the step
    # count with .item(), which make_fx cannot trace; the first step's bias
    # correction is used as a constant instead. Same ops otherwise.
    exp_avg, exp_avg_sq, step_t = state
    beta1, beta2, eps, step = 0.9, 0.999, 1e-8, 1
    step_t += 1
    if opts.weight_decay != 0:
        g = g.add(p, alpha=opts.weight_decay)
    exp_avg.mul_(beta1).add_(g, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    step_size = opts.lr / (1 - beta1 ** step)
    denom = (exp_avg_sq.sqrt() / math.sqrt(1 - beta2 ** step)).add_(eps)
    p.addcdiv_(exp_avg, denom, value=-step_size)


def module_scope(param_name):
    return param_name.rsplit(".", 1)[0].replace(".", "/") if "." in param_name else ""


# ---------------------------------------------------------------------------
# fx graph -> gosim JSON.

def tensor_info(meta):
    """(bytes, shape, dtype) of a TensorMetadata, or None for a non-tensor."""
    if meta is None or not hasattr(meta, "shape"):
        return None
    shape = [int(d) for d in meta.shape]
    dtype = str(meta.dtype).replace("torch.", "")
    import torch
    size = torch.empty((), dtype=meta.dtype).element_size()
    return (numel(shape) * size, shape, DTYPE_NAMES.get(dtype, ""))


def convert(gm, labels, sources, desc, opts):
    import torch
    fx_nodes = list(gm.graph.nodes)
    placeholders = [n for n in fx_nodes if n.op == "placeholder"]
    assert len(placeholders) == len(sources), (len(placeholders), len(sources))
    # Tensor of an fx node: (gosim node name, output index). Aliases resolve.
    tensor_of = {}
    outputs = {}   # gosim node name -> list of (bytes, shape, dtype) or None
    nodes = []
    for ph, (name, op, coloc) in zip(placeholders, sources):
        info = tensor_info(ph.meta.get("tensor_meta"))
        tensor_of[ph] = (name, 0)
        outputs[name] = [info]
        node = {"name": name, "op": op, "outputs": [info]}
        if op in ("Parameter", "Buffer", "OptimizerState"):
            node["persistent_bytes"] = info[0]
            node["colocation"] = coloc if op != "Buffer" else ""
            node["scope"] = module_scope(coloc)
        if op == "OptimizerState":
            node["phase"] = "update"
        nodes.append((ph, node))

    # Drop ops whose results nobody uses and which write no argument.
    live = set()
    for n in reversed(fx_nodes):
        if n.op in ("output", "placeholder") or n in live:
            live.add(n)
        elif n.op == "call_function" and mutates(n):
            live.add(n)
        else:
            continue
        for arg in n.all_input_nodes:
            live.add(arg)

    unknown = collections.Counter()
    for n in fx_nodes:
        if n.op == "get_attr":
            value = getattr(gm, n.target)
            info = tensor_info(torch.fx.passes.shape_prop._extract_tensor_metadata(value))
            tensor_of[n] = (n.name, 0)
            outputs[n.name] = [info]
            nodes.append((n, {"name": n.name, "op": "Constant", "outputs": [info],
                              "persistent_bytes": info[0]}))
            continue
        if n.op != "call_function" or n not in live:
            continue
        target = n.target
        if getattr(target, "__name__", "") == "getitem":
            src, idx = n.args
            tensor_of[n] = (tensor_of[src][0], idx)
            continue
        packet = target.overloadpacket.__name__
        if packet == "detach":  # autograd bookkeeping, an alias of its input
            tensor_of[n] = tensor_of[n.args[0]]
            continue
        meta = n.meta.get("tensor_meta")
        if isinstance(meta, (tuple, list)) and not hasattr(meta, "shape"):  # a tuple of results
            outs = [tensor_info(m) for m in meta]
        else:
            outs = [tensor_info(meta)]
        tensor_of[n] = (n.name, 0)
        outputs[n.name] = outs
        args = normalize_args(target, n.args, n.kwargs, tensor_of, outputs)
        ins = []
        for arg in n.all_input_nodes:
            ref = tensor_of[arg]
            if ref not in ins:
                ins.append(ref)
        in_infos = [outputs[a][i] for a, i in ins]
        flops = op_flops(packet, args, [t[1] if t else None for t in in_infos],
                         [t[1] if t else None for t in outs])
        if flops is None:
            unknown[f"aten::{packet}"] += 1
            flops = 0.0
        phase, scope, coloc = labels.get(n.name, ("forward", "", ""))
        node = {"name": n.name, "op": f"aten::{packet}", "flops": flops}
        if packet not in VIEW_OPS:
            node["bytes_read"] = sum(t[0] for t in in_infos if t)
            node["bytes_written"] = sum(t[0] for t in outs if t) if packet not in (
                "empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided") else 0
        node.update(outputs=outs, colocation=coloc, scope=scope, phase=phase,
                    inputs=[a if i == 0 else f"{a}:{i}" for a, i in ins])
        nodes.append((n, node))

    graph_nodes = [compact(node) for _, node in nodes]
    meta = dict(desc)
    meta.update(model=opts.model, batch=opts.batch, optimizer=opts.optimizer,
                lr=opts.lr, weight_decay=opts.weight_decay, seed=opts.seed,
                exporter="graphs/export/export_torch.py (functorch make_fx, real mode)",
                trace_device=opts.device,
                ops_without_flop_rule=dict(sorted(unknown.items())))
    if unknown:
        log(f"warning: no FLOP rule for {dict(unknown)}; they count 0 FLOPs")
    return {"format": FORMAT, "version": VERSION, "name": opts.name, "metadata": meta,
            "nodes": graph_nodes}


def mutates(n):
    schema = getattr(n.target, "_schema", None)
    return schema is not None and any(a.alias_info is not None and a.alias_info.is_write
                                      for a in schema.arguments)


def normalize_args(target, args, kwargs, tensor_of, outputs):
    """Schema argument name -> value; tensors become (shape, bytes)."""
    import torch.fx

    def value(v):
        if isinstance(v, torch.fx.Node):
            name, idx = tensor_of[v]
            info = outputs[name][idx]
            return (info[1], info[0]) if info else None
        if isinstance(v, (list, tuple)):
            return type(v)(value(e) for e in v)
        return v
    result = {a.name: a.default_value if a.has_default_value() else None
              for a in target._schema.arguments}
    for a, v in zip(target._schema.arguments, args):
        result[a.name] = value(v)
    for k, v in kwargs.items():
        result[k] = value(v)
    return result


def compact(node):
    """The node as written: default-valued fields left out."""
    out = {"name": node["name"], "op": node["op"]}
    for key in ("flops", "bytes_read", "bytes_written", "outputs", "persistent_bytes",
                "colocation", "scope", "phase", "inputs"):
        v = node.get(key)
        if v in (None, 0, 0.0, "", [], "forward"):
            continue
        if key == "outputs":
            v = [output_json(t) for t in v]
        out[key] = v
    return out


def output_json(info):
    if info is None:  # an op result that is not a tensor (e.g. an undefined gradient)
        return {"bytes": 0}
    result = {"bytes": info[0], "shape": info[1]}
    if info[2]:
        result["dtype"] = info[2]
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
            if not isinstance(out, dict) or set(out) - {"bytes", "shape", "dtype"}:
                errors.append(f"{where}: outputs[{k}] must have only bytes/shape/dtype")
            elif not isinstance(out.get("bytes", 0), int) or out.get("bytes", 0) < 0:
                errors.append(f"{where}: outputs[{k}].bytes must be an integer >= 0")
            elif out.get("dtype", "float32") not in DTYPE_NAMES.values():
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
    return {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4,
            "int16": 2, "int8": 1, "uint8": 1, "bool": 1}[name]


def log(message):
    print(message, file=sys.stderr, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=MODELS)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--out", help="output file (.json or .json.gz)")
    parser.add_argument("--name", help="graph name (default: the output file's base name)")
    parser.add_argument("--optimizer", choices=("sgd", "adam"),
                        help="SGD with momentum 0.9 (default for CNNs) or Adam (transformer)")
    parser.add_argument("--lr", type=float, help="learning rate (default: 0.1 SGD, 1e-4 Adam)")
    parser.add_argument("--weight-decay", type=float,
                        help="L2 weight decay folded into the gradient (default: 1e-4 SGD, 0 Adam)")
    parser.add_argument("--aux-logits", action="store_true", help="inception_v3: keep the aux classifier")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=("auto", "cpu", "meta"), default="auto",
                        help="run the traced ops on the CPU or only infer their shapes (meta); "
                             "auto: meta for transformer_encoder, cpu for the CNNs")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--check", nargs="+", metavar="FILE", help="validate files and print a summary")
    opts = parser.parse_args(argv)
    if opts.check:
        failed = False
        for path in opts.check:
            graph = read_graph(path)
            errors = check_graph(graph)
            print(json.dumps({"file": path, "valid": not errors, **summarize(graph)}))
            for e in errors[:20]:
                print(f"{path}: {e}")
            failed |= bool(errors)
        return 1 if failed else 0
    if not opts.model or not opts.out:
        parser.error("--model and --out are required unless --check is given")
    reexec_with_system_python()
    import torch
    if opts.threads:
        torch.set_num_threads(opts.threads)
    if opts.optimizer is None:
        opts.optimizer = "adam" if opts.model == "transformer_encoder" else "sgd"
    sgd = opts.optimizer == "sgd"
    if opts.lr is None:
        opts.lr = 0.1 if sgd else 1e-4
    if opts.weight_decay is None:
        opts.weight_decay = 1e-4 if sgd else 0.0
    if opts.device == "auto":
        # Debian's torch multiplies matrices with the reference BLAS (well
        # under 1 GFLOP/s), so the matmul-heavy transformer is traced on the
        # meta device; torch 1.13 has no meta kernel for convolution_backward.
        opts.device = "meta" if opts.model == "transformer_encoder" else "cpu"
    if opts.name is None:
        opts.name = os.path.basename(opts.out).split(".json")[0]
    gm, labels, sources, desc = trace_training_step(opts)
    graph = convert(gm, labels, sources, desc, opts)
    errors = check_graph(graph)
    if errors:
        for e in errors[:20]:
            log(f"error: {e}")
        return 1
    write_graph(graph, opts.out)
    print(json.dumps({"file": opts.out, "bytes": os.path.getsize(opts.out), **summarize(graph)}))
    return 0


def reexec_with_system_python():
    """Debian's torch lives in the system Python; re-run there if needed."""
    try:
        import torch  # noqa: F401
    except ImportError:
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.path.exists(system):
            os.execv(system, [system, os.path.abspath(__file__)] + sys.argv[1:])
        raise SystemExit("python3-torch is not installed (apt-get install python3-torch python3-torchvision)")


if __name__ == "__main__":
    sys.exit(main())
