#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# `llmp topo` (cli/cmd_topo.c): the fixtures of etc/topology/ read, checked
# and written back; this node discovered from a copy of sysfs built by
# tests/topology/fake_sysfs.py; bad topology files refused with the line and
# the key. What the output must say is computed by tests/topology/topo_model.py,
# which reads the format on its own (doc/topology-json.md).

load lib/helpers

MODEL="$LLMP_SRCDIR/tests/topology/topo_model.py"
FAKE="$LLMP_SRCDIR/tests/topology/fake_sysfs.py"
FIXTURES="$LLMP_SRCDIR/etc/topology"

setup() {
	llmp_setup
	need_python
	unset LLMP_TOPOLOGY_FILE SLURM_TOPOLOGY_ADDR SLURM_TOPOLOGY_ADDR_PATTERN
	W=$BATS_TEST_TMPDIR
}

# File read, checked, and written back to $W/out.json as the same cluster
# (topo_model.py); what it wrote reads back to the same bytes.
round_trip() {
	run "$LLMP" topo --file "$1" --format json
	[ "$status" -eq 0 ] || fail "$1: $output"
	printf '%s\n' "$output" >"$W/out.json"
	run python3 "$MODEL" same "$1" "$W/out.json"
	[ "$status" -eq 0 ] || fail "$1 written back differs: $output"
	"$LLMP" topo --file "$W/out.json" --format json >"$W/again.json"
	cmp "$W/out.json" "$W/again.json" || fail "$1: a second round trip changed the file"
}

@test "every fixture is read, checked, and written back as the same cluster" {
	for f in "$FIXTURES"/*.json; do
		round_trip "$f"
	done
}

@test "a large cluster: host lists of any length read, written back as ranges" {
	# 2048 counted hosts under 128 leaves, and 1000 named hosts spelled out
	# one by one (a list of 5890 bytes) under one leaf.
	python3 - "$W/big.json" <<'EOF'
import json, sys
named = [f"n{i}x" for i in range(1000)]
leaves = [{"name": f"leaf{k}", "nodes": f"gpu[{16 * k:04d}-{16 * k + 15:04d}]"} for k in range(128)]
leaves.append({"name": "leafn", "nodes": ",".join(named)})
doc = {"llmp_topology": 1, "node_types": {"a": {"numa_nodes": 1}},
       "nodes": [{"hosts": "gpu[0000-2047]", "type": "a"}, {"hosts": ",".join(named), "type": "a"}],
       "switches": leaves + [{"name": "spine", "switches": ",".join(l["name"] for l in leaves)}]}
json.dump(doc, open(sys.argv[1], "w"))
EOF
	round_trip "$W/big.json"
	grep -q '"hosts": "gpu\[0000-2047\],n0x,n1x,n2x,' "$W/out.json" || fail "the hosts' list"
	grep -q '"name": "leaf127", "nodes": "gpu\[2032-2047\]"' "$W/out.json" || fail "a leaf's list"
	grep -q '"name": "spine", "switches": "leaf\[0-127\],leafn"' "$W/out.json" || fail "the spine's list"
}

@test "text: hosts, GPUs with their nearest HCA, the switch tree" {
	run "$LLMP" topo --file "$FIXTURES/fat-tree.json"
	[ "$status" -eq 0 ] || fail "$output"
	assert_contains "$output" "node type dgx-h100: 128 hosts, 2 NUMA nodes, 8 GPUs, 12 HCAs"
	# DGX H100 User Guide table 6: GPU1 with mlx5_3, GPU5 with mlx5_9, each under one PCIe switch.
	grep -Eq '^  1 +0000:43:00.0 +0 +nvswitch +mlx5_3 \(PIX\)' <<<"$output" || fail "GPU 1's HCA"
	grep -Eq '^  5 +0000:c3:00.0 +1 +nvswitch +mlx5_9 \(PIX\)' <<<"$output" || fail "GPU 5's HCA"
	[ "$(grep -c ': 4 hosts$' <<<"$output")" -eq 32 ] || fail "32 leaves of 4 hosts"
	grep -qx '  spine' <<<"$output" || fail "the spine"
	run "$LLMP" topo --file "$FIXTURES/pcie-4gpu.json"
	# Nothing shares a PCIe switch with the NIC: they meet at the CPU, NCCL's PHB.
	grep -Eq '^  0 +0000:03:00.0 +0 +none +mlx5_0 \(PHB\)' <<<"$output" || fail "$output"
}

@test "hosts and switches as the model reads them" {
	for f in heterogeneous gb200-nvl72 fat-tree; do
		"$LLMP" topo --file "$FIXTURES/$f.json" --format json >"$W/out.json"
		python3 "$MODEL" hosts "$FIXTURES/$f.json" | sort >"$W/want"
		python3 "$MODEL" hosts "$W/out.json" | sort >"$W/got"
		diff "$W/want" "$W/got" || fail "$f"
	done
	# The model itself, on one host written out by hand from the fixture.
	python3 "$MODEL" hosts "$FIXTURES/heterogeneous.json" | grep -qx 'nvl07 gb200 rack-a leaf-nvl spine' ||
		fail "nvl07 under leaf-nvl under spine, in domain rack-a"
}

@test "NCCL's path types: one switch holding a GPU and a NIC is PIX; a cascaded board keeps each GPU on its leaf's NIC" {
	# Expected by hand from NCCL's rule (NVIDIA/nccl src/graph/xml.cc): it keeps every
	# second bridge counted from the device up, so a switch's downstream ports vanish.
	local sw="$LLMP_SRCDIR/tests/topology/nccl-switch.json" casc="$LLMP_SRCDIR/tests/topology/nccl-cascade.json"
	python3 "$FAKE" "$sw" nccl-switch "$W/sw"
	SLURMD_NODENAME=sw1 run "$LLMP" topo --sysfs "$W/sw"
	[ "$status" -eq 0 ] || fail "$output"
	grep -Eq '^  0 +0000:18:00.0 +0 +\? +mlx5_0 \(PIX\)' <<<"$output" || fail "GPU 18 and mlx5_0 on one switch: $output"
	grep -Eq '^  1 +0000:9d:00.0 +1 +\? +mlx5_2 \(PIX\)' <<<"$output" || fail "$output"
	# Each GPU of a leaf switch with the NIC of that leaf; block placement of tp=4.
	run "$LLMP" plan --topology "$casc" --parallel tp=4
	[ "$status" -eq 0 ] || fail "$output"
	local want=(mlx5_0 mlx5_0 mlx5_1 mlx5_1)
	for r in 0 1 2 3; do
		grep -Eq "^  $r +$r +casc1 +$r +[0-9a-f:.]+ +${want[r]}\$" <<<"$output" || fail "rank $r: $output"
	done
	python3 "$FAKE" "$casc" nccl-cascade "$W/casc"
	run "$LLMP" topo --sysfs "$W/casc"
	grep -Eq '^  1 +0000:86:00.0 +0 +\? +mlx5_0 \(PIX\)' <<<"$output" || fail "$output"
	grep -Eq '^  2 +0000:8a:00.0 +0 +\? +mlx5_1 \(PIX\)' <<<"$output" || fail "$output"
	# The other leaf's NIC is PXB; with the three switches Broadcom PEX Gen4 in base mode of one
	# id, as sysfs gives their ids, NCCL merges the leaves into the top: PIX.
	export LLMP_IBVERBS_LIBRARY=/nonexistent LLMP_NCCL_LIBRARY=/nonexistent LLMP_CUDA_LIBRARY=/nonexistent
	run "$LLMP" topo --gdr --sysfs "$W/casc"
	grep -Eq '^  0 +0000:85:00.0 +mlx5_1 +PXB ' <<<"$output" || fail "$output"
	python3 "$LLMP_SRCDIR/tests/topology/fake_gdr.py" "$W/casc" ids=0000:81:00.0:1000:c010:1000:a064 \
		ids=0000:83:00.0:1000:c010:1000:a064 ids=0000:88:00.0:1000:c010:1000:a064
	run "$LLMP" topo --gdr --sysfs "$W/casc"
	grep -Eq '^  0 +0000:85:00.0 +mlx5_1 +PIX ' <<<"$output" || fail "$output"
}

@test "--gdr: NCCL's GPUDirect RDMA verdict per GPU and HCA, every reason named, from fixture trees" {
	# Expected by hand from NCCL 2.28's rules (doc/gpudirect.md's reasons).
	local sw="$LLMP_SRCDIR/tests/topology/nccl-switch.json" gdr="$LLMP_SRCDIR/tests/topology/fake_gdr.py"
	local nccl="$LLMP_BUILDDIR/tests/device/.libs/fake_nccl.so"
	export LLMP_IBVERBS_LIBRARY=/nonexistent # no probe but where a case names the fake
	[ -f "$nccl" ] || nccl=/nonexistent # without the runtime: NCCL unknown, the rules the same
	python3 "$FAKE" "$sw" nccl-switch "$W/ok"
	python3 "$gdr" "$W/ok" peermem kernel=6.8.0-45-generic driver=open uverbs \
		acs=0000:17:00.0:1 acs=0000:17:01.0:1 acs=0000:16:00.0:0 acs=0000:15:01.0:0 acs=0000:28:01.0:0 \
		acs=0000:97:01.0:0 acs=0000:98:00.0:0 acs=0000:99:00.0:0 acs=0000:99:01.0:0 \
		iommu=0000:18:00.0:identity iommu=0000:19:00.0:identity
	# A healthy node: the switch's pair yes, the storage NIC on another root port PHB, the other socket SYS.
	local mem=unlimited
	ulimit -l unlimited 2>/dev/null || mem=low
	LLMP_NCCL_LIBRARY=$nccl run "$LLMP" topo --gdr --sysfs "$W/ok"
	[ "$status" -eq 0 ] || fail "$output"
	if [ "$mem" = unlimited ]; then
		grep -Eq '^  0 +0000:18:00.0 +mlx5_0 +PIX +yes$' <<<"$output" || fail "$output"
		grep -Eq '^  1 +0000:9d:00.0 +mlx5_2 +PIX +yes$' <<<"$output" || fail "$output"
		assert_contains "$output" "GPUDirect RDMA on 2 of 6 GPU/HCA pairs"
	else
		grep -Eq '^  0 +0000:18:00.0 +mlx5_0 +PIX +broken: locked-memory limit [0-9]+ KiB \(ulimit -l; unlimited advised\)$' <<<"$output" || fail "$output"
	fi
	grep -Eq '^  0 +0000:18:00.0 +mlx5_1 +PHB +no: path PHB beyond NCCL_NET_GDR_LEVEL=PXB($|;)' <<<"$output" || fail "$output"
	grep -Eq '^  0 +0000:18:00.0 +mlx5_2 +SYS +no: path SYS beyond' <<<"$output" || fail "$output"
	# The site widens the level: PHB is then used, SYS still not.
	NCCL_NET_GDR_LEVEL=PHB LLMP_NCCL_LIBRARY=$nccl run "$LLMP" topo --gdr --sysfs "$W/ok"
	grep -Eq '^  0 +0000:18:00.0 +mlx5_1 +PHB +(yes|broken: locked)' <<<"$output" || fail "$output"
	NCCL_NET_GDR_LEVEL=bogus run "$LLMP" topo --gdr --sysfs "$W/ok"
	[ "$status" -eq 2 ] || fail "$output"
	assert_contains "$output" "NCCL_NET_GDR_LEVEL"
	assert_contains "$output" "bogus"

	# No module, a 5.10 kernel, the proprietary module, no /dev/infiniband, ACS redirect
	# on the GPU's downstream port, a translating IOMMU, config space unreadable elsewhere.
	python3 "$FAKE" "$sw" nccl-switch "$W/bad"
	python3 "$gdr" "$W/bad" kernel=5.10.0-28-amd64 driver=proprietary acs=0000:17:00.0:1d \
		acs=0000:17:01.0:0 acs=0000:16:00.0:0 config64=0000:99:00.0 iommu=0000:9a:00.0:DMA-FQ
	(ulimit -l 64 && LLMP_NCCL_LIBRARY=$nccl "$LLMP" topo --gdr --sysfs "$W/bad") >"$W/bad.txt" 2>&1 || fail "$(cat "$W/bad.txt")"
	local line
	line=$(grep -E '^  0 +0000:18:00.0 +mlx5_0 +PIX ' "$W/bad.txt") || fail "$(cat "$W/bad.txt")"
	for why in "no: no nvidia_peermem or nv_peer_mem loaded" "kernel 5.10.0-28-amd64 (5.12 needed)" \
		"proprietary kernel module" "no /dev/infiniband/uverbs* visible" \
		"ACS ReqRedir CmpltRedir on bridge 0000:17:00.0" "locked-memory limit 64 KiB"; do
		assert_contains "$line" "$why"
	done
	line=$(grep -E '^  1 +0000:9d:00.0 +mlx5_2 +PIX ' "$W/bad.txt") || fail "$(cat "$W/bad.txt")"
	assert_contains "$line" "IOMMU translates for 0000:9a:00.0 (group type DMA-FQ"
	assert_contains "$line" "ACS not checked (needs root)"
	assert_contains "$(cat "$W/bad.txt")" "GPUDirect RDMA on 0 of 6 GPU/HCA pairs"

	# dma-buf alone (open module, 6.8 kernel, no module): NCCL's probe decides, through a fake
	# libibverbs: EBADF for fd -1 is support, EOPNOTSUPP is none.
	local ibv="$LLMP_BUILDDIR/tests/topology/.libs/fake_ibverbs.so"
	python3 "$FAKE" "$sw" nccl-switch "$W/dmabuf"
	python3 "$gdr" "$W/dmabuf" kernel=6.8.0-45-generic driver=open uverbs
	LLMP_IBVERBS_LIBRARY=$ibv FAKE_IBV_DEVICES=mlx5_0,mlx5_1 FAKE_IBV_DMABUF=EBADF LLMP_NCCL_LIBRARY=$nccl \
		run "$LLMP" topo --gdr --sysfs "$W/dmabuf"
	assert_contains "$output" "dma-buf probe on mlx5_0: ibv_reg_dmabuf_mr supported"
	line=$(grep -E '^  0 +0000:18:00.0 +mlx5_0 +PIX ' <<<"$output") || fail "$output"
	assert_not_contains "$line" "no dma-buf"
	assert_not_contains "$line" "no nvidia_peermem"
	LLMP_IBVERBS_LIBRARY=$ibv FAKE_IBV_DEVICES=mlx5_0,mlx5_1 FAKE_IBV_DMABUF=EOPNOTSUPP LLMP_NCCL_LIBRARY=$nccl \
		run "$LLMP" topo --gdr --sysfs "$W/dmabuf"
	assert_contains "$output" "dma-buf probe on mlx5_0: ibv_reg_dmabuf_mr not supported (EOPNOTSUPP)"
	line=$(grep -E '^  0 +0000:18:00.0 +mlx5_0 +PIX ' <<<"$output") || fail "$output"
	assert_contains "$line" "no: no nvidia_peermem or nv_peer_mem loaded; no dma-buf: the HCA driver refuses ibv_reg_dmabuf_mr"
	# A library that lists none of the node's HCAs: not probed, said.
	LLMP_IBVERBS_LIBRARY=$ibv FAKE_IBV_DEVICES=other_0 LLMP_NCCL_LIBRARY=$nccl run "$LLMP" topo --gdr --sysfs "$W/dmabuf"
	assert_contains "$output" "dma-buf probe: not run"

	# nvidia_peermem but an NCCL before 2.23.4, with no dma-buf: NVIDIA/nccl#1676.
	if [ "$nccl" != /nonexistent ]; then
		python3 "$FAKE" "$sw" nccl-switch "$W/old"
		python3 "$gdr" "$W/old" peermem kernel=6.8.0 driver=proprietary uverbs
		FAKE_NCCL_VERSION=22203 LLMP_NCCL_LIBRARY=$nccl run "$LLMP" topo --gdr --sysfs "$W/old"
		assert_contains "$output" "NCCL 2.22.3 does not see nvidia_peermem"
		FAKE_NCCL_VERSION=22304 LLMP_NCCL_LIBRARY=$nccl run "$LLMP" topo --gdr --sysfs "$W/old"
		assert_not_contains "$output" "does not see nvidia_peermem"
	fi
}

@test "--gdr --nccl-dump: NCCL's own topology dump against the prediction, each difference named" {
	# tests/topology/nccl-dump-switch.xml: the nccl-switch node as NCCL dumps it (nccl-tests#256's
	# form). With nvidia_peermem every NIC is GDR-capable, as the dump says: nothing differs.
	local sw="$LLMP_SRCDIR/tests/topology/nccl-switch.json" dump="$LLMP_SRCDIR/tests/topology/nccl-dump-switch.xml"
	export LLMP_IBVERBS_LIBRARY=/nonexistent LLMP_NCCL_LIBRARY=/nonexistent LLMP_CUDA_LIBRARY=/nonexistent
	python3 "$FAKE" "$sw" nccl-switch "$W/ok"
	python3 "$LLMP_SRCDIR/tests/topology/fake_gdr.py" "$W/ok" peermem kernel=6.8.0 driver=open uverbs
	run "$LLMP" topo --gdr --sysfs "$W/ok" --nccl-dump "$dump"
	[ "$status" -eq 0 ] || fail "$output"
	# 2 GPUs and 3 HCAs placed, 3 net and 2 gpu flags.
	assert_contains "$output" "NCCL's dump $dump: 10 compared, 0 differ"
	# No module, proprietary driver: llmp predicts no capable NIC, NCCL said gdr=1; a GPU NCCL put
	# under its downstream port; a GPU with gdr=0.
	python3 "$FAKE" "$sw" nccl-switch "$W/nomod"
	python3 "$LLMP_SRCDIR/tests/topology/fake_gdr.py" "$W/nomod" kernel=6.8.0 driver=proprietary uverbs
	python3 - "$dump" "$W/dump.xml" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
start = next(i for i, l in enumerate(lines) if '<pci busid="0000:18:00.0"' in l)
end = next(i for i in range(start, len(lines)) if lines[i] == "      </pci>")
lines[end] += "</pci>"
lines[start] = '      <pci busid="0000:17:00.0" class="0x060400">' + lines[start].lstrip(" ")
text = "\n".join(lines).replace('<gpu dev="1" sm="90" rank="1" gdr="1">', '<gpu dev="1" sm="90" rank="1" gdr="0">')
open(sys.argv[2], "w").write(text)
PY
	run "$LLMP" topo --gdr --sysfs "$W/nomod" --nccl-dump "$W/dump.xml"
	[ "$status" -eq 1 ] || fail "$output"
	assert_contains "$output" "10 compared, 5 differ:"
	assert_contains "$output" "GPU 0000:18:00.0: NCCL put it under 0000:17:00.0 < 0000:16:00.0 < cpu 0, llmp predicted 0000:16:00.0 < cpu 0"
	for h in mlx5_0 mlx5_1 mlx5_2; do
		assert_contains "$output" "$h: NCCL set gdr=1, llmp predicted not capable"
	done
	assert_contains "$output" "GPU 0000:9d:00.0: NCCL set gdr=0, so the GPU reports no GPUDirect RDMA"
	# A dump NCCL's parser would refuse is refused.
	sed 's/^  /\t/' "$dump" >"$W/tab.xml"
	run "$LLMP" topo --gdr --sysfs "$W/ok" --nccl-dump "$W/tab.xml"
	[ "$status" -eq 2 ] || fail "$output"
	assert_contains "$output" "a tab"
	run "$LLMP" topo --nccl-dump "$dump"
	[ "$status" -eq 2 ] || fail "$output"
}

@test "--nccl-topo: every fixture's node types as NCCL_TOPO_FILE, NCCL's grammar and tree checked on their own" {
	local check="$LLMP_SRCDIR/tests/topology/nccl_xml_check.py" f ty n=0
	for f in "$FIXTURES"/*.json "$LLMP_SRCDIR"/tests/topology/nccl-*.json; do
		for ty in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["node_types"]))' "$f"); do
			"$LLMP" topo --nccl-topo --file "$f" --type "$ty" >"$W/$ty.xml" || fail "$f $ty"
			run python3 "$check" "$f" "$ty" "$W/$ty.xml"
			[ "$status" -eq 0 ] || fail "$f $ty: $output"
			n=$((n + 1))
		done
	done
	[ "$n" -ge 8 ] || fail "only $n node types"
	# nccl-tests#256's dump: GPU 18 and NIC 19 right under the switch 16:00.0.
	run "$LLMP" topo --nccl-topo --file "$LLMP_SRCDIR/tests/topology/nccl-switch.json"
	grep -A2 '<pci busid="0000:16:00.0" class="0x060400"' <<<"$output" | grep -q '<pci busid="0000:18:00.0" class="0x030200"/>' || fail "$output"
	# The checker itself refuses what NCCL refuses.
	printf '<?xml version="1.0"?>\n' | cat - "$W/nccl-switch.xml" >"$W/decl.xml"
	run python3 "$check" "$LLMP_SRCDIR/tests/topology/nccl-switch.json" nccl-switch "$W/decl.xml"
	[ "$status" -ne 0 ] || fail "declaration accepted"
	sed 's/^  /\t/' "$W/nccl-switch.xml" >"$W/tab.xml"
	run python3 "$check" "$LLMP_SRCDIR/tests/topology/nccl-switch.json" nccl-switch "$W/tab.xml"
	[ "$status" -ne 0 ] || fail "tab accepted"
	sed 's|<pci busid="0000:19:00.0" class="0x020700"/>|<pci busid="0000:19:00.0" class="0x020700" gdr="1"/>|' "$W/nccl-switch.xml" >"$W/gdr.xml"
	run python3 "$check" "$LLMP_SRCDIR/tests/topology/nccl-switch.json" nccl-switch "$W/gdr.xml"
	[ "$status" -ne 0 ] || fail "gdr accepted"
	run "$LLMP" topo --nccl-topo --file "$FIXTURES/heterogeneous.json"
	[ "$status" -eq 2 ] || fail "$output"
	assert_contains "$output" "--type"
}

@test "--rails: a slow, a down and an Ethernet port among a job's rails named; a uniform fabric passes" {
	# tests/topology/rails-cluster.json, by hand: rail r is GPU r's HCA; 400 Gb/s InfiniBand
	# ACTIVE everywhere but gpu2 rail 1 (200), gpu3 rail 0 (DOWN), gpu4 rail 1 (Ethernet).
	run "$LLMP" topo --rails --file "$LLMP_SRCDIR/tests/topology/rails-cluster.json"
	[ "$status" -eq 1 ] || fail "$output"
	[ "$(printf '%s\n' "$output" | sed 1d)" = "rail 0: gpu3 mlx5_0 port 1 is DOWN
rail 1: gpu2 mlx5_1 port 1 at 200 Gb/s where 3 of 5 nodes run 400 Gb/s: a straggler
rail 1: gpu4 mlx5_1 port 1 is Ethernet where 3 of 5 nodes are InfiniBand" ] || fail "$output"
	assert_contains "$output" "rails: 3 ports differ"
	run "$LLMP" topo --rails --file "$FIXTURES/fat-tree.json"
	[ "$status" -eq 0 ] || fail "$output"
	assert_contains "$output" "every rail's ports agree"
	run "$LLMP" topo --rails --gdr
	[ "$status" -eq 2 ] || fail "$output"
}

@test "discovery: a DGX H100 and a PCIe box from their sysfs, the tree from SLURM_TOPOLOGY_ADDR" {
	python3 "$FAKE" "$FIXTURES/dgx-h100.json" dgx-h100 "$W/dgx"
	SLURMD_NODENAME=dgx001 SLURM_TOPOLOGY_ADDR=s0.s4.dgx001 SLURM_TOPOLOGY_ADDR_PATTERN=switch.switch.node \
		run "$LLMP" topo --sysfs "$W/dgx" --format json
	[ "$status" -eq 0 ] || fail "$output"
	printf '%s\n' "$output" >"$W/dgx.json"
	run python3 "$MODEL" node "$FIXTURES/dgx-h100.json" dgx-h100 "$W/dgx.json" dgx001 s0.s4.dgx001
	[ "$status" -eq 0 ] || fail "discovered DGX differs: $output"

	python3 "$FAKE" "$FIXTURES/pcie-4gpu.json" pcie-4gpu "$W/box"
	SLURMD_NODENAME=box1 run "$LLMP" topo --sysfs "$W/box" --format json
	[ "$status" -eq 0 ] || fail "$output"
	printf '%s\n' "$output" >"$W/box.json"
	run python3 "$MODEL" node "$FIXTURES/pcie-4gpu.json" pcie-4gpu "$W/box.json" box1
	[ "$status" -eq 0 ] || fail "discovered box differs: $output"
	# NVLink is not known without NVML: said as such, never as "none".
	run "$LLMP" topo --sysfs "$W/box"
	grep -Eq '^  0 +0000:03:00.0 +0 +\? ' <<<"$output" || fail "$output"
}

@test "discovery: this machine, and a bad SLURM_TOPOLOGY_ADDR named" {
	run "$LLMP" topo --format json
	[ "$status" -eq 0 ] || fail "$output"
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["nodes"]) == 1' <<<"$output" ||
		fail "not one node: $output"
	SLURM_TOPOLOGY_ADDR=s0.s1.n1 SLURM_TOPOLOGY_ADDR_PATTERN=switch.node run "$LLMP" topo
	[ "$status" -eq 2 ] || fail "status $status: $output"
	assert_contains "$output" "SLURM_TOPOLOGY_ADDR 's0.s1.n1' does not match its pattern"
}

@test "LLMP_TOPOLOGY_FILE replaces discovery; --file replaces both" {
	LLMP_TOPOLOGY_FILE="$FIXTURES/gb200-nvl72.json" run "$LLMP" topo
	assert_contains "$output" "node type gb200: 18 hosts"
	LLMP_TOPOLOGY_FILE="$FIXTURES/gb200-nvl72.json" run "$LLMP" topo --file "$FIXTURES/pcie-4gpu.json"
	assert_contains "$output" "node type pcie-4gpu: 4 hosts"
	LLMP_TOPOLOGY_FILE="$W/missing.json" run "$LLMP" topo
	[ "$status" -eq 2 ] && assert_contains "$output" "missing.json: No such file or directory"
}

# A fixture changed by one python expression, then read: the message must hold words.
bad_file() {
	local edit=$1
	shift
	python3 - "$FIXTURES/heterogeneous.json" "$W/bad.json" "$edit" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(doc, open(sys.argv[2], "w"), indent=1)
PY
	run "$LLMP" topo --file "$W/bad.json"
	[ "$status" -eq 2 ] || fail "status $status for: $edit: $output"
	for words in "$@"; do
		assert_contains "$output" "$words"
	done
}

@test "bad topology files: the line and the key named, exit 2" {
	bad_file 'doc["node_types"]["dgx-h100"]["gpus"][3]["bsu"] = "x"' 'bad.json:' 'gpu 3: unknown key "bsu"'
	bad_file 'doc["node_types"]["dgx-h100"]["gpus"][2]["bus"] = "0000:1B:00.0"' "'B' is not allowed"
	bad_file 'doc["node_types"]["dgx-h100"]["gpus"][2]["bus"] = "0000:1b:00.9"' 'is not a PCI address'
	bad_file 'doc["node_types"]["dgx-h100"]["gpus"][2]["numa"] = 2' '"numa" must be an integer from -1 to 1'
	bad_file 'doc["node_types"]["dgx-h100"]["gpus"][2]["bus"] = doc["node_types"]["dgx-h100"]["gpus"][1]["bus"]' \
		'two GPUs at 0000:43:00.0'
	bad_file 'doc["node_types"]["dgx-h100"]["hcas"][0]["ports"][0]["link"] = "Omni-Path"' \
		'"link" must be "InfiniBand" or "Ethernet"'
	bad_file 'doc["nodes"][0]["hosts"] = "dgx[01-16],nvl03"' 'host nvl03 is listed twice'
	bad_file 'doc["nodes"][0]["type"] = "dgx-a100"' 'no node type "dgx-a100" in node_types'
	bad_file 'doc["nodes"][0]["hosts"] = "dgx[16-01]"' 'LOW <= HIGH'
	bad_file 'doc["switches"].append({"name": "spine2", "switches": "leaf-nvl"})' \
		'switch leaf-nvl is under switch spine already'
	bad_file 'doc["switches"].append({"name": "leaf-x", "nodes": "dgx03"})' 'host dgx03 is under switch leaf-dgx0 already'
	bad_file 'doc["switches"][0]["switches"] += ",spine"' 'a switch cannot hold itself'
	bad_file 'doc["switches"].append({"name": "core", "switches": "leaf-nvl"}); doc["switches"][0]["switches"] = "leaf-dgx[0-1],leaf-box,core"; [s.update(switches="spine") for s in doc["switches"] if s["name"] == "core"]' \
		'in a cycle'
	bad_file 'doc["llmp_topology"] = 2' 'version 2; this llmp reads version 1'
	bad_file 'del doc["nodes"]' '"nodes" is missing'
	printf '{"llmp_topology": 1,\n "node_types": {},\n "nodes": [],\n}\n' >"$W/comma.json"
	run "$LLMP" topo --file "$W/comma.json"
	[ "$status" -eq 2 ] && assert_contains "$output" "comma.json:4: expected a string, found '}'"
	printf '{"llmp_topology": 1, "llmp_topology": 1}' >"$W/twice.json"
	run "$LLMP" topo --file "$W/twice.json"
	[ "$status" -eq 2 ] && assert_contains "$output" 'key "llmp_topology" given twice'
	run "$LLMP" topo --file "$W"
	[ "$status" -eq 2 ] && assert_contains "$output" "not a regular file"
	run "$LLMP" topo --format xml
	[ "$status" -eq 2 ] && assert_contains "$output" "--format: expected text or json"
}

@test "NVML through dlopen: model, UUID, NVLink peers or NVSwitch, the multi-node domain; unknown without it" {
	local nvml="$LLMP_BUILDDIR/tests/topology/.libs/fake_nvml.so"
	[ -f "$nvml" ] || fail "$nvml not built"
	# DGX H100: every GPU on NVSwitch, 18 links; a completed fabric with no cluster is no domain.
	python3 "$FAKE" "$FIXTURES/dgx-h100.json" dgx-h100 "$W/dgx"
	LLMP_NVML_LIBRARY=$nvml FAKE_NVML_FILE=$W/dgx/nvml.tsv SLURMD_NODENAME=dgx001 \
		run "$LLMP" topo --sysfs "$W/dgx" --format json
	[ "$status" -eq 0 ] || fail "$output"
	printf '%s\n' "$output" >"$W/dgx.json"
	run python3 "$MODEL" nvml "$FIXTURES/dgx-h100.json" dgx-h100 "$W/dgx.json" dgx001
	[ "$status" -eq 0 ] || fail "NVML view of the DGX differs: $output"
	# GB200: one NVLink domain across trays, from the fabric's cluster UUID and clique.
	python3 "$FAKE" "$FIXTURES/gb200-nvl72.json" gb200 "$W/nvl" nvl72-rack0
	LLMP_NVML_LIBRARY=$nvml FAKE_NVML_FILE=$W/nvl/nvml.tsv SLURMD_NODENAME=nvl72-01 \
		run "$LLMP" topo --sysfs "$W/nvl" --format json
	printf '%s\n' "$output" >"$W/nvl.json"
	run python3 "$MODEL" nvml "$FIXTURES/gb200-nvl72.json" gb200 "$W/nvl.json" nvl72-01 nvl72-rack0
	[ "$status" -eq 0 ] || fail "NVML view of the GB200 tray differs: $output"
	# GPUs joined by direct links (no switch): each names its peers.
	python3 - "$FIXTURES/pcie-4gpu.json" "$W/bridged.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
g = doc["node_types"]["pcie-4gpu"]["gpus"]
g[0]["nvlink"], g[1]["nvlink"] = [g[1]["bus"]], [g[0]["bus"]]
json.dump(doc, open(sys.argv[2], "w"))
PY
	python3 "$FAKE" "$W/bridged.json" pcie-4gpu "$W/br"
	LLMP_NVML_LIBRARY=$nvml FAKE_NVML_FILE=$W/br/nvml.tsv SLURMD_NODENAME=box1 \
		run "$LLMP" topo --sysfs "$W/br" --format json
	printf '%s\n' "$output" >"$W/br.json"
	run python3 "$MODEL" nvml "$W/bridged.json" pcie-4gpu "$W/br.json" box1
	[ "$status" -eq 0 ] || fail "NVLink bridge pairs differ: $output"
	# No library, or one that fails to start: NVLink unknown, and said.
	LLMP_NVML_LIBRARY=$W/none.so run "$LLMP" topo --sysfs "$W/dgx"
	[ "$status" -eq 0 ] && assert_contains "$output" "NVLink not read: $W/none.so not loaded"
	LLMP_NVML_LIBRARY=$nvml FAKE_NVML_FILE=$W/missing run "$LLMP" topo --sysfs "$W/dgx"
	[ "$status" -eq 0 ] && assert_contains "$output" "nvmlInit_v2 failed (NVML error 9)"
	grep -Eq '^  0 +0000:1b:00.0 +0 +\? ' <<<"$output" || fail "NVLink should be unknown: $output"
}

# The "groups by span" lines of `llmp plan --topology`.
spans() {
	sed -n '/^groups by span:/,/^  rank /p' <<<"$1" | grep -v '^groups\|^  rank '
}

@test "placement: block order keeps RANK = SLURM_PROCID; topology order mends a host list that crosses leaves" {
	# fat-tree.json: leaf NN holds dgx(4NN+1)..dgx(4NN+4). tp=8 fills a node,
	# a cp pair is two consecutive nodes. In Slurm's own order (by name) the
	# pair shares a leaf; in a list that takes one host of every leaf in turn
	# no pair does, until the ranks follow the tree.
	run "$LLMP" plan --topology "$FIXTURES/fat-tree.json" --parallel tp=8,cp=2,pp=8
	[ "$status" -eq 0 ] || fail "$output"
	assert_contains "$(spans "$output")" "tp  128 groups of 8: 128 in one node" "cp  512 groups of 2: 512 in one leaf"
	local hosts
	hosts=$(python3 -c "print(','.join(f'dgx{l*4+i+1:03d}' for i in range(4) for l in range(32)))")
	run "$LLMP" plan --topology "$FIXTURES/fat-tree.json" --hosts "$hosts" --parallel tp=8,cp=2,pp=8
	assert_contains "$(spans "$output")" "cp  512 groups of 2: 512 in one tree"
	grep -Eq '^  8 +8 +dgx005 ' <<<"$output" || fail "rank 8 is task 8, on the second host given"
	run "$LLMP" plan --topology "$FIXTURES/fat-tree.json" --hosts "$hosts" --parallel tp=8,cp=2,pp=8 \
		--placement topology
	[ "$status" -eq 0 ] || fail "$output"
	assert_contains "$(spans "$output")" "cp  512 groups of 2: 512 in one leaf"
	# Ranks 8-15 on dgx002 (leaf00's second host), which Slurm numbered tasks 256-263.
	grep -Eq '^  8 +256 +dgx002 +0 ' <<<"$output" || fail "$output"
	# Every task has exactly one rank.
	[ "$(awk '$1 ~ /^[0-9]+$/ && NF == 6 {print $2}' <<<"$output" | sort -n | uniq | wc -l)" -eq 1024 ] ||
		fail "not a permutation of the 1024 tasks"
}

@test "placement inside a node: a tp group under one PCIe switch, each GPU with the HCA the DGX manual pairs it with" {
	# pcie-4gpu.json: GPUs 0000:03 and 0000:04 share a PCIe switch, so do
	# 0000:43 and 0000:44. With cp fastest, the tp pairs are ranks (0,2), (1,3).
	run "$LLMP" plan --topology "$FIXTURES/pcie-4gpu.json" --parallel tp=2,cp=2,order=cp-tp-ep-dp-pp
	[ "$status" -eq 0 ] || fail "$output"
	grep -Eq '^  0 +0 +box1 +0 +0000:03:00.0 +mlx5_0$' <<<"$output" || fail "$output"
	grep -Eq '^  2 +2 +box1 +1 +0000:04:00.0 +mlx5_0$' <<<"$output" || fail "$output"
	grep -Eq '^  1 +1 +box1 +2 +0000:43:00.0 +mlx5_0$' <<<"$output" || fail "$output"
	grep -Eq '^  3 +3 +box1 +3 +0000:44:00.0 +mlx5_0$' <<<"$output" || fail "$output"
	# DGX H100 User Guide table 6, GPU by GPU.
	run "$LLMP" plan --topology "$FIXTURES/dgx-h100.json" --parallel tp=8
	local want=(mlx5_0 mlx5_3 mlx5_4 mlx5_5 mlx5_6 mlx5_9 mlx5_10 mlx5_11)
	for r in 0 1 2 3 4 5 6 7; do
		grep -Eq "^  $r +$r +dgx001 +$r +[0-9a-f:.]+ +${want[r]}\$" <<<"$output" || fail "rank $r: $output"
	done
}

@test "placement spans: one NVLink domain across trays, a tree across kinds; bad hosts named" {
	run "$LLMP" plan --topology "$FIXTURES/heterogeneous.json" --hosts 'nvl[01-18]' --parallel tp=4 --tasks-per-node 4
	[ "$status" -eq 0 ] || fail "$output"
	assert_contains "$(spans "$output")" "tp  18 groups of 4: 18 in one node" "dp  4 groups of 18: 4 in one nvlink-domain"
	run "$LLMP" plan --topology "$FIXTURES/heterogeneous.json" --parallel tp=4,pp=2 --tasks-per-node 4
	assert_contains "$(spans "$output")" "dp  8 groups of 21: 8 in one tree"
	run "$LLMP" plan --topology "$FIXTURES/heterogeneous.json" --hosts 'dgx01,zz' --tasks-per-node 4
	[ "$status" -eq 2 ] && assert_contains "$output" "placement: host zz is not in the topology"
	run "$LLMP" plan --topology "$FIXTURES/heterogeneous.json" --hosts 'dgx[01-02]' --world 9
	[ "$status" -eq 2 ] && assert_contains "$output" "--world 9 disagrees with 16 tasks on the 2 hosts"
	run "$LLMP" plan --hosts dgx01 --world 4
	[ "$status" -eq 2 ] && assert_contains "$output" "--hosts, --placement, --model and --svg need --topology"
	run "$LLMP" plan --topology "$FIXTURES/dgx-h100.json" --placement random
	[ "$status" -eq 2 ] && assert_contains "$output" "--placement 'random': expected block or topology"
}

@test "cost report: bytes per dimension, the link each crosses, spine bytes against Slurm's block order" {
	# Worked by hand (planner/cost.h's model). pcie-4gpu, tp=2 over 16
	# GPUs: dp=8, 4 microbatches (4 x pp), A = 1 x 1024 x 1024 x 2 B.
	#   tp: 4 x 8 layers x 8 x (1/2) x A = 268,435,456 B over PCIe (no NVLink), 24 GB/s: 0.011 s
	#   dp: params 8 x (4 + 8) x 1024^2 / 2 = 50,331,648 per rank; 7/8 x 6 B each
	#       = 264,241,152 B; four GPUs share one 100 Gb/s HCA: 3.1 GB/s, 0.085 s
	run "$LLMP" plan --topology "$FIXTURES/pcie-4gpu.json" --parallel tp=2 --model hidden=1024,layers=8,seq=1024,mbs=1
	[ "$status" -eq 0 ] || fail "$output"
	grep -Eq '^  tp +268\.4 MB +\| node +24\.0 GB/s +0\.011 s \|' <<<"$output" || fail "$output"
	grep -Eq '^  dp +264\.2 MB +\| leaf +3\.1 GB/s +0\.085 s \|' <<<"$output" || fail "$output"
	grep -Eq '^  time +\| +0\.096 s \|' <<<"$output" || fail "$output"
	# fat-tree, tp=8,cp=2,pp=8, 70B-like (h 8192, 80 layers, 64 heads, 8 KV heads, seq 8192):
	# per rank cp 2,013,265,920 B, dp 4,836,556,800 B, pp 536,870,912 B. With one host of
	# each leaf in turn, every group crosses the spine in block order: 1024 x 7.39 GB = 7.6 TB;
	# in topology order the cp pairs stay in a leaf: 1024 x 5.37 GB = 5.5 TB, 73%.
	local hosts
	hosts=$(python3 -c "print(','.join(f'dgx{l*4+i+1:03d}' for i in range(4) for l in range(32)))")
	run "$LLMP" plan --topology "$FIXTURES/fat-tree.json" --hosts "$hosts" --parallel tp=8,cp=2,pp=8 \
		--placement topology --model hidden=8192,layers=80,seq=8192,mbs=1,heads=64,kv-heads=8
	[ "$status" -eq 0 ] || fail "$output"
	grep -Eq '^  tp +150\.3 GB +\| node +450\.0 GB/s' <<<"$output" || fail "tp over NVLink: $output"
	grep -Eq '^  cp +2\.0 GB +\| leaf .*\| tree ' <<<"$output" || fail "cp: $output"
	grep -Eq '^  dp +4\.8 GB ' <<<"$output" || fail "dp: $output"
	grep -Eq '^  pp +536\.9 MB ' <<<"$output" || fail "pp: $output"
	grep -Eq '^  through a spine +\| +5\.5 TB \| +7\.6 TB \|' <<<"$output" || fail "spine bytes: $output"
	assert_contains "$output" "verdict: this placement sends 73% of the bytes Slurm's block order sends through a spine"
	run "$LLMP" plan --topology "$FIXTURES/pcie-4gpu.json" --model hidden=1024,layrs=8
	[ "$status" -eq 2 ] && assert_contains "$output" "--model: unknown key 'layrs'"
	run "$LLMP" plan --topology "$FIXTURES/pcie-4gpu.json" --model hidden=1024,layers=8,seq=64
	[ "$status" -eq 2 ] && assert_contains "$output" "--model: mbs= is missing"
	run "$LLMP" plan --topology "$FIXTURES/pcie-4gpu.json" --parallel tp=2 --model hidden=8,layers=1,seq=8,mbs=1,gbs=4
	[ "$status" -eq 2 ] && assert_contains "$output" "--model: gbs=4 is less than mbs x dp = 8"
	[ "$(wc -l <<<"$output")" -eq 1 ] || fail "nothing but the error: $output"
}

@test "placement and cost as JSON: the same figures as the text, exact bytes" {
	run "$LLMP" plan --topology "$FIXTURES/pcie-4gpu.json" --parallel tp=2 --format json \
		--model hidden=1024,layers=8,seq=1024,mbs=1
	[ "$status" -eq 0 ] || fail "$output"
	printf '%s\n' "$output" >"$W/placement.json"
	python3 - "$W/placement.json" <<'PY' || fail "$output"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["llmp_placement"] == 1 and d["world"] == 16 and d["placement"] == "block", d
assert d["hosts"] == ["box1", "box2", "box3", "box4"]
assert {"kind": "tp", "count": 8, "size": 2, "spans": {"node": 8}} in d["groups"]
assert d["ranks"][5] == {"rank": 5, "task": 5, "host": "box2", "gpu": 1, "bus": "0000:04:00.0", "hca": "mlx5_0"}
col = d["cost"]["columns"][0]
dims = {x["dim"]: x for x in col["dims"]}
assert dims["tp"]["bytes"] == 268435456 and dims["tp"]["span"] == "node" and dims["tp"]["gbps"] == 24, dims
assert dims["dp"]["bytes"] == 264241152 and dims["dp"]["gbps"] == 3.125, dims
assert abs(dims["dp"]["internode_bytes"] - 16 * 264241152) < 1e3, dims
assert [c["name"] for c in d["cost"]["columns"]] == ["this placement (block)", "Slurm's block order",
                                                    "Megatron's default order"]
PY
	run "$LLMP" plan --topology "$FIXTURES/pcie-4gpu.json" --parallel tp=2 --format json --rank 7
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert [r["rank"] for r in d["ranks"]] == [7]' <<<"$output" ||
		fail "$output"
}

@test "--explain: the bytes of each dimension by link class; renumbering takes cp off the spines" {
	local hosts
	hosts=$(python3 -c "print(','.join(f'dgx{l*4+i+1:03d}' for i in range(4) for l in range(32)))")
	local model=hidden=8192,layers=80,seq=8192,mbs=1
	run "$LLMP" plan --topology "$FIXTURES/fat-tree.json" --hosts "$hosts" --parallel tp=8,cp=2,pp=8 \
		--model $model --placement topology --format json
	[ "$status" -eq 0 ] || fail "$output"
	printf '%s\n' "$output" >"$W/fat.json"
	output="(the JSON is in $W/fat.json)"
	# Every rank is in one group of each dimension, so each dimension's bytes,
	# times the 1024 ranks, land whole on the class of link its groups cross:
	# tp in a DGX (NVSwitch), dp and pp across leaves, cp in one leaf once
	# renumbered and across leaves in this host order (tests above).
	python3 - "$W/fat.json" <<'PY' || fail "$output"
import json, sys
d = json.load(open(sys.argv[1]))
want = {0: {"tp": "nvlink", "cp": "ib_leaf", "dp": "ib_spine", "pp": "ib_spine"},
        1: {"tp": "nvlink", "cp": "ib_spine", "dp": "ib_spine", "pp": "ib_spine"}}
for c, classes in want.items():
    for x in d["cost"]["columns"][c]["dims"]:
        links = x["link_bytes"]
        assert set(links) == {"nvlink", "pcie", "ib_leaf", "ib_spine"}, links
        for k, v in links.items():
            expect = 1024 * x["bytes"] if k == classes[x["dim"]] else 0
            # the JSON holds 9 significant digits of both numbers
            assert abs(v - expect) <= 1e-8 * expect, (c, x["dim"], k, v, expect)
PY
	run "$LLMP" plan --topology "$FIXTURES/fat-tree.json" --hosts "$hosts" --parallel tp=8,cp=2,pp=8 \
		--model $model --placement topology --explain
	[ "$status" -eq 0 ] || fail "$output"
	! grep -q '^  rank ' <<<"$output" || fail "--explain prints the cost alone: $output"
	assert_contains "$output" "this placement (topology)" "Slurm's block order" "Megatron's default order"
	grep -Eq '^  cp   16\.1 GB +- +- +16\.5 TB +- +0\.322 s$' <<<"$output" || fail "$output"
	# 16.5 TB of cp leave the spines: 6.3 TB of 22.8 TB remain.
	assert_contains "$output" "verdict: this placement sends 28% of the bytes Slurm's block order sends through a spine"
	# On a PCIe box, tp crosses PCIe.
	run "$LLMP" plan --topology "$FIXTURES/pcie-4gpu.json" --parallel tp=2 --model hidden=1024,layers=8,seq=1024,mbs=1 --explain
	grep -Eq '^  tp   268\.4 MB +- +4\.3 GB +- +- ' <<<"$output" || fail "$output"
	run "$LLMP" plan --topology "$FIXTURES/pcie-4gpu.json" --parallel tp=2 --explain
	[ "$status" -eq 2 ] && assert_contains "$output" "--explain explains the cost of --model: give --model too"
}

@test "--svg: a picture of the placement, one cell per rank, hosts in rows by leaf; written whole or not at all" {
	run "$LLMP" plan --topology "$FIXTURES/heterogeneous.json" --parallel tp=4,pp=2 --tasks-per-node 4 --svg "$W/p.svg"
	[ "$status" -eq 0 ] || fail "$output"
	python3 - "$W/p.svg" <<'PY' || fail "the picture"
import sys
import xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
cells = [e for e in root.iter(ns + "rect") if e.get("class") == "rank"]
assert len(cells) == 42 * 4, len(cells)
titles = [c.find(ns + "title").text for c in cells]
assert "rank 0 (task 0): tp 0 cp 0 ep 0 dp 0 pp 0; gpu 0000:1b:00.0; hca mlx5_0" in titles, titles[:2]
rows = [g.find(ns + "text").text for g in root.iter(ns + "g") if g.get("class") == "leaf"]
assert rows == ["leaf-dgx0", "leaf-dgx1", "leaf-nvl", "leaf-box"], rows
hosts = [g.find(ns + "text").text for g in root.iter(ns + "g") if g.get("class") == "host"]
assert len(hosts) == 42 and hosts[:2] == ["dgx01", "dgx02"] and hosts[-1] == "box8", hosts
PY
	mkdir "$W/dir.svg"
	run "$LLMP" plan --topology "$FIXTURES/pcie-4gpu.json" --svg "$W/dir.svg"
	[ "$status" -eq 1 ] && assert_contains "$output" "--svg $W/dir.svg:"
	[ ! -e "$W/dir.svg.tmp" ] || fail "a half-written picture was left"
}

@test "--gdr --nccl-dump: the dump NCCL 2.28.9 wrote on a lent H200 machine agrees with llmp's reading of it" {
	# tests/topology/nccl-dump-h200-vm.xml is NCCL's own NCCL_TOPO_DUMP_FILE from that machine
	# (scripts/gpu-run.sh, 2026-11-27), verbatim; h200-vm.json is the node as llmp topo saw it there.
	local vm="$LLMP_SRCDIR/tests/topology/h200-vm.json" dump="$LLMP_SRCDIR/tests/topology/nccl-dump-h200-vm.xml"
	export LLMP_IBVERBS_LIBRARY=/nonexistent LLMP_NCCL_LIBRARY=/nonexistent LLMP_CUDA_LIBRARY=/nonexistent
	python3 "$FAKE" "$vm" vm "$W/vm"
	python3 "$LLMP_SRCDIR/tests/topology/fake_gdr.py" "$W/vm" kernel=6.18.44 driver=open
	run "$LLMP" topo --gdr --sysfs "$W/vm" --nccl-dump "$dump"
	[ "$status" -eq 0 ] || fail "$output"
	# The GPU placed (on the CPU of unknown NUMA node, numaid -1) and its gdr flag; the socket NIC
	# eth0 is no HCA of llmp's, so it is not compared.
	assert_contains "$output" "NCCL's dump $dump: 2 compared, 0 differ"
	assert_contains "$output" "GPUDirect RDMA on 0 of 0 GPU/HCA pairs"
	# Had NCCL put the GPU on NUMA node 0, the placement would differ, and say so.
	sed 's/numaid="-1"/numaid="0"/' "$dump" >"$W/numa0.xml"
	run "$LLMP" topo --gdr --sysfs "$W/vm" --nccl-dump "$W/numa0.xml"
	[ "$status" -eq 1 ] || fail "$output"
	assert_contains "$output" "2 compared, 1 differ"
	assert_contains "$output" "GPU 0000:00:06.0: NCCL put it under cpu 0, llmp predicted cpu -1"
}

@test "--gdr: the CUDA driver's own word on each GPU (attributes 116 and 124), and NCCL's dump against it" {
	# The CUDA driver's test double answers GPU_DIRECT_RDMA_SUPPORTED and DMA_BUF_SUPPORTED from
	# FAKE_CUDA_GDR and FAKE_CUDA_DMABUF, for any bus id (tests/device/fake_cuda.c; built with the runtime).
	local cuda="$LLMP_BUILDDIR/tests/device/.libs/fake_cuda.so"
	[ -f "$cuda" ] || cuda=/nonexistent # without the runtime: the GPU's side is not read, the rules the same
	local sw="$LLMP_SRCDIR/tests/topology/nccl-switch.json" dump="$LLMP_SRCDIR/tests/topology/nccl-dump-switch.xml"
	export LLMP_IBVERBS_LIBRARY=/nonexistent LLMP_NCCL_LIBRARY=/nonexistent
	python3 "$FAKE" "$sw" nccl-switch "$W/pm"
	python3 "$LLMP_SRCDIR/tests/topology/fake_gdr.py" "$W/pm" peermem kernel=6.8.0 driver=open uverbs
	LLMP_CUDA_LIBRARY=/nonexistent run "$LLMP" topo --gdr --sysfs "$W/pm"
	assert_contains "$output" "GPU support: not read (no CUDA driver (/nonexistent))"
	[ "$cuda" != /nonexistent ] || return 0
	# Both GPUs supported: the facts say so, and no pair gets the GPU's reason.
	LLMP_CUDA_LIBRARY=$cuda run "$LLMP" topo --gdr --sysfs "$W/pm"
	assert_contains "$output" "GPU 0000:18:00.0 (CUDA driver): GPUDirect RDMA yes, dma-buf yes"
	assert_not_contains "$output" "the GPU reports"
	# A GPU without GPUDirect RDMA (a GeForce board: the gate is in libcuda): every pair says it,
	# whatever the modules; NCCL's dump of gdr=1 now differs from the driver's word.
	LLMP_CUDA_LIBRARY=$cuda FAKE_CUDA_GDR=0 run "$LLMP" topo --gdr --sysfs "$W/pm" --nccl-dump "$dump"
	[ "$status" -eq 1 ] || fail "$output"
	[ "$(grep -c 'no: the GPU reports no GPUDirect RDMA (CUDA attribute GPU_DIRECT_RDMA_SUPPORTED 0)' <<<"$output")" -eq 6 ] ||
		fail "$output"
	assert_contains "$output" "GPU 0000:18:00.0: NCCL set gdr=1, but the CUDA driver reports no GPUDirect RDMA (attribute 116)"
	# dma-buf only (no module): a GPU without dma-buf support closes that path too.
	python3 "$FAKE" "$sw" nccl-switch "$W/db"
	python3 "$LLMP_SRCDIR/tests/topology/fake_gdr.py" "$W/db" kernel=6.8.0 driver=open uverbs
	LLMP_CUDA_LIBRARY=$cuda FAKE_CUDA_DMABUF=0 run "$LLMP" topo --gdr --sysfs "$W/db"
	assert_contains "$output" "GPU 0000:9d:00.0 (CUDA driver): GPUDirect RDMA yes, dma-buf no"
	[ "$(grep -c 'no nvidia_peermem or nv_peer_mem loaded; no dma-buf: the GPU reports none (CUDA attribute DMA_BUF_SUPPORTED 0)' <<<"$output")" -eq 6 ] ||
		fail "$output"
	LLMP_CUDA_LIBRARY=$cuda run "$LLMP" topo --gdr --sysfs "$W/db"
	assert_not_contains "$output" "no dma-buf: the GPU reports none"
	# The same as JSON: each GPU's two attributes, and the reason by its name on every pair.
	LLMP_CUDA_LIBRARY=$cuda FAKE_CUDA_GDR=0 run "$LLMP" topo --gdr --sysfs "$W/pm" --format json
	python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["gpu_attrs_not_read"] is None, d
assert [(g["bus"], g["gdr"], g["dmabuf"]) for g in d["gpus"]] == [("0000:18:00.0", False, True), ("0000:9d:00.0", False, True)], d["gpus"]
assert len(d["pairs"]) == 6 and all("gpu" in p["reasons"] and p["outcome"] == "not_used" for p in d["pairs"]), d["pairs"]
' <<<"$output" || fail "$output"
	LLMP_CUDA_LIBRARY=/nonexistent run "$LLMP" topo --gdr --sysfs "$W/pm" --format json
	python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["gpu_attrs_not_read"] == "no CUDA driver (/nonexistent)", d
assert all(g["gdr"] is None and g["dmabuf"] is None for g in d["gpus"]), d["gpus"]
' <<<"$output" || fail "$output"
}

@test "--gdr --nccl-log: NCCL's GPU Direct RDMA lines per HCA against the prediction, per pair" {
	# nccl-switch: GPU 18 is nearest mlx5_0 (one switch, PIX), GPU 9d mlx5_2 (behind switch 98);
	# with nvidia_peermem and NCCL 2.28 every HCA can register GPU memory: NCCL must say Enabled.
	local sw="$LLMP_SRCDIR/tests/topology/nccl-switch.json" p="node1:4242:4250 [0] NCCL INFO "
	export LLMP_IBVERBS_LIBRARY=/nonexistent LLMP_NCCL_LIBRARY=/nonexistent
	python3 "$FAKE" "$sw" nccl-switch "$W/ok"
	python3 "$LLMP_SRCDIR/tests/topology/fake_gdr.py" "$W/ok" peermem kernel=6.8.0 driver=open uverbs
	printf '%sNET/IB : GPU Direct RDMA Enabled for HCA %d '"'"'%s'"'"'\n' "$p" 0 mlx5_0 "$p" 1 mlx5_1 "$p" 2 mlx5_2 >"$W/agree.log"
	run "$LLMP" topo --gdr --sysfs "$W/ok" --nccl-log "$W/agree.log"
	[ "$status" -eq 0 ] || fail "$output"
	assert_contains "$output" "NCCL's log $W/agree.log: 2 GPU/HCA pairs compared, 0 differ"
	# (the verdict may also name this machine's memlock limit: the HCA side is what is compared)
	assert_line_matches '^gdr GPU 0000:18:00\.0 / mlx5_0: predicted .*, NCCL: Enabled for mlx5_0 \(HCA 0\) \(agree\)$'
	assert_line_matches '^gdr GPU 0000:9d:00\.0 / mlx5_2: predicted .*, NCCL: Enabled for mlx5_2 \(HCA 2\) \(agree\)$'
	# NCCL disabled mlx5_2: that pair is named, the other agrees.
	sed "s/Enabled for HCA 2/Disabled for HCA 2/" "$W/agree.log" >"$W/differ.log"
	run "$LLMP" topo --gdr --sysfs "$W/ok" --nccl-log "$W/differ.log"
	[ "$status" -eq 1 ] || fail "$output"
	assert_contains "$output" "2 GPU/HCA pairs compared, 1 differ:"
	assert_line_matches '^gdr GPU 0000:9d:00\.0 / mlx5_2: predicted .*, NCCL: Disabled for mlx5_2 \(HCA 2\) \(mismatch: llmp found a peer-memory module or dma-buf NCCL did not use\)$'
	# No module, proprietary driver: llmp predicts no; NCCL's Disabled agrees, its Enabled does not.
	python3 "$FAKE" "$sw" nccl-switch "$W/nomod"
	python3 "$LLMP_SRCDIR/tests/topology/fake_gdr.py" "$W/nomod" kernel=6.8.0 driver=proprietary uverbs
	run "$LLMP" topo --gdr --sysfs "$W/nomod" --nccl-log "$W/differ.log"
	[ "$status" -eq 1 ] || fail "$output"
	assert_contains "$output" "2 GPU/HCA pairs compared, 1 differ:"
	assert_contains "$output" "gdr GPU 0000:18:00.0 / mlx5_0: predicted no: no nvidia_peermem or nv_peer_mem loaded"
	assert_contains "$output" "NCCL: Enabled for mlx5_0 (HCA 0) (mismatch: NCCL registers GPU memory by a means llmp did not find)"
	assert_contains "$output" "NCCL: Disabled for mlx5_2 (HCA 2) (agree)"
	# A log without NET lines (NCCL's default NCCL_DEBUG_SUBSYS) proves nothing: said, exit 1.
	printf '%sBootstrap: Using eth0:10.0.0.1<0>\n' "$p" >"$W/init.log"
	run "$LLMP" topo --gdr --sysfs "$W/ok" --nccl-log "$W/init.log"
	[ "$status" -eq 1 ] || fail "$output"
	assert_contains "$output" "no \"GPU Direct RDMA ... for HCA\" line"
	# Recorded: NCCL 2.28.9 on an H200 VM with no HCA fell back to sockets ("NET/Socket : GPU
	# Direct RDMA Disabled for HCA 0 'eth0'"). Against a node with uverbs both pairs are named;
	# without uverbs llmp expects sockets and agrees. Its dump (version 1, numaid -1) parses.
	local rec="$LLMP_SRCDIR/tests/topology/nccl-log-h200-vm.log"
	run "$LLMP" topo --gdr --sysfs "$W/ok" --nccl-log "$rec" --nccl-dump "$LLMP_SRCDIR/tests/topology/nccl-dump-h200-vm.xml"
	[ "$status" -eq 1 ] || fail "$output"
	assert_contains "$output" "gdr NCCL: no IB device; NET/Socket on eth0 (HCA 0): no GPUDirect RDMA" \
		"2 GPU/HCA pairs compared, 2 differ:" "NCCL: no IB line for mlx5_2 (mismatch: NCCL found no IB device" \
		"nccl-dump-h200-vm.xml: 1 compared, 0 differ"
	python3 "$FAKE" "$sw" nccl-switch "$W/nouverbs"
	python3 "$LLMP_SRCDIR/tests/topology/fake_gdr.py" "$W/nouverbs" peermem kernel=6.8.0 driver=open
	run "$LLMP" topo --gdr --sysfs "$W/nouverbs" --nccl-log "$rec"
	[ "$status" -eq 0 ] || fail "$output"
	assert_contains "$output" "2 GPU/HCA pairs compared, 0 differ" "(agree: no uverbs device, NCCL used sockets)"
	run "$LLMP" topo --gdr --sysfs "$W/ok" --nccl-log "$W/missing.log"
	[ "$status" -eq 2 ] || fail "$output"
	assert_contains "$output" "--nccl-log $W/missing.log: cannot be read"
	run "$LLMP" topo --nccl-log "$W/agree.log"
	[ "$status" -eq 2 ] || fail "$output"
}

@test "--gdr --format json: the verdicts as JSON with stable names, checked with python's json module" {
	# nccl-switch (the fixture's own notes): GPU 18 to mlx5_0 PIX, mlx5_1 PHB, mlx5_2 SYS;
	# GPU 9d to mlx5_2 PIX, to mlx5_0 and mlx5_1 SYS. With nvidia_peermem and an open driver
	# only the level (PXB) rules pairs out, and this shell's memlock limit when below 64 MiB.
	local sw="$LLMP_SRCDIR/tests/topology/nccl-switch.json" lim
	export LLMP_IBVERBS_LIBRARY=/nonexistent LLMP_NCCL_LIBRARY=/nonexistent
	python3 "$FAKE" "$sw" nccl-switch "$W/ok"
	python3 "$LLMP_SRCDIR/tests/topology/fake_gdr.py" "$W/ok" peermem kernel=6.8.0 driver=open uverbs
	python3 "$FAKE" "$sw" nccl-switch "$W/nomod"
	python3 "$LLMP_SRCDIR/tests/topology/fake_gdr.py" "$W/nomod" kernel=5.10.0 driver=proprietary uverbs
	lim=$(ulimit -l)
	for tree in ok nomod; do
		for level in PXB SYS; do
			NCCL_NET_GDR_LEVEL=$level run "$LLMP" topo --gdr --sysfs "$W/$tree" --format json
			[ "$status" -eq 0 ] || fail "$output"
			printf '%s\n' "$output" >"$W/gdr.json"
			python3 - "$tree" "$level" "$lim" "$W/gdr.json" <<'PY' || fail "$tree $level: $output"
import json, sys
tree, level, lim, path = sys.argv[1:]
d = json.load(open(path))
paths = {("0000:18:00.0", "mlx5_0"): "PIX", ("0000:18:00.0", "mlx5_1"): "PHB", ("0000:18:00.0", "mlx5_2"): "SYS",
         ("0000:9d:00.0", "mlx5_0"): "SYS", ("0000:9d:00.0", "mlx5_1"): "SYS", ("0000:9d:00.0", "mlx5_2"): "PIX"}
order = ["LOC", "NVL", "PIX", "PXB", "PXN", "PHB", "SYS"]
low_memlock = lim != "unlimited" and int(lim) * 1024 < 64 << 20
assert d["llmp_gdr"] == 1 and d["gdr_level"] == level and d["nccl_version"] is None, d
assert d["nvidia_peermem"] == (tree == "ok") and d["nv_peer_mem"] is False, d
assert d["nvidia_driver"] == ("open" if tree == "ok" else "proprietary"), d
assert d["kernel"] == ("6.8.0" if tree == "ok" else "5.10.0") and d["uverbs"] is True, d
assert d["dmabuf_probe"] is None, d
assert d["memlock_unlimited"] == (lim == "unlimited"), d
assert d["memlock_bytes"] == (None if lim == "unlimited" else int(lim) * 1024), d
assert len(d["pairs"]) == 6 and d["total"] == 6, d
used = 0
for p in d["pairs"]:
    want = set()
    if tree == "nomod":  # no module; no dma-buf: kernel before 5.12, proprietary driver
        want |= {"no_peermem", "dmabuf_kernel", "dmabuf_driver"}
    path = paths[(p["gpu_bus"], p["hca"])]
    if order.index(path) > order.index(level):
        want.add("level")
    if low_memlock:
        want.add("memlock")
    assert p["path"] == path, p
    assert set(p["reasons"]) == want, (p, want)
    outcome = "not_used" if want - {"memlock", "acs", "iommu"} else "broken" if want else "used"
    assert p["outcome"] == outcome, (p, outcome)
    assert p["gpu"] == (0 if p["gpu_bus"] == "0000:18:00.0" else 1) and p["acs_checked"] is False, p
    assert p["text"].startswith({"used": "yes", "not_used": "no: ", "broken": "broken: "}[outcome]), p
    used += outcome == "used"
assert d["used"] == used, d
PY
		done
	done
	# NCCL's files are compared in text only.
	run "$LLMP" topo --gdr --format json --nccl-log "$W/x.log"
	[ "$status" -eq 2 ] || fail "$output"
}

@test "--rails: a port on another IB subnet named; the subnet read from sysfs gids/0, checked in a file" {
	# tests/topology/rails-subnet.json, by hand: rail 0 on fe80:0000:0000:0000 (gpu4's unknown:
	# not counted), rail 1 on fe80:0000:0000:0001 but gpu3's, on fe80:0000:0000:0002.
	local f="$LLMP_SRCDIR/tests/topology/rails-subnet.json"
	run "$LLMP" topo --rails --file "$f"
	[ "$status" -eq 1 ] || fail "$output"
	[ "$output" = "rails: 1 port differs:
rail 1: gpu3 mlx5_1 port 1 is on subnet fe80:0000:0000:0002 where 3 of 4 nodes are on fe80:0000:0000:0001" ] ||
		fail "$output"
	# Discovery: gids/0 as the kernel shows it (prefix, then the port GUID); an all-zero GID is none.
	python3 "$FAKE" "$f" gpu3 "$W/gpu3"
	run "$LLMP" topo --sysfs "$W/gpu3" --format json
	[ "$status" -eq 0 ] || fail "$output"
	printf '%s\n' "$output" >"$W/gpu3.json"
	python3 - "$W/gpu3.json" <<'PY' || fail "$output"
import json, sys
d = json.load(open(sys.argv[1]))
(ty,) = d["node_types"].values()
got = {h["name"]: h["ports"][0].get("subnet") for h in ty["hcas"]}
assert got == {"mlx5_0": "fe80:0000:0000:0000", "mlx5_1": "fe80:0000:0000:0002"}, got
PY
	printf '0000:0000:0000:0000:0000:0000:0000:0000\n' >"$(find "$W/gpu3" -path '*mlx5_1/ports/1/gids/0' | head -1)"
	run "$LLMP" topo --sysfs "$W/gpu3" --format json
	[ "$status" -eq 0 ] || fail "$output"
	assert_not_contains "$output" "fe80:0000:0000:0002"
	assert_contains "$output" '"subnet": "fe80:0000:0000:0000"'
	# A file's subnet must be a GID prefix.
	sed 's/fe80:0000:0000:0002/fe80:0:0:2/' "$f" >"$W/bad.json"
	run "$LLMP" topo --rails --file "$W/bad.json"
	[ "$status" -eq 2 ] || fail "$output"
	assert_contains "$output" '"subnet" must be a GID prefix such as "fe80:0000:0000:0000"'
}

@test "nvml_probe: the GPUs and MIG instances NVML lists to a task, with their memory and llmp's name" {
	# The NVML double answers from a file: one H200 (143771 MiB, as nvidia-smi says on the lent
	# machine), one card llmp's table lacks, one whose memory NVML does not give.
	local nvml="$LLMP_BUILDDIR/tests/topology/.libs/fake_nvml.so" probe="$LLMP_BUILDDIR/tests/gpu/nvml_probe"
	[ -f "$nvml" ] && [ -x "$probe" ] || fail "fake_nvml.so or nvml_probe not built"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
		00000000:00:06.0 "NVIDIA H200" GPU-1 00000000000000000000000000000000 0 - 143771 \
		00000000:1B:00.0 "Tesla T4" GPU-2 00000000000000000000000000000000 0 - 15360 >"$W/nvml.tsv"
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' \
		00000000:9D:00.0 "NVIDIA H100 80GB HBM3" GPU-3 00000000000000000000000000000000 0 - >>"$W/nvml.tsv"
	FAKE_NVML_FILE=$W/nvml.tsv run "$probe" "$nvml"
	[ "$status" -eq 0 ] || fail "$output"
	assert_contains "$output" "gpu 0 0000:00:06.0 143771 MiB 'NVIDIA H200' -> h200" \
		"gpu 1 0000:1b:00.0 15360 MiB 'Tesla T4' -> (not in llmp's table)" \
		"gpu 2 0000:9d:00.0 0 MiB 'NVIDIA H100 80GB HBM3' -> h100"
	run "$probe" "$W/no-such-libnvidia-ml.so"
	[ "$status" -eq 1 ] || fail "$output"
	assert_contains "$output" "nvml_probe: "
	# A GPU in MIG mode: its two instances follow it, each with its own memory and UUID (the
	# double leaves the first of its slots empty, as a destroyed instance does).
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
		00000000:1B:00.0 "NVIDIA A100-SXM4-40GB" GPU-4 00000000000000000000000000000000 0 - 40960 \
		MIG-a1:3g.20gb:19968,MIG-a2:2g.10gb:9856 >"$W/mig.tsv"
	FAKE_NVML_FILE=$W/mig.tsv run "$probe" "$nvml"
	[ "$status" -eq 0 ] || fail "$output"
	assert_contains "$output" "gpu 0 0000:1b:00.0 40960 MiB 'NVIDIA A100-SXM4-40GB' -> a100-40gb (MIG mode)" \
		"mig 1 0000:1b:00.0 19968 MiB 'NVIDIA A100-SXM4-40GB MIG 3g.20gb' -> (not in llmp's table)" \
		"mig 2 0000:1b:00.0 9856 MiB 'NVIDIA A100-SXM4-40GB MIG 2g.10gb' -> (not in llmp's table)"
	# Nine GPUs of seven instances each are 72 entries, all listed (the plugin once kept 64);
	# 33 such GPUs (264) are more than the 256 kept: the first 256, and the reason.
	local g i migs
	mig_node() { # GPUS
		for ((g = 0; g < $1; g++)); do
			migs=
			for ((i = 0; i < 7; i++)); do migs+="${migs:+,}MIG-$g-$i:1g.10gb:9856"; done
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "00000000:$(printf %02X $((g + 1))):00.0" \
				"NVIDIA A100-SXM4-80GB" "GPU-$g" 00000000000000000000000000000000 0 - 81920 "$migs"
		done
	}
	mig_node 9 >"$W/nine.tsv"
	FAKE_NVML_FILE=$W/nine.tsv run "$probe" "$nvml"
	[ "$status" -eq 0 ] || fail "$output"
	[ "$(grep -c '^gpu ' <<<"$output")" -eq 9 ] && [ "$(grep -c '^mig ' <<<"$output")" -eq 63 ] ||
		fail "72 entries expected: $output"
	assert_contains "$output" "mig 71 0000:09:00.0 9856 MiB"
	[[ "$output" != *"not read"* ]] || fail "a whole list said to be cut: $output"
	mig_node 32 >"$W/full.tsv" # exactly 256: whole, and not said to be cut
	FAKE_NVML_FILE=$W/full.tsv run "$probe" "$nvml"
	[ "$status" -eq 0 ] && [ "$(grep -c '^\(gpu\|mig\) ' <<<"$output")" -eq 256 ] || fail "$output"
	[[ "$output" != *"not read"* ]] || fail "a whole list said to be cut: $output"
	mig_node 33 >"$W/many.tsv"
	FAKE_NVML_FILE=$W/many.tsv run "$probe" "$nvml"
	[ "$status" -eq 0 ] || fail "$output"
	[ "$(grep -c '^\(gpu\|mig\) ' <<<"$output")" -eq 256 ] || fail "256 entries expected: $output"
	# 32 GPUs of 8 entries fill the 256: the 33rd GPU is the first left out
	assert_contains "$output" "nvml_probe: NVML lists more than 256 GPUs and MIG instances: GPU 32's and later ones not read"
}
