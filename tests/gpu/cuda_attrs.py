# SPDX-License-Identifier: BSD-3-Clause
"""The CUDA driver's own word on GPUDirect RDMA and dma-buf, per GPU (scripts/gpu-run.sh).

python3 tests/gpu/cuda_attrs.py

One line per GPU: "gpu N name=... pci=DOMAIN:BUS:DEV.0 gdr=0|1 dmabuf=0|1
gdr_vmm=0|1 flush=MASK ordering=N driver=V", the attributes NCCL reads
(cuda.h: CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED and the rest), kept as
a fixture beside llmp's own verdict (`llmp topo --gdr`, doc/gpudirect.md).
"""
import ctypes

ATTRS = (("gdr", 116), ("dmabuf", 124), ("gdr_vmm", 110), ("flush", 117), ("ordering", 118))

cu = ctypes.CDLL("libcuda.so.1")
assert cu.cuInit(0) == 0, "cuInit failed"
n, version = ctypes.c_int(), ctypes.c_int()
assert cu.cuDeviceGetCount(ctypes.byref(n)) == 0
cu.cuDriverGetVersion(ctypes.byref(version))
for i in range(n.value):
    dev = ctypes.c_int()
    assert cu.cuDeviceGet(ctypes.byref(dev), i) == 0
    name, bus = ctypes.create_string_buffer(128), ctypes.create_string_buffer(32)
    cu.cuDeviceGetName(name, 128, dev)
    cu.cuDeviceGetPCIBusId(bus, 32, dev)
    fields = []
    for key, attr in ATTRS:
        v = ctypes.c_int(-1)
        rc = cu.cuDeviceGetAttribute(ctypes.byref(v), attr, dev)
        fields.append("%s=%s" % (key, v.value if rc == 0 else "error%d" % rc))
    print("gpu %d name=%s pci=%s %s driver=%d" % (i, name.value.decode().replace(" ", "_"),
                                                  bus.value.decode().lower(), " ".join(fields), version.value))
