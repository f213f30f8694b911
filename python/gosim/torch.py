"""Export of any PyTorch model to a gosim graph: gosim.torch.export.

    import torch, torchvision, gosim, gosim.torch
    model = torchvision.models.resnet18()
    x, y = torch.randn(8, 3, 224, 224), torch.randint(0, 1000, (8,))
    graph = gosim.torch.export(model, x, loss_fn=torch.nn.functional.cross_entropy,
                               targets=y, optimizer="sgd")          # a training step
    graph = gosim.torch.export(model, x)                            # inference

A training step (forward, loss, backward with torch.autograd.grad, and the
optimizer update when an optimizer is given) or an inference forward pass
is traced with make_fx in real mode, which records every aten op that runs;
torch.fx's ShapeProp then gives each output's shape and dtype. Each aten op
becomes one node with FLOPs and bytes (the rules of gosim._export_rules),
its scope from the module that ran it (module forward hooks; backward ops
through autograd-node hooks) and its phase (forward, backward, update).
Parameters, buffers, optimizer state, inputs and targets become source
nodes; parameters, buffers and optimizer state carry persistent bytes.

Written for Debian's python3-torch 1.13 (make_fx real mode; fake mode fails
on torchvision models there). docs/PYTHON.md says what a newer torch needs.
The model and its inputs are not modified (parameters are traced through
copies; the train/eval mode is restored).
"""

import collections
import json
import math
import time

from . import _core
from . import _export_rules as rules

EXPORTER = "gosim.torch.export (make_fx, real mode)"


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
        self.handles = []

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
            self.handles.append(module.register_forward_pre_hook(pre(path)))
            self.handles.append(module.register_forward_hook(post(path)))

    def unhook(self):
        for h in self.handles:
            h.remove()
        self.handles = []

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


class Optimizer:
    """The optimizer update traced into a training step: SGD (with momentum) or Adam.

    Built from "sgd", "adam", a torch.optim.SGD / torch.optim.Adam instance
    (its first parameter group's settings), or None (no update phase).
    """

    def __init__(self, kind, lr, momentum=0.0, weight_decay=0.0, betas=(0.9, 0.999), eps=1e-8,
                 nesterov=False, dampening=0.0):
        self.kind, self.lr, self.momentum, self.weight_decay = kind, lr, momentum, weight_decay
        self.betas, self.eps, self.nesterov, self.dampening = tuple(betas), eps, nesterov, dampening

    @classmethod
    def of(cls, optimizer, torch):
        if optimizer is None or isinstance(optimizer, cls):
            return optimizer
        if optimizer == "sgd":
            return cls("sgd", lr=0.1, momentum=0.9, weight_decay=1e-4)
        if optimizer == "adam":
            return cls("adam", lr=1e-4)
        if isinstance(optimizer, torch.optim.SGD):
            g = optimizer.param_groups[0]
            return cls("sgd", lr=g["lr"], momentum=g["momentum"], weight_decay=g["weight_decay"],
                       nesterov=g["nesterov"], dampening=g["dampening"])
        if isinstance(optimizer, torch.optim.Adam):
            g = optimizer.param_groups[0]
            if g.get("amsgrad"):
                raise _core.ConfigError(
                    "gosim.torch.export: Adam with amsgrad=True is not supported (use amsgrad=False)")
            return cls("adam", lr=g["lr"], weight_decay=g["weight_decay"], betas=g["betas"], eps=g["eps"])
        raise _core.ConfigError(f"gosim.torch.export: optimizer {type(optimizer).__name__} is not supported "
                                "(give None, 'sgd', 'adam', a torch.optim.SGD or a torch.optim.Adam)")

    def state_names(self):
        if self.kind == "sgd":
            return ["momentum_buffer"] if self.momentum != 0 else []
        return ["exp_avg", "exp_avg_sq", "step"]

    def describe(self):
        d = {"optimizer": self.kind, "lr": self.lr, "weight_decay": self.weight_decay}
        if self.kind == "sgd":
            d["momentum"] = self.momentum
        else:
            d.update(betas=list(self.betas), eps=self.eps)
        return d

    def update(self, torch, p, g, state):
        """One parameter's update, as torch.optim's single-tensor code."""
        if self.kind == "sgd":
            torch.optim._functional.sgd([p], [g], state or [None], weight_decay=self.weight_decay,
                                        momentum=self.momentum, lr=self.lr, dampening=self.dampening,
                                        nesterov=self.nesterov, maximize=False, has_sparse_grad=False,
                                        foreach=False)
            return
        # torch.optim.Adam (_single_tensor_adam, capturable=False) reads the
        # step count with .item(), which make_fx cannot trace; the first
        # step's bias correction is used as a constant instead. Same ops
        # otherwise.
        exp_avg, exp_avg_sq, step_t = state
        (beta1, beta2), eps, step = self.betas, self.eps, 1
        step_t += 1
        if self.weight_decay != 0:
            g = g.add(p, alpha=self.weight_decay)
        exp_avg.mul_(beta1).add_(g, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        step_size = self.lr / (1 - beta1 ** step)
        denom = (exp_avg_sq.sqrt() / math.sqrt(1 - beta2 ** step)).add_(eps)
        p.addcdiv_(exp_avg, denom, value=-step_size)


def _functional_call(torch):
    func = getattr(getattr(torch, "func", None), "functional_call", None)  # torch >= 2.0
    if func is None:
        from torch.nn.utils import stateless
        func = stateless.functional_call
    return func


def _make_fx():
    from torch.fx.experimental.proxy_tensor import make_fx  # 1.13 and 2.x
    return make_fx


def _as_tuple(torch, value, what):
    if value is None:
        return ()
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    for v in values:
        if not isinstance(v, torch.Tensor):
            raise _core.ConfigError(f"gosim.torch.export: {what} must be tensors (or a tuple of tensors), "
                                    f"not {type(v).__name__}")
    return values


def _source_names(prefix, n):
    return [prefix] if n == 1 else [f"{prefix}{i}" for i in range(n)]


def trace(model, example_inputs, loss_fn=None, optimizer=None, targets=None, seed=0, log=None):
    """The traced fx graph with its labels: (GraphModule, labels, sources, description)."""
    import torch
    from torch.fx.passes.shape_prop import ShapeProp

    inputs = _as_tuple(torch, example_inputs, "example_inputs")
    if not inputs:
        raise _core.ConfigError("gosim.torch.export: give at least one example input")
    targets = _as_tuple(torch, targets, "targets")
    training = loss_fn is not None
    if targets and not training:
        raise _core.ConfigError("gosim.torch.export: targets are only used with a loss_fn")
    opt = Optimizer.of(optimizer, torch)
    if opt is not None and not training:
        raise _core.ConfigError("gosim.torch.export: an optimizer needs a loss_fn (a training step)")
    functional_call = _functional_call(torch)

    torch.manual_seed(seed)
    was_training = model.training
    model.train(training)
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    state_names = opt.state_names() if opt else []
    state = {f"{p}.{s}": torch.zeros((), device=t.device) if s == "step" else torch.zeros_like(t)
             for p, t in params.items() for s in state_names}
    tracker = ScopeTracker(torch)
    tracker.hook(model)
    n_in, n_t, n_p, n_b = len(inputs), len(targets), len(params), len(buffers)

    def step(*flat):
        tracker.attach()
        xs, ys = flat[:n_in], flat[n_in:n_in + n_t]
        ps = flat[n_in + n_t:n_in + n_t + n_p]
        bs = flat[n_in + n_t + n_p:n_in + n_t + n_p + n_b]
        st = dict(zip(state, flat[n_in + n_t + n_p + n_b:]))
        out = functional_call(model, {**dict(zip(params, ps)), **dict(zip(buffers, bs))}, tuple(xs))
        tracker.flush("")
        if not training:
            return out
        loss = loss_fn(out, *ys)
        tracker.flush("loss")
        tracker.claim([loss.grad_fn], set(), "loss")
        tracker.phase = "backward"
        wanted = [p for p in ps if p.requires_grad]
        grads = torch.autograd.grad(loss, wanted, allow_unused=True)
        tracker.flush("loss")
        if opt is not None:
            tracker.phase = "update"
            with torch.no_grad():
                by_param = dict(zip(map(id, wanted), grads))
                for name, p in zip(params, ps):
                    g = by_param.get(id(p))
                    if g is None:
                        continue
                    opt.update(torch, p, g, [st[f"{name}.{s}"] for s in state_names])
                    tracker.flush(_module_scope(name), name)
        return loss

    def flat_inputs():
        return (list(inputs) + list(targets) +
                [p.detach().clone().requires_grad_(training and p.requires_grad) for p in params.values()] +
                [b.clone() for b in buffers.values()] + [s.clone() for s in state.values()])

    try:
        t0 = time.time()
        if training:
            gm = _make_fx()(step)(*flat_inputs())
        else:
            with torch.no_grad():
                gm = _make_fx()(step)(*flat_inputs())
        t1 = time.time()
        torch.manual_seed(seed)
        with torch.no_grad():
            ShapeProp(gm).propagate(*[t.detach() for t in flat_inputs()])
        t2 = time.time()
    finally:
        tracker.unhook()
        model.train(was_training)
    if log:
        log(f"traced {len(gm.graph.nodes)} fx nodes in {t1 - t0:.1f} s, shapes in {t2 - t1:.1f} s")
    sources = ([(n, "Input", "") for n in _source_names("input", n_in)] +
               [(n, "Input", "") for n in _source_names("target", n_t)] +
               [(n, "Parameter", n) for n in params] + [(n, "Buffer", n) for n in buffers] +
               [(n, "OptimizerState", n.rsplit(".", 1)[0]) for n in state])
    desc = {"source": f"{type(model).__module__}.{type(model).__name__}",
            "mode": "training" if training else "inference",
            "input_shapes": [list(x.shape) for x in inputs],
            "torch_version": torch.__version__, "exporter": EXPORTER, "seed": seed}
    if opt is not None:
        desc.update(opt.describe())
    return gm, tracker.labels, sources, desc


def _module_scope(param_name):
    return param_name.rsplit(".", 1)[0].replace(".", "/") if "." in param_name else ""


def _tensor_info(meta):
    """(bytes, shape, dtype) of a TensorMetadata, or None for a non-tensor."""
    import torch
    if meta is None or not hasattr(meta, "shape"):
        return None
    shape = [int(d) for d in meta.shape]
    dtype = str(meta.dtype).replace("torch.", "")
    size = torch.empty((), dtype=meta.dtype).element_size()
    return (rules.numel(shape) * size, shape, rules.DTYPE_NAMES.get(dtype, ""))


def _mutates(n):
    schema = getattr(n.target, "_schema", None)
    return schema is not None and any(a.alias_info is not None and a.alias_info.is_write
                                      for a in schema.arguments)


def _normalize_args(target, args, kwargs, tensor_of, outputs):
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


def convert(gm, labels, sources, desc, name, log=None):
    """The traced graph as a native-JSON graph dict (docs/FORMATS.md)."""
    import torch
    fx_nodes = list(gm.graph.nodes)
    placeholders = [n for n in fx_nodes if n.op == "placeholder"]
    assert len(placeholders) == len(sources), (len(placeholders), len(sources))
    # Tensor of an fx node: (gosim node name, output index). Aliases resolve.
    tensor_of = {}
    outputs = {}   # gosim node name -> list of (bytes, shape, dtype) or None
    nodes = []
    for ph, (src_name, op, coloc) in zip(placeholders, sources):
        info = _tensor_info(ph.meta.get("tensor_meta"))
        tensor_of[ph] = (src_name, 0)
        outputs[src_name] = [info]
        node = {"name": src_name, "op": op, "outputs": [info]}
        if op in ("Parameter", "Buffer", "OptimizerState"):
            node["persistent_bytes"] = info[0]
            node["colocation"] = coloc if op != "Buffer" else ""
            node["scope"] = _module_scope(coloc)
        if op == "OptimizerState":
            node["phase"] = "update"
        nodes.append(node)

    # Drop ops whose results nobody uses and which write no argument.
    live = set()
    for n in reversed(fx_nodes):
        if n.op in ("output", "placeholder") or n in live:
            live.add(n)
        elif n.op == "call_function" and _mutates(n):
            live.add(n)
        else:
            continue
        for arg in n.all_input_nodes:
            live.add(arg)

    unknown = collections.Counter()
    for n in fx_nodes:
        if n.op == "get_attr":
            value = getattr(gm, n.target)
            info = _tensor_info(torch.fx.passes.shape_prop._extract_tensor_metadata(value))
            tensor_of[n] = (n.name, 0)
            outputs[n.name] = [info]
            nodes.append({"name": n.name, "op": "Constant", "outputs": [info], "persistent_bytes": info[0]})
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
            outs = [_tensor_info(m) for m in meta]
        else:
            outs = [_tensor_info(meta)]
        tensor_of[n] = (n.name, 0)
        outputs[n.name] = outs
        args = _normalize_args(target, n.args, n.kwargs, tensor_of, outputs)
        ins = []
        for arg in n.all_input_nodes:
            ref = tensor_of[arg]
            if ref not in ins:
                ins.append(ref)
        in_infos = [outputs[a][i] for a, i in ins]
        flops = rules.op_flops(packet, args, [t[1] if t else None for t in in_infos],
                               [t[1] if t else None for t in outs])
        if flops is None:
            unknown[f"aten::{packet}"] += 1
            flops = 0.0
        phase, scope, coloc = labels.get(n.name, ("forward", "", ""))
        node = {"name": n.name, "op": f"aten::{packet}", "flops": flops}
        if packet not in rules.VIEW_OPS:
            node["bytes_read"] = sum(t[0] for t in in_infos if t)
            node["bytes_written"] = sum(t[0] for t in outs if t) if packet not in (
                "empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided") else 0
        node.update(outputs=outs, colocation=coloc, scope=scope, phase=phase,
                    inputs=[a if i == 0 else f"{a}:{i}" for a, i in ins])
        nodes.append(node)

    meta = dict(desc)
    meta["ops_without_flop_rule"] = dict(sorted(unknown.items()))
    if unknown and log:
        log(f"warning: no FLOP rule for {dict(unknown)}; they count 0 FLOPs")
    return {"format": rules.FORMAT, "version": rules.VERSION, "name": name, "metadata": meta,
            "nodes": [rules.compact(node) for node in nodes]}


def export_json(model, example_inputs, loss_fn=None, optimizer=None, *, targets=None, name=None, seed=0,
                log=None):
    """As export(), but returns the native-JSON graph as a dict (with its metadata)."""
    gm, labels, sources, desc = trace(model, example_inputs, loss_fn=loss_fn, optimizer=optimizer,
                                      targets=targets, seed=seed, log=log)
    graph = convert(gm, labels, sources, desc, name or type(model).__name__.lower(), log=log)
    errors = rules.check_graph(graph)
    if errors:
        raise _core.GraphError(f"gosim.torch.export produced an invalid graph: {errors[0]}"
                               f"{f' (and {len(errors) - 1} more problems)' if len(errors) > 1 else ''}")
    return graph


def export(model, example_inputs, loss_fn=None, optimizer=None, *, targets=None, name=None, seed=0, log=None):
    """A gosim.Graph of one step of `model` on `example_inputs`.

    loss_fn=None: inference (the model in eval mode, no gradients).
    loss_fn(output, *targets) -> scalar: a training step (the model in train
    mode): forward, loss, backward, and the update of `optimizer` when one is
    given ("sgd": momentum 0.9, lr 0.1, weight decay 1e-4; "adam"; or a
    torch.optim.SGD / torch.optim.Adam whose first parameter group's settings
    are used). example_inputs and targets: a tensor or a tuple of tensors.
    name: the graph's name (default: the model's class name, lower case).
    log: a callable taking progress lines (e.g. print), or None.
    """
    graph = export_json(model, example_inputs, loss_fn=loss_fn, optimizer=optimizer, targets=targets,
                        name=name, seed=seed, log=log)
    return _core.graph_from_json(json.dumps(graph), graph["name"])


def save(graph, path):
    """Writes a graph dict from export_json() as .json or .json.gz (byte-for-byte reproducible)."""
    rules.write_graph(graph, path)


summarize = rules.summarize
check_graph = rules.check_graph
