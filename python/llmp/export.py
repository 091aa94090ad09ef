# SPDX-License-Identifier: BSD-3-Clause
"""llmp.export - an llmp checkpoint's model as Hugging Face safetensors shards.

    python -m llmp.export CKPT_DIR OUT_DIR --model config.json [--step N] [--dtype bf16]
    llmp ckpt export --format hf CKPT_DIR OUT_DIR --model ...      (the same, from the C tool)

    import llmp.export
    llmp.export.export_hf("/scratch/run1", "/scratch/run1-hf", model="layers=32,hidden=4096,...")

Reads the step's global view (`index.h5`: each tensor whole, whatever tp
saved it) with h5py, after checking the MANIFEST's own CRC-32C, its shard
list against the files there and index.h5's CRC-32C (the per-slice
checksums are `llmp ckpt verify`'s job). Writes `model-0000k-of-0000N.safetensors`,
`model.safetensors.index.json` and `config.json`. Needs NumPy and h5py, not torch.

- Names: Megatron-Core's GPTModel names (`decoder.layers.I.self_attention.linear_qkv.weight`
  ...) or Hugging Face's own are mapped to Hugging Face's Llama names
  (transformers `src/transformers/models/llama/modeling_llama.py`); a model
  tensor that has no mapping is refused by name. Tensors outside the model's
  prefix (optimizer state, momentum) are left out.
- Fused tensors: Megatron's linear_qkv holds, for each query group, the
  group's query heads, then its key head, then its value head (NVIDIA/Megatron-LM
  `megatron/core/transformer/attention.py`, `get_query_key_value_tensors`);
  SwiGLU's linear_fc1 holds [gate; up] on each tp rank (`megatron/core/transformer/mlp.py`,
  `glu`: the first half goes through the activation), so its global view is
  [gate_0; up_0; gate_1; up_1; ...] for the tp the MANIFEST's layout names.
- Streaming: each output tensor is a list of row ranges of source tensors,
  copied in blocks of at most 64 MiB through buffers allocated once; a
  shard's header is known before its first byte (the shapes are), so it is
  written front to back and closed when full. Memory stays three blocks
  (192 MiB), whatever the model's size.
- Atomic: everything goes into OUT_DIR.tmp-XXXXXX, each file fsynced, then the
  directory is renamed to OUT_DIR; OUT_DIR must not exist.

The safetensors format: 8 bytes little-endian header length, a JSON header
({name: {dtype, shape, data_offsets}}, "__metadata__"), then the raw bytes,
row-major little-endian (huggingface/safetensors README, "Format").
"""

import argparse
import json
import os
import re
import shutil
import struct
import sys
import tempfile

import numpy as np

BLOCK_BYTES = 64 << 20
_PIECE = 1 << 16  # elements a bf16 rounding pass takes at a time
DEFAULT_SHARD_SIZE = 5 * 10**9  # transformers' save_pretrained default ("5GB")


class ExportError(ValueError):
    """An input the export cannot turn into a Hugging Face model, named."""


# ----------------------------------------------------------------- CRC-32C

def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli) of bytes, as the MANIFEST records it."""
    crc ^= 0xFFFFFFFF
    t = _CRC_TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# ------------------------------------------------------------- the checkpoint

class Step:
    """One complete step of a checkpoint root: its MANIFEST checked, its index opened."""

    def __init__(self, root, step=None):
        self.root = os.fspath(root)
        if not os.path.isdir(self.root):
            raise ExportError("llmp export: %s is not a directory" % self.root)
        if os.path.exists(os.path.join(self.root, "MANIFEST")):
            raise ExportError("llmp export: %s is one checkpoint, not a checkpoint root: give the "
                              "directory that holds it (and --step N)" % self.root)
        steps = sorted((int(m.group(1)) for m in (re.fullmatch(r"step-(\d+)", n)
                                                   for n in os.listdir(self.root)) if m), reverse=True)
        if step is None:
            if not steps:
                raise ExportError("llmp export: %s holds no complete checkpoint (no step-N)" % self.root)
            step = steps[0]
        elif step not in steps:
            tmp = [n for n in os.listdir(self.root) if n.startswith("step-%d." % step)]
            raise ExportError("llmp export: %s has no complete step-%d%s" % (
                self.root, step, " (%s is there: a save in progress, killed, or damaged)" % tmp[0] if tmp else ""))
        self.step = step
        self.dir = os.path.join(self.root, "step-%d" % step)
        self._read_manifest()

    def _read_manifest(self):
        path = os.path.join(self.dir, "MANIFEST")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ExportError("llmp export: %s: %s" % (path, e.strerror))
        body, sep, last = data.rstrip(b"\n").rpartition(b"\n")
        m = re.fullmatch(rb"end 0x([0-9a-f]{8})", last)
        if not sep or not m:
            raise ExportError("llmp export: %s has no 'end' line: the step is incomplete" % path)
        if crc32c(body + b"\n") != int(m.group(1), 16):
            raise ExportError("llmp export: %s fails its own CRC-32C: the file is damaged" % path)
        self.tp = 1
        self.shards, index = {}, None
        for line in body.decode().splitlines():
            w = line.split()
            if w[0] == "layout":
                t = re.search(r"(?:^|,)tp=(\d+)", w[1])
                self.tp = int(t.group(1)) if t else 1
            elif w[0] == "shard":
                self.shards[w[1]] = int(w[2])
            elif w[0] == "index":
                index = (int(w[1]), int(w[2], 16))
        names = [n for n in os.listdir(self.dir) if re.fullmatch(r"shard-\d+\.h5", n)]
        for n in names:
            rank = n[len("shard-"):-len(".h5")]
            if rank not in self.shards:
                raise ExportError("llmp export: %s/%s is not in the MANIFEST" % (self.dir, n))
        for rank, size in self.shards.items():
            p = os.path.join(self.dir, "shard-%s.h5" % rank)
            try:
                got = os.stat(p).st_size
            except OSError as e:
                raise ExportError("llmp export: %s: %s (the MANIFEST lists it)" % (p, e.strerror))
            if got != size:
                raise ExportError("llmp export: %s holds %d bytes, the MANIFEST says %d" % (p, got, size))
        p = os.path.join(self.dir, "index.h5")
        with open(p, "rb") as f:
            data = f.read()
        if index is None or len(data) != index[0] or crc32c(data) != index[1]:
            raise ExportError("llmp export: %s does not match its MANIFEST line (size or CRC-32C): "
                              "the file is damaged" % p)
        self.index_path = p

    def open(self):
        import h5py
        self.h5 = h5py.File(self.index_path, "r")
        self.tensors = {}

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                self.tensors[name] = obj
        self.h5.visititems(visit)
        return self

    def close(self):
        self.h5.close()


# ------------------------------------------------------------ the model

# Published config.json values (huggingface.co/meta-llama/Meta-Llama-3-8B,
# Meta-Llama-3-70B, Llama-2-7b-hf), the presets llmp plan's --model also names.
PRESETS = {
    "llama3-8b": dict(family="llama", layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8,
                      vocab=128256, seq=8192, rope_theta=500000.0, norm_eps=1e-5, tied=False),
    "llama3-70b": dict(family="llama", layers=80, hidden=8192, ffn=28672, heads=64, kv_heads=8,
                       vocab=128256, seq=8192, rope_theta=500000.0, norm_eps=1e-5, tied=False),
    "llama2-7b": dict(family="llama", layers=32, hidden=4096, ffn=11008, heads=32, kv_heads=32,
                      vocab=32000, seq=4096, rope_theta=10000.0, norm_eps=1e-5, tied=False),
}

FAMILIES = {  # family: (architecture, model_type, q/k/v biases)
    "llama": ("LlamaForCausalLM", "llama", False),
    "mistral": ("MistralForCausalLM", "mistral", False),
    "qwen2": ("Qwen2ForCausalLM", "qwen2", True),
}

_KEYS = {"layers": int, "hidden": int, "ffn": int, "heads": int, "kv-heads": int, "head-dim": int,
         "vocab": int, "seq": int, "rope-theta": float, "norm-eps": float, "tied": int, "family": str,
         "mlp": str}
# llmp plan's keys about training, not the model's shape: accepted and not used.
_TRAINING_KEYS = {"gbs", "mbs", "experts", "topk", "moe-ffn", "shared-ffn", "dense-layers", "distopt",
                  "zero", "sp", "flash", "dropout", "overlap-grad", "overlap-param", "engine", "grad",
                  "overhead", "recompute", "recompute-layers", "recompute-moe-act",
                  "offload-layers"}


def parse_model(text):
    """--model as llmp plan reads it: a preset, a config.json path, or keys; keys after a preset
    or a file replace its values. Returns (description dict, the config.json's dict or None)."""
    parts = [p for p in str(text).split(",") if p]
    if not parts:
        raise ExportError("llmp export: --model is empty")
    desc, hf = {}, None
    head = parts[0]
    if "=" not in head:
        parts = parts[1:]
        if "/" in head or head.endswith(".json"):
            try:
                with open(head) as f:
                    hf = json.load(f)
            except (OSError, ValueError) as e:
                raise ExportError("llmp export: --model %s: %s" % (head, e))
            desc = _from_config(hf, head)
        elif head in PRESETS:
            desc = dict(PRESETS[head])
        else:
            raise ExportError("llmp export: --model: '%s' is neither a preset (%s) nor a config.json path "
                              "nor key=value" % (head, ", ".join(PRESETS)))
    for p in parts:
        key, eq, value = p.partition("=")
        if not eq:
            raise ExportError("llmp export: --model: '%s' is not key=value" % p)
        if key in _TRAINING_KEYS:
            continue
        if key not in _KEYS:
            raise ExportError("llmp export: --model: unknown key '%s' (%s)" % (key, ", ".join(sorted(_KEYS))))
        try:
            v = _KEYS[key](value)
        except ValueError:
            raise ExportError("llmp export: --model: %s=%s is not a %s" % (key, value, _KEYS[key].__name__))
        if key == "mlp":
            if v != "swiglu":
                raise ExportError("llmp export: --model: mlp=%s: the Llama, Mistral and Qwen2 families "
                                  "export SwiGLU MLPs only" % v)
            continue
        desc[key.replace("-", "_")] = bool(v) if key == "tied" else v
    desc.setdefault("family", "llama")
    if desc["family"] not in FAMILIES:
        raise ExportError("llmp export: family '%s' is not supported (%s)" % (desc["family"], ", ".join(FAMILIES)))
    for key in ("heads",):
        if key not in desc:
            raise ExportError("llmp export: --model says no '%s': the checkpoint's shapes do not tell "
                              "it (give a config.json or %s=N)" % (key, key))
    desc.setdefault("kv_heads", desc["heads"])
    desc.setdefault("rope_theta", 10000.0)
    desc.setdefault("norm_eps", 1e-5)
    return desc, hf


def _from_config(cfg, path):
    mt = cfg.get("model_type", "llama")
    family = {"llama": "llama", "mistral": "mistral", "qwen2": "qwen2"}.get(mt)
    if family is None:
        raise ExportError("llmp export: %s: model_type '%s' is not supported (llama, mistral, qwen2)" % (path, mt))
    if cfg.get("hidden_act", "silu") != "silu":
        raise ExportError("llmp export: %s: hidden_act '%s': only SwiGLU (silu) MLPs export" % (path, cfg["hidden_act"]))
    d = dict(family=family)
    for key, name in (("layers", "num_hidden_layers"), ("hidden", "hidden_size"), ("ffn", "intermediate_size"),
                      ("heads", "num_attention_heads"), ("kv_heads", "num_key_value_heads"),
                      ("head_dim", "head_dim"), ("vocab", "vocab_size"), ("seq", "max_position_embeddings"),
                      ("rope_theta", "rope_theta"), ("norm_eps", "rms_norm_eps"), ("tied", "tie_word_embeddings")):
        if cfg.get(name) is not None:
            d[key] = cfg[name]
    return d


# ----------------------------------------------------------- the name map

class Piece:
    """Rows [start, stop) of source tensor `src` (dimension 0; a 1-d tensor's elements)."""
    __slots__ = ("src", "start", "stop")

    def __init__(self, src, start, stop):
        self.src, self.start, self.stop = src, start, stop


class Out:
    """One tensor of the export: its Hugging Face name, shape and where its rows come from."""

    def __init__(self, name, shape, pieces):
        self.name, self.shape, self.pieces = name, tuple(int(s) for s in shape), pieces


_MEGATRON = [  # (source pattern after the prefix, kind, Hugging Face name)
    (r"embedding\.word_embeddings\.weight", "vocab", "model.embed_tokens.weight"),
    (r"output_layer\.weight", "vocab", "lm_head.weight"),
    (r"decoder\.final_layernorm\.weight", "copy", "model.norm.weight"),
    (r"decoder\.layers\.(\d+)\.self_attention\.linear_qkv\.(weight|bias)", "qkv", "model.layers.{0}.self_attn.{{}}_proj.{1}"),
    (r"decoder\.layers\.(\d+)\.self_attention\.linear_qkv\.layer_norm_weight", "copy", "model.layers.{0}.input_layernorm.weight"),
    (r"decoder\.layers\.(\d+)\.input_layernorm\.weight", "copy", "model.layers.{0}.input_layernorm.weight"),
    (r"decoder\.layers\.(\d+)\.self_attention\.linear_proj\.weight", "copy", "model.layers.{0}.self_attn.o_proj.weight"),
    (r"decoder\.layers\.(\d+)\.mlp\.linear_fc1\.layer_norm_weight", "copy", "model.layers.{0}.post_attention_layernorm.weight"),
    (r"decoder\.layers\.(\d+)\.pre_mlp_layernorm\.weight", "copy", "model.layers.{0}.post_attention_layernorm.weight"),
    (r"decoder\.layers\.(\d+)\.mlp\.linear_fc1\.weight", "fc1", "model.layers.{0}.mlp.{{}}_proj.weight"),
    (r"decoder\.layers\.(\d+)\.mlp\.linear_fc2\.weight", "copy", "model.layers.{0}.mlp.down_proj.weight"),
]
_HF = [  # Hugging Face's own names: kept (the vocabulary still trimmed)
    (r"model\.embed_tokens\.weight", "vocab", "model.embed_tokens.weight"),
    (r"lm_head\.weight", "vocab", "lm_head.weight"),
    (r"model\.norm\.weight", "copy", "model.norm.weight"),
    (r"model\.layers\.(\d+)\.((?:self_attn\.[qkvo]_proj|mlp\.(?:gate|up|down)_proj)\.(?:weight|bias)"
     r"|input_layernorm\.weight|post_attention_layernorm\.weight)", "copy", "model.layers.{0}.{1}"),
]
_EMBEDDINGS = ("embedding.word_embeddings.weight", "model.embed_tokens.weight")
_OPTIMIZER_WORDS = ("optim", "opt/", "exp_avg", "momentum", "master", "fp32")


def find_prefix(names):
    """The prefix the model's tensors share (the one in front of the embedding's name)."""
    cands = sorted({n[:-len(e)] for n in names for e in _EMBEDDINGS if n.endswith(e)})
    if len(cands) > 1:
        model = [c for c in cands if not any(w in c.lower() for w in _OPTIMIZER_WORDS)]
        cands = model if len(model) == 1 else cands
    if len(cands) != 1:
        raise ExportError("llmp export: %s: give --prefix (the model's tensors' prefix)" % (
            "no tensor is an embedding (%s)" % " or ".join(_EMBEDDINGS) if not cands
            else "several tensors are embeddings, under the prefixes %s" % ", ".join(repr(c) for c in cands)))
    return cands[0]


def plan(step_tensors, desc, tp, prefix=None, swiglu_tp=None):
    """The export's tensors, in Hugging Face's order, and the finished description.

    step_tensors: {name: h5py dataset (or anything with .shape)}. Refuses, naming the tensor, what
    it cannot map, a shape that does not fit the description, a layer's missing part."""
    names = sorted(step_tensors)
    prefix = find_prefix(names) if prefix is None else prefix
    model = [n for n in names if n.startswith(prefix) and not n.endswith("._extra_state")]
    desc = dict(desc)
    emb = next((n for n in model if n[len(prefix):] in _EMBEDDINGS), None)
    if emb is None:
        raise ExportError("llmp export: no embedding under prefix '%s'" % prefix)
    vocab_padded, hidden = step_tensors[emb].shape
    _agree(desc, "hidden", hidden, emb)
    desc.setdefault("vocab", vocab_padded)
    if desc["vocab"] > vocab_padded:
        raise ExportError("llmp export: --model says vocab=%d, but %s has %d rows" % (desc["vocab"], emb, vocab_padded))
    heads, kv = desc["heads"], desc["kv_heads"]
    if heads % kv:
        raise ExportError("llmp export: %d heads are not a multiple of %d kv-heads" % (heads, kv))
    desc.setdefault("head_dim", hidden // heads)
    hd = desc["head_dim"]
    fc1_tp = swiglu_tp or tp
    outs, layers = [], {}
    for n in model:
        short = n[len(prefix):]
        for table in (_MEGATRON, _HF):
            hit = next(((m, kind, hf) for p, kind, hf in table for m in [re.fullmatch(p, short)] if m), None)
            if hit:
                break
        if not hit:
            raise ExportError("llmp export: tensor '%s' has no Hugging Face name in the %s family's map "
                              "(Megatron-Core GPTModel or Hugging Face names; --prefix '%s')"
                              % (n, desc["family"], prefix))
        m, kind, hf = hit
        hf = hf.format(*m.groups())
        shape = step_tensors[n].shape
        if m.groups():
            layers.setdefault(int(m.group(1)), []).append(hf)
        if kind == "copy":
            outs.append(Out(hf, shape, [Piece(n, 0, shape[0])]))
        elif kind == "vocab":
            if tuple(shape) != (vocab_padded, hidden):
                raise ExportError("llmp export: %s is %s, the embedding %s" % (n, tuple(shape), (vocab_padded, hidden)))
            outs.append(Out(hf, (desc["vocab"], hidden), [Piece(n, 0, desc["vocab"])]))
        elif kind == "qkv":
            per = heads // kv * hd  # a group's query rows
            if shape[0] != kv * (per + 2 * hd):
                raise ExportError("llmp export: %s has %d rows; %d heads and %d kv-heads of %d give %d"
                                  % (n, shape[0], heads, kv, hd, kv * (per + 2 * hd)))
            g = per + 2 * hd
            rest = tuple(shape[1:])
            outs.append(Out(hf.format("q"), (heads * hd,) + rest, [Piece(n, i * g, i * g + per) for i in range(kv)]))
            outs.append(Out(hf.format("k"), (kv * hd,) + rest, [Piece(n, i * g + per, i * g + per + hd) for i in range(kv)]))
            outs.append(Out(hf.format("v"), (kv * hd,) + rest, [Piece(n, i * g + per + hd, (i + 1) * g) for i in range(kv)]))
        elif kind == "fc1":
            rows = shape[0]
            if rows % (2 * fc1_tp):
                raise ExportError("llmp export: %s has %d rows: not gate and up halves on %d tp ranks"
                                  % (n, rows, fc1_tp))
            _agree(desc, "ffn", rows // 2, n)
            part = rows // fc1_tp  # one tp rank's [gate_r; up_r]
            half = part // 2
            outs.append(Out(hf.format("gate"), (rows // 2, shape[1]), [Piece(n, r * part, r * part + half) for r in range(fc1_tp)]))
            outs.append(Out(hf.format("up"), (rows // 2, shape[1]), [Piece(n, r * part + half, (r + 1) * part) for r in range(fc1_tp)]))
    found = sorted(layers)
    _agree(desc, "layers", len(found), "decoder layers")
    if found != list(range(len(found))):
        raise ExportError("llmp export: layers %s are there, not 0..%d" % (found, len(found) - 1))
    have = {o.name for o in outs}
    bias = FAMILIES[desc["family"]][2]
    for i in found:
        want = ["model.layers.%d.%s" % (i, s) for s in (
            "input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight",
            "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
            "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight")]
        want += ["model.layers.%d.self_attn.%s_proj.bias" % (i, p) for p in "qkv"] if bias else []
        for w in want:
            if w not in have:
                raise ExportError("llmp export: layer %d has no tensor for %s" % (i, w))
    extra = sorted(n for n in have if n.endswith(".bias")) if not bias else []
    if extra:
        raise ExportError("llmp export: the checkpoint gives %s, but the %s family has no q/k/v biases "
                          "(family=qwen2 has)" % (extra[0], desc["family"]))
    if "model.norm.weight" not in have:
        raise ExportError("llmp export: no final norm (decoder.final_layernorm.weight or model.norm.weight)")
    tied = "lm_head.weight" not in have
    if desc.get("tied") is not None and bool(desc["tied"]) != tied:
        raise ExportError("llmp export: --model says tied=%d, but the checkpoint %s output layer "
                          "(output_layer.weight or lm_head.weight)" % (desc["tied"], "has no" if tied else "has an"))
    desc["tied"] = tied
    if len(have) != len(outs):
        dup = sorted(o.name for o in outs if [p.name for p in outs].count(o.name) > 1)[0]
        raise ExportError("llmp export: two tensors give %s" % dup)
    order = {"model.embed_tokens.weight": (-1, ""), "model.norm.weight": (1 << 40, "a"), "lm_head.weight": (1 << 40, "b")}

    def key(o):
        if o.name in order:
            return order[o.name]
        return (int(o.name.split(".")[2]), o.name)
    outs.sort(key=key)
    left_out = [n for n in names if n not in model]
    return outs, desc, prefix, left_out


def _agree(desc, key, value, what):
    if desc.get(key) is not None and int(desc[key]) != int(value):
        raise ExportError("llmp export: --model says %s=%d, but %s gives %d" % (key, desc[key], what, value))
    desc[key] = int(value)


def config_json(desc, dtype):
    arch, model_type, bias = FAMILIES[desc["family"]]
    cfg = {
        "architectures": [arch], "model_type": model_type,
        "hidden_size": desc["hidden"], "intermediate_size": desc["ffn"],
        "num_hidden_layers": desc["layers"], "num_attention_heads": desc["heads"],
        "num_key_value_heads": desc["kv_heads"], "head_dim": desc["head_dim"],
        "vocab_size": desc["vocab"], "max_position_embeddings": desc.get("seq") or 4096,
        "rms_norm_eps": desc["norm_eps"], "rope_theta": desc["rope_theta"],
        "hidden_act": "silu", "tie_word_embeddings": desc["tied"], "torch_dtype": _HF_DTYPE[dtype],
        "initializer_range": 0.02, "use_cache": True,
    }
    if model_type == "llama":
        cfg.update(attention_bias=False, mlp_bias=False)
    elif model_type == "mistral":
        cfg.update(sliding_window=None)
    else:
        cfg.update(use_sliding_window=False)
    return cfg


# --------------------------------------------------------- safetensors out

_ST_DTYPE = {"fp32": "F32", "fp16": "F16", "bf16": "BF16"}
_HF_DTYPE = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
_SIZE = {"fp32": 4, "fp16": 2, "bf16": 2}


def convert(block, dtype, scratch=None):
    """A float32 block as the export's dtype: a C-contiguous little-endian array, in scratch's
    memory when given (a _Scratch; the block itself is left as it is)."""
    block = np.ascontiguousarray(block, dtype="<f4")
    if dtype == "fp32":
        return block
    n = block.size
    out = scratch.u16[:n].reshape(block.shape) if scratch else np.empty(block.shape, "<u2")
    if dtype == "fp16":
        np.copyto(out.view("<f2"), block, casting="unsafe")
        return out.view("<f2")
    # bfloat16: float32's top 16 bits, rounded to nearest even; a NaN stays a (quiet) NaN.
    # In pieces of 64K elements, so the five passes over each stay in the CPU's cache (2x faster
    # than passes over the whole 64 MiB block here).
    u, o = block.reshape(-1).view("<u4"), out.reshape(-1)
    tmp = scratch.u32 if scratch else np.empty(min(n, _PIECE), "<u4")
    for at in range(0, n, _PIECE):
        ui = u[at:at + _PIECE]
        t = tmp[:ui.size]
        np.right_shift(ui, 16, out=t)
        t &= 1
        t += 0x7FFF
        t += ui  # no wrap: the largest finite magnitude, 0xFF7FFFFF, plus 0x8000 stays below 2^32
        t >>= 16
        np.copyto(o[at:at + _PIECE], t, casting="unsafe")
    if np.isnan(block.max()):  # max is NaN when any element is: one pass, no mask
        nan = np.isnan(block)
        out[nan] = ((u[nan] >> 16) | 0x40).astype("<u2")
    return out


class _Scratch:
    """The memory blocks go through, allocated once: fresh 64 MiB arrays for every block cost more
    in page faults than the copy itself (h5py's read_direct into a kept buffer: 8x faster here)."""

    def __init__(self):
        words = BLOCK_BYTES // 4
        self.read = np.empty(words, "<f4")
        self.whole = np.empty(words, "<f4")
        self.u32 = np.empty(_PIECE, "<u4")
        self.u16 = np.empty(words, "<u2")


def split_shards(outs, dtype, max_shard_size):
    """Consecutive tensors into shards of at most max_shard_size data bytes (a larger tensor alone)."""
    shards, cur, size = [], [], 0
    for o in outs:
        n = int(np.prod(o.shape)) * _SIZE[dtype]
        if cur and size + n > max_shard_size:
            shards.append(cur)
            cur, size = [], 0
        cur.append(o)
        size += n
    if cur:
        shards.append(cur)
    return shards


def _header(tensors, dtype):
    head, at = {"__metadata__": {"format": "pt"}}, 0
    for o in tensors:
        n = int(np.prod(o.shape)) * _SIZE[dtype]
        head[o.name] = {"dtype": _ST_DTYPE[dtype], "shape": list(o.shape), "data_offsets": [at, at + n]}
        at += n
    text = json.dumps(head, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    return text, at


class _Source:
    """Reads rows of the checkpoint's tensors as float32 (HDF5 converts bfloat16, float16 and
    float64) into kept buffers; a tensor of at most one block is read once, whole, and kept
    while the next outputs cut it (q, k and v from one linear_qkv: one read, not 3 x groups)."""

    def __init__(self, tensors):
        self.tensors = tensors
        self.scratch = _Scratch()
        self.name, self.whole = None, None

    def rows(self, name, start, stop):
        ds = self.tensors[name]
        if ds.dtype.kind != "f":
            raise ExportError("llmp export: tensor '%s' is %s: the model's tensors must be floats"
                              % (name, ds.dtype))
        if self.name == name:
            return self.whole[start:stop]
        shape = tuple(ds.shape)
        if int(np.prod(shape)) * 4 <= BLOCK_BYTES:
            self.whole = self.scratch.whole[:int(np.prod(shape))].reshape(shape)
            ds.read_direct(self.whole)
            self.name = name
            return self.whole[start:stop]
        block = self.scratch.read[:(stop - start) * int(np.prod(shape[1:]))].reshape((stop - start,) + shape[1:])
        ds.read_direct(block, np.s_[start:stop], None)
        return block

    def row_bytes(self, name):
        return int(np.prod(self.tensors[name].shape[1:])) * 4


def _write_tensor(f, o, src, dtype):
    """Stream one output tensor: its pieces' rows in blocks of at most BLOCK_BYTES."""
    for p in o.pieces:
        step = max(1, BLOCK_BYTES // max(src.row_bytes(p.src), 1))
        for r in range(p.start, p.stop, step):
            block = convert(src.rows(p.src, r, min(r + step, p.stop)), dtype, src.scratch)
            f.write(memoryview(block).cast("B"))


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def export_hf(ckpt_dir, out_dir, model, step=None, dtype="bf16", max_shard_size=DEFAULT_SHARD_SIZE,
              prefix=None, swiglu_tp=None, log=None):
    """Export step `step` (None: the newest complete) of the checkpoint root ckpt_dir into out_dir
    (which must not exist) as Hugging Face safetensors. model: --model text. Returns a summary dict."""
    if dtype not in _ST_DTYPE:
        raise ExportError("llmp export: --dtype %s: expected fp32, fp16 or bf16" % dtype)
    if max_shard_size < 1:
        raise ExportError("llmp export: --max-shard-size must be at least 1 byte")
    out_dir = os.path.abspath(os.fspath(out_dir))
    if os.path.lexists(out_dir):
        raise ExportError("llmp export: %s exists: the export makes it, whole, and replaces nothing" % out_dir)
    desc, hf_config = parse_model(model)
    st = Step(ckpt_dir, step).open()
    try:
        outs, desc, prefix, left_out = plan(st.tensors, desc, st.tp, prefix, swiglu_tp)
        shards = split_shards(outs, dtype, max_shard_size)
        source = _Source(st.tensors)
        parent = os.path.dirname(out_dir)
        tmp = tempfile.mkdtemp(prefix=os.path.basename(out_dir) + ".tmp-", dir=parent)
        try:
            total, weight_map = 0, {}
            for k, tensors in enumerate(shards, 1):
                fname = "model-%05d-of-%05d.safetensors" % (k, len(shards))
                head, size = _header(tensors, dtype)
                with open(os.path.join(tmp, fname), "wb") as f:
                    f.write(struct.pack("<Q", len(head)))
                    f.write(head)
                    for o in tensors:
                        _write_tensor(f, o, source, dtype)
                        weight_map[o.name] = fname
                    if f.tell() != 8 + len(head) + size:
                        raise ExportError("llmp export: %s came out %d bytes, not %d" % (fname, f.tell(), 8 + len(head) + size))
                    f.flush()
                    os.fsync(f.fileno())
                total += size
                if log:
                    log("llmp export: %s: %d tensors, %d bytes" % (fname, len(tensors), size))
            cfg = config_json(desc, dtype)
            if hf_config:  # the user's own config.json, its keys kept; the shapes checked above
                cfg = dict(hf_config, **{k: cfg[k] for k in ("torch_dtype", "tie_word_embeddings", "vocab_size")})
            for name, doc in (("config.json", cfg),
                              ("model.safetensors.index.json", {"metadata": {"total_size": total},
                                                                "weight_map": weight_map})):
                with open(os.path.join(tmp, name), "w") as f:
                    json.dump(doc, f, indent=2, sort_keys=name != "config.json")
                    f.write("\n")
                    f.flush()
                    os.fsync(f.fileno())
            _fsync_dir(tmp)
            if os.path.lexists(out_dir):
                raise ExportError("llmp export: %s appeared during the export; the export is left in %s" % (out_dir, tmp))
            os.rename(tmp, out_dir)
            _fsync_dir(parent)
        except BaseException as e:
            if not (isinstance(e, ExportError) and "is left in" in str(e)):
                shutil.rmtree(tmp, ignore_errors=True)
            raise
    finally:
        st.close()
    return {"step": st.step, "out": out_dir, "tensors": len(outs), "shards": len(shards), "bytes": total,
            "prefix": prefix, "left_out": left_out, "tied": desc["tied"], "vocab": desc["vocab"]}


# ---------------------------------------------------------- checking an export

def check_hf(out_dir):
    """Refuse an export that is not whole: the index's every tensor in exactly one shard that holds
    it, every shard's bytes all there; returns the number of tensors. Raises ExportError naming the file."""
    path = os.path.join(out_dir, "model.safetensors.index.json")
    try:
        with open(path) as f:
            index = json.load(f)
        weight_map = index["weight_map"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ExportError("llmp export: %s: not an export's index (%s)" % (path, e))
    seen, total = {}, 0
    for fname in sorted(set(weight_map.values())):
        p = os.path.join(out_dir, fname)
        try:
            with open(p, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                head = json.loads(f.read(n))
                size = os.fstat(f.fileno()).st_size
        except (OSError, ValueError, struct.error) as e:
            raise ExportError("llmp export: %s: unreadable safetensors header (%s)" % (p, e))
        end = 0
        for name, t in head.items():
            if name == "__metadata__":
                continue
            if name in seen:
                raise ExportError("llmp export: %s is in both %s and %s" % (name, seen[name], fname))
            seen[name] = fname
            b, e = t["data_offsets"]
            if e - b != int(np.prod(t["shape"])) * {"F32": 4, "F16": 2, "BF16": 2}[t["dtype"]]:
                raise ExportError("llmp export: %s: %s's offsets do not fit its shape" % (p, name))
            end = max(end, e)
            total += e - b
        if size != 8 + n + end:
            raise ExportError("llmp export: %s holds %d bytes, its header says %d: truncated" % (p, size, 8 + n + end))
    if seen != weight_map:
        diff = sorted(set(seen.items()) ^ set(weight_map.items()))[0]
        raise ExportError("llmp export: %s and the shards disagree on %s" % (path, diff[0]))
    if index.get("metadata", {}).get("total_size") != total:
        raise ExportError("llmp export: %s: total_size is not the shards' %d bytes" % (path, total))
    return len(seen)


# -------------------------------------------------------------------- main

def _size(text):
    m = re.fullmatch(r"(\d+)\s*([KMGT]?)(i?B)?", text.strip(), re.I)
    if not m:
        raise argparse.ArgumentTypeError("'%s' is not a size (5GB, 500MiB, 1048576)" % text)
    unit = m.group(2).upper()
    base = 1024 if (m.group(3) or "").lower() == "ib" else 1000
    return int(m.group(1)) * base ** " KMGT".index(unit or " ")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="llmp ckpt export", description=(
        "An llmp checkpoint's model as Hugging Face safetensors shards, config.json and "
        "model.safetensors.index.json, written into OUT_DIR.tmp-XXXXXX and renamed to OUT_DIR."))
    ap.add_argument("--format", default="hf", choices=["hf"], help="hf: Hugging Face safetensors (the only one)")
    ap.add_argument("ckpt_dir", metavar="CKPT_DIR", help="the checkpoint root (it holds step-N)")
    ap.add_argument("out_dir", metavar="OUT_DIR", help="the export's directory; must not exist")
    ap.add_argument("--model", required=True, metavar="FILE|SPEC",
                    help="the model as llmp plan's --model: a Hugging Face config.json, a preset (%s) or keys "
                         "layers=,hidden=,ffn=,heads=,kv-heads=,vocab=,seq=,rope-theta=,norm-eps=,tied=,"
                         "family=llama|mistral|qwen2" % ",".join(PRESETS))
    ap.add_argument("--step", type=int, help="the step (default: the newest complete)")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--max-shard-size", type=_size, default=DEFAULT_SHARD_SIZE, metavar="SIZE",
                    help="data bytes per safetensors file (default 5GB)")
    ap.add_argument("--prefix", help="the model tensors' prefix in the checkpoint (default: the one in "
                                     "front of the embedding); other tensors are left out")
    ap.add_argument("--swiglu-tp", type=int, metavar="N",
                    help="the tp that split linear_fc1 into [gate; up] parts (default: the MANIFEST's)")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    log = None if a.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    try:
        r = export_hf(a.ckpt_dir, a.out_dir, a.model, a.step, a.dtype, a.max_shard_size, a.prefix,
                      a.swiglu_tp, log)
    except (ExportError, OSError) as e:
        print(e if isinstance(e, ExportError) else "llmp export: %s" % e, file=sys.stderr)
        return 2 if isinstance(e, ExportError) else 1
    if not a.quiet:
        print("llmp export: step %d -> %s: %d tensors in %d shards, %d bytes (%s); vocab %d, %s; "
              "left out %d tensors outside prefix '%s'" % (
                  r["step"], r["out"], r["tensors"], r["shards"], r["bytes"], a.dtype, r["vocab"],
                  "tied embeddings" if r["tied"] else "own output layer", len(r["left_out"]), r["prefix"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
