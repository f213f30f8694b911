"""The command line of gosim.torch: `python -m gosim.torch` (also the `gosim-export` console script).

Exports one PyTorch training step of a named model as a gosim native-JSON
graph: any torchvision classification model
(torchvision.models.list_models(module=torchvision.models): resnet18,
resnet50, vgg16, mobilenet_v2, inception_v3, efficientnet_b0, vit_b_16, ...),
transformer_encoder (a torch.nn.TransformerEncoder language model), or a
model of your own given as FILE.py:FUNCTION.

  python3 -m gosim.torch --model resnet50 --batch 32 --out resnet50_train_b32.json.gz
  python3 -m gosim.torch --model my_model.py:build --out my_model.json.gz --tf32
  python3 -m gosim.torch --check resnet50_train_b32.json.gz

FUNCTION takes no arguments and returns a dict: "model" (an nn.Module),
"inputs" (a tensor or a tuple of tensors), and optionally "targets",
"loss_fn" (None: inference), "optimizer" (a name, a torch.optim instance or
a dict; --optimizer wins), "name" and "metadata" (a dict merged into the
graph's metadata). Export needs PyTorch (and torchvision for its models);
--check needs only the standard library. See docs/PYTHON.md.
"""

import argparse
import importlib.util
import json
import os
import sys

from . import _export_rules as rules
from ._errors import Error

# Classification outputs with auxiliary heads (in training mode): weights of
# the auxiliary losses, as in the models' papers and torchvision's references.
AUX_WEIGHTS = {"inception_v3": 0.4, "googlenet": 0.3}


def classification_models(torchvision):
    return sorted(torchvision.models.list_models(module=torchvision.models))


def build_named(opts, torch):
    """(module, example input, target, loss function, metadata) of a named --model."""
    name, batch = opts.model, opts.batch
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
    try:
        import torchvision
    except ImportError:
        raise SystemExit(f"gosim.torch: --model {name} needs torchvision, which this Python "
                         f"({sys.executable}) cannot import (apt-get install python3-torchvision)") from None
    names = classification_models(torchvision)
    if name not in names:
        raise SystemExit(f"gosim.torch: unknown model '{name}'; give FILE.py:FUNCTION, transformer_encoder or a "
                         f"torchvision classification model: {', '.join(names)}")
    kwargs = {"weights": None}
    if name in AUX_WEIGHTS:
        kwargs.update(aux_logits=opts.aux_logits, init_weights=True)
    model = torchvision.models.get_model(name, **kwargs)
    size = opts.image_size or (299 if name == "inception_v3" else 224)
    x = torch.randn(opts.batch, 3, size, size)
    y = torch.randint(0, 1000, (opts.batch,))
    aux_weight = AUX_WEIGHTS.get(name, 0.0)

    def loss_fn(out, target):
        if isinstance(out, tuple):  # e.g. InceptionOutputs(logits, aux_logits)
            main, aux = out[0], [a for a in out[1:] if a is not None]
            return (torch.nn.functional.cross_entropy(main, target)
                    + aux_weight * sum(torch.nn.functional.cross_entropy(a, target) for a in aux))
        return torch.nn.functional.cross_entropy(out, target)
    desc = {"source": f"torchvision {name}", "input_shape": list(x.shape), "num_classes": 1000}
    if name in AUX_WEIGHTS:
        desc["aux_logits"] = opts.aux_logits
    return model, x, y, loss_fn, desc


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


def build_from_file(spec):
    """The dict FUNCTION() returns for --model FILE.py:FUNCTION."""
    path, _, function = spec.rpartition(":")
    if not os.path.isfile(path):
        raise SystemExit(f"gosim.torch: --model {spec}: no file '{path}'")
    module_spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # its own imports, as `python FILE` would
    try:
        module_spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    build = getattr(module, function, None)
    if not callable(build):
        raise SystemExit(f"gosim.torch: --model {spec}: '{path}' has no function '{function}'")
    built = build()
    if not isinstance(built, dict) or "model" not in built or "inputs" not in built:
        raise SystemExit(f"gosim.torch: --model {spec}: {function}() must return a dict with 'model' and "
                         "'inputs' (and optionally 'targets', 'loss_fn', 'optimizer', 'name', 'metadata')")
    unknown = set(built) - {"model", "inputs", "targets", "loss_fn", "optimizer", "name", "metadata"}
    if unknown:
        raise SystemExit(f"gosim.torch: --model {spec}: {function}() returned unknown keys {sorted(unknown)}")
    return built


def _to(value, device):
    if value is None:
        return None
    return tuple(t.to(device) for t in value) if isinstance(value, (tuple, list)) else value.to(device)


def log(message):
    print(message, file=sys.stderr, flush=True)


def check(paths):
    failed = False
    for path in paths:
        graph = rules.read_graph(path)
        errors = rules.check_graph(graph)
        print(json.dumps({"file": path, "valid": not errors, **rules.summarize(graph)}))
        for e in errors[:20]:
            print(f"{path}: {e}")
        failed |= bool(errors)
    return 1 if failed else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m gosim.torch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="FILE.py:FUNCTION, transformer_encoder or a torchvision classification "
                                        "model name")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--image-size", type=int, help="image height and width (default 224; 299 inception_v3)")
    parser.add_argument("--out", help="output file (.json or .json.gz)")
    parser.add_argument("--name", help="graph name (default: the output file's base name)")
    parser.add_argument("--optimizer", choices=("none", "sgd", "sgd_nesterov", "adam", "adamw"),
                        help="none (a training step without an update), SGD with momentum 0.9 (the CNNs' default; "
                             "sgd_nesterov with Nesterov momentum), Adam (the transformer's) or AdamW")
    parser.add_argument("--lr", type=float, help="learning rate (default: 0.1 SGD, 1e-4 Adam, 1e-3 AdamW)")
    parser.add_argument("--weight-decay", type=float,
                        help="weight decay (default: 1e-4 SGD, 0 Adam, 1e-2 AdamW, decoupled)")
    parser.add_argument("--inference", action="store_true", help="export the forward pass only (eval mode)")
    parser.add_argument("--tf32", action="store_true",
                        help="matrix products on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32)")
    parser.add_argument("--target", choices=("cuda", "cpu"), default="cuda",
                        help="cuda: record the ops a CUDA GPU runs (fused dropout and attention, cuDNN LSTM; "
                             "gosim._gpu_ops); cpu: the ops of the CPU the model is traced on (for simulating "
                             "this machine's CPU)")
    parser.add_argument("--aux-logits", action="store_true", help="inception_v3, googlenet: keep the aux heads")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=("auto", "cpu", "meta"), default="auto",
                        help="run the traced ops on the CPU or only infer their shapes (meta); "
                             "auto: meta for transformer_encoder, cpu for the others")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--quiet", action="store_true", help="no progress or summary lines on stderr")
    parser.add_argument("--check", nargs="+", metavar="FILE", help="validate graph files and print a summary")
    opts = parser.parse_args(argv)
    if opts.check:
        return check(opts.check)
    if not opts.model or not opts.out:
        parser.error("--model and --out are required unless --check is given")
    try:
        import torch
    except ImportError:
        raise SystemExit(f"gosim.torch: PyTorch is not importable from this Python ({sys.executable}); "
                         "use one that has it (Debian: apt-get install python3-torch python3-torchvision, "
                         "then /usr/bin/python3 or a venv made with --system-site-packages)") from None
    from . import torch as gosim_torch
    if opts.threads:
        torch.set_num_threads(opts.threads)
    torch.manual_seed(opts.seed)
    torch.use_deterministic_algorithms(True)
    if opts.name is None:
        opts.name = os.path.basename(opts.out).split(".json")[0]
    from_file = ".py:" in opts.model
    if from_file:
        built = build_from_file(opts.model)
        model, x, y, loss_fn = built["model"], built["inputs"], built.get("targets"), built.get("loss_fn")
        optimizer, desc, extra = built.get("optimizer"), dict(built.get("metadata") or {}), {}
        opts.name = built.get("name") or opts.name
    else:
        model, x, y, loss_fn, desc = build_named(opts, torch)
        optimizer = "adam" if opts.model == "transformer_encoder" else "sgd"
        extra = {"model": opts.model, "batch": opts.batch}
    if opts.optimizer is not None:
        optimizer = None if opts.optimizer == "none" else opts.optimizer
    if opts.inference:
        loss_fn = y = optimizer = None
    if optimizer is not None and (opts.lr is not None or opts.weight_decay is not None):
        settings = {"kind": optimizer} if isinstance(optimizer, str) else optimizer
        if not isinstance(settings, dict):
            raise SystemExit("gosim.torch: --lr and --weight-decay apply to a named optimizer")
        optimizer = {**settings, **{k: v for k, v in (("lr", opts.lr), ("weight_decay", opts.weight_decay))
                                    if v is not None}}
    if opts.device == "auto":
        # Debian's torch multiplies matrices with the reference BLAS (well
        # under 1 GFLOP/s), so the matmul-heavy transformer is traced on the
        # meta device; torch 1.13 has no meta kernel for convolution_backward.
        opts.device = "meta" if opts.model == "transformer_encoder" else "cpu"
    if opts.device != "cpu":
        model.to(opts.device)
        x, y = _to(x, opts.device), _to(y, opts.device)
    try:
        graph = gosim_torch.export_json(model, x, loss_fn=loss_fn, optimizer=optimizer, targets=y,
                                        name=opts.name, seed=opts.seed, log=None if opts.quiet else log, tf32=opts.tf32,
                                        progress=False if opts.quiet else None, target=opts.target)
    except Error as e:
        raise SystemExit(f"gosim.torch: {e}") from None
    meta = graph["metadata"]
    meta.update(desc)
    if not from_file:
        meta.update(extra, trace_device=opts.device)
        try:
            import torchvision
            meta.update(torchvision_version=torchvision.__version__)
        except ImportError:
            pass
    gosim_torch.save(graph, opts.out)
    print(json.dumps({"file": opts.out, "bytes": os.path.getsize(opts.out), **gosim_torch.summarize(graph)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
