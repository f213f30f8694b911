#!/usr/bin/env python3
"""Exports the bench suite's models (configs/suites/bench.yaml) that are not
among the calibration's exported graphs.

The bench suite is real models' training steps exported with
gosim.torch.export: the models recorded on the H100 and H200, whose graphs
calibration/data/gpu/graphs already holds (made by
calibration/hardware/export_recorded.py), and the models of MODELS below,
exported here with the same exporter: torchvision classification and
segmentation nets, transformer encoders and GPT-style decoders of the
recorder's code at other sizes, and the in-repo model code of
graphs/bench/models.py (Llama-like decoders, a mixture of experts, GNMT-8
sized LSTM and GRU encoder-decoders unrolled step by step, GCN and
GraphSAGE, a diffusion U-Net).

    PYTHONPATH=python /usr/bin/python3 graphs/bench/export_bench.py --out /tmp/bench [--models a,b]
    then, per graph: build/bin/gosim graphs export /tmp/bench/NAME.json.gz --out /tmp/NAME.gosimgraph
                     gzip -9 -n -c /tmp/NAME.gosimgraph > graphs/bench/NAME.gosimgraph.gz
    (graphs/bench/README.md has the loop and the provenance copy.)

Traced on this machine's CPU (every op runs once: sizes are chosen so that
the whole suite exports in minutes on two cores) with target="cuda": the
graph holds the ops a CUDA GPU runs. OUT/provenance.json
lists per graph the model code, settings, optimizer, autocast, PyTorch
version, node counts and the sha256 of the JSON export. A model that fails
is reported and the others go on; the exit status is 1 then.
"""
import argparse
import importlib.util
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


recorder = load("record_gpu_traces", os.path.join(ROOT, "calibration", "hardware", "record_gpu_traces.py"))
# The calibration exporter's step module (forward + loss, under autocast),
# optimizers and file digest: the bench's graphs are made the same way.
recorded = load("export_recorded", os.path.join(ROOT, "calibration", "hardware", "export_recorded.py"))
models = load("bench_models", os.path.join(HERE, "models.py"))
tv = recorder.torchvision_model

# name: (builder, trace device, autocast). Sizes: per-GPU batches of
# training runs; the recorder's transformer is pre-norm with explicit
# matmul + softmax attention (encoders) or scaled_dot_product_attention
# (causal decoders).
MODELS = {
    # torchvision classification (SGD, momentum 0.9)
    "resnet18": (tv("resnet18", 64, 224), "cpu", None),
    "resnet101": (tv("resnet101", 32, 224), "cpu", None),
    "wide_resnet50_2": (tv("wide_resnet50_2", 32, 224), "cpu", None),
    "vgg11": (tv("vgg11", 32, 224), "cpu", None),
    "vgg19": (tv("vgg19", 32, 224), "cpu", None),
    "densenet169": (tv("densenet169", 32, 224), "cpu", None),
    "mobilenet_v3_large": (tv("mobilenet_v3_large", 64, 224), "cpu", None),
    "squeezenet1_1": (tv("squeezenet1_1", 64, 224), "cpu", None),
    "mnasnet1_0": (tv("mnasnet1_0", 64, 224), "cpu", None),
    "regnet_y_400mf": (tv("regnet_y_400mf", 64, 224), "cpu", None),
    "regnet_x_1_6gf": (tv("regnet_x_1_6gf", 32, 224), "cpu", None),
    "googlenet": (tv("googlenet", 32, 224, aux_logits=False, init_weights=False), "cpu", None),
    "convnext_small": (tv("convnext_small", 32, 224), "cpu", None),
    "efficientnet_b1": (tv("efficientnet_b1", 32, 240), "cpu", None),
    "vit_b_32": (tv("vit_b_32", 64, 224), "cpu", None),
    "swin_t": (tv("swin_t", 32, 224), "cpu", None),
    # torchvision segmentation (ResNet-50 and MobileNet-v3 backbones)
    "fcn_resnet50": (models.segmentation("fcn_resnet50", 8, 256), "cpu", None),
    "deeplabv3_resnet50": (models.segmentation("deeplabv3_resnet50", 8, 256), "cpu", None),
    "lraspp_mobilenet_v3": (models.segmentation("lraspp_mobilenet_v3_large", 16, 256), "cpu", None),
    # transformer encoders (BERT-like) and decoders (GPT-2-like): the recorder's code
    "bert_small": (recorder.transformer(30522, 512, 8, 2048, 4, 128, 64, causal=False, sdpa=False), "cpu", None),
    "bert_large": (recorder.transformer(30522, 1024, 16, 4096, 24, 128, 8, causal=False, sdpa=False), "cpu",
                   None),
    "gpt2_medium": (recorder.transformer(50257, 1024, 16, 4096, 24, 512, 2, causal=True, sdpa=True), "cpu", None),
    # Llama-like decoders
    "llama_160m": (models.llama(32000, 768, 12, 4, 2048, 12, 512, 4), "cpu", None),
    "llama_160m_bf16": (models.llama(32000, 768, 12, 4, 2048, 12, 512, 4), "cpu", "bf16"),
    "llama_400m": (models.llama(32000, 1024, 16, 4, 2816, 24, 512, 2), "cpu", None),
    # mixture of experts
    "moe_8x": (models.moe(32000, 512, 8, 2048, 8, 6, 256, 8), "cpu", None),
    "moe_16x": (models.moe(32000, 512, 8, 2048, 16, 8, 256, 4), "cpu", None),
    # recurrent encoder-decoders at GNMT-8 size, unrolled
    "gnmt8_s30": (models.gnmt(32000, 1024, 8, 30, 64), "cpu", None),
    "gnmt8_s200": (models.gnmt(32000, 1024, 8, 200, 16), "cpu", None),
    "gru4_s50": (models.gnmt(32000, 1024, 4, 50, 64, cell="gru"), "cpu", None),
    # GNNs (a random graph of 50k nodes and 500k edges)
    "gcn3": (models.gnn(50000, 500000, 128, 128, 40, 3, sage=False), "cpu", None),
    "sage3": (models.gnn(50000, 500000, 128, 128, 40, 3, sage=True), "cpu", None),
    # diffusion U-Nets
    "unet_64": (models.unet(64, (1, 2, 2, 4), 64, 32), "cpu", None),
    "unet_128": (models.unet(96, (1, 2, 2, 4), 128, 8), "cpu", None),
    # recommender (the recorder's DLRM at another size)
    "dlrm_large": (recorder.dlrm(13, 26, 100000, 128, [512, 256], [1024, 512, 256], 4096, 4), "cpu", None),
}


# The calibration's exported graphs (calibration/data/gpu/graphs) that the
# suite takes as they are.
CALIBRATION = ["alexnet", "bert", "bert_bf16", "convnext_tiny", "densenet121", "dlrm", "efficientnet_b0",
               "efficientnet_b0_bf16", "gpt", "gpt_bf16", "inception_v3", "inception_v3_bf16", "lstm_lm",
               "mobilenet_v2", "resnet50", "resnet50_b8", "resnet50_bf16", "resnext50_32x4d",
               "resnext50_32x4d_bf16", "seq2seq", "shufflenet_v2", "vgg16", "vgg16_bf16", "vit_b_16",
               "vit_b_16_bf16", "wavenet"]

# Split by family: a family is a model code lineage (the same builder at
# other sizes, depths, batches or dtypes, and nets built on it, e.g. the
# segmentation nets on ResNet-50), and no family is in two splits.
FAMILIES = {
    "resnet": ("test", ["resnet18", "resnet50", "resnet50_b8", "resnet50_bf16", "resnet101", "resnext50_32x4d",
                        "resnext50_32x4d_bf16", "wide_resnet50_2", "fcn_resnet50", "deeplabv3_resnet50"]),
    "transformer": ("test", ["bert", "bert_bf16", "bert_small", "bert_large", "gpt", "gpt_bf16", "gpt2_medium"]),
    "rnn_encoder_decoder": ("test", ["seq2seq", "gnmt8_s30", "gnmt8_s200", "gru4_s50"]),
    "unet": ("test", ["unet_64", "unet_128"]),
    "mobilenet": ("valid", ["mobilenet_v2", "mobilenet_v3_large", "lraspp_mobilenet_v3", "mnasnet1_0"]),
    "efficientnet": ("valid", ["efficientnet_b0", "efficientnet_b0_bf16", "efficientnet_b1"]),
    "convnext": ("valid", ["convnext_tiny", "convnext_small"]),
    "swin": ("valid", ["swin_t"]),
    "moe": ("valid", ["moe_8x", "moe_16x"]),
    "dlrm": ("valid", ["dlrm", "dlrm_large"]),
    "vgg": ("train", ["vgg11", "vgg16", "vgg16_bf16", "vgg19"]),
    "densenet": ("train", ["densenet121", "densenet169"]),
    "shufflenet": ("train", ["shufflenet_v2"]),
    "squeezenet": ("train", ["squeezenet1_1"]),
    "regnet": ("train", ["regnet_y_400mf", "regnet_x_1_6gf"]),
    "inception": ("train", ["inception_v3", "inception_v3_bf16", "googlenet"]),
    "alexnet": ("train", ["alexnet"]),
    "vit": ("train", ["vit_b_16", "vit_b_16_bf16", "vit_b_32"]),
    "llama": ("train", ["llama_160m", "llama_160m_bf16", "llama_400m"]),
    "gnn": ("train", ["gcn3", "sage3"]),
    "wavenet": ("train", ["wavenet"]),
    "lstm_lm": ("train", ["lstm_lm"]),
}


def write_suite(path):
    """configs/suites/bench.yaml from FAMILIES, for the graph files present."""
    lines = ["# The bench suite: real models' training steps exported with gosim.torch.export",
             "# (graphs/bench/README.md; written by graphs/bench/export_bench.py --suite).",
             "# Split by family (model code lineage), no family in two splits; `gosim graphs",
             "# leaks configs/suites/bench.yaml` finds no pair across them.",
             "name: bench",
             "description: real models' training steps (torchvision, transformers, Llama-like, MoE, GNMT-8, "
             "GNN, U-Net, DLRM), exported from PyTorch",
             "graphs:"]
    count = {"train": 0, "valid": 0, "test": 0}
    for family, (split, names) in FAMILIES.items():
        for name in names:
            if name in CALIBRATION:
                file = f"calibration/data/gpu/graphs/{name}.gosimgraph.gz"
            else:
                file = f"graphs/bench/{name}.gosimgraph.gz"
            if not os.path.exists(os.path.join(ROOT, file)):
                print(f"write_suite: {name}: {file} missing, left out", flush=True)
                continue
            lines.append(f"  - {{name: {name}, file: {file}, split: {split}}}  # family {family}")
            count[split] += 1
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)
    print(f"{path}: {count['train']} train, {count['valid']} valid, {count['test']} test", flush=True)


def export_one(name, gosim_torch, out, provenance, prov_path):
    started = time.time()
    build, device, amp = MODELS[name]
    torch.manual_seed(0)
    model, make, loss, opt_name, settings = build()
    dev = torch.device(device)
    model = model.to(dev)
    inputs = make(dev)
    data = gosim_torch.export_json(recorded.Step(model, loss, amp), inputs, loss_fn=lambda out: out,
                                   optimizer=recorded.optimizer_for(opt_name, model), name=f"{name}_train",
                                   log=lambda line: print(f"  {name}: {line}", flush=True), progress=False)
    data["metadata"].update({"model": name, "settings": settings, "optimizer": opt_name, "autocast": amp,
                             "trace_device": device, "model_code": "graphs/bench/export_bench.py"})
    path = os.path.join(out, f"{name}.json.gz")
    gosim_torch.save(data, path)
    ops = sum(1 for n in data["nodes"] if n["op"] not in ("Input", "Parameter", "Buffer", "OptimizerState"))
    provenance["graphs"] = [g for g in provenance["graphs"] if g["model"] != name] + [{
        "model": name, "file": os.path.basename(path), "nodes": len(data["nodes"]), "ops": ops,
        "optimizer": opt_name, "autocast": amp, "trace_device": device, "settings": settings,
        "torch": torch.__version__, "sha256": recorded.sha256(path), "export_s": round(time.time() - started, 1)}]
    tmp = prov_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(provenance, f, indent=1, sort_keys=True)
    os.replace(tmp, prov_path)
    print(f"{name}: {len(data['nodes'])} nodes in {time.time() - started:.1f} s", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="folder for NAME.json.gz and provenance.json")
    parser.add_argument("--models", help=f"comma-separated, of: {', '.join(MODELS)} (default: all)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: PyTorch's default)")
    parser.add_argument("--suite", metavar="FILE", help="write the suite (configs/suites/bench.yaml) and export nothing")
    args = parser.parse_args()
    if args.suite:
        write_suite(args.suite)
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    if not args.out:
        parser.error("--out is required unless --suite is given")
    names = args.models.split(",") if args.models else list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"export_bench.py: unknown model {unknown[0]} (known: {', '.join(MODELS)})")
    try:
        import gosim.torch as gosim_torch  # the package, installed or on PYTHONPATH
    except ImportError:
        sys.exit("export_bench.py: the gosim package is not importable: PYTHONPATH=python (or pip install .)")
    os.makedirs(args.out, exist_ok=True)
    prov_path = os.path.join(args.out, "provenance.json")
    provenance = json.load(open(prov_path)) if os.path.exists(prov_path) else {
        "format": "gosim.exported_graphs", "version": 1, "script": "graphs/bench/export_bench.py", "graphs": []}
    failed = []
    for name in names:
        try:
            export_one(name, gosim_torch, args.out, provenance, prov_path)
        except Exception as e:  # one model's failure must not lose the others
            print(f"{name}: FAILED {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
            failed.append(name)
    if failed:
        sys.exit(f"export_bench.py: {len(failed)} failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
