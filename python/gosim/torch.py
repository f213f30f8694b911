"""Export of any PyTorch model to a gosim graph: gosim.torch.export.

    import torch, torchvision, gosim, gosim.torch
    model = torchvision.models.resnet18()
    x, y = torch.randn(8, 3, 224, 224), torch.randint(0, 1000, (8,))
    graph = gosim.torch.export(model, x, loss_fn=torch.nn.functional.cross_entropy,
                               targets=y, optimizer="sgd")          # a training step
    graph = gosim.torch.export(model, x)                            # inference

A training step (forward, loss, backward with torch.autograd.grad, and the
optimizer update when an optimizer is given) or an inference forward pass
is traced with make_fx in real mode, which records every aten op that runs
with its output's shape and dtype. Each aten op becomes one node with FLOPs
and bytes (the rules of gosim._export_rules), its scope from the module that
ran it (module forward hooks; backward ops through autograd-node hooks) and
its phase (forward, backward, update). Parameters, buffers, optimizer state,
inputs and targets become source nodes; parameters, buffers and optimizer
state carry persistent bytes.

export_json() and save() need only PyTorch (not gosim's compiled module), so
that a machine with PyTorch and no gosim build can export
(tests/python/torch2_export_check.py); export() returns a gosim.Graph.
Written for Debian's python3-torch 1.13 and kept to the APIs that PyTorch
2.x has too (docs/PYTHON.md). The model and its inputs are not modified
(parameters are traced through copies; the train/eval mode is restored).

`python -m gosim.torch --model NAME --out FILE` is the command line
(gosim._torch_cli).
"""

import collections
import contextlib
import difflib
import json
import math
import os
import re
import sys
import time
import traceback
import warnings

from . import _export_rules as rules
from . import _gpu_ops
from ._errors import ConfigError, ExportError, ExportWarning, GraphError

EXPORTER = "gosim.torch.export (make_fx, real mode)"
# Progress lines on stderr (progress=None): the first once an export has run
# this long, then one per interval.
PROGRESS_AFTER_S = 5.0
PROGRESS_INTERVAL_S = 5.0
# Matrix products that run on TF32 tensor cores when PyTorch allows it
# (torch.backends.cuda.matmul.allow_tf32); their float32 outputs are
# recorded as "tfloat32". Convolutions are left alone: cuDNN's TF32 default
# is what the calibrated fp32 convolution fits were measured with.
TF32_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_scaled_dot_product_efficient_attention",
                      "_scaled_dot_product_flash_attention", "_scaled_dot_product_cudnn_attention"})
# Ops whose output shape depends on the values of their inputs: the graph
# holds the shapes of the example inputs' run (aten::index only with a
# boolean mask, aten::repeat_interleave only with a tensor of repeats).
DATA_DEPENDENT_SHAPE_OPS = frozenset({
    "nonzero", "masked_select", "_unique", "_unique2", "unique_dim", "unique_consecutive",
    "unique_dim_consecutive", "argwhere", "_ctc_loss", "nonzero_numpy"})


class _Progress:
    """Throttled progress lines on stderr for long exports.

    enabled: True (a line per PROGRESS_INTERVAL_S from the start), None (the
    same once the export has run PROGRESS_AFTER_S), False (none), or a
    callable that takes each line instead of stderr.
    """

    def __init__(self, enabled, name):
        self.enabled = enabled is not False
        self.write = enabled if callable(enabled) else (
            lambda line: print(line, file=sys.stderr, flush=True))
        self.name = name
        self.start = time.monotonic()
        self.next = self.start + (0.0 if enabled is True or callable(enabled) else PROGRESS_AFTER_S)
        self.printed = False

    def update(self, stage, done, total=None, where=""):
        now = time.monotonic()
        if not self.enabled or now < self.next:
            return
        count = f"{done:,} of {total:,} ops" if total else f"{done:,} ops"
        self.write(f"gosim.torch.export {self.name}: {stage}: {count}, {now - self.start:.0f} s"
                   + (f" (in {where})" if where else ""))
        self.printed = True
        self.next = now + PROGRESS_INTERVAL_S

    def finish(self, nodes):
        if self.enabled and self.printed:
            self.write(f"gosim.torch.export {self.name}: done: {nodes:,} nodes in "
                       f"{time.monotonic() - self.start:.0f} s")


class ScopeTracker:
    """Attributes each fx node to (phase, scope, colocation) as it is traced.

    Nodes are labelled in batches: whenever a module is entered or left, an
    autograd node finishes, or a phase or parameter update ends, every node
    traced since the last label gets the label that was current.
    """

    def __init__(self, torch, progress=None):
        from torch.fx.experimental.proxy_tensor import ProxyTorchDispatchMode
        self.torch = torch
        self.mode_type = ProxyTorchDispatchMode
        self.graph = None
        self.cursor = None
        self.labels = {}      # fx node name -> (phase, scope, colocation)
        self.stack = [""]     # module scope stack
        self.types = [""]     # the class names of the modules on the stack
        self.phase = "forward"
        self.fn_scope = {}    # autograd node -> scope of the module that made it
        self.stops = []
        self.handles = []
        self.progress = progress

    def attach(self):
        from torch.fx.experimental import proxy_tensor
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
        # PyTorch 2.x keeps the proxy mode apart from the user's modes (get_proxy_mode); 1.13 on the stack.
        mode = getattr(proxy_tensor, "get_proxy_mode", lambda: None)()
        if mode is None:
            modes = [m for m in _get_current_dispatch_mode_stack() if isinstance(m, self.mode_type)]
            mode = modes[-1] if modes else None
        if mode is None:
            raise ExportError("gosim.torch.export: make_fx's proxy mode is not active; cannot label nodes "
                              f"(torch {self.torch.__version__})")
        self.graph = mode.tracer.graph
        self.cursor = self.graph._root

    def flush(self, scope, colocation=""):
        node = self.cursor.next
        while node is not self.graph._root:
            self.labels[node.name] = (self.phase, scope, colocation)
            self.cursor = node
            node = node.next
        if self.progress is not None:
            self.progress.update(f"tracing the {self.phase} pass", len(self.labels), where=scope)

    def where(self):
        """Where the trace is, for messages: "module 'blocks/0/attn' (Attention)", "the loss function"."""
        if self.phase != "forward":
            return f"the {self.phase} pass"
        if len(self.stack) > 2:  # the bottom entry, then the model itself
            return f"module '{self.stack[-1]}' ({self.types[-1]})"
        if len(self.stack) == 2:
            return f"the model's own forward() ({self.types[-1]})"
        return "the loss function"

    def hook(self, model):
        torch = self.torch

        def grad_fns(tree):
            leaves, _ = torch.utils._pytree.tree_flatten(tree)
            return [t.grad_fn for t in leaves if isinstance(t, torch.Tensor) and t.grad_fn is not None]

        def pre(path, kind):
            def fn(module, inputs):
                self.flush(self.stack[-1])
                self.stack.append(path)
                self.types.append(kind)
                self.stops.append(set(grad_fns(inputs)))
            return fn

        def post(path):
            def fn(module, inputs, output):
                self.flush(path)
                self.stack.pop()
                self.types.pop()
                self.claim(grad_fns(output), self.stops.pop(), path)
            return fn

        for name, module in model.named_modules():
            path = name.replace(".", "/")
            self.handles.append(module.register_forward_pre_hook(pre(path, type(module).__name__)))
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
    """The optimizer update traced into a training step: SGD (momentum, Nesterov), Adam or AdamW.

    Optimizer("sgd", lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=False)
    Optimizer("adam", lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    Optimizer("adamw", lr=1e-3, weight_decay=1e-2)   # decoupled weight decay
    Unset values take PyTorch's defaults (lr 1e-3; weight decay 0, 1e-2 for
    AdamW; no momentum); the names of Optimizer.of set more. The update is
    written out op by op as torch.optim's single-tensor code does it (the
    same aten ops on PyTorch 1.13 and 2.x), with the first step's bias
    correction for Adam and AdamW (make_fx cannot trace .item()).
    """

    KINDS = ("sgd", "adam", "adamw")
    # The settings of a named optimizer (Optimizer.of): SGD as the
    # torchvision references train CNNs, Adam and AdamW with PyTorch's
    # defaults (Adam at the learning rate transformers train with).
    NAMED = {
        "sgd": {"kind": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4},
        "sgd_nesterov": {"kind": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4, "nesterov": True},
        "adam": {"kind": "adam", "lr": 1e-4},
        "adamw": {"kind": "adamw", "lr": 1e-3, "weight_decay": 1e-2},
    }

    def __init__(self, kind, lr=None, momentum=0.0, weight_decay=None, betas=(0.9, 0.999), eps=1e-8,
                 nesterov=False, dampening=0.0, amsgrad=False, maximize=False):
        if kind not in self.KINDS:
            raise ConfigError(f"gosim.torch.Optimizer: kind {kind!r} is not known (give one of "
                              f"{', '.join(map(repr, self.KINDS))})")
        self.kind = kind
        self.lr = float(1e-3 if lr is None else lr)  # torch.optim's defaults
        self.weight_decay = float((1e-2 if kind == "adamw" else 0.0) if weight_decay is None else weight_decay)
        self.momentum, self.nesterov, self.dampening = float(momentum), bool(nesterov), float(dampening)
        self.betas, self.eps = tuple(float(b) for b in betas), float(eps)
        self.amsgrad, self.maximize = bool(amsgrad), bool(maximize)
        problems = [f"{name}={value!r} must be >= 0" for name, value in (
            ("lr", self.lr), ("momentum", self.momentum), ("weight_decay", self.weight_decay),
            ("eps", self.eps)) if not value >= 0]
        if kind == "sgd" and self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            problems.append(f"nesterov=True needs momentum > 0 and dampening 0 (momentum={self.momentum!r}, "
                            f"dampening={self.dampening!r})")
        if kind != "sgd" and not (len(self.betas) == 2 and all(0 <= b < 1 for b in self.betas)):
            problems.append(f"betas={betas!r} must be two values in [0, 1)")
        if kind == "sgd" and self.amsgrad:
            problems.append("amsgrad=True is an Adam option")
        if problems:
            raise ConfigError(f"gosim.torch.Optimizer({kind!r}): {'; '.join(problems)}")

    @classmethod
    def of(cls, optimizer, torch):
        """An Optimizer from None, a name, a torch.optim instance, a dict or an Optimizer."""
        if optimizer is None or isinstance(optimizer, cls):
            return optimizer
        choices = ("None, 'sgd', 'sgd_nesterov', 'adam', 'adamw', a torch.optim.SGD, Adam or AdamW, "
                   "or gosim.torch.Optimizer(kind, lr=..., ...)")
        if isinstance(optimizer, str):
            named = cls.NAMED.get(optimizer.lower())
            if named is None:
                close = difflib.get_close_matches(optimizer.lower(), cls.NAMED, n=1)
                raise ConfigError(f"gosim.torch.export: optimizer {optimizer!r} is not supported"
                                  f"{f'. Did you mean {close[0]!r}?' if close else ''} (give {choices})")
            return cls(**named)
        if isinstance(optimizer, dict):
            settings = dict(optimizer)
            kind = settings.pop("kind", settings.pop("name", None))
            named = cls.NAMED.get(str(kind).lower())
            if named is None:
                raise ConfigError(f"gosim.torch.export: optimizer {optimizer!r} names no known kind "
                                  "(give {'kind': 'sgd' | 'adam' | 'adamw', 'lr': ..., ...})")
            try:
                return cls(**{**named, **settings})
            except TypeError as e:
                raise ConfigError(f"gosim.torch.export: optimizer {optimizer!r}: {e}") from None
        optim = torch.optim
        kind = ("adamw" if isinstance(optimizer, optim.AdamW) else "adam" if isinstance(optimizer, optim.Adam)
                else "sgd" if isinstance(optimizer, optim.SGD) else None)
        if kind is None:
            what = type(optimizer)
            raise ConfigError(f"gosim.torch.export: optimizer {what.__module__}.{what.__qualname__} is not "
                              f"supported (give {choices})")
        g = optimizer.param_groups[0]
        if kind == "sgd":
            return cls("sgd", lr=g["lr"], momentum=g["momentum"], weight_decay=g["weight_decay"],
                       nesterov=g["nesterov"], dampening=g["dampening"], maximize=g.get("maximize", False))
        return cls(kind, lr=g["lr"], weight_decay=g["weight_decay"], betas=g["betas"], eps=g["eps"],
                   amsgrad=g.get("amsgrad", False), maximize=g.get("maximize", False))

    def state_names(self):
        if self.kind == "sgd":
            return ["momentum_buffer"] if self.momentum != 0 else []
        return ["exp_avg", "exp_avg_sq", "step"] + (["max_exp_avg_sq"] if self.amsgrad else [])

    def describe(self):
        d = {"optimizer": self.kind, "lr": self.lr, "weight_decay": self.weight_decay}
        if self.kind == "sgd":
            d["momentum"] = self.momentum
            if self.nesterov:
                d["nesterov"] = True
            if self.dampening:
                d["dampening"] = self.dampening
        else:
            d.update(betas=list(self.betas), eps=self.eps)
            if self.amsgrad:
                d["amsgrad"] = True
        if self.maximize:
            d["maximize"] = True
        return d

    def update(self, torch, p, g, state):
        """One parameter's update, the ops of torch.optim's single-tensor code."""
        if self.maximize:
            g = g.neg()
        if self.kind == "sgd":
            if self.weight_decay != 0:
                g = g.add(p, alpha=self.weight_decay)
            if self.momentum != 0:
                (buf,) = state
                buf.mul_(self.momentum).add_(g, alpha=1 - self.dampening)
                g = g.add(buf, alpha=self.momentum) if self.nesterov else buf
            p.add_(g, alpha=-self.lr)
            return
        # torch.optim.Adam / AdamW (capturable=False) read the step count with
        # .item(), which make_fx cannot trace; the first step's bias
        # correction is used as a constant instead. Same ops otherwise.
        exp_avg, exp_avg_sq, step_t = state[:3]
        (beta1, beta2), eps, step = self.betas, self.eps, 1
        step_t += 1
        if self.kind == "adamw":
            p.mul_(1 - self.lr * self.weight_decay)  # decoupled weight decay (always, as torch does)
        elif self.weight_decay != 0:
            g = g.add(p, alpha=self.weight_decay)
        exp_avg.mul_(beta1).add_(g, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        step_size = self.lr / (1 - beta1 ** step)
        second = exp_avg_sq
        if self.amsgrad:
            second = state[3]
            torch.maximum(second, exp_avg_sq, out=second)
        denom = (second.sqrt() / math.sqrt(1 - beta2 ** step)).add_(eps)
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
            raise ConfigError(f"gosim.torch.export: {what} must be tensors (or a tuple of tensors), "
                              f"not {type(v).__name__}")
    return values


def _source_names(prefix, n):
    return [prefix] if n == 1 else [f"{prefix}{i}" for i in range(n)]


def _tensor_info_of(torch, t):
    """(bytes, shape, dtype name) of a tensor (real, meta or fake), or None for anything else."""
    if not isinstance(t, torch.Tensor):
        return None
    shape = [int(d) for d in t.shape]
    return (rules.numel(shape) * t.element_size(), shape, rules.DTYPE_NAMES.get(str(t.dtype)[6:], ""))


class _TupleOutputs:
    """Records the outputs of ops that return several tensors while make_fx traces.

    make_fx gives an op's node its output's shape and dtype (meta
    "tensor_meta") only when the output is one tensor; in PyTorch 1.13 a
    tuple of results has them only on the getitem nodes of the elements
    that are used. Wrapping proxy_tensor.track_tensor_tree, which sees every
    result, records them all (meta "gosim_outputs"), so that no second run
    of the graph (ShapeProp) is needed. PyTorch 2.x keeps them itself (meta
    "val"); where the function is missing the wrapper is not installed and
    ShapeProp fills in what is missing.
    """

    def __init__(self, torch):
        self.torch = torch
        from torch.fx.experimental import proxy_tensor
        self.module = proxy_tensor
        self.original = getattr(proxy_tensor, "track_tensor_tree", None)

    def __enter__(self):
        if self.original is None:
            return self
        torch, original = self.torch, self.original

        def track_tensor_tree(inner_res, proxy_res, *args, **kwargs):
            out = original(inner_res, proxy_res, *args, **kwargs)
            node = getattr(proxy_res, "node", None)
            if isinstance(inner_res, (tuple, list)) and node is not None:
                node.meta.setdefault("gosim_outputs", [_tensor_info_of(torch, e) for e in inner_res])
            return out
        self.module.track_tensor_tree = track_tensor_tree
        return self

    def __exit__(self, *exc):
        if self.original is not None:
            self.module.track_tensor_tree = self.original


def _node_outputs(torch, n):
    """The (bytes, shape, dtype) of each output of fx node `n` (None for a non-tensor), or None if unknown."""
    meta = n.meta.get("tensor_meta")
    if meta is not None:
        if isinstance(meta, (tuple, list)) and not hasattr(meta, "shape"):  # ShapeProp: a tuple of results
            return [_tensor_info(m) for m in meta]
        return [_tensor_info(meta)]
    if "gosim_outputs" in n.meta:
        return n.meta["gosim_outputs"]
    val = n.meta.get("val")  # PyTorch 2.x
    if isinstance(val, torch.Tensor):
        return [_tensor_info_of(torch, val)]
    if isinstance(val, (tuple, list)):
        return [_tensor_info_of(torch, v) for v in val]
    return None


def _data_dependent_error(torch, error, tracker, model):
    """An ExportError for a trace stopped by data-dependent control flow, or None for any other error."""
    text = str(error)
    if not re.search(r"value out of a tracing tensor|data.dependent|DataDependent", text):
        return None
    # The aten op that read a traced tensor's value: the proxy mode's `func`.
    op = None
    frames = traceback.extract_tb(error.__traceback__)
    tb = error.__traceback__
    while tb is not None:
        func = tb.tb_frame.f_locals.get("func")
        if func is not None and hasattr(func, "overloadpacket"):
            op = f"aten::{func.overloadpacket.__name__}"
        tb = tb.tb_next
    match = re.search(r"aten\.(\w+)", text)
    op = op or (f"aten::{match.group(1)}" if match else "aten::_local_scalar_dense")
    # The user's line: the innermost frame outside torch and gosim.
    torch_dir = os.path.dirname(torch.__file__)
    here = os.path.dirname(os.path.abspath(__file__))
    line = ""
    for frame in reversed(frames):
        path = os.path.abspath(frame.filename)
        if not path.startswith(torch_dir) and not path.startswith(here):
            line = f" at {os.path.basename(path)}:{frame.lineno}" + (f" ({frame.line.strip()})" if frame.line else "")
            break
    return ExportError(
        f"gosim.torch.export: data-dependent control flow in {tracker.where()}{line}: {op} reads a traced "
        "tensor's value (bool(), int(), float(), .item(), .tolist()), so the step has no single graph "
        "(compute the condition from shapes or Python values, or export each branch as its own model)")


TARGETS = ("cuda", "cpu")


def trace(model, example_inputs, loss_fn=None, optimizer=None, targets=None, seed=0, log=None, progress=None,
          target="cuda"):
    """The traced fx graph with its labels: (GraphModule, labels, sources, description)."""
    import torch

    if target not in TARGETS:
        raise ConfigError(f"gosim.torch.export: target={target!r} is not known (give 'cuda', the ops a GPU "
                          "runs, or 'cpu', the ops of the CPU the model is traced on)")

    inputs = _as_tuple(torch, example_inputs, "example_inputs")
    if not inputs:
        raise ConfigError("gosim.torch.export: give at least one example input")
    targets = _as_tuple(torch, targets, "targets")
    training = loss_fn is not None
    if targets and not training:
        raise ConfigError("gosim.torch.export: targets are only used with a loss_fn")
    opt = Optimizer.of(optimizer, torch)
    if opt is not None and not training:
        raise ConfigError("gosim.torch.export: an optimizer needs a loss_fn (a training step)")
    functional_call = _functional_call(torch)
    if progress is None or progress is True or progress is False or callable(progress):
        progress = _Progress(progress, type(model).__name__)

    torch.manual_seed(seed)
    was_training = model.training
    model.train(training)
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    state_names = opt.state_names() if opt else []
    state = {f"{p}.{s}": torch.zeros((), device=t.device) if s == "step" else torch.zeros_like(t)
             for p, t in params.items() for s in state_names}
    tracker = ScopeTracker(torch, progress)
    tracker.hook(model)
    # nn.LSTM / GRU / RNN read their weights from a list made when the
    # module was built (_flat_weights), not from the attributes that
    # functional_call swaps for the traced parameters: refresh it before each
    # call, or the weights are traced as constants, without gradients.
    rnn_hooks = [m.register_forward_pre_hook(
        lambda m, inputs: setattr(m, "_flat_weights", [getattr(m, w) for w in m._flat_weights_names]))
        for m in model.modules() if isinstance(m, torch.nn.RNNBase)]
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
                if target == "cuda" and opt.kind in ("adam", "adamw"):
                    # torch.optim's multi-tensor Adam (capturable=False) reads
                    # each step count back twice (.item()) for its bias
                    # corrections before its kernels: the host waits for the
                    # GPU there (gosim._gpu_ops).
                    for name, p in zip(params, ps):
                        if by_param.get(id(p)) is not None:
                            step_t = st[f"{name}.step"]
                            _gpu_ops.sync(torch, step_t)
                            _gpu_ops.sync(torch, step_t)
                    tracker.flush("", "")
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

    shape_prop_s = 0.0
    try:
        t0 = time.time()
        try:
            recording = _gpu_ops.recording(torch) if target == "cuda" else contextlib.nullcontext()
            with _TupleOutputs(torch), recording:
                if training:
                    gm = _make_fx()(step)(*flat_inputs())
                else:
                    with torch.no_grad():
                        gm = _make_fx()(step)(*flat_inputs())
        except RuntimeError as e:
            error = _data_dependent_error(torch, e, tracker, model)
            if error is None:
                raise
            raise error from None
        t1 = time.time()
        missing = [n for n in gm.graph.nodes if (n.op == "placeholder" or _returns_tensors(n))
                   and _node_outputs(torch, n) is None]
        if missing:
            # Shapes the trace did not record (a PyTorch without the hooks
            # _TupleOutputs uses): run the graph once more.
            from torch.fx.passes.shape_prop import ShapeProp

            class _ShapeProp(ShapeProp):
                count = 0

                def run_node(self, n):
                    _ShapeProp.count += 1
                    progress.update("shapes", _ShapeProp.count, len(gm.graph.nodes))
                    return super().run_node(n)
            torch.manual_seed(seed)
            with torch.no_grad():
                _ShapeProp(gm).propagate(*[t.detach() for t in flat_inputs()])
            shape_prop_s = time.time() - t1
    finally:
        tracker.unhook()
        for h in rnn_hooks:
            h.remove()
        model.train(was_training)
    if log:
        log(f"traced {len(gm.graph.nodes)} fx nodes in {t1 - t0:.1f} s"
            + (f", shapes in {shape_prop_s:.1f} s" if shape_prop_s else ""))
    sources = ([(n, "Input", "") for n in _source_names("input", n_in)] +
               [(n, "Input", "") for n in _source_names("target", n_t)] +
               [(n, "Parameter", n) for n in params] + [(n, "Buffer", n) for n in buffers] +
               [(n, "OptimizerState", n.rsplit(".", 1)[0]) for n in state])
    desc = {"source": f"{type(model).__module__}.{type(model).__name__}",
            "mode": "training" if training else "inference", "target": target,
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


def _returns_tensors(n):
    schema = getattr(n.target, "_schema", None) if n.op == "call_function" else None
    return schema is not None and any("Tensor" in str(r.type) for r in schema.returns)


def _mutates(n):
    schema = getattr(n.target, "_schema", None)
    return schema is not None and any(a.alias_info is not None and a.alias_info.is_write
                                      for a in schema.arguments)


def _normalize_args(target, args, kwargs, tensor_of, outputs):
    """Schema argument name -> value; tensors become (shape, bytes, dtype)."""
    import torch.fx

    def value(v):
        if isinstance(v, torch.fx.Node):
            name, idx = tensor_of[v]
            info = outputs[name][idx]
            return (info[1], info[0], info[2]) if info else None
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


def _data_dependent_shape(packet, args):
    """A name for an op whose output shape depends on input values, or None."""
    if packet in DATA_DEPENDENT_SHAPE_OPS:
        return f"aten::{packet}"
    if packet in ("index", "_index_put_impl_", "index_put", "index_put_") and any(
            isinstance(i, tuple) and len(i) == 3 and i[2] in ("bool", "uint8") for i in args.get("indices") or ()):
        return f"aten::{packet} (boolean mask)"
    if packet == "repeat_interleave" and isinstance(args.get("repeats"), tuple):
        return "aten::repeat_interleave (tensor of repeats)"
    return None


def convert(gm, labels, sources, desc, name, log=None, tf32=False, progress=None):
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
        (info,) = _node_outputs(torch, ph)
        tensor_of[ph] = (src_name, 0)
        outputs[src_name] = [info]
        node = {"name": src_name, "op": op, "outputs": [info]}
        if op in ("Parameter", "Buffer", "OptimizerState"):
            node["persistent_bytes"] = info[0]
            node["alias"] = True  # the output is the resident tensor itself
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
    data_dependent = collections.Counter()
    data_dependent_scopes = {}
    tf32_nodes = 0
    for i, n in enumerate(fx_nodes):
        if progress is not None and i % 1000 == 0:
            progress.update("costing", i, len(fx_nodes))
        if n.op == "get_attr":
            value = getattr(gm, n.target)
            info = _tensor_info_of(torch, value)
            tensor_of[n] = (n.name, 0)
            outputs[n.name] = [info]
            nodes.append({"name": n.name, "op": "Constant", "outputs": [info], "persistent_bytes": info[0],
                          "alias": True})
            continue
        if n.op != "call_function" or n not in live:
            continue
        target = n.target
        if getattr(target, "__name__", "") == "getitem":
            src, idx = n.args
            tensor_of[n] = (tensor_of[src][0], idx)
            continue
        packet = getattr(getattr(target, "overloadpacket", None), "__name__", None)
        if packet is None or not hasattr(target, "_schema"):  # not an aten op (a newer tracer's helper)
            unknown[f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', target)}"] += 1
            tensor_of[n] = (n.name, 0)
            outputs[n.name] = _node_outputs(torch, n) or [None]
            nodes.append({"name": n.name, "op": str(getattr(target, "__name__", target)), "outputs": outputs[n.name],
                          "inputs": [a if i == 0 else f"{a}:{i}" for a, i in
                                     dict.fromkeys(tensor_of[arg] for arg in n.all_input_nodes)]})
            continue
        if packet == "detach":  # autograd bookkeeping, an alias of its input
            tensor_of[n] = tensor_of[n.args[0]]
            continue
        outs = _node_outputs(torch, n) or [None]
        args = _normalize_args(target, n.args, n.kwargs, tensor_of, outputs)
        if tf32 and packet in TF32_OPS and outs[0] is not None and outs[0][2] == "float32":
            outs = [(outs[0][0], outs[0][1], "tfloat32")] + list(outs[1:])
            tf32_nodes += 1
        tensor_of[n] = (n.name, 0)
        outputs[n.name] = outs
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
        dependent = _data_dependent_shape(packet, args)
        if dependent:
            data_dependent[dependent] += 1
            data_dependent_scopes.setdefault(dependent, scope)
        node = {"name": n.name, "op": f"aten::{packet}", "flops": flops}
        if rules.is_alias_op(packet):
            node["alias"] = True
        if packet not in rules.VIEW_OPS:
            node["bytes_read"] = sum(t[0] for t in in_infos if t)
            node["bytes_written"] = sum(t[0] for t in outs if t) if packet not in (
                "empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided") else 0
        node.update(outputs=outs, colocation=coloc, scope=scope, phase=phase,
                    inputs=[a if i == 0 else f"{a}:{i}" for a, i in ins])
        nodes.append(node)

    meta = dict(desc)
    meta["ops_without_flop_rule"] = dict(sorted(unknown.items()))
    if tf32:  # absent when off, so that earlier exports reproduce byte for byte
        meta["tf32"] = True
        meta["tf32_nodes"] = tf32_nodes
    if data_dependent:
        meta["data_dependent_shapes"] = dict(sorted(data_dependent.items()))
        ops = ", ".join(f"{op} x{count}" + (f" in '{data_dependent_scopes[op]}'" if data_dependent_scopes[op] else "")
                        for op, count in sorted(data_dependent.items()))
        warnings.warn(f"gosim.torch.export {name}: ops with data-dependent output shapes ({ops}): the graph holds "
                      "the shapes of the example inputs' run", ExportWarning, stacklevel=4)
    if unknown and log:
        log(f"warning: no FLOP rule for {dict(unknown)}; they count 0 FLOPs")
    return {"format": rules.FORMAT, "version": rules.VERSION, "name": name, "metadata": meta,
            "nodes": [rules.compact(node) for node in nodes]}


def _resolve_tf32(tf32):
    if tf32 is None:  # PyTorch's own switch (False by default)
        import torch
        return bool(torch.backends.cuda.matmul.allow_tf32)
    if not isinstance(tf32, bool):
        raise ConfigError(f"gosim.torch.export: tf32={tf32!r} must be True, False or None (PyTorch's "
                          "torch.backends.cuda.matmul.allow_tf32)")
    return tf32


def export_json(model, example_inputs, loss_fn=None, optimizer=None, *, targets=None, name=None, seed=0,
                log=None, tf32=None, progress=None, target="cuda"):
    """As export(), but returns the native-JSON graph as a dict (with its metadata).

    Needs only PyTorch: not gosim's compiled module.
    """
    tf32 = _resolve_tf32(tf32)
    name = name or type(model).__name__.lower()
    bar = _Progress(progress, name)
    gm, labels, sources, desc = trace(model, example_inputs, loss_fn=loss_fn, optimizer=optimizer,
                                      targets=targets, seed=seed, log=log, progress=bar, target=target)
    graph = convert(gm, labels, sources, desc, name, log=log, tf32=tf32, progress=bar)
    errors = rules.check_graph(graph)
    if errors:
        raise GraphError(f"gosim.torch.export produced an invalid graph: {errors[0]}"
                         f"{f' (and {len(errors) - 1} more problems)' if len(errors) > 1 else ''}")
    bar.finish(len(graph["nodes"]))
    return graph


def export(model, example_inputs, loss_fn=None, optimizer=None, *, targets=None, name=None, seed=0, log=None,
           tf32=None, progress=None, target="cuda"):
    """A gosim.Graph of one step of `model` on `example_inputs`.

    loss_fn=None: inference (the model in eval mode, no gradients).
    loss_fn(output, *targets) -> scalar: a training step (the model in train
    mode): forward, loss, backward, and the update of `optimizer` when one is
    given: a name ("sgd": momentum 0.9, lr 0.1, weight decay 1e-4;
    "sgd_nesterov"; "adam"; "adamw": lr 1e-3, decoupled weight decay 1e-2), a
    torch.optim.SGD / Adam / AdamW (its first parameter group's settings), a
    dict {"kind": ..., "lr": ...} or a gosim.torch.Optimizer.
    example_inputs and targets: a tensor or a tuple of tensors.
    name: the graph's name (default: the model's class name, lower case).
    tf32: matrix products on TF32 tensor cores (their outputs recorded as
    "tfloat32", priced with the profile's TF32 fits or the device's
    peak_flops_tf32); None follows torch.backends.cuda.matmul.allow_tf32.
    progress: None (a line on stderr every few seconds once an export takes
    longer than PROGRESS_AFTER_S), True (from the start), False, or a
    callable that takes the lines. log: a callable taking summary lines.
    target: "cuda" (default) records the ops a CUDA GPU runs where PyTorch
    decomposes differently by device (fused dropout and attention, cuDNN
    LSTM, Adam's step reads; gosim._gpu_ops); "cpu" the ops of the CPU the
    model is traced on.
    Raises gosim.ExportError for data-dependent control flow; warns
    (gosim.ExportWarning) about ops whose output shapes depend on the data.
    """
    graph = export_json(model, example_inputs, loss_fn=loss_fn, optimizer=optimizer, targets=targets,
                        name=name, seed=seed, log=log, tf32=tf32, progress=progress, target=target)
    from . import graph_from_json
    return graph_from_json(json.dumps(graph), graph["name"])


def save(graph, path):
    """Writes a graph dict from export_json() as .json or .json.gz (byte-for-byte reproducible)."""
    rules.write_graph(graph, os.fspath(path))


summarize = rules.summarize
check_graph = rules.check_graph


if __name__ == "__main__":  # python -m gosim.torch
    from gosim._torch_cli import main
    sys.exit(main())
