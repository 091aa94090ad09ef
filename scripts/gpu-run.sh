#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The device path on a real GPU, in one run of a few minutes: what only a GPU
# can show, each step's log in OUT_DIR (at most 8 files) and a summary.
#
#   scripts/gpu-run.sh KIT_DIR OUT_DIR [STEP...]
#
# KIT_DIR comes from scripts/gpu-kit.sh (built on the CPU machine). STEPs
# (default: all, in this order):
#   kernels  tests/gpu/gpu_kernels: the CUDA kernels against the C ones
#   bench    llmp bench --memory device (allreduce, allgather, reduce-scatter,
#            8 B to 1 GiB, one rank, results checked) against nccl-tests built
#            here from source on the same NCCL; algbw side by side; then the
#            small calls (8 B to 64 KiB) under each LLMP_DEVICE_TIMING mode
#            against nccl-tests, interleaved, repeated (tests/gpu/small_calls.py)
#   device   dev_check --connect on the real driver and NCCL; dev_ckpt's
#            device checkpoints (tests/device_ckpt.bats' sequences) on the real driver
#   torch    torch's own CUDA tensors through llmp.checkpoint (tests/gpu/torch_ckpt.py),
#            and a job's peak GPU memory in its metrics file, the program's and
#            NVML's, against torch's and nvidia-smi's (tests/gpu/job_peak.py)
#   site     tests/gpu/site_runs.py: a small GPT trained as a site's jobs at eight shapes,
#            llmp calibrate fitted on five runs' metrics directories, llmp plan's step
#            error on the other three before and after (site.log)
#   layers   tests/gpu/layer_probe.py: a Megatron-like layer's kept bytes and time at five
#            shapes, JSON lines in layers.jsonl (the fixture tests/gpu/layer-probe-h200.jsonl
#            came from here; cli.bats checks the step model's activations against it)
#   topo     llmp topo, --gdr, --gdr --nccl-dump of NCCL's own dump, the
#            driver's GPUDirect RDMA and dma-buf attributes (tests/gpu/cuda_attrs.py),
#            NVML's GPUs as the plugin's task check reads them (tests/gpu/nvml_probe)
# NCCL is PyTorch's (python3 -c 'import nvidia.nccl') unless LLMP_NCCL_LIBRARY is set.
set -uo pipefail
kit=$(cd "${1:?usage: gpu-run.sh KIT_DIR OUT_DIR}" && pwd)
out=${2:?usage: gpu-run.sh KIT_DIR OUT_DIR}
shift 2
steps=" ${*:-kernels bench device torch site layers topo} "
want() { [[ $steps == *" $1 "* ]]; }
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
step() { # NAME RC
	note "$1: $([ "$2" -eq 0 ] && echo passed || echo "FAILED ($2)")"
}

note "# $(date -u '+%F %T') $(uname -n) $(uname -r); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -n 1)"

# The kit's libraries that this machine lacks, alone on the loader's path:
# the machine's own (libz, libcrypto, ...) stay first for python and torch.
# PMIx is always the kit's (the one the build was tested with); a first step
# runs a singleton on this machine's own libpmix, where it has one.
rm -rf "$kit/lib/need" "$kit/lib/need-own-pmix"
mkdir -p "$kit/lib/need" "$kit/lib/need-own-pmix"
for f in "$kit"/lib/*.so*; do
	name=$(basename "$f")
	case $name in
	libpmix*) ln -sf "$f" "$kit/lib/need/$name" ;;
	*) ldconfig -p | grep -q "^[[:space:]]*$name " ||
		{ ln -sf "$f" "$kit/lib/need/$name" && ln -sf "$f" "$kit/lib/need-own-pmix/$name"; } ;;
	esac
done
machine_pmix=$(ldconfig -p | awk '/libpmix\.so\.2 / {print $NF; exit}')
if [ -n "$machine_pmix" ]; then
	LD_LIBRARY_PATH=$kit/lib/need-own-pmix${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout 60 \
		"$kit/bin/llmp" bench -b 8 -e 8 -n 1 -w 0 >"$tmp/own-pmix.log" 2>&1
	note "pmix (a singleton on this machine's $machine_pmix): $(grep -q '^ *8 ' "$tmp/own-pmix.log" && echo passed || echo "FAILED: $(tail -n 1 "$tmp/own-pmix.log")")"
fi
export LD_LIBRARY_PATH=$kit/lib/need${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export UCX_MODULE_DIR=$kit/lib/ucx PMIX_MCA_mca_base_component_path=$kit/lib/pmix
export LLMP_LIBRARY=$kit/lib/libllmp.so.0 PYTHONPATH=$src/python${PYTHONPATH:+:$PYTHONPATH}
if [ -z "${LLMP_NCCL_LIBRARY:-}" ]; then
	nccl_dir=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)
	export LLMP_NCCL_LIBRARY=$nccl_dir/lib/libnccl.so.2
fi
nccl_dir=$(dirname "$(dirname "$LLMP_NCCL_LIBRARY")")
note "# NCCL: $LLMP_NCCL_LIBRARY; kit libraries not on this machine: $(ls "$kit/lib/need" | wc -l)"
llmp=$kit/bin/llmp
export LLMP_DEVICE=nccl

# ---------------------------------------------------------------- kernels
if want kernels; then
	timeout 120 "$kit/bin/gpu_kernels" >"$out/kernels.log" 2>&1
	step kernels $?
fi

# ------------------------------------------------------------------ bench
if want bench; then
	bench=$out/bench.log
	: >"$bench"
	rc=0
	for c in allreduce allgather reduce_scatter; do
		echo "== llmp bench -c $c" >>"$bench"
		timeout 120 "$llmp" bench --memory device -c "$c" -b 8 -e 1G -f 2 -n 20 -w 5 >"$tmp/llmp-$c" 2>&1 || rc=1
		cat "$tmp/llmp-$c" >>"$bench"
		awk '$1 ~ /^[0-9]+$/ && $NF != 0 {bad = 1} END {exit !bad}' "$tmp/llmp-$c" && rc=1
	done
	step "bench (llmp, results checked)" $rc
	nt=$tmp/nccl-tests
	mkdir -p "$tmp/nccl/lib"
	ln -sf "$nccl_dir/include" "$tmp/nccl/include"
	ln -sf "$LLMP_NCCL_LIBRARY" "$tmp/nccl/lib/libnccl.so"
	cuda_home=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
	if timeout 240 make -C "$kit/nccl-tests/src" -j"$(nproc)" BUILDDIR="$nt" CUDA_HOME="$cuda_home" \
		NCCL_HOME="$tmp/nccl" NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" \
		"$nt/all_reduce_perf" "$nt/all_gather_perf" "$nt/reduce_scatter_perf" >"$tmp/nt-build.log" 2>&1; then
		rc=0
		for c in all_reduce all_gather reduce_scatter; do
			echo "== nccl-tests ${c}_perf" >>"$bench"
			LD_LIBRARY_PATH=$tmp/nccl/lib:$LD_LIBRARY_PATH timeout 120 "$nt/${c}_perf" -b 8 -e 1G -f 2 -g 1 \
				-n 20 -w 5 >"$tmp/nt-$c" 2>&1 || rc=1
			cat "$tmp/nt-$c" >>"$bench"
		done
		step "bench (nccl-tests)" $rc
		# algbw by size (one rank: busbw is 0 for a reduction): llmp's column 6, nccl-tests' out of place column 7.
		{
			echo "== algbw GB/s, llmp / nccl-tests, sizes >= 256 MiB"
			for pair in allreduce:all_reduce allgather:all_gather reduce_scatter:reduce_scatter; do
				l=${pair%%:*} n=${pair#*:}
				join <(awk '$1 ~ /^[0-9]+$/ {print $1, $6}' "$tmp/llmp-$l" | sort -k1,1) \
					<(awk '$1 ~ /^[0-9]+$/ {print $1, $7}' "$tmp/nt-$n" | sort -k1,1) |
					sort -n | awk -v c="$l" '$1 >= 268435456 {printf "%s %d llmp %.1f nccl-tests %.1f ratio %.3f\n", c, $1, $2, $3, ($3 > 0 ? $2 / $3 : 0)}'
			done
		} | tee -a "$summary" >>"$bench"
		echo "== small calls: llmp per LLMP_DEVICE_TIMING mode against nccl-tests" >>"$bench"
		LD_LIBRARY_PATH=$tmp/nccl/lib:$LD_LIBRARY_PATH timeout 300 python3 "$src/tests/gpu/small_calls.py" \
			"$llmp" "$nt" 3 >"$tmp/small" 2>&1
		rc=$?
		cat "$tmp/small" >>"$bench"
		sed -n '/^# median/,$p' "$tmp/small" >>"$summary"
		step "small calls (timing on, sampled, off against nccl-tests)" $rc
	else
		note "bench (nccl-tests): FAILED to build: $(tail -n 3 "$tmp/nt-build.log" | tr '\n' ' ')"
		cat "$tmp/nt-build.log" >>"$bench"
	fi
fi

# ----------------------------------------------------------------- device
if want device; then
	dev=$out/device.log
	: >"$dev"
	echo "== dev_check --connect" >>"$dev"
	timeout 120 "$kit/bin/dev_check" --connect >>"$dev" 2>&1
	step "device (dev_check --connect, real NCCL)" $?
	echo "== dev_check --connect --job: the metrics line's gdr, NCCL's own INFO log read back" >>"$dev"
	mkdir -p "$tmp/ckj"
	LLMP_CHECKPOINT=$tmp/ckj LLMP_METRICS=$tmp/m,every=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
		NCCL_DEBUG_FILE=$tmp/nccl-job.%h.%p timeout 120 "$kit/bin/dev_check" --connect --job >>"$dev" 2>&1
	rc=$?
	python3 -c 'import json, sys; print("gdr:", json.loads(open(sys.argv[1]).read().splitlines()[-1]).get("gdr"))' \
		"$tmp/m/rank-00000.jsonl" >>"$dev" 2>&1 || rc=1
	step "device (metrics gdr from NCCL's log)" $rc
	ck=$tmp/ckpt
	rc=0
	dev_ckpt() {
		echo "== dev_ckpt $*" >>"$dev"
		FAKE_CUDA=libcuda.so.1 timeout 120 "$kit/bin/dev_ckpt" "$ck" "$@" >>"$dev" 2>&1 || rc=1
	}
	load_everywhere() {
		for layout in rows cols window; do dev_ckpt load "$1" into=device layout=$layout; done
		dev_ckpt load "$1" into=host layout=window
	}
	dev_ckpt save 10
	load_everywhere 10
	dev_ckpt save 15 async nocontext
	dev_ckpt load 15 into=device layout=window nocontext
	dev_ckpt save 20 async overwrite count=3 prepare
	load_everywhere 22
	dev_ckpt save 30 staging=600
	load_everywhere 30
	dev_ckpt save 31 staging=600 async overwrite
	load_everywhere 31
	dev_ckpt save 33 staging=600 files=node
	load_everywhere 33
	echo "== llmp ckpt verify" >>"$dev"
	"$llmp" ckpt verify "$ck" >>"$dev" 2>&1 || rc=1
	step "device (dev_ckpt on the real driver)" $rc
fi

# ------------------------------------------------------------------ torch
if want torch; then
	timeout 180 python3 "$src/tests/gpu/torch_ckpt.py" "$tmp/torch-ckpt" >"$out/torch.log" 2>&1
	step "torch (CUDA tensors through llmp.checkpoint)" $?
	timeout 300 python3 "$src/tests/gpu/job_peak.py" "$tmp/job-peak" >"$tmp/peak" 2>&1
	rc=$?
	tee -a "$summary" <"$tmp/peak" >>"$out/torch.log"
	step "peak (a job's peak GPU memory by the program and by NVML)" $rc
fi

# ------------------------------------------------------------------- site
if want site; then
	timeout 420 python3 "$src/tests/gpu/site_runs.py" "$llmp" "$tmp/site" >"$out/site.log" 2>&1
	rc=$?
	grep -E '^(#|site-runs: held-out|h200:|  [a-z]|plugstack|[a-z0-9-]+ +(fit|held-out) )' "$out/site.log" >>"$summary"
	step "site (llmp calibrate from a site's runs on this GPU)" $rc
fi

# ----------------------------------------------------------------- layers
if want layers; then
	timeout 240 python3 "$src/tests/gpu/layer_probe.py" --iters 10 \
		gpt-4k:hidden=4096,heads=32,ffn=16384,seq=4096,mbs=1,dropout=1,layers=2 \
		l3-8b:hidden=4096,heads=32,kv=8,ffn=14336,mlp=swiglu,seq=8192,dropout=0,layers=2 \
		l3-8b-m2:hidden=4096,heads=32,kv=8,ffn=14336,mlp=swiglu,seq=8192,mbs=2,dropout=0,layers=2 \
		l3-70b:hidden=8192,heads=64,kv=8,ffn=28672,mlp=swiglu,seq=8192,dropout=0,layers=1 \
		gpt3-175b:hidden=12288,heads=96,ffn=49152,seq=2048,dropout=1,layers=1 >"$out/layers.jsonl" 2>&1
	rc=$?
	grep -q '"error"' "$out/layers.jsonl" && rc=1
	step "layers (kept bytes and time of five layer shapes)" $rc
fi

# ------------------------------------------------------------------- topo
if want topo; then
	topo=$out/topo.log
	{
		echo "== nvidia-smi topo -m"
		nvidia-smi topo -m 2>&1
		echo "== nvml_probe (what the plugin's task check reads)"
		"$kit/bin/nvml_probe" 2>&1
		echo "== cuda_attrs.py"
		python3 "$src/tests/gpu/cuda_attrs.py" 2>&1
		echo "== llmp topo"
		"$llmp" topo 2>&1
		echo "== llmp topo --format json"
		"$llmp" topo --format json 2>&1
	} >"$topo"
	NCCL_TOPO_DUMP_FILE=$out/nccl-topo.xml NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,NET,ENV \
		NCCL_DEBUG_FILE=$tmp/nccl-info.%p timeout 60 "$llmp" bench --memory device -b 8 -e 8 -n 1 -w 0 >/dev/null 2>&1
	cat "$tmp"/nccl-info.* >"$tmp/nccl-info-all.log" 2>/dev/null
	{
		echo "== llmp topo --gdr"
		"$llmp" topo --gdr 2>&1
		echo "(exit $?)"
		echo "== llmp topo --gdr --nccl-dump"
		if [ -s "$out/nccl-topo.xml" ]; then
			"$llmp" topo --gdr --nccl-dump "$out/nccl-topo.xml" 2>&1
			echo "(exit $?)"
		else
			echo "NCCL wrote no topology dump"
		fi
		echo "== llmp topo --gdr --nccl-log (NCCL's INFO lines)"
		"$llmp" topo --gdr --nccl-log "$tmp/nccl-info-all.log" 2>&1
		echo "(exit $?)"
		echo "== NCCL's INFO lines"
		cat "$tmp/nccl-info-all.log"
		echo "== llmp topo --gdr --format json"
		"$llmp" topo --gdr --format json 2>&1
	} >>"$topo"
	step "topo (NCCL's dump: $([ -s "$out/nccl-topo.xml" ] && echo written || echo none))" 0
fi

rm -rf "$tmp"
note "# done $(date -u '+%T')"
