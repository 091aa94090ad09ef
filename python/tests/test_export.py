# SPDX-License-Identifier: BSD-3-Clause
"""test_export.py - `llmp ckpt export --format hf` and llmp.export.export_hf.

A small Llama-shaped model (2 layers, 4 query heads in 2 groups, SwiGLU,
vocabulary 50 padded to 64) is trained and saved in Megatron-Core's layout
by tp=2 ranks through llmp.checkpoint (llama_tp.py, under Open MPI's mpirun,
the PMIx server libllmp joins), with its momentum under opt/. The export,
loaded by transformers' LlamaForCausalLM, must give the training-side
forward's logits (fp32, within 1e-5): a QKV or fc1 split, a tp merge or a
trimmed row that is wrong changes them. The rest checks the files against
the safetensors format as written in its README (parsed here by hand and
by the safetensors package), the bf16 default against torch's own rounding,
the atomic rename, and that bad input is refused by name.
"""

import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import PACKAGE_ROOT, free_port, libllmp_path, llmp_tool

import llmp.export as ex

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama_tp.py")
MODEL = "layers=2,hidden=64,ffn=96,heads=4,kv-heads=2,vocab=50,seq=128,rope-theta=10000,norm-eps=1e-5"
LAYER_NAMES = ["input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight",
               "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
               "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"]


def hf_names(tied):
    names = ["model.embed_tokens.weight", "model.norm.weight"] + (["lm_head.weight"] if not tied else [])
    return sorted(names + ["model.layers.%d.%s" % (i, n) for i in range(2) for n in LAYER_NAMES])


def save_tp2(root, ref, variant=None):
    """llama_tp.py on 2 ranks under mpirun: step 3 under root, the reference logits in ref."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PMIX_", "OMPI_"))}
    env.pop("LLMP_PARALLEL", None)
    env.pop("LLMP_LAYOUT_FILE", None)
    env.update({"LLMP_LIBRARY": libllmp_path(), "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONPATH": os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)})
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2"]
    if os.getuid() == 0:
        cmd.append("--allow-run-as-root")
    for name in ("LLMP_LIBRARY", "OMP_NUM_THREADS", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE"):
        cmd += ["-x", name]
    cmd += [sys.executable, WORKER, str(root), "3", str(ref)] + ([variant] if variant else [])
    done = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "llama_tp 0 ok" in done.stdout and "llama_tp 1 ok" in done.stdout, out[-4000:]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("export")
    save_tp2(d / "ckpt", d / "ref.npz")
    return d


@pytest.fixture(scope="module")
def saved_tied(tmp_path_factory):
    d = tmp_path_factory.mktemp("export-tied")
    save_tp2(d / "ckpt", d / "ref.npz", "tied")
    return d


@pytest.fixture(scope="module")
def saved_qwen2(tmp_path_factory):
    d = tmp_path_factory.mktemp("export-qwen2")
    save_tp2(d / "ckpt", d / "ref.npz", "qwen2")
    return d


def tool_export(*args):
    env = dict(os.environ, LLMP_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p))
    return subprocess.run([llmp_tool(), "ckpt", "export"] + [str(a) for a in args], env=env,
                          capture_output=True, text=True, timeout=300)


def hf_logits(out_dir, tokens):
    import transformers
    model = transformers.AutoModelForCausalLM.from_pretrained(str(out_dir), dtype=torch.float32)
    with torch.no_grad():
        return model(torch.from_numpy(tokens)).logits.numpy()


def read_safetensors(path):
    """{name: (dtype, shape, raw bytes)} of one file, read as the format's README describes it."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    head = json.loads(data[8:8 + n])
    head.pop("__metadata__", None)
    body = data[8 + n:]
    assert sum(e - b for b, e in (t["data_offsets"] for t in head.values())) == len(body), path
    return {k: (t["dtype"], t["shape"], body[t["data_offsets"][0]:t["data_offsets"][1]]) for k, t in head.items()}


# ---------------------------------------------------------------- the model

def test_transformers_gives_training_logits_fp32(saved):
    out = saved / "hf-fp32"
    done = tool_export("--format", "hf", saved / "ckpt", out, "--model", MODEL, "--dtype", "fp32")
    assert done.returncode == 0, done.stderr
    assert "left out 15 tensors outside prefix 'model/'" in done.stdout, done.stdout
    ref = np.load(saved / "ref.npz")
    got = hf_logits(out, ref["tokens"])
    assert got.shape == ref["logits"].shape == (1, 12, 50)
    err = float(np.abs(got - ref["logits"]).max())
    print("max |logits difference| fp32: %.3g (logits up to %.3g)" % (err, float(np.abs(ref["logits"]).max())))
    assert err < 1e-5
    cfg = json.loads((out / "config.json").read_text())
    assert (cfg["vocab_size"], cfg["tie_word_embeddings"], cfg["num_key_value_heads"]) == (50, False, 2)
    mistral = saved / "hf-mistral"  # the same tensors under Mistral's architecture
    ex.export_hf(saved / "ckpt", mistral, MODEL + ",family=mistral", dtype="fp32")
    assert json.loads((mistral / "config.json").read_text())["architectures"] == ["MistralForCausalLM"]
    assert float(np.abs(hf_logits(mistral, ref["tokens"]) - ref["logits"]).max()) < 1e-5


def test_tied_embeddings_from_python(saved_tied):
    out = saved_tied / "hf"
    r = ex.export_hf(saved_tied / "ckpt", out, MODEL, dtype="fp32")
    assert r["tied"] and r["tensors"] == 20
    assert ex.check_hf(out) == 20
    names = sorted(n for f in os.listdir(out) if f.endswith(".safetensors") for n in read_safetensors(out / f))
    assert names == hf_names(tied=True)
    assert json.loads((out / "config.json").read_text())["tie_word_embeddings"] is True
    ref = np.load(saved_tied / "ref.npz")
    assert float(np.abs(hf_logits(out, ref["tokens"]) - ref["logits"]).max()) < 1e-5
    with pytest.raises(ex.ExportError, match="tied=0, but the checkpoint has no output layer"):
        ex.export_hf(saved_tied / "ckpt", saved_tied / "hf2", MODEL + ",tied=0")


def test_qwen2_family_with_qkv_biases(saved_qwen2):
    out = saved_qwen2 / "hf"
    r = ex.export_hf(saved_qwen2 / "ckpt", out, MODEL + ",family=qwen2", dtype="fp32")
    assert r["tensors"] == 27  # 21 and a q, k and v bias a layer
    cfg = json.loads((out / "config.json").read_text())
    assert (cfg["model_type"], cfg["architectures"]) == ("qwen2", ["Qwen2ForCausalLM"])
    ref = np.load(saved_qwen2 / "ref.npz")
    err = float(np.abs(hf_logits(out, ref["tokens"]) - ref["logits"]).max())
    print("max |logits difference| qwen2 fp32: %.3g" % err)
    assert err < 1e-5
    with pytest.raises(ex.ExportError, match=r"gives model.layers.0.self_attn.[qkv]_proj.bias, but the llama family has no q/k/v biases"):
        ex.export_hf(saved_qwen2 / "ckpt", saved_qwen2 / "hf-llama", MODEL)


def test_bf16_default_is_torch_rounding_of_fp32(saved):
    from safetensors.torch import load_file
    fp32 = saved / "hf-fp32-ref"
    bf16 = saved / "hf-bf16"
    ex.export_hf(saved / "ckpt", fp32, MODEL, dtype="fp32")
    ex.export_hf(saved / "ckpt", bf16, MODEL)  # bf16 by default
    a = {}
    for f in os.listdir(fp32):
        if f.endswith(".safetensors"):
            a.update(load_file(str(fp32 / f)))
    b = {}
    for f in os.listdir(bf16):
        if f.endswith(".safetensors"):
            b.update(load_file(str(bf16 / f)))
    assert sorted(a) == sorted(b) == hf_names(tied=False)
    for name, t in a.items():
        assert b[name].dtype == torch.bfloat16, name
        assert torch.equal(b[name].view(torch.int16), t.to(torch.bfloat16).view(torch.int16)), name
    assert json.loads((bf16 / "config.json").read_text())["torch_dtype"] == "bfloat16"


def test_index_covers_every_tensor_once_in_small_shards(saved):
    out = saved / "hf-small"
    limit = 40000
    r = ex.export_hf(saved / "ckpt", out, MODEL, dtype="fp16", max_shard_size=limit)
    index = json.loads((out / "model.safetensors.index.json").read_text())
    files = sorted(f for f in os.listdir(out) if f.endswith(".safetensors"))
    assert len(files) == r["shards"] > 3
    assert files == ["model-%05d-of-%05d.safetensors" % (k, len(files)) for k in range(1, len(files) + 1)]
    seen = {}
    for f in files:
        tensors = read_safetensors(out / f)
        body = sum(len(raw) for _, _, raw in tensors.values())
        assert body <= limit or len(tensors) == 1, f
        for name, (dtype, shape, raw) in tensors.items():
            assert name not in seen and dtype == "F16"
            seen[name] = f
    assert seen == index["weight_map"]
    assert sorted(seen) == hf_names(tied=False)
    assert index["metadata"]["total_size"] == r["bytes"] == sum(
        len(raw) for f in files for _, _, raw in read_safetensors(out / f).values())
    # Shapes: the vocabulary trimmed, q/k/v and gate/up split, nothing of opt/ there.
    shapes = {n: s for f in files for n, (_, s, _) in read_safetensors(out / f).items()}
    assert shapes["model.embed_tokens.weight"] == shapes["lm_head.weight"] == [50, 64]
    assert shapes["model.layers.1.self_attn.q_proj.weight"] == [64, 64]
    assert shapes["model.layers.1.self_attn.k_proj.weight"] == [32, 64]
    assert shapes["model.layers.1.mlp.gate_proj.weight"] == shapes["model.layers.1.mlp.up_proj.weight"] == [96, 64]


def test_qkv_and_fc1_split_from_the_global_view(saved):
    """q/k/v and gate/up against index.h5's global view, cut here by Megatron's rules."""
    import h5py
    out = saved / "hf-split"
    ex.export_hf(saved / "ckpt", out, MODEL, dtype="fp32")
    t = {n: np.frombuffer(raw, "<f4").reshape(s) for f in os.listdir(out) if f.endswith(".safetensors")
         for n, (_, s, raw) in read_safetensors(out / f).items()}
    with h5py.File(saved / "ckpt" / "step-3" / "index.h5", "r") as f:
        qkv = f["model/decoder.layers.1.self_attention.linear_qkv.weight"][...]
        fc1 = f["model/decoder.layers.1.mlp.linear_fc1.weight"][...]
    groups = qkv.reshape(2, 4 * 16, 64)  # 2 groups of [q head, q head, k, v] x 16 rows
    assert np.array_equal(t["model.layers.1.self_attn.q_proj.weight"], groups[:, :32].reshape(64, 64))
    assert np.array_equal(t["model.layers.1.self_attn.k_proj.weight"], groups[:, 32:48].reshape(32, 64))
    assert np.array_equal(t["model.layers.1.self_attn.v_proj.weight"], groups[:, 48:].reshape(32, 64))
    ranks = fc1.reshape(2, 2, 48, 64)  # tp rank, [gate; up], 48 rows each
    assert np.array_equal(t["model.layers.1.mlp.gate_proj.weight"], ranks[:, 0].reshape(96, 64))
    assert np.array_equal(t["model.layers.1.mlp.up_proj.weight"], ranks[:, 1].reshape(96, 64))


# ------------------------------------------------------------ atomic output

def test_failed_export_leaves_nothing(saved, monkeypatch):
    calls = []

    def fail_on_third(f, o, src, dtype):
        calls.append(o.name)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(f, o, src, dtype)
    real = ex._write_tensor
    monkeypatch.setattr(ex, "_write_tensor", fail_on_third)
    with pytest.raises(OSError):
        ex.export_hf(saved / "ckpt", saved / "hf-failed", MODEL, max_shard_size=10000)
    assert not os.path.exists(saved / "hf-failed")
    assert not [n for n in os.listdir(saved) if n.startswith("hf-failed")]


def test_killed_export_is_never_out_dir(saved):
    """SIGKILL in the middle: only OUT_DIR.tmp-XXXXXX is left, which no loader is pointed at."""
    code = ("import llmp.export as ex, os, signal\n"
            "real = ex._write_tensor\n"
            "n = [0]\n"
            "def w(*a):\n"
            "    n[0] += 1\n"
            "    if n[0] == 5: os.kill(os.getpid(), signal.SIGKILL)\n"
            "    real(*a)\n"
            "ex._write_tensor = w\n"
            "ex.export_hf(%r, %r, %r, max_shard_size=10000)\n" % (str(saved / "ckpt"), str(saved / "hf-killed"), MODEL))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120)
    assert done.returncode == -9
    assert not os.path.exists(saved / "hf-killed")
    left = [n for n in os.listdir(saved) if n.startswith("hf-killed.tmp-")]
    assert len(left) == 1
    with pytest.raises(ex.ExportError, match="not an export's index"):
        ex.check_hf(saved / left[0])


def test_truncated_or_tampered_export_refused(saved):
    good = saved / "hf-check"
    ex.export_hf(saved / "ckpt", good, MODEL, max_shard_size=30000)
    assert ex.check_hf(good) == 21
    bad = saved / "hf-truncated"
    shutil.copytree(good, bad)
    victim = bad / ("model-00002-of-%05d.safetensors" % len([f for f in os.listdir(bad) if f.endswith(".safetensors")]))
    with open(victim, "r+b") as f:
        f.truncate(os.path.getsize(victim) - 2)
    with pytest.raises(ex.ExportError, match="model-00002-of-.*truncated"):
        ex.check_hf(bad)
    idx = bad / "model.safetensors.index.json"
    shutil.copy(good / victim.name, victim)
    doc = json.loads(idx.read_text())
    doc["weight_map"]["model.layers.9.mlp.up_proj.weight"] = victim.name
    idx.write_text(json.dumps(doc))
    with pytest.raises(ex.ExportError, match="disagree on model.layers.9.mlp.up_proj.weight"):
        ex.check_hf(bad)


# ---------------------------------------------------------------- bad input

def test_bad_input_named(saved):
    root = saved / "ckpt"
    done = tool_export("--help")
    assert done.returncode == 0 and "--max-shard-size" in done.stdout and "OUT_DIR" in done.stdout
    done = tool_export(root, saved / "x", "--model", MODEL, "--step", "7")
    assert done.returncode == 2 and "has no complete step-7" in done.stderr
    done = tool_export(root, saved / "x", "--model", MODEL, "--format", "gguf")
    assert done.returncode == 2 and "the one format is hf, not 'gguf'" in done.stderr
    done = tool_export(root / "step-3", saved / "x", "--model", MODEL)
    assert done.returncode == 2 and "is one checkpoint, not a checkpoint root" in done.stderr
    (saved / "exists").mkdir()
    done = tool_export(root, saved / "exists", "--model", MODEL)
    assert done.returncode == 2 and "exists: the export makes it" in done.stderr
    done = tool_export(root, saved / "x", "--model", MODEL + ",family=gpt2")
    assert done.returncode == 2 and "family 'gpt2' is not supported" in done.stderr
    done = tool_export(root, saved / "x", "--model", "layers=2,hidden=64")
    assert done.returncode == 2 and "--model says no 'heads'" in done.stderr
    done = tool_export(root, saved / "x", "--model", MODEL.replace("kv-heads=2", "kv-heads=4"))
    assert done.returncode == 2 and "linear_qkv.weight has 128 rows; 4 heads and 4 kv-heads" in done.stderr
    done = tool_export(root, saved / "x", "--model", MODEL.replace("ffn=96", "ffn=128"))
    assert done.returncode == 2 and "--model says ffn=128, but model/decoder.layers.0.mlp.linear_fc1.weight gives 96" in done.stderr
    assert not os.path.exists(saved / "x")


def test_unknown_tensor_refused_by_name():
    class T:
        def __init__(self, *shape):
            self.shape = shape
    desc, _ = ex.parse_model(MODEL)
    t = {"m/embedding.word_embeddings.weight": T(64, 64), "m/decoder.final_layernorm.weight": T(64),
         "m/decoder.layers.0.mlp.router.weight": T(8, 64), "opt/exp_avg/embedding.word_embeddings.weight": T(64, 64)}
    with pytest.raises(ex.ExportError, match="tensor 'm/decoder.layers.0.mlp.router.weight' has no Hugging Face name"):
        ex.plan(t, desc, tp=1)
    del t["m/decoder.layers.0.mlp.router.weight"]
    t["m/decoder.layers.0.self_attention.linear_proj.weight"] = T(64, 64)
    with pytest.raises(ex.ExportError, match="layer 0 has no tensor for model.layers.0.input_layernorm.weight"):
        ex.plan(t, dict(desc, layers=1), tp=1)


def test_damaged_manifest_and_shard_refused(saved, tmp_path):
    root = tmp_path / "ckpt"
    shutil.copytree(saved / "ckpt", root)
    man = root / "step-3" / "MANIFEST"
    data = bytearray(man.read_bytes())
    data[20] ^= 1
    man.write_bytes(bytes(data))
    with pytest.raises(ex.ExportError, match="MANIFEST fails its own CRC-32C"):
        ex.export_hf(root, tmp_path / "o", MODEL)
    shutil.copy(saved / "ckpt" / "step-3" / "MANIFEST", man)
    with open(root / "step-3" / "shard-1.h5", "ab") as f:
        f.write(b"x")
    with pytest.raises(ex.ExportError, match="shard-1.h5 holds .* bytes, the MANIFEST says"):
        ex.export_hf(root, tmp_path / "o", MODEL)


def test_model_spec_grammar(tmp_path):
    d, hf = ex.parse_model("llama3-8b,vocab=128000")
    assert (d["layers"], d["kv_heads"], d["vocab"], hf) == (32, 8, 128000, None)
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "qwen2", "num_attention_heads": 4, "num_key_value_heads": 2,
                               "hidden_size": 64, "rope_theta": 1e6}))
    d, hf = ex.parse_model("%s,layers=2" % cfg)
    assert (d["family"], d["heads"], d["layers"], d["rope_theta"]) == ("qwen2", 4, 2, 1e6)
    for bad, why in (("nonesuch", "neither a preset"), ("heads=4,mlp=gelu", "SwiGLU MLPs only"),
                     ("heads=4,colour=red", "unknown key 'colour'"), ("heads=x", "heads=x is not a int")):
        with pytest.raises(ex.ExportError, match=why):
            ex.parse_model(bad)


def test_bf16_rounding_of_special_values():
    """convert() against torch's float32 -> bfloat16 (nearest even), infinities, -0, subnormals, NaN."""
    x = np.random.default_rng(1).standard_normal(100000).astype("<f4") * np.float32(1e3)
    x[:8] = [np.nan, np.inf, -np.inf, 3.4e38, -0.0, 1e-40, 1.00390625, 1.01171875]  # two ties
    ref = torch.from_numpy(x.copy()).to(torch.bfloat16)
    got = torch.from_numpy(ex.convert(x.copy(), "bf16").view(np.int16)).view(torch.bfloat16)
    assert torch.isnan(got[0]) and torch.equal(got[1:].view(torch.int16), ref[1:].view(torch.int16))
    frozen = x.copy()
    frozen.flags.writeable = False  # a cached tensor: converted through a copy, left as it was
    assert np.array_equal(ex.convert(frozen, "bf16"), ex.convert(x.copy(), "bf16"))
    assert np.array_equal(frozen[8:], x[8:])
